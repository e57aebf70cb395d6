"""The end-to-end fixtures: security tests drive the real bot through the stand-ins."""

from tests.e2e.conftest import ci_env, env

__all__ = ["ci_env", "env"]
