"""Shared inputs and a helper for the repo-config tests."""

from __future__ import annotations

import pytest

from bot.config.errors import ConfigError
from bot.config.parse import parse_repo_config

FILENAME = "cfg.yml"

# The smallest pin that passes validation, as YAML lines under "pins:".
PIN_LINES = [
    "  - name: fa",
    "    upstream: vllm-project/flash-attention",
    "    file: cmake/fa.cmake",
    "    dependency: vllm-flash-attn",
]


def problems_of(text: str) -> list[str]:
    """Every problem the parser reports for ``text``, rendered; fails if it parses."""
    with pytest.raises(ConfigError) as caught:
        parse_repo_config(text, filename=FILENAME)
    return [str(problem) for problem in caught.value.problems]
