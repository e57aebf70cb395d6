"""Torch ABI audit of a real wheel: wall time and peak RSS of extraction and of the audit.

Each phase runs in a fresh child process, so its peak resident set size
(``getrusage`` ``ru_maxrss`` of that process: interpreter and imports
included) is its own and not the other phase's; the ``nm`` processes the
audit starts are reported separately (the largest one). The download is not
measured: fetch the wheel first, for example the vLLM 0.31.0 CUDA wheel
(about 320 MB):

    pip download vllm==0.31.0 --no-deps --only-binary :all: -d DIR

Never commit the wheel. Aims (issue 3): at most 10 s and 300 MB on 2 cores.

Usage: python bench/audit_wheel.py WHEEL [--allowlist-file F] [--variable NAME]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bot.abi.judge import DEFAULT_VARIABLE, audit_directory
from bot.abi.wheel import extract_libraries
from bot.edit.allowlist import read_allowlist


def _peak_rss_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def run_phase(args: argparse.Namespace) -> None:
    """Child side: run one phase and print its figures as one JSON line."""
    started = time.perf_counter()
    detail: dict[str, object]
    if args.phase == "extract":
        root = extract_libraries(args.wheel, args.dest)
        files = [path for path in root.rglob("*.so") if path.is_file()]
        detail = {
            "root": root.name,
            "libraries": len(files),
            "bytes": sum(f.stat().st_size for f in files),
        }
    else:
        allowlist = _allowlist(args.allowlist_file, args.variable)
        result = audit_directory(args.dest / args.root, allowlist, variable=args.variable)
        detail = {"libraries": len(result.libraries), "check_lines": list(result.check_lines)}
    elapsed = time.perf_counter() - started
    figures = {
        "seconds": elapsed,
        "peak_rss_mb": _peak_rss_mb(resource.RUSAGE_SELF),
        "largest_child_rss_mb": _peak_rss_mb(resource.RUSAGE_CHILDREN),
    }
    print(json.dumps(figures | detail))


def _allowlist(path: Path | None, variable: str) -> tuple[str, ...]:
    if path is None:
        return ()
    return read_allowlist(
        path.read_text(encoding="utf-8"), variable=variable, filename=str(path)
    ).entries


def _child(args: argparse.Namespace, phase: str, dest: Path, root: str = "") -> dict[str, Any]:
    command = [sys.executable, __file__, str(args.wheel), "--phase", phase, "--dest", str(dest)]
    command += ["--root", root, "--variable", args.variable]
    if args.allowlist_file is not None:
        command += ["--allowlist-file", str(args.allowlist_file)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main(args: argparse.Namespace) -> None:
    size_mb = args.wheel.stat().st_size / 1e6
    print(f"wheel: {args.wheel.name} ({size_mb:.0f} MB)")
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as scratch:
        extract = _child(args, "extract", Path(scratch))
        audit = _child(args, "audit", Path(scratch), str(extract["root"]))
    print(
        f"extract: {extract['seconds']:.2f} s, peak RSS {extract['peak_rss_mb']:.0f} MB"
        f" ({extract['libraries']} libraries, {extract['bytes'] / 1e6:.0f} MB)"
    )
    print(
        f"audit:   {audit['seconds']:.2f} s, peak RSS {audit['peak_rss_mb']:.0f} MB,"
        f" largest nm {audit['largest_child_rss_mb']:.0f} MB"
    )
    print(f"total:   {extract['seconds'] + audit['seconds']:.2f} s")
    for line in audit["check_lines"]:
        print(f"  {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--allowlist-file", type=Path)
    parser.add_argument("--variable", default=DEFAULT_VARIABLE)
    parser.add_argument("--phase", choices=("extract", "audit"), help=argparse.SUPPRESS)
    parser.add_argument("--dest", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--root", default="", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.phase:
        run_phase(arguments)
    else:
        main(arguments)
