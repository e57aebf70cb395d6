"""Scripting worlds for the stand-ins: people, repositories, pins, builds and jobs with logs.

One API for the test suite, the demo, the benchmarks and a maintainer who wants to
replay a situation of their own through the real bot::

    async with world(tmp_path, buildkite=True) as w:
        pinned = w.upstream()
        w.downstream(pinned, config=CONFIG + ALLOWLIST_CONFIG + LANDING_CONFIG)
        w.allowlist(FA3_ENTRY)
        w.person("alice", "write")
        await w.start()
        new = await w.merge_upstream("hopper/api.cpp", "// stable ABI\\n", "Migrate (#165)")
        await w.release(await w.tag("v2.0", annotated=True), name="2.0")
        await w.settle()  # raises HandlerFailures if a handler failed
        [pull] = w.bump_pulls()
        await w.build(pull, [w.job("torch-stable-abi-audit", log=[stale_line(FA3_ENTRY)])])
        await w.approve(pull, by="alice")
        await w.settle()

Every call is the stand-ins' own setup API underneath (``w.github``, ``w.ci``), so a
world scripted here and one scripted by hand behave the same; a repository of one's
own comes in with ``w.github.import_repository``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.abi.log import PASSED
from bot.pins import text as bump_text
from bot.store.protocol import DeliveryRecord
from sandbox.buildkite_server import BuildkiteSandbox
from sandbox.buildkite_state import JobSpec
from sandbox.git_files import FileContent
from sandbox.github_server import GitHubSandbox
from sandbox.harness import BotProcess, Harness, harness
from sandbox.vllm_shapes import (
    ABI_CHECK_FILE,
    CONFIG,
    DOWNSTREAM,
    DOWNSTREAM_INSTALLATION,
    PIN_FILE,
    PIN_TEMPLATE,
    PIPELINE,
    UPSTREAM,
    UPSTREAM_INSTALLATION,
    abi_check,
    buildkite_log,
)

PERMISSIONS = ("read", "triage", "write", "maintain", "admin")
DEFAULT_UPSTREAM_HISTORY = (("hopper/api.cpp", "// v1\n", "Add hopper API (#160)"),)
# Job states whose first attempt exits non-zero unless told otherwise.
_FAILING_STATES = frozenset({"failed", "timed_out"})


@dataclass
class World:
    """A harness (the stand-ins, and the bot once started) with a script-friendly face."""

    env: Harness
    upstream_name: str = UPSTREAM
    downstream_name: str = DOWNSTREAM

    @property
    def github(self) -> GitHubSandbox:
        return self.env.sandbox

    @property
    def ci(self) -> BuildkiteSandbox:
        return self.env.ci

    # -- repositories and pins ----------------------------------------------------------

    def upstream(
        self,
        full_name: str = UPSTREAM,
        *,
        history: Sequence[tuple[str, str, str]] = DEFAULT_UPSTREAM_HISTORY,
        installation_id: int = UPSTREAM_INSTALLATION,
    ) -> str:
        """An upstream with a README and ``history`` (path, content, subject) on top;
        returns its head."""
        self.upstream_name = full_name
        self.github.create_repo(
            full_name, files={"README.md": "# upstream\n"}, installation_id=installation_id
        )
        for path, content, subject in history:
            self.github.commit(full_name, {path: content}, subject)
        return self.github.head(full_name)

    def downstream(
        self,
        pinned: str,
        *,
        full_name: str = DOWNSTREAM,
        config: str = CONFIG,
        pin_file: str = PIN_FILE,
        pin_template: str = PIN_TEMPLATE,
        files: Mapping[str, FileContent] | None = None,
        installation_id: int = DOWNSTREAM_INSTALLATION,
        allow_auto_merge: bool = False,
    ) -> str:
        """The repository the bot serves: ``pin_file`` pinning ``pinned``, the bot's config
        and ``files``; returns its head."""
        self.downstream_name = full_name
        return self.github.create_repo(
            full_name,
            files={
                pin_file: pin_template.format(sha=pinned),
                ".github/followup-bot.yml": config,
                "README.md": "# vllm\n",
                **(files or {}),
            },
            installation_id=installation_id,
            allow_auto_merge=allow_auto_merge,
        )

    def allowlist(self, *entries: str, pipeline: str = PIPELINE) -> str:
        """The ABI audit script allowlisting ``entries`` on the default branch, and the
        Buildkite pipeline that runs it; returns the new head."""
        sha = self.github.commit(
            self.downstream_name, {ABI_CHECK_FILE: abi_check(*entries)}, "Add the ABI audit"
        )
        self.ci.add_pipeline(pipeline, repository=f"https://github.com/{self.downstream_name}.git")
        return sha

    def person(self, login: str, permission: str = "write", *, repo: str | None = None) -> str:
        """Someone with ``permission`` on the downstream repository (or ``repo``)."""
        if permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {', '.join(PERMISSIONS)}")
        self.github.set_permission(repo or self.downstream_name, login, permission)
        return login

    async def merge_upstream(self, path: str, content: str, subject: str) -> str:
        """A change lands on the upstream's default branch (its ``push`` is delivered)."""
        return await self.github.push_commit(self.upstream_name, {path: content}, subject)

    async def tag(
        self,
        name: str,
        *,
        sha: str | None = None,
        repo: str | None = None,
        annotated: bool = False,
        message: str = "",
    ) -> str:
        """Tag ``sha`` (the default branch's head unless given) of the upstream (or
        ``repo``) and deliver its ``create`` and ``push``; returns what the tag ref names
        (the tag object when ``annotated``). Moving or deleting one: ``w.github``'s
        ``move_tag`` and ``delete_tag``."""
        full_name = repo or self.upstream_name
        branch = self.github.repo(full_name).default_branch
        target = sha or self.github.head(full_name, branch)
        found = self.github.create_tag(
            full_name, name, target, annotated=annotated, message=message
        )
        await self.github.flush()
        return found

    async def release(
        self,
        tag: str,
        *,
        repo: str | None = None,
        name: str | None = None,
        body: str = "",
        prerelease: bool = False,
        draft: bool = False,
    ) -> dict[str, Any]:
        """A release on the upstream's (or ``repo``'s) existing ``tag``, its ``release``
        webhooks delivered; returns it as the REST API shows it."""
        made = self.github.create_release(
            repo or self.upstream_name,
            tag,
            name=name,
            body=body,
            prerelease=prerelease,
            draft=draft,
        )
        await self.github.flush()
        return made

    # -- the bot ------------------------------------------------------------------------

    async def start(self) -> BotProcess:
        return await self.env.start()

    async def stop(self) -> None:
        await self.env.stop()

    async def settle(self, *, expect_failures: bool = False) -> list[DeliveryRecord]:
        """Deliver everything and wait for the bot; see ``Harness.settle``."""
        return await self.env.settle(expect_failures=expect_failures)

    # -- pull requests ------------------------------------------------------------------

    def bump_pulls(self, pin: str = "flash-attention", state: str = "all") -> list[dict[str, Any]]:
        branch = bump_text.BRANCH_PREFIX + pin
        return [
            pull
            for pull in self.github.pulls(self.downstream_name, state=state)
            if pull["head"]["ref"] == branch
        ]

    def pull(self, number: int) -> dict[str, Any]:
        """The pull request as GitHub shows it now."""
        for pull in self.github.pulls(self.downstream_name):
            if pull["number"] == number:
                return pull
        raise KeyError(f"no pull request #{number} in {self.downstream_name}")

    def comments(self, pull: Mapping[str, Any]) -> list[str]:
        return [c["body"] for c in self.github.comments(self.downstream_name, int(pull["number"]))]

    async def comment(self, pull: Mapping[str, Any], body: str, *, by: str) -> None:
        self.github.comment_as(self.downstream_name, int(pull["number"]), by, body)
        await self.github.flush()

    async def approve(self, pull: Mapping[str, Any], *, by: str) -> dict[str, Any]:
        """``by`` approves the PR's current head."""
        number = int(pull["number"])
        review = self.github.submit_review(
            self.downstream_name, number, by, commit_id=self.pull(number)["head"]["sha"]
        )
        await self.github.flush()
        return review

    # -- Buildkite ----------------------------------------------------------------------

    @staticmethod
    def job(
        step_key: str,
        *,
        name: str | None = None,
        state: str = "passed",
        log: Sequence[str] = (),
        exit_status: int | None = None,
        **more: Any,
    ) -> JobSpec:
        """A job's first attempt; ``log`` lines become a raw Buildkite log. A passing ABI
        audit's log ends in the audit's success line, as vLLM's script prints it."""
        if exit_status is None and state in ("passed", *_FAILING_STATES):
            exit_status = 1 if state in _FAILING_STATES else 0
        return JobSpec(
            step_key=step_key,
            name=name or step_key,
            state=state,
            exit_status=exit_status,
            log=buildkite_log(*log) if log else b"",
            **more,
        )

    @staticmethod
    def audit_passed(step_key: str, *lines: str) -> JobSpec:
        return World.job(step_key, log=[*lines, PASSED])

    async def build(
        self,
        pull: Mapping[str, Any] | None,
        jobs: Sequence[JobSpec],
        *,
        commit: str | None = None,
        branch: str | None = None,
        pipeline: str = PIPELINE,
    ) -> int:
        """A finished build of the PR's head (or of ``commit`` on ``branch``), its webhooks
        delivered; returns its number."""
        if pull is not None:
            commit = commit or str(pull["head"]["sha"])
            branch = branch or str(pull["head"]["ref"])
        if commit is None or branch is None:
            raise ValueError("a build needs a pull request or a commit and a branch")
        build = self.ci.create_build(pipeline, commit=commit, branch=branch, jobs=jobs)
        number = int(build["number"])
        await self.ci.finish_build(pipeline, number)
        return number


@asynccontextmanager
async def world(
    workdir: Path,
    *,
    buildkite: bool = False,
    repositories: tuple[str, ...] = (DOWNSTREAM,),
    strict: bool = True,
) -> AsyncIterator[World]:
    """The stand-ins (Buildkite's too with ``buildkite``), the bot not started yet."""
    async with harness(
        workdir, repositories=repositories, start=False, buildkite=buildkite, strict=strict
    ) as env:
        yield World(env)
