"""Git Data operations of the GitHub stand-in: refs, blobs, trees and commits."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import TYPE_CHECKING

from sandbox.git_objects import ZERO_SHA, Identity, TreeChange, is_sha
from sandbox.github_http import ApiError, Call, Reply, Router, not_found
from sandbox.github_state import User

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
    add("GET", "/repos/{owner}/{repo}/git/blobs/{file_sha}", "git/get-blob", routes.get_blob)


class GitRoutes:
    def __init__(self, sandbox: GitHubSandbox) -> None:
        self.sb = sandbox

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

    async def get_blob(self, call: Call) -> Reply:
        """A blob by its sha (base64); anything else, or no such object, is 404."""
        repo = call.the_repo
        store, sha = self.sb.store, call.params["file_sha"]
        kind = await self.sb.git(store.object_type, repo.full_name, sha) if is_sha(sha) else None
        if kind != "blob":
            raise not_found()
        data = await self.sb.git(store.read_blob, repo.full_name, sha)
        return Reply(200, self.sb.json.blob(repo, sha, data))

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
