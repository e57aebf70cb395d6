from __future__ import annotations

import pytest

from .fakelibs import FakeLibraries, build_fake_libraries


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory: pytest.TempPathFactory) -> FakeLibraries:
    # Without g++ this raises (MISSING_COMPILER), failing the tests that need the libraries:
    # `make test` installs it, and a skip would leave the audit untested (and the pure
    # part's branch gate short with no word why).
    return build_fake_libraries(tmp_path_factory.mktemp("fake-torch-libs"))
