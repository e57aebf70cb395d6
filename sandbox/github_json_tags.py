"""Tag and release JSON of the GitHub stand-in: repository tags, annotated tag objects
and releases, as GitHub's OpenAPI schemas (``tag``, ``git-tag``, ``release``) shape them."""

from __future__ import annotations

import hashlib

from sandbox.git_objects import TagInfo
from sandbox.github_json_base import JSON, iso, node_id
from sandbox.github_json_git import GitDataJson
from sandbox.github_state import Release, Repo


class TagJson(GitDataJson):
    def tag(self, repo: Repo, name: str, commit: str) -> JSON:
        """An entry of ``GET /repos/{owner}/{repo}/tags``: the tag and the commit it peels to."""
        api = f"{self.api}/repos/{repo.full_name}"
        return {
            "name": name,
            "commit": {"sha": commit, "url": f"{api}/commits/{commit}"},
            # Today's answers name the archive by full ref (the spec's example predates it).
            "zipball_url": f"{api}/zipball/refs/tags/{name}",
            "tarball_url": f"{api}/tarball/refs/tags/{name}",
            # The tag's ref's id: the same one git/get-ref gives.
            "node_id": node_id("Ref", f"{repo.id}:refs/tags/{name}"),
        }

    def git_tag(self, repo: Repo, tag: TagInfo) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}/git"
        tagger = tag.tagger
        return {
            "node_id": node_id("Tag", tag.sha),
            "tag": tag.tag,
            "sha": tag.sha,
            "url": f"{api}/tags/{tag.sha}",
            "message": tag.message,
            # The schema wants a tagger; only ancient tags (never made here) lack one.
            "tagger": self._identity(tagger)
            if tagger is not None
            else {"name": "", "email": "", "date": iso(0)},
            "object": {
                "type": tag.type,
                "sha": tag.object,
                "url": f"{api}/{tag.type}s/{tag.object}",
            },
            "verification": self._verification(),
        }

    def release(self, repo: Repo, release: Release) -> JSON:
        api = f"{self.api}/repos/{repo.full_name}"
        url = f"{api}/releases/{release.id}"
        if release.draft:
            # A draft's page is not under its tag's name, and it has no archives yet.
            seed = f"{repo.id}:{release.id}".encode()
            page = "untagged-" + hashlib.sha1(seed).hexdigest()[:20]
            tarball: str | None = None
            zipball: str | None = None
        else:
            page = release.tag_name
            tarball = f"{api}/tarball/{release.tag_name}"
            zipball = f"{api}/zipball/{release.tag_name}"
        published = release.published_at
        return {
            "url": url,
            "html_url": f"{self.html}/{repo.full_name}/releases/tag/{page}",
            "assets_url": f"{url}/assets",
            "upload_url": f"{url}/assets{{?name,label}}",
            "tarball_url": tarball,
            "zipball_url": zipball,
            "id": release.id,
            "node_id": node_id("Release", release.id),
            "tag_name": release.tag_name,
            "target_commitish": release.target_commitish,
            "name": release.name,
            # Release notes left empty come back as null, as in GitHub's recordings.
            "body": release.body or None,
            "draft": release.draft,
            "prerelease": release.prerelease,
            "immutable": False,
            "created_at": iso(release.created_at),
            "published_at": iso(published) if published is not None else None,
            "updated_at": iso(release.updated_at),
            "author": self.user(release.author),
            "assets": [],
        }
