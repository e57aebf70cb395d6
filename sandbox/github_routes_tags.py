"""Tag and release operations of the GitHub stand-in: the repository's tags, refs matching
a prefix, annotated tag objects and releases.

GitHub's reference promises no order for either list; the stand-in keeps the observed
ones. Tags come by name in reverse (byte) order, which is neither by date nor by
version (``v1.9`` before ``v1.10``): users report exactly that of the real API and
GitHub support says it cannot sort tags by date. Releases come newest first by
``created_at``, the order the reference names for the latest release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.git_tags import TAGS, read_tag, typed_refs
from sandbox.github_http import Call, Reply, Router, not_found, paginate
from sandbox.github_state import Release, newest_first

if TYPE_CHECKING:
    from sandbox.github_server import GitHubSandbox


def register(router: Router, sandbox: GitHubSandbox) -> None:
    routes = TagRoutes(sandbox)
    add = router.add
    add("GET", "/repos/{owner}/{repo}/tags", "repos/list-tags", routes.list_tags)
    add(
        "GET",
        "/repos/{owner}/{repo}/git/matching-refs/{ref+}",
        "git/list-matching-refs",
        routes.matching_refs,
    )
    add("GET", "/repos/{owner}/{repo}/git/tags/{tag_sha}", "git/get-tag", routes.get_tag)
    add("GET", "/repos/{owner}/{repo}/releases", "repos/list-releases", routes.list_releases)
    add(
        "GET",
        "/repos/{owner}/{repo}/releases/latest",
        "repos/get-latest-release",
        routes.latest_release,
    )
    add(
        "GET",
        "/repos/{owner}/{repo}/releases/tags/{tag+}",
        "repos/get-release-by-tag",
        routes.release_by_tag,
    )
    add(
        "GET",
        "/repos/{owner}/{repo}/releases/{release_id}",
        "repos/get-release",
        routes.get_release,
    )


class TagRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

    # -- tags and refs ----------------------------------------------------------------------

    async def list_tags(self, call: Call) -> Reply:
        repo = call.the_repo
        refs = await self.sb.git(typed_refs, self.sb.store, repo.full_name, TAGS)
        # A tag of a tree or blob leads to no commit, and every entry names one: left out.
        tags: list[tuple[str, str]] = sorted(
            ((ref.name.removeprefix(TAGS), ref.commit) for ref in refs if ref.commit is not None),
            reverse=True,
        )
        url = f"{self.sb.base_url}/repos/{repo.full_name}/tags"
        page, headers = paginate(call, tags, url)
        body = [self.sb.json.tag(repo, name, commit) for name, commit in page]
        return Reply(200, body, headers)

    async def matching_refs(self, call: Call) -> Reply:
        """Every ref whose full name starts with ``refs/<ref>``, by name (a plain prefix:
        ``tags/v1`` matches ``refs/tags/v1.2`` too); an empty list when none does."""
        repo = call.the_repo
        prefix = "refs/" + call.params["ref"].removeprefix("refs/")
        refs = await self.sb.git(typed_refs, self.sb.store, repo.full_name)
        body = [
            self.sb.json.git_ref(repo, ref.name, ref.sha, ref.type)
            for ref in refs
            if ref.name.startswith(prefix)
        ]
        return Reply(200, body)

    async def get_tag(self, call: Call) -> Reply:
        repo = call.the_repo
        sha = call.params["tag_sha"]
        if await self.sb.git(self.sb.store.object_type, repo.full_name, sha) != "tag":
            raise not_found()
        tag = await self.sb.git(read_tag, self.sb.store, repo.full_name, sha)
        return Reply(200, self.sb.json.git_tag(repo, tag))

    # -- releases ---------------------------------------------------------------------------

    def _can_push(self, call: Call) -> bool:
        """Whether the token may see drafts: GitHub shows them to push access only."""
        repo = call.the_repo
        token = call.token
        if token is None or token.installation_id != repo.installation_id:
            return False
        installation = self.sb.installations.get(token.installation_id)
        return installation is not None and installation.permissions.get("contents") == "write"

    def _visible(self, call: Call) -> list[Release]:
        releases = newest_first(call.the_repo.releases.values())
        return releases if self._can_push(call) else [r for r in releases if not r.draft]

    async def list_releases(self, call: Call) -> Reply:
        repo = call.the_repo
        url = f"{self.sb.base_url}/repos/{repo.full_name}/releases"
        page, headers = paginate(call, self._visible(call), url)
        return Reply(200, [self.sb.json.release(repo, r) for r in page], headers)

    async def latest_release(self, call: Call) -> Reply:
        """The newest release that is neither a draft nor a pre-release."""
        found = [r for r in self._visible(call) if not r.draft and not r.prerelease]
        if not found:
            raise not_found()
        return Reply(200, self.sb.json.release(call.the_repo, found[0]))

    async def release_by_tag(self, call: Call) -> Reply:
        """The published release on a tag: a draft is not found by its tag."""
        tag = call.params["tag"]
        for release in call.the_repo.releases.values():
            if release.tag_name == tag and not release.draft:
                return Reply(200, self.sb.json.release(call.the_repo, release))
        raise not_found()

    async def get_release(self, call: Call) -> Reply:
        wanted = call.params["release_id"]
        for release in self._visible(call):
            if str(release.id) == wanted:
                return Reply(200, self.sb.json.release(call.the_repo, release))
        raise not_found()
