"""Path globs, as the config's path-glob values mean them (``landing.paths``,
``routing.paths``, a migration's ``file``): ``*`` and ``?`` stay inside one path
segment, ``**`` crosses them, ``[...]`` is a character class (``[!...]`` negated), and
a glob matches the whole repo-relative path. Every feature that matches a path
against one of them calls this."""

from __future__ import annotations

import re
from functools import lru_cache


def translate(pattern: str) -> str:
    """A glob as a regex body: ``*``/``?`` stay inside a segment, ``**`` crosses them."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more whole directories
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            inside = pattern[i + 1 : end]
            negate = inside[:1] == "!"
            body = re.escape(inside[1:] if negate else inside).replace(r"\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _path_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(translate(pattern) + r"\Z")


def path_matches(path: str, glob: str) -> bool:
    """Whether a repo-relative ``path`` matches ``glob`` (the whole path)."""
    return _path_glob(glob).match(path) is not None
