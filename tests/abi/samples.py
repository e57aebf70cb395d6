"""Allowlist files for the audit tests, in the shape of vLLM's check script."""

from __future__ import annotations

import textwrap

DEFAULT_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"


def allowlist_script(entries: list[str], variable: str = DEFAULT_VARIABLE) -> str:
    """A check script in the shape of vLLM's ``.buildkite/check-torch-abi.py``."""
    body = "".join(f'    "{entry}",\n' for entry in entries)
    return textwrap.dedent(
        """\
        import sys

        from torch_abi_audit import inspect_package

        # Temporary allowlist of extensions not yet on the stable ABI.
        # Shrink and remove over time.
        {variable}: tuple[str, ...] = (
        {body})


        def main() -> int:
            return 0
        """
    ).format(variable=variable, body=body)
