"""WWW-Authenticate parsing: registries' real challenges and malformed ones."""

from __future__ import annotations

import pytest

from bot.registry.challenge import Challenge, parse_challenges, usable_challenge


def test_a_bearer_challenge_with_quoted_parameters() -> None:
    header = (
        'Bearer realm="https://public.ecr.aws/token/",service="public.ecr.aws",'
        'scope="repository:q9t5s3a7/repo:pull"'
    )
    assert parse_challenges(header) == [
        Challenge(
            "bearer",
            {
                "realm": "https://public.ecr.aws/token/",
                "service": "public.ecr.aws",
                "scope": "repository:q9t5s3a7/repo:pull",
            },
        )
    ]


def test_names_are_lower_cased_tokens_kept_and_escapes_undone() -> None:
    header = 'BASIC Realm = plain , charset="UTF-8", x="a \\"b\\" \\\\ c"'
    [challenge] = parse_challenges(header)
    assert challenge.scheme == "basic"
    assert challenge.params == {"realm": "plain", "charset": "UTF-8", "x": 'a "b" \\ c'}


def test_several_challenges_in_one_header_and_the_first_of_a_repeated_parameter() -> None:
    header = 'Negotiate, Basic realm="one", realm="two", Bearer realm="r"'
    assert parse_challenges(header) == [
        Challenge("negotiate", {}),
        Challenge("basic", {"realm": "one"}),
        Challenge("bearer", {"realm": "r"}),
    ]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", []),
        ("  ,, ", []),
        ("@@", []),  # nothing readable
        ('Bearer realm="r", ="x"', [Challenge("bearer", {"realm": "r"})]),
        ("Bearer realm=", [Challenge("bearer", {})]),  # a value is missing: keep what was read
        ('Bearer realm="unterminated', [Challenge("bearer", {})]),
        ("Negotiate abc==", [Challenge("negotiate", {})]),  # token68 is not read
    ],
)
def test_malformed_headers_keep_what_was_read(header: str, expected: list[Challenge]) -> None:
    assert parse_challenges(header) == expected


def test_param_reads_one_parameter() -> None:
    challenge = Challenge("bearer", {"realm": "r"})
    assert challenge.param("realm") == "r"
    assert challenge.param("scope") is None


def test_usable_prefers_bearer_with_a_realm_then_basic() -> None:
    bearer = 'Bearer realm="https://auth.example/token"'
    basic = 'Basic realm="registry"'
    assert usable_challenge([basic, bearer]) == Challenge(
        "bearer", {"realm": "https://auth.example/token"}
    )
    # A Bearer challenge without a realm names nowhere to get a token from.
    assert usable_challenge(['Bearer service="x"', basic]) == Challenge(
        "basic", {"realm": "registry"}
    )
    assert usable_challenge(['Bearer service="x"', "Negotiate"]) is None
    assert usable_challenge([]) is None
