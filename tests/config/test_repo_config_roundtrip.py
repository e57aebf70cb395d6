"""Property: any valid config, dumped by yaml.safe_dump, parses back to itself."""

from __future__ import annotations

import string
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bot.config.models import (
    AllowlistConfig,
    BuildkiteConfig,
    LandingConfig,
    PinConfig,
    RepoConfig,
)
from bot.config.parse import parse_repo_config

ALNUM = string.ascii_letters + string.digits
# Text that YAML would read as something else ("yes", "1e3", "~") is fine here:
# safe_dump quotes it, and the round trip must keep it text.
words = st.text(ALNUM, min_size=1, max_size=8)
pin_names = st.builds(
    lambda head, tail: head + tail, st.sampled_from(ALNUM), st.text(ALNUM + "_-", max_size=10)
)
owners = st.builds(
    lambda head, tail: head + tail, st.sampled_from(ALNUM), st.text(ALNUM + "-", max_size=12)
)
repos = st.text(ALNUM + "._-", min_size=1, max_size=12).filter(lambda r: r not in {".", ".."})
upstreams = st.builds(lambda owner, repo: f"{owner}/{repo}", owners, repos)
branches = st.lists(words, min_size=1, max_size=3).map("/".join)
# Names of the file path grammar (messages.REPO_PATH_RULE); globs add wildcards.
PATH_CHARS = ALNUM + "._-+@"
path_names = st.text(PATH_CHARS, min_size=1, max_size=8).filter(lambda n: n not in {".", ".."})
glob_names = st.text(PATH_CHARS + "*?[]!", min_size=1, max_size=8).filter(
    lambda n: n not in {".", ".."}
)
repo_paths = st.lists(path_names, min_size=1, max_size=4).map("/".join)
globs = st.lists(glob_names, min_size=1, max_size=4).map("/".join)
identifiers = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(string.ascii_letters + "_"),
    st.text(ALNUM + "_"),
).filter(lambda name: name not in {"if", "in", "is", "or", "as", "def", "for", "and", "not"})
labels = st.text(ALNUM + " -:", min_size=1, max_size=50).filter(lambda label: label.strip() != "")
slugs = st.builds(lambda head, tail: head + tail, st.sampled_from(ALNUM), st.text(ALNUM + "_.-"))


@st.composite
def pin_lists(draw: st.DrawFn) -> tuple[PinConfig, ...]:
    names = draw(st.lists(pin_names, max_size=4, unique_by=str.casefold))
    pins = []
    for index, name in enumerate(names):
        pins.append(
            PinConfig(
                name=name,
                upstream=draw(upstreams),
                branch=draw(branches),
                file=draw(repo_paths),
                # Unique per pin, so two pins never claim one FetchContent block.
                dependency=f"dep{index}",
                owns=tuple(draw(st.lists(globs, max_size=3))),
            )
        )
    return tuple(pins)


configs = st.builds(
    RepoConfig,
    handle=st.text(ALNUM + "-", min_size=1, max_size=12),
    pins=pin_lists(),
    allowlist=st.none()
    | st.builds(AllowlistConfig, file=repo_paths, variable=identifiers, audit_step=words),
    # Always there: a dump with defaults writes `retry:`, which needs Buildkite (the rule
    # itself is tested in test_repo_config_problems).
    buildkite=st.builds(
        BuildkiteConfig,
        organization=slugs,
        pipelines=st.lists(slugs, min_size=1, max_size=3).map(tuple),
    ),
    landing=st.none()
    | st.builds(
        LandingConfig,
        labels_on_approval=st.lists(labels, max_size=3).map(tuple),
        merge_method=st.sampled_from(["merge", "squash", "rebase"]),
        paths=st.lists(globs, max_size=3).map(tuple),
    ),
)


def as_plain_data(value: Any, keep_defaults: bool) -> Any:
    """Models -> dicts, tuples -> lists; optionally drop fields left at default."""
    if isinstance(value, BaseModel):
        result = {}
        for name, field in type(value).model_fields.items():
            item = getattr(value, name)
            if not keep_defaults and not field.is_required() and item == field.default:
                continue
            if item is None:
                continue
            result[name] = as_plain_data(item, keep_defaults)
        return result
    if isinstance(value, tuple):
        return [as_plain_data(item, keep_defaults) for item in value]
    return value


# Drawing a config builds its pydantic models, and their checks are bot code, which the
# coverage run of `make test` traces: the first draws then take ~3x longer (0.1 s of the
# 1 s too_slow budget on a quiet machine, 0.5 s with the cores oversubscribed) and a busy
# CI machine can go over. That is the tracing, not a slow strategy: only too_slow is off.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(configs, st.booleans(), st.booleans())
def test_dumped_config_parses_back_to_the_same_value(
    config: RepoConfig, keep_defaults: bool, flow_style: bool
) -> None:
    text = yaml.safe_dump(
        as_plain_data(config, keep_defaults), default_flow_style=flow_style, sort_keys=False
    )
    assert parse_repo_config(text) == config
