from __future__ import annotations

import pytest

from sandbox.contract import Contract


@pytest.fixture(scope="session")
def contract() -> Contract:
    return Contract.load()
