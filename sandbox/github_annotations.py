"""Check-run annotations: what a check run says about one place in one file.

GitHub's rules, as the Checks API documents them: a request carries at most 50
annotations (more take more requests, each appending to the run's list), each needs a
path, a start and end line, a level (notice, warning or failure) and a message — the
request's schema says all that, and the contract check refuses it before the route
runs — and columns only make sense when the annotation starts and ends on one line,
which only the route can check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.github_http import ApiError

BAD_LINES = "Invalid request.\n\nend_line is before start_line (annotations[{index}])."
COLUMNS_ON_ONE_LINE = (
    "Invalid request.\n\nstart_column and end_column need start_line and end_line to be "
    "the same (annotations[{index}])."
)


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    level: str
    message: str
    title: str | None = None
    raw_details: str | None = None
    start_column: int | None = None
    end_column: int | None = None


def annotations_from(output: Mapping[str, Any]) -> tuple[Annotation, ...]:
    """The annotations of a create or update body's ``output`` (already schema-valid),
    or the 422 GitHub gives for lines and columns that cannot be."""
    given: Sequence[Mapping[str, Any]] = output.get("annotations") or ()
    return tuple(_annotation(item, index) for index, item in enumerate(given))


def _annotation(data: Mapping[str, Any], index: int) -> Annotation:
    start, end = int(data["start_line"]), int(data["end_line"])
    if end < start:
        raise ApiError(422, BAD_LINES.format(index=index))
    columns = (data.get("start_column"), data.get("end_column"))
    if columns != (None, None) and start != end:
        raise ApiError(422, COLUMNS_ON_ONE_LINE.format(index=index))
    return Annotation(
        path=str(data["path"]),
        start_line=start,
        end_line=end,
        level=str(data["annotation_level"]),
        message=str(data["message"]),
        title=_optional_text(data, "title"),
        raw_details=_optional_text(data, "raw_details"),
        start_column=None if columns[0] is None else int(columns[0]),
        end_column=None if columns[1] is None else int(columns[1]),
    )


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def annotation_json(annotation: Annotation, blob_href: str) -> dict[str, Any]:
    """One item of ``checks/list-annotations``."""
    return {
        "path": annotation.path,
        "blob_href": blob_href,
        "start_line": annotation.start_line,
        "end_line": annotation.end_line,
        "start_column": annotation.start_column,
        "end_column": annotation.end_column,
        "annotation_level": annotation.level,
        "title": annotation.title,
        "message": annotation.message,
        "raw_details": annotation.raw_details,
    }
