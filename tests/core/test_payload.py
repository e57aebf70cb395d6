"""The typed payload readers: one clear ``PermanentError`` for a missing or wrong-typed field."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.errors import PermanentError
from bot.core.payload import (
    ERROR_MISSING_FIELD,
    ERROR_WRONG_TYPE,
    each,
    field,
    optional,
    user_login,
)

PAYLOAD: dict[str, Any] = {
    "comment": {"id": 7, "body": "hi", "user": {"login": "alice"}, "score": 1.5},
    "issue": {"number": 3, "labels": [{"name": "a"}, {"name": "b"}], "user": None},
    "flag": True,
    "nothing": None,
    "count": 2,
}


def missing(path: str) -> str:
    return ERROR_MISSING_FIELD.format(path=path)


def wrong(path: str, actual: str, kind: str) -> str:
    return ERROR_WRONG_TYPE.format(path=path, actual=actual, kind=kind)


def test_present_fields_are_returned() -> None:
    assert field(PAYLOAD, "comment.body") == "hi"
    assert field(PAYLOAD, "comment.id", int) == 7
    assert field(PAYLOAD, "comment.user", dict) == {"login": "alice"}
    assert field(PAYLOAD, "issue.labels", list) == [{"name": "a"}, {"name": "b"}]
    assert field(PAYLOAD, "flag", bool) is True
    assert field(PAYLOAD, "comment.score", float) == 1.5
    assert field(PAYLOAD, "count", float) == 2  # JSON does not tell 2 from 2.0
    assert optional(PAYLOAD, "comment.user.login") == "alice"


@pytest.mark.parametrize(
    ("path", "kind", "message"),
    [
        ("comment.missing", str, missing("comment.missing")),
        ("nothing", str, missing("nothing")),  # null is absent
        ("nothing.deeper", str, missing("nothing.deeper")),
        ("issue.user.login", str, missing("issue.user.login")),
        ("comment.body", int, wrong("comment.body", "a string", "an integer")),
        ("comment.id", str, wrong("comment.id", "an integer", "a string")),
        ("flag", int, wrong("flag", "a boolean", "an integer")),  # true is not 1
        ("count", bool, wrong("count", "an integer", "a boolean")),
        ("comment.user", str, wrong("comment.user", "an object", "a string")),
        ("issue.labels", dict, wrong("issue.labels", "an array", "an object")),
        ("comment.score", int, wrong("comment.score", "a number", "an integer")),
        # an object expected on the way: named where it was not one
        ("comment.body.text", str, wrong("comment.body", "a string", "an object")),
        ("count.x.y", str, wrong("count", "an integer", "an object")),
        ("issue.labels.name", str, wrong("issue.labels", "an array", "an object")),
    ],
)
def test_field_errors(path: str, kind: type[Any], message: str) -> None:
    with pytest.raises(PermanentError) as raised:
        field(PAYLOAD, path, kind)
    assert str(raised.value) == message


def test_optional_is_none_only_when_absent_or_null() -> None:
    assert optional(PAYLOAD, "comment.missing") is None
    assert optional(PAYLOAD, "nothing") is None
    assert optional(PAYLOAD, "issue.user.login") is None  # null on the way
    assert optional(PAYLOAD, "absent.entirely.here", int) is None
    with pytest.raises(PermanentError) as raised:
        optional({"sender": "x"}, "sender.login")
    assert str(raised.value) == wrong("sender", "a string", "an object")
    with pytest.raises(PermanentError) as raised:
        optional({"comment": {"body": 5}}, "comment.body")
    assert str(raised.value) == wrong("comment.body", "an integer", "a string")


def test_each() -> None:
    assert each(PAYLOAD, "issue.labels", "name") == ["a", "b"]
    assert each(PAYLOAD, "issue.absent", "name") == []
    assert each({"labels": None}, "labels", "name") == []
    cases: list[tuple[dict[str, Any], str]] = [
        ({"labels": "x"}, wrong("labels", "a string", "an array")),
        ({"labels": [{"name": "a"}, "b"]}, wrong("labels[1]", "a string", "an object")),
        ({"labels": [{"name": "a"}, {}]}, missing("labels[1].name")),
        ({"labels": [{"name": 5}]}, wrong("labels[0].name", "an integer", "a string")),
        ({"labels": [{"name": {"x": 1}}]}, wrong("labels[0].name", "an object", "a string")),
    ]
    for payload, message in cases:
        with pytest.raises(PermanentError) as raised:
            each(payload, "labels", "name")
        assert str(raised.value) == message
    assert each({"l": [{"a": {"b": 1}}]}, "l", "a.b", int) == [1]
    with pytest.raises(PermanentError) as raised:
        each({"l": [{"a": 1}]}, "l", "a.b", int)
    assert str(raised.value) == wrong("l[0].a", "an integer", "an object")


def test_user_login() -> None:
    assert user_login(PAYLOAD, "comment.user") == "alice"
    assert user_login(PAYLOAD, "issue.user") is None  # a deleted account: GitHub sends null
    assert user_login({}, "comment.user") is None
    with pytest.raises(PermanentError) as raised:
        user_login({"user": {}}, "user")
    assert str(raised.value) == missing("user.login")
    with pytest.raises(PermanentError) as raised:
        user_login({"user": "ghost"}, "user")
    assert str(raised.value) == wrong("user", "a string", "an object")
