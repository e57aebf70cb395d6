"""New bare repositories, each a copy of what ``git init`` made once per process.

The end-to-end tests make two or three repositories each, well over a thousand a run,
and a ``git init`` process cost ~2 ms. ``git init --bare --template=`` writes the same
few files whatever the path (no absolute path goes into a bare repository), so the
first repository with a default branch is made by git and kept aside, and later ones
are copies of it: byte for byte what git would have written.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

_made: dict[str, Path] = {}  # default branch -> a repository git initialised
_lock = threading.Lock()


def init_bare(path: Path, default_branch: str, env: Mapping[str, str]) -> None:
    """An empty bare repository at ``path`` whose HEAD names ``default_branch``; where
    something is at ``path`` already, git itself (re)initialises it, as before."""
    if path.exists():
        _git_init(path, default_branch, env)
    else:
        shutil.copytree(_initialised(default_branch, env), path)


def _initialised(default_branch: str, env: Mapping[str, str]) -> Path:
    with _lock:
        made = _made.get(default_branch)
        if made is None:
            kept = Path(tempfile.mkdtemp(prefix="git-init-"))
            atexit.register(shutil.rmtree, kept, ignore_errors=True)
            made = _made[default_branch] = kept / "repository.git"
            _git_init(made, default_branch, env)
        return made


def _git_init(path: Path, default_branch: str, env: Mapping[str, str]) -> None:
    subprocess.run(
        # No template: GitHub's repositories run no hooks, and the sample hooks and files
        # a template copies would be a dozen files to write and remove per repository.
        [
            "git",
            "init",
            "--bare",
            "--quiet",
            "--template=",
            f"--initial-branch={default_branch}",
            str(path),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
