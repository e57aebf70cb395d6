"""An unexpected library whose unstable symbols were not kept: the table proposes it alone."""

from __future__ import annotations

from bot.abi.judge import LibraryVerdict, judge, render_table


def test_an_unexpected_library_without_symbols_gets_no_symbol_lines() -> None:
    table = render_table(judge([LibraryVerdict("_moe_C.abi3.so", "unstable")], []))

    assert table.endswith('  _moe_C.abi3.so\n      propose: "_moe_C.abi3.so",\n')
    assert "symbol(s)" not in table
