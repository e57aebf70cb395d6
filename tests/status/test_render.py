"""The status page's renderer: pure, every section present, empty ones saying so, and every
value escaped."""

from __future__ import annotations

from html.parser import HTMLParser

from bot.status import render
from bot.status.model import (
    EntryRow,
    FailureRow,
    FlakyStep,
    MigrationRow,
    PinRow,
    RedRow,
    RepoStatus,
    StatusData,
)

NOW = 1_754_000_000.0
HOSTILE = "<script>alert('x')</script>\"&'"
SHA = "a" * 40


class _Tags(HTMLParser):
    """The start tags and text of a document (what a browser would build)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def pin(**overrides: object) -> PinRow:
    fields: dict[str, object] = {
        "name": "flash-attention",
        "pinned": SHA,
        "upstream_head": "b" * 40,
        "behind": 3,
        "oldest_unrolled_age_days": 2.5,
        "pr": 12,
        "pr_state": "open",
        "paused": False,
        "last_failure": None,
    }
    fields.update(overrides)
    return PinRow(**fields)  # type: ignore[arg-type]


def full(text: str = "x") -> StatusData:
    repo = RepoStatus(
        repo="vllm-project/vllm",
        config_errors=(f"bad key {text}",),
        pins=(pin(name=text, last_failure=text, pr_state=text),),
        entries=(EntryRow(text, text, text, text),),
        migrations=(MigrationRow(text, 5, 2, text),),
        red=(RedRow(text, 41, 7, None),),
        flakiest=(FlakyStep(text, 3, 2, 1),),
    )
    failure = FailureRow(text, "github", text, text, NOW, 8, text)
    return StatusData(generated_at=NOW, repos=(repo,), failures=(failure,))


def test_every_section_is_rendered_with_its_rows() -> None:
    page = render.render_page(full())
    assert f"<title>{render.TITLE}</title>" in page
    for heading in (*render.REPO_SECTIONS, render.HEADING_FAILURES, render.HEADING_CONFIG_ERRORS):
        assert f"<h3>{heading}</h3>" in page
    for name in ("pins", "entries", "migrations", "red", "flakiest", "failures"):
        assert f'<table class="{name}">' in page
    assert "2025-07-31 22:13 UTC" in page


def test_pin_cells() -> None:
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r", pins=(pin(),)),)))
    assert f'<code title="{SHA}">aaaaaaa</code>' in page  # a commit, abbreviated
    assert "<td>3</td><td>2 days</td><td>#12</td><td>open</td><td>no</td><td>-</td>" in page
    current = pin(pinned="v4.4.2", behind=0, oldest_unrolled_age_days=None, pr=None)
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r", pins=(current,)),)))
    assert "<code>v4.4.2</code>" in page  # a tag, whole
    assert "<td>0</td><td>-</td><td>-</td>" in page


def test_empty_sections_say_so() -> None:
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r"),)))
    for text in (
        render.NO_PINS,
        render.NO_ENTRIES,
        render.NO_MIGRATIONS,
        render.NO_RED,
        render.NO_FLAKY,
        render.NO_FAILURES,
    ):
        assert f'<p class="empty">{text}</p>' in page
    assert "<table" not in page
    assert render.HEADING_CONFIG_ERRORS not in page
    assert render.NO_REPOSITORIES in render.render_page(StatusData(NOW))


def test_hostile_values_are_text_not_markup() -> None:
    page = render.render_page(full(HOSTILE))
    assert "<script" not in page
    parsed = parse(page)
    assert "script" not in parsed.tags
    assert sum(HOSTILE in chunk for chunk in parsed.text) >= 10  # each shown as text
    hostile_repo = StatusData(NOW, (RepoStatus(HOSTILE),))
    assert "<script" not in render.render_page(hostile_repo)


def test_the_same_data_gives_the_same_page() -> None:
    assert render.render_page(full()) == render.render_page(full())
