"""Repository operations of the GitHub stand-in: the repository, branches, commits,
contents, comparisons, collaborator permissions and commit statuses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.git_objects import EMPTY_TREE_SHA, is_sha
from sandbox.github_checks import DEFAULT_CONTEXT
from sandbox.github_http import ApiError, Call, Reply, Router, not_found, paginate, per_page
from sandbox.github_state import LEGACY_PERMISSION

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

NO_COMMON_ANCESTOR = "No common ancestor between {base} and {head}."
NO_COMMIT = "No commit found for SHA: {sha}"
MAX_COMPARE_COMMITS = 250  # GitHub's compare lists at most 250 commits, the oldest
MAX_COMPARE_FILES = 300  # and at most 300 files


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = RepoRoutes(sandbox)
    add = router.add
    add("GET", "/repos/{owner}/{repo}", "repos/get", routes.get_repo)
    add("GET", "/repos/{owner}/{repo}/branches/{branch+}", "repos/get-branch", routes.get_branch)
    add("GET", "/repos/{owner}/{repo}/commits/{ref+}", "repos/get-commit", routes.get_commit)
    add("GET", "/repos/{owner}/{repo}/commits", "repos/list-commits", routes.list_commits)
    add("GET", "/repos/{owner}/{repo}/contents/{path+}", "repos/get-content", routes.get_content)
    add("GET", "/repos/{owner}/{repo}/compare/{basehead+}", "repos/compare-commits", routes.compare)
    add(
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        "repos/get-collaborator-permission-level",
        routes.permission,
    )
    add(
        "GET",
        "/repos/{owner}/{repo}/commits/{ref+}/status",
        "repos/get-combined-status-for-ref",
        routes.combined_status,
    )
    add(
        "POST",
        "/repos/{owner}/{repo}/statuses/{sha}",
        "repos/create-commit-status",
        routes.create_status,
    )


class RepoRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    async def get_repo(self, call: Call) -> Reply:
        return Reply(200, self.sb.json.repo(call.the_repo, full=True))

    async def get_branch(self, call: Call) -> Reply:
        repo = call.the_repo
        name = call.params["branch"]
        sha = await self.sb.git(self.sb.store.get_ref, repo.full_name, f"refs/heads/{name}")
        if sha is None:
            raise ApiError(404, "Branch not found")
        info = await self.sb.git(self.sb.store.read_commit, repo.full_name, sha)
        return Reply(200, self.sb.json.branch(repo, name, info))

    async def _resolve(self, call: Call, rev: str) -> str | None:
        return await self.sb.git(self.sb.store.resolve_commit, call.the_repo.full_name, rev)

    async def get_commit(self, call: Call) -> Reply:
        repo = call.the_repo
        sha = await self._resolve(call, call.params["ref"])
        if sha is None:
            raise ApiError(422, NO_COMMIT.format(sha=call.params["ref"]))
        store = self.sb.store
        info = await self.sb.git(store.read_commit, repo.full_name, sha)
        parent = info.parents[0] if info.parents else EMPTY_TREE_SHA
        files = await self.sb.git(store.diff, repo.full_name, parent, sha)
        return Reply(200, self.sb.json.commit(repo, info, files))

    async def list_commits(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        start = await self._resolve(call, call.arg("sha") or repo.default_branch)
        if start is None:
            raise not_found()
        shas = await self.sb.git(store.rev_list, repo.full_name, start, path=call.arg("path"))
        url = f"{self.sb.base_url}/repos/{repo.full_name}/commits"
        page, headers = paginate(call, shas, url)
        infos = await self.sb.git(store.read_commits, repo.full_name, page)
        return Reply(200, [self.sb.json.commit(repo, info) for info in infos], headers)

    async def get_content(self, call: Call) -> Reply:
        repo = call.the_repo
        ref = call.arg("ref") or repo.default_branch
        sha = await self._resolve(call, ref)
        if sha is None:
            raise ApiError(404, NO_COMMIT.format(sha=ref))
        path = call.params["path"].strip("/")
        found = await self.sb.git(self.sb.store.file_at, repo.full_name, sha, path)
        if found is None or found[0] != "blob":
            raise not_found()
        data = await self.sb.git(self.sb.store.read_blob, repo.full_name, found[1])
        return Reply(200, self.sb.json.content_file(repo, ref, path, found[1], data))

    async def compare(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        base_name, sep, head_name = call.params["basehead"].partition("...")
        if not sep:
            raise not_found()
        base_name = base_name.split(":", 1)[-1]
        head_name = head_name.split(":", 1)[-1]
        base, head = await self._resolve(call, base_name), await self._resolve(call, head_name)
        if base is None or head is None:
            raise not_found()
        merge_base = await self.sb.git(store.merge_base, repo.full_name, base, head)
        if merge_base is None:
            raise ApiError(404, NO_COMMON_ANCESTOR.format(base=base_name, head=head_name))
        ahead = await self.sb.git(store.count, repo.full_name, f"{base}..{head}")
        behind = await self.sb.git(store.count, repo.full_name, f"{head}..{base}")
        shas = await self.sb.git(store.rev_list, repo.full_name, f"{base}..{head}", reverse=True)
        chunk, headers, first_page = self._compare_page(call, shas)
        listed = await self.sb.git(store.read_commits, repo.full_name, chunk)
        base_info, base_of_merge = await self.sb.git(
            store.read_commits, repo.full_name, [base, merge_base]
        )
        files = await self.sb.git(store.diff, repo.full_name, merge_base, head)
        if ahead and behind:
            status = "diverged"
        elif ahead:
            status = "ahead"
        elif behind:
            status = "behind"
        else:
            status = "identical"
        json = self.sb.json
        web = f"{json.html}/{repo.full_name}/compare/{base_name}...{head_name}"
        body = {
            "url": f"{json.api}/repos/{repo.full_name}/compare/{base_name}...{head_name}",
            "html_url": web,
            "permalink_url": f"{json.html}/{repo.full_name}/compare/{base[:7]}...{head[:7]}",
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "base_commit": json.commit(repo, base_info),
            "merge_base_commit": json.commit(repo, base_of_merge),
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": ahead,
            "commits": [json.commit(repo, info) for info in listed],
            # Paginated, the files (of the whole comparison) come with the first page only.
            "files": [json.diff_entry(repo, head, f) for f in files[:MAX_COMPARE_FILES]]
            if first_page
            else [],
        }
        return Reply(200, body, headers)

    def _compare_page(self, call: Call, shas: list[str]) -> tuple[list[str], dict[str, str], bool]:
        """The compare's commits as GitHub pages them: without ``page``/``per_page`` the
        oldest 250; with either, that page (oldest first) and a ``Link`` header."""
        if call.arg("page") is None and call.arg("per_page") is None:
            return shas[:MAX_COMPARE_COMMITS], {}, True
        url = (
            f"{self.sb.base_url}/repos/{call.the_repo.full_name}/compare/{call.params['basehead']}"
        )
        chunk, headers = paginate(call, shas, url)
        return chunk, headers, per_page(call)[0] == 1

    async def permission(self, call: Call) -> Reply:
        repo = call.the_repo
        login = call.params["username"]
        user = self.sb.users.get(login)
        if user is None:
            raise ApiError(404, f"{login} is not a user")
        role = repo.permission_of(user.login)
        collaborator = {**self.sb.json.user(user), "role_name": role}
        return Reply(
            200, {"permission": LEGACY_PERMISSION[role], "role_name": role, "user": collaborator}
        )

    async def combined_status(self, call: Call) -> Reply:
        repo = call.the_repo
        sha = await self._resolve(call, call.params["ref"])
        if sha is None:
            raise not_found()
        return Reply(200, self.sb.json.combined_status(repo, sha))

    async def create_status(self, call: Call) -> Reply:
        repo = call.the_repo
        wanted = call.params["sha"]
        sha = await self._resolve(call, wanted) if is_sha(wanted) else None
        if sha is None:
            raise ApiError(422, NO_COMMIT.format(sha=wanted))
        status = self.sb.checks.record(
            repo,
            sha,
            str(call.field("state")),
            context=str(call.field("context", DEFAULT_CONTEXT)),
            target_url=call.field("target_url"),
            description=call.field("description"),
            creator=self.sb.bot_user,
        )
        await self.sb.status_reported(repo, status)
        body = self.sb.json.status(repo, status, full=True)
        return Reply(201, body, {"Location": body["url"]})
