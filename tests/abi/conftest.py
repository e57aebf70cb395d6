from __future__ import annotations

import shutil

import pytest

from .fakelibs import MISSING_COMPILER, FakeLibraries, build_fake_libraries


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory: pytest.TempPathFactory) -> FakeLibraries:
    if shutil.which("g++") is None:
        pytest.skip(MISSING_COMPILER)
    return build_fake_libraries(tmp_path_factory.mktemp("fake-torch-libs"))
