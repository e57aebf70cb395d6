"""The README must stay true to the code it documents."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config.parse import parse_repo_config
from bot.core.settings import env_table_markdown
from sandbox.vllm_ci_tree import SWEEP_LABELS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_environment_table_is_the_settings_table() -> None:
    text = README.read_text()
    start = text.index("<!-- env-table:start -->\n") + len("<!-- env-table:start -->\n")
    end = text.index("<!-- env-table:end -->")
    assert text[start:end].strip() == env_table_markdown().strip()


def test_readme_quick_start_is_the_two_make_targets_ci_runs() -> None:
    text = README.read_text()
    quick = text[text.index("## Quick start") : text.index("## Commands")]
    commands = [
        line.split("#")[0].strip() for line in quick.splitlines() if line.startswith("make")
    ]
    assert commands == ["make demo", "make test"]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "make test" in ci


def test_readme_config_example_is_valid() -> None:
    text = README.read_text()
    section = text[text.index("### The repository") :]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    config = parse_repo_config(match.group(1))
    assert [pin.name for pin in config.pins] == ["flash-attention"]
    assert config.allowlist is not None
    assert config.landing is not None
    assert config.retry.max_failed_jobs == 8


DOCS = README.parent / "docs"
NEWCOMER_SECTIONS = (
    "## Quick start",
    "## Commands",
    "## Configuration",
    "## Running it for real",
    "## Watching it",
)
ONE_SCREEN = 40  # lines of what it is and does, before "Quick start"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start : following if following != -1 else len(text)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_is_what_a_newcomer_reads_in_that_order() -> None:
    text = README.read_text()
    positions = [text.index(f"\n{heading}\n") for heading in NEWCOMER_SECTIONS]
    assert positions == sorted(positions)
    assert text[: positions[0]].count("\n") <= ONE_SCREEN


def test_the_speed_history_and_the_figures_live_in_docs() -> None:
    text = README.read_text()
    quick = _section(text, "## Quick start")
    assert not [line for line in quick.splitlines() if line.startswith("|")]  # no tables
    assert "(docs/testing.md)" in quick
    assert "| on the 2-core machine | wall |" in (DOCS / "testing.md").read_text()
    assert "(docs/benchmarks.md)" in _section(text, "## Benchmarks")
    assert "**Replicas on PostgreSQL**" in (DOCS / "benchmarks.md").read_text()


def test_every_rejected_library_has_its_line_and_the_notes_are_linked() -> None:
    section = _section(README.read_text(), "## Dependencies")
    assert "(docs/dependencies.md)" in section
    notes = (DOCS / "dependencies.md").read_text()
    rejected = re.findall(r"^- \*\*(.+?)\*\*", section, re.M)
    assert len(rejected) >= 5
    for name in rejected:
        # The README's name, or its last word ("plain jsonschema"), is in the notes.
        assert name in notes or name.split()[-1] in notes, name


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name}: {target}"
            if anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.M)
                assert anchor in {_slug(h) for h in headings}, f"{page.name}: {target}"


def test_the_sweep_count_says_which_tree_it_is() -> None:
    features = (DOCS / "features.md").read_text()
    assert sum(len(labels) for labels in SWEEP_LABELS.values()) == 8
    assert "sandbox's vLLM-shaped tree" in features
    assert "moves eight steps" in " ".join(features.split())
    assert "eight-step" not in README.read_text() + features
