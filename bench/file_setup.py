"""File setup in the GitHub stand-in: batched object writes against one process per file.

Builds ``--files`` small text files in nested directories (default 4,439, the
repository that took 175 s to set up one ``git hash-object`` at a time) and times,
in the same run, each in a fresh repository:

- ``batched``: ``GitStore.write_files``, what ``create_repo`` and ``commit`` use
  (one ``git fast-import`` writes every blob and tree);
- ``create_repo``: the whole setup call (the above, the commit, the ref and the
  push webhook's payload);
- ``reference``: the simplest loop, one ``git hash-object -w`` per file, then
  the tree from those blobs in one process (``GitStore.make_tree``).

Both paths must build the same tree. Reports the median of ``--runs`` runs and
the ratio reference/batched.

Usage: python bench/file_setup.py [--files 4439] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.git_objects import TreeChange
from sandbox.github_server import GitHubSandbox
from sandbox.gitstore import GitStore
from sandbox.keys import generate_app_key

REPO = "bench/files"
# The same isolation from the machine's git configuration as GitStore's own.
GIT_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def make_files(count: int) -> dict[str, str]:
    """Small text files three directories deep, like a source tree."""
    return {
        f"pkg{i % 13}/mod{i % 7}/sub{i % 5}/file_{i}.py": f"# file {i}\nVALUE = {i}\n"
        for i in range(count)
    }


def batched(root: Path, files: dict[str, str]) -> str:
    store = GitStore(root)
    store.init(REPO, "main")
    return store.write_files(REPO, None, files)


def reference(root: Path, files: dict[str, str]) -> str:
    store = GitStore(root)
    store.init(REPO, "main")
    git_dir = str(store.path(REPO))
    changes = []
    for path, text in files.items():
        done = subprocess.run(
            ["git", "--git-dir", git_dir, "hash-object", "-w", "--stdin"],
            input=text.encode(),
            capture_output=True,
            check=True,
            env=GIT_ENV,
        )
        changes.append(TreeChange(path, "100644", "blob", done.stdout.decode().strip()))
    return store.make_tree(REPO, None, changes)


def through_create_repo(root: Path, files: dict[str, str], public_key: str) -> str:
    sandbox = GitHubSandbox(root, app_id="1", app_public_key_pem=public_key, webhook_secret="s")
    sha = sandbox.create_repo(REPO, files=files)
    return sandbox.store.read_commit(REPO, sha).tree


def timed(run: Callable[[Path], str]) -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="bench-files-") as tmp:
        start = time.perf_counter()
        tree = run(Path(tmp))
        return time.perf_counter() - start, tree


def main(count: int, runs: int) -> None:
    files = make_files(count)
    public_key = generate_app_key()[1]
    paths: dict[str, Callable[[Path], str]] = {
        "batched (GitStore.write_files)": lambda root: batched(root, files),
        "create_repo (commit, ref, push payload too)": lambda root: through_create_repo(
            root, files, public_key
        ),
        "reference (one hash-object per file)": lambda root: reference(root, files),
    }
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    trees: set[str] = set()
    for _ in range(runs):
        for name, run in paths.items():
            elapsed, tree = timed(run)
            seconds[name].append(elapsed)
            trees.add(tree)
    if len(trees) != 1:
        raise SystemExit(f"the paths built different trees: {sorted(trees)}")
    median = {name: statistics.median(values) for name, values in seconds.items()}
    fast, slow = (
        median["batched (GitStore.write_files)"],
        median["reference (one hash-object per file)"],
    )
    print(f"{count} files in nested directories; median of {runs} runs; same tree {trees.pop()}")
    print("| path | seconds |")
    print("|---|---|")
    for name, value in median.items():
        print(f"| {name} | {value:.3f} |")
    print(f"ratio reference/batched: {slow / fast:.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4439)
    parser.add_argument("--runs", type=int, default=3)
    parsed = parser.parse_args()
    main(parsed.files, parsed.runs)
