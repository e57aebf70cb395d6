"""The table and the JSON document of an audit result (no libraries needed)."""

from __future__ import annotations

import json

from bot.abi.judge import LibraryVerdict, judge, render_table, to_json
from bot.abi.report import DECISION_NOTES

FA2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
SYMBOLS = ("at::fake_op_a()", "c10::fake_warn(int)")


def sample() -> list[LibraryVerdict]:
    return [
        LibraryVerdict(FA2, "stable"),
        LibraryVerdict(FA3, "unstable", SYMBOLS, 7),
        LibraryVerdict("_C.abi3.so", "unstable", SYMBOLS, 2),
        LibraryVerdict("fs_io_C.abi3.so", "no-torch"),
    ]


ALLOWLIST = ["vllm_flash_attn/*", "fs_io_C.abi3.so", "_rocm_C.abi3.so"]


def test_table_has_one_row_per_pattern_with_counts_and_decision() -> None:
    table = render_table(judge(sample(), ALLOWLIST)).splitlines()
    assert table[0] == "Libraries: 2 unstable, 1 stable, 1 no-torch"
    assert table[2] == "ALLOWED_UNSTABLE_LIBRARIES: 3 pattern(s) against 4 libraries"
    assert table[3].split() == ["PATTERN", "UNSTABLE", "OTHER", "DECISION"]
    assert table[4].split() == ["vllm_flash_attn/*", "1", "1", "narrow"]
    assert f"      {DECISION_NOTES['narrow']}" in table
    assert f"      unstable: {FA3}" in table
    assert f"      other:    {FA2}" in table
    assert f"      replace with: {FA3}" in table
    rows = [line.split() for line in table]
    assert ["fs_io_C.abi3.so", "0", "1", "delete"] in rows
    assert ["_rocm_C.abi3.so", "0", "0", "not-on-this-platform"] in rows


def test_table_lists_unexpected_libraries_with_proposal_and_first_symbols() -> None:
    table = render_table(judge(sample(), ALLOWLIST))
    assert "Torch-unstable libraries outside ALLOWED_UNSTABLE_LIBRARIES: 1\n" in table
    assert (
        '  _C.abi3.so\n      propose: "_C.abi3.so",\n'
        "      2 unstable symbol(s), first:\n"
        "        at::fake_op_a()\n        c10::fake_warn(int)\n"
    ) in table


def test_table_of_an_empty_allowlist() -> None:
    table = render_table(judge([LibraryVerdict("a.so", "stable")], []))
    assert "  (the allowlist is empty)" in table
    assert "outside" not in table


def test_json_carries_everything_and_round_trips() -> None:
    result = judge(sample(), ALLOWLIST, variable="LIST")
    document = json.loads(json.dumps(to_json(result)))
    assert document["variable"] == "LIST"
    assert document["exit_code"] == 1
    assert document["passed"] is False
    assert document["check_lines"] == list(result.check_lines)
    assert document["libraries"][0] == {
        "path": "_C.abi3.so",
        "kind": "unstable",
        "unstable_count": 2,
        "unstable_symbols": list(SYMBOLS),
    }
    assert document["patterns"][0] == {
        "pattern": "vllm_flash_attn/*",
        "decision": "narrow",
        "unstable": [FA3],
        "other": [FA2],
        "replacement": [FA3],
    }
    assert [entry["path"] for entry in document["unexpected"]] == ["_C.abi3.so"]
    assert document["unexpected"][0]["proposed"] == "_C.abi3.so"
    assert document["proposed"] == {"_C.abi3.so": "_C.abi3.so"}
