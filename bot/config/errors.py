"""Config mistakes, located, and pydantic's validation errors told in YAML terms."""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import ErrorDetails
from yaml.error import Mark

from bot.config.messages import (
    MSG_DID_YOU_MEAN,
    MSG_MISSING,
    MSG_NOT_ONE_OF,
    MSG_QUOTE_HINT,
    MSG_TOO_SHORT,
    MSG_UNKNOWN_KEY,
    MSG_WRONG_TYPE,
    plural,
)
from bot.config.models import RepoConfig


@dataclass(frozen=True)
class ConfigProblem:
    """One mistake, located: line and column are 1-based; field is a dotted path."""

    file: str
    line: int | None
    column: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ConfigError(Exception):
    """The config is unusable; ``problems`` lists every mistake in file order."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems = tuple(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
        super().__init__("\n".join(str(problem) for problem in self.problems))


def _format_path(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def problem_at(
    filename: str, mark: Mark | None, path: Sequence[str | int], message: str
) -> ConfigProblem:
    line = None if mark is None else mark.line + 1
    column = None if mark is None else mark.column + 1
    return ConfigProblem(filename, line, column, _format_path(path), message)


def describe(value: object) -> str:
    """How the value reads in YAML terms, for 'expected X, got Y' messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, datetime.date):
        return f"date {value.isoformat()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, tuple | list):  # YAML sequences are read as tuples
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "tuple_type": "a list",
    "model_type": "a mapping",
    "dict_type": "a mapping",
}


def _model_at(path: Sequence[str | int]) -> type[BaseModel] | None:
    """The schema model describing the mapping at ``path`` (for did-you-mean)."""
    model: type[BaseModel] = RepoConfig
    for part in path:
        if isinstance(part, int):
            continue  # list items share the list's model, unwrapped below
        field = model.model_fields.get(part)
        found = None if field is None else _unwrap_model(field.annotation)
        if found is None:
            return None
        model = found
    return model


def _unwrap_model(annotation: Any) -> type[BaseModel] | None:
    # The schema wraps a section's model one level deep at most: X | None, tuple[X, ...].
    candidates = get_args(annotation) if get_origin(annotation) is not None else (annotation,)
    models = [arg for arg in candidates if isinstance(arg, type) and issubclass(arg, BaseModel)]
    return models[0] if models else None


def _choices_at(loc: tuple[int | str, ...]) -> tuple[object, ...]:
    """The values the ``Literal`` at ``loc`` allows (a field, or an item of a list field)."""
    names = [part for part in loc if isinstance(part, str)]
    model = _model_at(tuple(names[:-1])) if names else None
    field = model.model_fields.get(names[-1]) if model is not None else None
    return _literal_choices(field.annotation) if field is not None else ()


def _literal_choices(annotation: Any) -> tuple[object, ...]:
    # Literal["a", "b"] gives its values; tuple[Literal[...], ...] and X | None look inside.
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return next((found for found in map(_literal_choices, get_args(annotation)) if found), ())


def message_for(error: ErrorDetails) -> str:
    """The text for one pydantic error."""
    kind, value, loc = error["type"], error["input"], error["loc"]
    if kind == "missing":
        return MSG_MISSING
    if kind == "extra_forbidden":
        key = str(loc[-1])
        message = MSG_UNKNOWN_KEY.format(key=key)
        model = _model_at(loc[:-1])
        known = list(model.model_fields) if model is not None else []
        close = difflib.get_close_matches(key, known, n=1)
        return message + MSG_DID_YOU_MEAN.format(suggestion=close[0]) if close else message
    if kind in _EXPECTED:
        message = MSG_WRONG_TYPE.format(expected=_EXPECTED[kind], kind=describe(value))
        scalar = isinstance(value, bool | int | float | datetime.date)
        return message + MSG_QUOTE_HINT if kind == "string_type" and scalar else message
    if kind == "literal_error":
        choices = ", ".join(repr(choice) for choice in _choices_at(loc))
        return MSG_NOT_ONE_OF.format(choices=choices, kind=describe(value))
    if kind == "too_short":
        minimum = int(error.get("ctx", {}).get("min_length", 1))
        return MSG_TOO_SHORT.format(items=plural(minimum, "item"))
    return error["msg"]  # our own checks: already one of the MSG_ texts
