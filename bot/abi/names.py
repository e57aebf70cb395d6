"""Path-name rules of the audit: allowlist matching, CPU variants, proposed patterns.

Allowlist entries are ``fnmatch`` globs on the library path relative to the
package root, where ``*`` also crosses ``/`` (that is how vLLM's check reads
them). Case-sensitive matching, as ``fnmatch`` does on Linux where the check runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from bot.abi.model import MSG_CPU_VARIANT, AuditError

# The CPU build ships one copy of ``_C`` per instruction set (``_C_AVX2.abi3.so``,
# ``_C_AVX512.abi3.so``); the CUDA build, which the allowlist is written for, has none.
_CPU_VARIANT = re.compile(r"(?:^|/)_C_AVX[0-9A-Za-z_]*\.[^/]*so$")

# ``name.cpython-310-x86_64-linux-gnu.so``: the same extension built once per Python.
_PER_PYTHON = re.compile(r"^(?P<head>.*\.cpython-)(?P<version>\d+[a-z]*)(?P<tail>-[^/]*)$")

_GLOB_MAGIC = re.compile(r"([*?\[])")


def matches(path: str, pattern: str) -> bool:
    """Whether the allowlist ``pattern`` covers the library at ``path``."""
    return fnmatchcase(path, pattern)


def escape(path: str) -> str:
    """A pattern matching exactly ``path`` (its glob characters made literal)."""
    return _GLOB_MAGIC.sub(r"[\1]", path)


def cpu_variant_files(paths: Iterable[str]) -> tuple[str, ...]:
    """The paths that only a CPU-variant build has, sorted."""
    return tuple(sorted(path for path in paths if _CPU_VARIANT.search(path)))


def refuse_cpu_variant(paths: Iterable[str]) -> None:
    """Raise ``AuditError`` when ``paths`` come from a CPU-variant build."""
    found = cpu_variant_files(paths)
    if found:
        raise AuditError(MSG_CPU_VARIANT.format(files=", ".join(found)))


def propose_pattern(paths: Sequence[str], *, others: Iterable[str] = ()) -> tuple[str, ...]:
    """Allowlist patterns covering ``paths`` and none of ``others``, in order of first use.

    See ``patterns_by_path`` for the rules.
    """
    return tuple(dict.fromkeys(patterns_by_path(paths, others=others).values()))


def patterns_by_path(paths: Sequence[str], *, others: Iterable[str] = ()) -> dict[str, str]:
    """An allowlist pattern for each of ``paths``, covering none of ``others``.

    Builds of one extension for several Pythons (``_C.cpython-310-...so`` ..
    ``-314-``) share one glob on the version tag, so the next Python needs no
    new entry; every other path gets its own exact (escaped) pattern. A glob
    that would also match one of ``others`` falls back to exact patterns.
    """
    wanted = set(paths)
    outsiders = [path for path in others if path not in wanted]
    families: dict[str, list[str]] = {}
    for path in dict.fromkeys(paths):
        families.setdefault(_family_glob(path) or escape(path), []).append(path)

    proposed: dict[str, str] = {}
    for glob, members in families.items():
        exact = any(matches(path, glob) for path in outsiders)
        for path in members:
            proposed[path] = escape(path) if exact else glob
    return proposed


def _family_glob(path: str) -> str | None:
    found = _PER_PYTHON.match(path)
    if found is None:
        return None
    return f"{escape(found['head'])}*{escape(found['tail'])}"
