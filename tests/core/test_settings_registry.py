"""The image registry's credentials: both variables set, or neither."""

from __future__ import annotations

import pytest

from bot.core.settings import ONE_OF_PAIR, Settings, SettingsError

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\n"
USER = "FOLLOWUP_BOT_REGISTRY_USERNAME"
PASSWORD = "FOLLOWUP_BOT_REGISTRY_PASSWORD"


def env(**extra: str) -> dict[str, str]:
    return {
        "FOLLOWUP_BOT_WEBHOOK_SECRET": "s3cret-value",
        "FOLLOWUP_BOT_APP_ID": "12345",
        "FOLLOWUP_BOT_PRIVATE_KEY": PEM,
        **extra,
    }


def problems_of(variables: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(variables)
    return caught.value.problems


def test_neither_set_is_anonymous() -> None:
    settings = Settings.from_env(env())
    assert (settings.registry_username, settings.registry_password) == (None, None)


def test_both_set_are_read_and_kept_out_of_repr() -> None:
    settings = Settings.from_env(env(**{USER: "robot$ci", PASSWORD: "tok-123"}))
    assert (settings.registry_username, settings.registry_password) == ("robot$ci", "tok-123")
    assert "tok-123" not in repr(settings)
    assert "robot$ci" not in repr(settings)


def test_only_the_username_is_an_error_naming_both() -> None:
    assert problems_of(env(**{USER: "robot"})) == (ONE_OF_PAIR.format(name=USER, other=PASSWORD),)
    assert ONE_OF_PAIR.format(name=USER, other=PASSWORD) == (
        f"{USER} is set but {PASSWORD} is not: set both or neither"
    )


def test_only_the_password_is_an_error_naming_both() -> None:
    assert problems_of(env(**{PASSWORD: "tok"})) == (ONE_OF_PAIR.format(name=PASSWORD, other=USER),)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_value_counts_as_unset(blank: str) -> None:
    assert problems_of(env(**{USER: "robot", PASSWORD: blank})) == (
        ONE_OF_PAIR.format(name=USER, other=PASSWORD),
    )
    settings = Settings.from_env(env(**{USER: blank, PASSWORD: blank}))
    assert (settings.registry_username, settings.registry_password) == (None, None)


def test_the_pair_problem_is_reported_with_the_others() -> None:
    variables = env(**{PASSWORD: "tok"})
    del variables["FOLLOWUP_BOT_APP_ID"]
    problems = problems_of(variables)
    assert ONE_OF_PAIR.format(name=PASSWORD, other=USER) in problems
    assert len(problems) == 2
