"""App auth, Git Data and repository-content operations of the GitHub stand-in."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import TYPE_CHECKING

from sandbox.github_checks import DEFAULT_CONTEXT
from sandbox.github_http import (
    ApiError,
    Call,
    Reply,
    Router,
    not_found,
    paginate,
    per_page,
)
from sandbox.github_json import iso
from sandbox.github_state import LEGACY_PERMISSION, User
from sandbox.gitstore import EMPTY_TREE_SHA, ZERO_SHA, Identity, TreeChange, is_sha

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox

REF_EXISTS = "Reference already exists"
REF_MISSING = "Reference does not exist"
REF_NAME_INVALID = "Reference name must start with 'refs/' and have at least two slashes."
OBJECT_MISSING = "Object does not exist"
NOT_FAST_FORWARD = "Update is not a fast forward"
TREE_MISSING = "Tree SHA does not exist"
PARENT_MISSING = "Parent SHA does not exist or is not a commit object"
BASE_TREE_MISSING = "base_tree is not a valid tree oid"
BAD_TREE_ENTRY = "tree.sha {sha} is not a valid {kind}"
BAD_BLOB_ENCODING = "encoding must be one of utf-8 or base64"
NO_COMMON_ANCESTOR = "No common ancestor between {base} and {head}."
NO_COMMIT = "No commit found for SHA: {sha}"
MAX_COMPARE_COMMITS = 250  # GitHub's compare lists at most 250 commits, the oldest
MAX_COMPARE_FILES = 300  # and at most 300 files
TREE_TYPES = {
    "100644": "blob",
    "100755": "blob",
    "120000": "blob",
    "040000": "tree",
    "160000": "commit",
}


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = GitRoutes(sandbox)
    add = router.add
    add(
        "GET",
        "/repos/{owner}/{repo}/installation",
        "apps/get-repo-installation",
        routes.get_repo_installation,
        auth="jwt",
    )
    add(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        "apps/create-installation-access-token",
        routes.create_token,
        auth="jwt",
    )
    add("GET", "/repos/{owner}/{repo}/git/ref/{ref+}", "git/get-ref", routes.get_ref)
    add("POST", "/repos/{owner}/{repo}/git/refs", "git/create-ref", routes.create_ref)
    add("PATCH", "/repos/{owner}/{repo}/git/refs/{ref+}", "git/update-ref", routes.update_ref)
    add("DELETE", "/repos/{owner}/{repo}/git/refs/{ref+}", "git/delete-ref", routes.delete_ref)
    add(
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        "git/get-commit",
        routes.get_git_commit,
    )
    add("POST", "/repos/{owner}/{repo}/git/commits", "git/create-commit", routes.create_commit)
    add("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}", "git/get-tree", routes.get_tree)
    add("POST", "/repos/{owner}/{repo}/git/trees", "git/create-tree", routes.create_tree)
    add("POST", "/repos/{owner}/{repo}/git/blobs", "git/create-blob", routes.create_blob)
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


class GitRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    # -- apps -------------------------------------------------------------------------------

    async def get_repo_installation(self, call: Call) -> Reply:
        repo = call.repo
        if repo is None or repo.installation_id is None:
            raise not_found()
        installation = self.sb.installations[repo.installation_id]
        return Reply(
            200, self.sb.json.installation(installation, int(self.sb.app_id), self.sb.app_slug)
        )

    async def create_token(self, call: Call) -> Reply:
        try:
            installation = self.sb.installations[int(call.params["installation_id"])]
        except (KeyError, ValueError) as exc:
            raise not_found() from exc
        minted = self.sb.auth.mint(installation.id)
        return Reply(
            201,
            {
                "token": minted.token,
                "expires_at": iso(minted.expires_at),
                "permissions": {
                    "contents": "write",
                    "pull_requests": "write",
                    "issues": "write",
                    "metadata": "read",
                },
                "repository_selection": "selected",
            },
        )

    # -- refs -------------------------------------------------------------------------------

    async def _sha_of_ref(self, call: Call, ref: str) -> str | None:
        return await self.sb.git(self.sb.store.get_ref, call.the_repo.full_name, ref)

    async def get_ref(self, call: Call) -> Reply:
        repo = call.the_repo
        ref = "refs/" + call.params["ref"].removeprefix("refs/")
        sha = await self._sha_of_ref(call, ref)
        if sha is None:
            raise not_found()
        kind = await self.sb.git(self.sb.store.object_type, repo.full_name, sha) or "commit"
        return Reply(200, self.sb.json.git_ref(repo, ref, sha, kind))

    async def create_ref(self, call: Call) -> Reply:
        repo = call.the_repo
        ref, sha = call.field("ref"), call.field("sha")
        if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
            raise ApiError(422, REF_NAME_INVALID)
        kind = await self.sb.git(self.sb.store.object_type, repo.full_name, str(sha))
        if kind is None:
            raise ApiError(422, OBJECT_MISSING)
        created = await self.sb.git(self.sb.store.update_ref, repo.full_name, ref, sha, ZERO_SHA)
        if not created:
            raise ApiError(422, REF_EXISTS)
        await self.sb.ref_changed(repo, ref, ZERO_SHA, sha, self._actor(call))
        return Reply(201, self.sb.json.git_ref(repo, ref, sha, kind))

    async def update_ref(self, call: Call) -> Reply:
        repo = call.the_repo
        ref = "refs/" + call.params["ref"].removeprefix("refs/")
        sha, force = str(call.field("sha")), call.field("force", False) is True
        store = self.sb.store
        before = await self._sha_of_ref(call, ref)
        if before is None:
            raise ApiError(422, REF_MISSING)
        if await self.sb.git(store.object_type, repo.full_name, sha) != "commit":
            raise ApiError(422, OBJECT_MISSING)
        if not force and not await self.sb.git(store.is_ancestor, repo.full_name, before, sha):
            raise ApiError(422, NOT_FAST_FORWARD)
        if not await self.sb.git(store.update_ref, repo.full_name, ref, sha, before):
            # Someone moved it between our check and the write: GitHub says the same.
            raise ApiError(422, NOT_FAST_FORWARD)
        if before != sha:
            await self.sb.ref_changed(repo, ref, before, sha, self._actor(call))
        return Reply(200, self.sb.json.git_ref(repo, ref, sha))

    async def delete_ref(self, call: Call) -> Reply:
        repo = call.the_repo
        ref = "refs/" + call.params["ref"].removeprefix("refs/")
        before = await self._sha_of_ref(call, ref)
        if before is None or not await self.sb.git(
            self.sb.store.delete_ref, repo.full_name, ref, before
        ):
            raise ApiError(422, REF_MISSING)
        await self.sb.ref_changed(repo, ref, before, ZERO_SHA, self._actor(call))
        return Reply(204, None)

    def _actor(self, call: Call) -> User:
        # Installation tokens act as the App's bot account.
        return self.sb.bot_user

    # -- objects ----------------------------------------------------------------------------

    async def create_blob(self, call: Call) -> Reply:
        repo = call.the_repo
        content, encoding = call.field("content"), call.field("encoding", "utf-8")
        if not isinstance(content, str):
            raise ApiError(422, "content is not a string")
        if encoding in ("utf-8", "utf8"):
            data = content.encode()
        elif encoding == "base64":
            try:
                data = base64.b64decode(content, validate=False)
            except binascii.Error as exc:
                raise ApiError(422, "content is not valid Base64") from exc
        else:
            raise ApiError(422, BAD_BLOB_ENCODING)
        sha = await self.sb.git(self.sb.store.hash_blob, repo.full_name, data)
        return Reply(201, self.sb.json.short_blob(repo, sha))

    async def create_tree(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        base_tree = call.field("base_tree")
        if (
            base_tree is not None
            and await self.sb.git(store.object_type, repo.full_name, str(base_tree)) != "tree"
        ):
            raise ApiError(422, BASE_TREE_MISSING)
        changes: list[TreeChange] = []
        for entry in call.field("tree", []):
            path, mode, kind = entry["path"], entry["mode"], entry["type"]
            if TREE_TYPES.get(mode) != kind:
                raise ApiError(422, f"tree.mode {mode} does not match type {kind}")
            if "content" in entry:
                if kind != "blob":
                    raise ApiError(422, "content is only allowed for blobs")
                sha = await self.sb.git(store.hash_blob, repo.full_name, entry["content"].encode())
            else:
                sha = entry.get("sha")
                if sha is not None and kind != "commit":
                    actual = await self.sb.git(store.object_type, repo.full_name, sha)
                    if actual != kind:
                        raise ApiError(422, BAD_TREE_ENTRY.format(sha=sha, kind=kind))
            changes.append(TreeChange(path.strip("/"), mode, kind, sha))
        tree = await self.sb.git(store.make_tree, repo.full_name, base_tree, changes)
        entries = await self.sb.git(store.ls_tree, repo.full_name, tree)
        return Reply(201, self.sb.json.tree(repo, tree, entries))

    async def get_tree(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        sha = call.params["tree_sha"]
        kind = await self.sb.git(store.object_type, repo.full_name, sha) if is_sha(sha) else None
        if kind == "commit":
            sha = (await self.sb.git(store.read_commit, repo.full_name, sha)).tree
        elif kind != "tree":
            resolved = await self.sb.git(store.resolve_commit, repo.full_name, sha)
            if resolved is None:
                raise not_found()
            sha = (await self.sb.git(store.read_commit, repo.full_name, resolved)).tree
        recursive = call.arg("recursive") not in (None, "", "0", "false")
        entries = await self.sb.git(store.ls_tree, repo.full_name, sha, recursive=recursive)
        return Reply(200, self.sb.json.tree(repo, sha, entries))

    async def create_commit(self, call: Call) -> Reply:
        repo = call.the_repo
        store = self.sb.store
        tree = str(call.field("tree"))
        if await self.sb.git(store.object_type, repo.full_name, tree) != "tree":
            raise ApiError(422, TREE_MISSING)
        parents = [str(p) for p in call.field("parents", [])]
        for parent in parents:
            if await self.sb.git(store.object_type, repo.full_name, parent) != "commit":
                raise ApiError(422, PARENT_MISSING)
        default = self.sb.bot_identity()
        author = self._identity(call.field("author"), default)
        committer = self._identity(
            call.field("committer"), author if call.field("author") else default
        )
        sha = await self.sb.git(
            store.commit_tree,
            repo.full_name,
            tree,
            parents,
            str(call.field("message")),
            author,
            committer,
        )
        info = await self.sb.git(store.read_commit, repo.full_name, sha)
        return Reply(201, self.sb.json.git_commit(repo, info))

    @staticmethod
    def _identity(given: object, default: Identity) -> Identity:
        if not isinstance(given, dict):
            return default
        stamp = default.timestamp
        date = given.get("date")
        if isinstance(date, str):
            stamp = int(datetime.fromisoformat(date.replace("Z", "+00:00")).timestamp())
        return Identity(
            str(given.get("name", default.name)), str(given.get("email", default.email)), stamp
        )

    async def get_git_commit(self, call: Call) -> Reply:
        repo = call.the_repo
        sha = call.params["commit_sha"]
        if await self.sb.git(self.sb.store.object_type, repo.full_name, sha) != "commit":
            raise not_found()
        info = await self.sb.git(self.sb.store.read_commit, repo.full_name, sha)
        return Reply(200, self.sb.json.git_commit(repo, info))

    # -- repository views -------------------------------------------------------------------

    async def get_repo(self, call: Call) -> Reply:
        return Reply(200, self.sb.json.repo(call.the_repo, full=True))

    async def get_branch(self, call: Call) -> Reply:
        repo = call.the_repo
        name = call.params["branch"]
        sha = await self._sha_of_ref(call, f"refs/heads/{name}")
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
        role = repo.permission_of(login)
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
