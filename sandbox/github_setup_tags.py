"""Tags and releases on the GitHub stand-in, as tests and the demo script them.

Synchronous calls that stand for a maintainer: pushing, force-moving or deleting a tag
(lightweight or annotated, on any object), and drafting or publishing a release on a
tag. Each emits the webhooks GitHub sends for it; GitHub's refusals raise ValueError.

The webhooks, in order:

- a new tag: ``create`` (``ref_type: "tag"``), then ``push`` (``created: true``);
- a moved tag: ``push`` (``forced`` unless a fast-forward, see ``github_tag_push``);
- a deleted tag: ``delete``, then ``push`` (``deleted: true``);
- a release: ``release`` ``created``; unless a draft, then ``published`` and then
  ``released`` (``prereleased`` for a pre-release); publishing a draft later sends
  ``published`` and ``released``/``prereleased``, not ``created`` again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sandbox.git_objects import ZERO_SHA, Identity
from sandbox.git_tags import TAGS, check_tag_name, write_tag
from sandbox.github_core import GitHubCore
from sandbox.github_state import Release, Repo, User, newest_first

DEFAULT_TAGGER = ("Ada Lovelace", "ada@example.com")


class TagSetup(GitHubCore):
    # -- tags -------------------------------------------------------------------------------

    def create_tag(
        self,
        full_name: str,
        name: str,
        sha: str,
        *,
        annotated: bool = False,
        message: str = "",
        tagger: tuple[str, str] = DEFAULT_TAGGER,
        when: datetime | None = None,
        pushed_by: str | None = None,
    ) -> str:
        """Push tag ``name`` on the object ``sha`` (a commit, tree, blob or tag), as the
        owner unless ``pushed_by``; returns what ``refs/tags/<name>`` points at: ``sha``, or
        for ``annotated`` the new tag object (``message`` by ``tagger`` at ``when``)."""
        repo = self.repo(full_name)
        target = self._tag_target(full_name, name, sha, annotated, message, tagger, when)
        if not self.store.update_ref(full_name, TAGS + name, target, ZERO_SHA):
            raise ValueError(f"tag {name!r} already exists in {full_name}")
        self._ref_changed_sync(repo, TAGS + name, ZERO_SHA, target, self._pusher(repo, pushed_by))
        return target

    def move_tag(
        self,
        full_name: str,
        name: str,
        sha: str,
        *,
        annotated: bool = False,
        message: str = "",
        tagger: tuple[str, str] = DEFAULT_TAGGER,
        when: datetime | None = None,
        pushed_by: str | None = None,
    ) -> str:
        """Force-push the existing tag ``name`` onto ``sha`` (a new annotated tag object if
        ``annotated``, as ``git tag -f -a``); returns the ref's new value."""
        repo = self.repo(full_name)
        before = self.store.get_ref(full_name, TAGS + name)
        if before is None:
            raise ValueError(f"no tag {name!r} in {full_name}")
        target = self._tag_target(full_name, name, sha, annotated, message, tagger, when)
        if not self.store.update_ref(full_name, TAGS + name, target, before):
            raise RuntimeError(f"tag {name} moved while it was being moved")
        if target != before:
            pusher = self._pusher(repo, pushed_by)
            self._ref_changed_sync(repo, TAGS + name, before, target, pusher)
        return target

    def delete_tag(self, full_name: str, name: str, *, pushed_by: str | None = None) -> None:
        """Delete the tag ``name``. A published release on it turns into a draft, as on
        GitHub, where a release cannot stay published without its tag."""
        repo = self.repo(full_name)
        before = self.store.get_ref(full_name, TAGS + name)
        if before is None or not self.store.delete_ref(full_name, TAGS + name, before):
            raise ValueError(f"no tag {name!r} in {full_name}")
        now = self.clock()
        for release in repo.releases.values():
            if release.tag_name == name and not release.draft:
                release.draft, release.published_at, release.updated_at = True, None, now
        self._ref_changed_sync(repo, TAGS + name, before, ZERO_SHA, self._pusher(repo, pushed_by))

    def tags(self, full_name: str) -> dict[str, str]:
        """Every tag's name and what its ref points at (a tag object for annotated tags)."""
        refs = self.store.list_refs(full_name, TAGS)
        return {ref.removeprefix(TAGS): sha for ref, sha in refs.items()}

    def _tag_target(
        self,
        full_name: str,
        name: str,
        sha: str,
        annotated: bool,
        message: str,
        tagger: tuple[str, str],
        when: datetime | None,
    ) -> str:
        check_tag_name(self.store, full_name, name)
        kind = self.store.object_type(full_name, sha)
        if kind is None:
            raise ValueError(f"no object {sha!r} in {full_name}")
        if not annotated:
            return sha
        stamp = int(when.timestamp()) if when else int(self.clock())
        who = Identity(tagger[0], tagger[1], stamp)
        return write_tag(
            self.store,
            full_name,
            name=name,
            target=sha,
            target_type=kind,
            tagger=who,
            message=message,
        )

    def _pusher(self, repo: Repo, login: str | None) -> User:
        return self.user(login or repo.owner.login)

    # -- releases ---------------------------------------------------------------------------

    def create_release(
        self,
        full_name: str,
        tag: str,
        *,
        name: str | None = None,
        body: str = "",
        prerelease: bool = False,
        draft: bool = False,
        author: str | None = None,
        target_commitish: str | None = None,
    ) -> dict[str, Any]:
        """A release on the existing tag ``tag``, by ``author`` (the owner unless given);
        returns it as the REST API shows it. GitHub allows one release per tag."""
        repo = self.repo(full_name)
        if self.store.get_ref(full_name, TAGS + tag) is None:
            raise ValueError(f"no tag {tag!r} in {full_name}")
        if any(release.tag_name == tag for release in repo.releases.values()):
            raise ValueError(f"a release on {tag!r} already exists in {full_name}")
        now = self.clock()
        release = Release(
            id=self.ids(),
            tag_name=tag,
            target_commitish=target_commitish or repo.default_branch,
            name=name,
            body=body,
            draft=draft,
            prerelease=prerelease,
            author=self._pusher(repo, author),
            created_at=now,
            published_at=None if draft else now,
            updated_at=now,
        )
        repo.releases[release.id] = release
        self._emit_release("created", repo, release, release.author)
        if not draft:
            self._announce_published(repo, release, release.author)
        return self.json.release(repo, release)

    def publish_release(
        self, full_name: str, release_id: int, *, by: str | None = None
    ) -> dict[str, Any]:
        """Publish a draft (as its author unless ``by``); its tag must exist by then."""
        repo = self.repo(full_name)
        release = repo.releases.get(release_id)
        if release is None or not release.draft:
            raise ValueError(f"release {release_id} is not a draft of {full_name}")
        if self.store.get_ref(full_name, TAGS + release.tag_name) is None:
            raise ValueError(f"no tag {release.tag_name!r} in {full_name}")
        now = self.clock()
        release.draft, release.published_at, release.updated_at = False, now, now
        self._announce_published(repo, release, self.user(by) if by else release.author)
        return self.json.release(repo, release)

    def releases(self, full_name: str) -> list[dict[str, Any]]:
        """Every release, drafts too, newest first (as the REST list shows them)."""
        repo = self.repo(full_name)
        return [self.json.release(repo, r) for r in newest_first(repo.releases.values())]

    def _announce_published(self, repo: Repo, release: Release, sender: User) -> None:
        self._emit_release("published", repo, release, sender)
        follow_up = "prereleased" if release.prerelease else "released"
        self._emit_release(follow_up, repo, release, sender)

    def _emit_release(self, action: str, repo: Repo, release: Release, sender: User) -> None:
        payload = self.events.release(action, repo, self.json.release(repo, release), sender)
        self.emit("release", payload, repo)
