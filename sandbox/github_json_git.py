"""Git Data and repository-content JSON of the GitHub stand-in: refs, commits, trees,
blobs, file contents, branches and diffs, as GitHub's OpenAPI schemas shape them."""

from __future__ import annotations

import base64

from sandbox.git_objects import CommitInfo, FileDiff, Identity, TreeEntry
from sandbox.github_json_base import JSON, BaseJson, iso, node_id
from sandbox.github_state import Repo


class GitDataJson(BaseJson):
    def git_ref(self, repo: Repo, ref: str, sha: str, object_type: str = "commit") -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/git"
        return {
            "ref": ref,
            "node_id": node_id("Ref", f"{repo.id}:{ref}"),
            "url": f"{api}/{ref}",
            "object": {"type": object_type, "sha": sha, "url": f"{api}/{object_type}s/{sha}"},
        }

    @staticmethod
    def _identity(who: Identity) -> JSON:
        return {"name": who.name, "email": who.email, "date": iso(who.timestamp)}

    @staticmethod
    def _verification() -> JSON:
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def git_commit(self, repo: Repo, commit: CommitInfo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "sha": commit.sha,
            "node_id": node_id("Commit", commit.sha),
            "url": f"{api}/git/commits/{commit.sha}",
            "html_url": f"{self.html}/{repo.full_name}/commit/{commit.sha}",
            "author": self._identity(commit.author),
            "committer": self._identity(commit.committer),
            "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
            "message": commit.message,
            "parents": [
                {
                    "sha": parent,
                    "url": f"{api}/git/commits/{parent}",
                    "html_url": f"{self.html}/{repo.full_name}/commit/{parent}",
                }
                for parent in commit.parents
            ],
            "verification": self._verification(),
        }

    def commit(self, repo: Repo, commit: CommitInfo, files: list[FileDiff] | None = None) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        body: JSON = {
            "url": f"{api}/commits/{commit.sha}",
            "sha": commit.sha,
            "node_id": node_id("Commit", commit.sha),
            "html_url": f"{self.html}/{repo.full_name}/commit/{commit.sha}",
            "comments_url": f"{api}/commits/{commit.sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{commit.sha}",
                "author": self._identity(commit.author),
                "committer": self._identity(commit.committer),
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
                "verification": self._verification(),
            },
            # GitHub links an account only when the e-mail belongs to one, else null.
            "author": self._linked_user(commit.author),
            "committer": self._linked_user(commit.committer),
            "parents": [
                {
                    "sha": parent,
                    "url": f"{api}/commits/{parent}",
                    "html_url": f"{self.html}/{repo.full_name}/commit/{parent}",
                }
                for parent in commit.parents
            ],
        }
        if files is not None:
            body["files"] = [self.diff_entry(repo, commit.sha, f) for f in files]
            additions = sum(f.additions for f in files)
            deletions = sum(f.deletions for f in files)
            body["stats"] = {
                "additions": additions,
                "deletions": deletions,
                "total": additions + deletions,
            }
        return body

    def diff_entry(self, repo: Repo, ref: str, diff: FileDiff) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        entry: JSON = {
            "sha": diff.blob_sha,
            "filename": diff.filename,
            "status": diff.status,
            "additions": diff.additions,
            "deletions": diff.deletions,
            "changes": diff.additions + diff.deletions,
            "blob_url": f"{self.html}/{repo.full_name}/blob/{ref}/{diff.filename}",
            "raw_url": f"{self.html}/{repo.full_name}/raw/{ref}/{diff.filename}",
            "contents_url": f"{api}/contents/{diff.filename}?ref={ref}",
        }
        if diff.previous_filename is not None:
            entry["previous_filename"] = diff.previous_filename
        return entry

    def tree(self, repo: Repo, sha: str, entries: list[TreeEntry]) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/git"
        items: list[JSON] = []
        for entry in entries:
            item: JSON = {
                "path": entry.path,
                "mode": entry.mode,
                "type": entry.type,
                "sha": entry.sha,
            }
            if entry.type == "blob":
                item["size"] = entry.size
                item["url"] = f"{api}/blobs/{entry.sha}"
            elif entry.type == "tree":
                item["url"] = f"{api}/trees/{entry.sha}"
            items.append(item)
        return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": items, "truncated": False}

    def short_blob(self, repo: Repo, sha: str) -> JSON:
        return {"url": f"{self.api}/repos/{repo.full_name}/git/blobs/{sha}", "sha": sha}

    def blob(self, repo: Repo, sha: str, data: bytes) -> JSON:
        return {
            "sha": sha,
            "node_id": node_id("Blob", sha),
            "url": f"{self.api}/repos/{repo.full_name}/git/blobs/{sha}",
            "size": len(data),
            "content": base64.encodebytes(data).decode(),
            "encoding": "base64",
        }

    def content_file(self, repo: Repo, ref: str, path: str, sha: str, data: bytes) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        self_url = f"{api}/contents/{path}?ref={ref}"
        git_url = f"{api}/git/blobs/{sha}"
        html_url = f"{self.html}/{repo.full_name}/blob/{ref}/{path}"
        return {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.encodebytes(data).decode(),
            "sha": sha,
            "url": self_url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": f"{self.html}/{repo.full_name}/raw/{ref}/{path}",
            "_links": {"self": self_url, "git": git_url, "html": html_url},
        }

    def branch(self, repo: Repo, name: str, commit: CommitInfo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/branches/{name}"
        return {
            "name": name,
            "commit": self.commit(repo, commit),
            "_links": {"self": api, "html": f"{self.html}/{repo.full_name}/tree/{name}"},
            "protected": False,
            "protection": {
                "enabled": False,
                "required_status_checks": {
                    "enforcement_level": "off",
                    "contexts": [],
                    "checks": [],
                },
            },
            "protection_url": f"{api}/protection",
        }
