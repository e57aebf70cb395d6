"""The optional Buildkite variables of the service's settings."""

from __future__ import annotations

import pytest

from bot.core.settings import ENV_VARS, Settings, SettingsError

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\n"


def env_with(**extra: str) -> dict[str, str]:
    return {
        "FOLLOWUP_BOT_WEBHOOK_SECRET": "github-secret",
        "FOLLOWUP_BOT_APP_ID": "12345",
        "FOLLOWUP_BOT_PRIVATE_KEY": PEM,
        **extra,
    }


def problems_of(env: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    return caught.value.problems


def test_the_buildkite_side_is_off_by_default() -> None:
    settings = Settings.from_env(env_with())
    assert settings.buildkite_api_token is None
    assert not settings.buildkite_enabled
    assert settings.buildkite_api_url == "https://api.buildkite.com/v2"
    assert (settings.buildkite_webhook_secret, settings.buildkite_webhook_token) == (None, None)
    assert settings.buildkite_signature_max_age == 300.0


def test_every_buildkite_variable_is_read() -> None:
    settings = Settings.from_env(
        env_with(
            FOLLOWUP_BOT_BUILDKITE_API_TOKEN=" bkua_abc\n",
            FOLLOWUP_BOT_BUILDKITE_API_URL="http://127.0.0.1:9001/v2/",
            FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET=" signing secret ",
            FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE="60",
        )
    )
    assert settings.buildkite_enabled
    assert settings.buildkite_api_token == "bkua_abc"  # it goes in a header: no blanks
    assert settings.buildkite_api_url == "http://127.0.0.1:9001/v2"
    assert settings.buildkite_webhook_secret == " signing secret "  # an HMAC key, as given
    assert settings.buildkite_webhook_token is None
    assert settings.buildkite_signature_max_age == 60.0


def test_the_plain_webhook_token() -> None:
    settings = Settings.from_env(env_with(FOLLOWUP_BOT_BUILDKITE_WEBHOOK_TOKEN=" tok \n"))
    assert (settings.buildkite_webhook_secret, settings.buildkite_webhook_token) == (None, "tok")


def test_secret_and_token_together_is_one_problem() -> None:
    env = env_with(
        FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET="s",
        FOLLOWUP_BOT_BUILDKITE_WEBHOOK_TOKEN="t",
        FOLLOWUP_BOT_PORT="x",
    )
    assert problems_of(env) == (
        "FOLLOWUP_BOT_PORT: 'x' is not an integer",
        "FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET: set either FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET"
        " or FOLLOWUP_BOT_BUILDKITE_WEBHOOK_TOKEN, not both",
    )


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        (
            "FOLLOWUP_BOT_BUILDKITE_API_URL",
            "api.buildkite.com",
            "FOLLOWUP_BOT_BUILDKITE_API_URL: 'api.buildkite.com' is not an http(s) URL",
        ),
        (
            "FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE",
            "0",
            "FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE: 0.0 is outside 1.0..86400.0",
        ),
        (
            "FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE",
            "five minutes",
            "FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE: 'five minutes' is not a number",
        ),
    ],
)
def test_invalid_buildkite_values_are_named(variable: str, value: str, problem: str) -> None:
    assert problems_of(env_with(**{variable: value})) == (problem,)


def test_empty_buildkite_values_mean_unset() -> None:
    settings = Settings.from_env(
        env_with(FOLLOWUP_BOT_BUILDKITE_API_TOKEN="", FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET="  ")
    )
    assert settings.buildkite_api_token is None
    assert settings.buildkite_webhook_secret is None


def test_buildkite_secrets_are_not_in_repr() -> None:
    settings = Settings.from_env(
        env_with(
            FOLLOWUP_BOT_BUILDKITE_API_TOKEN="api-token-value",
            FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET="signing-secret-value",
        )
    )
    text = repr(settings)
    assert "api-token-value" not in text
    assert "signing-secret-value" not in text
    token_only = Settings.from_env(env_with(FOLLOWUP_BOT_BUILDKITE_WEBHOOK_TOKEN="plain-value"))
    assert "plain-value" not in repr(token_only)


def test_the_buildkite_variables_are_documented() -> None:
    names = [var.name for var in ENV_VARS]
    for name in (
        "FOLLOWUP_BOT_BUILDKITE_API_TOKEN",
        "FOLLOWUP_BOT_BUILDKITE_API_URL",
        "FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET",
        "FOLLOWUP_BOT_BUILDKITE_WEBHOOK_TOKEN",
        "FOLLOWUP_BOT_BUILDKITE_SIGNATURE_MAX_AGE",
    ):
        assert name in names
