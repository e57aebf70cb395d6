"""The status page's renderer: pure, every section present, empty ones saying so, every
value escaped, and every PR, issue, commit, build and job a link."""

from __future__ import annotations

from html.parser import HTMLParser

from bot.status import pages, render, render_service
from bot.status.model import (
    ActivityRow,
    EntryRow,
    EntryStatus,
    FailureRow,
    FlakyStep,
    Linked,
    MigrationRow,
    MigrationStatus,
    PinRow,
    PinStatus,
    RedRow,
    RedStatus,
    ReplicaSeen,
    RepoStatus,
    ServiceStatus,
    StatusData,
)
from bot.status.render_parts import age

NOW = 1_754_000_000.0
HOSTILE = "<script>alert('x')</script>\"&'"
SHA = "a" * 40
PR_URL = "https://github.com/o/r/pull/12"
COMMIT_URL = f"https://github.com/up/stream/commit/{SHA}"


class _Tags(HTMLParser):
    """The start tags, links and text of a document (what a browser would build)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [value or "" for name, value in attrs if name == "href"]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def pin_row(**overrides: object) -> PinRow:
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


def pin(row: PinRow | None = None, **overrides: object) -> PinStatus:
    fields: dict[str, object] = {
        "row": row or pin_row(),
        "mode": "active",
        "pr_state": "merged",
        "pr": Linked("#12", PR_URL),
        "pinned": Linked(SHA, COMMIT_URL),
        "upstream_head": Linked("b" * 40, None),
    }
    fields.update(overrides)
    return PinStatus(**fields)  # type: ignore[arg-type]


SERVICE = ServiceStatus(
    replicas=(ReplicaSeen("0123456789abcdef", NOW - 3600), ReplicaSeen("fedcba", NOW - 60)),
    queued=3,
    running=1,
    oldest_queued_at=NOW - 90,
    last_tick_at=NOW - 120,
    last_tick_status="done",
    rate_limits=(("buildkite", 180.0), ("github", 4321.0)),
)


def full(text: str = "x") -> StatusData:
    link = Linked(text, "https://github.com/o/r/issues/7")
    repo = RepoStatus(
        repo="vllm-project/vllm",
        config_errors=(f"bad key {text}",),
        pins=(pin(pin_row(name=text, last_failure=text, pr_state=text)),),
        entries=(EntryStatus(EntryRow(text, text, text, text), link),),
        migrations=(MigrationStatus(MigrationRow(text, 5, 2, text), link),),
        red=(RedStatus(RedRow(text, 41, 7, None), link, link, None),),
        flakiest=(FlakyStep(text, 3, 2, 1),),
    )
    failure = FailureRow(text, "github", text, text, NOW, 8, text)
    activity = (ActivityRow(NOW, text, text, (link,)),)
    return StatusData(NOW, (repo,), (failure,), SERVICE, activity)


def test_every_section_is_rendered_with_its_rows() -> None:
    page = render.render_page(full())
    assert f"<title>{render.TITLE}</title>" in page
    for heading in (*render.REPO_SECTIONS, render.HEADING_CONFIG_ERRORS):
        assert f"<h3>{heading}</h3>" in page
    for heading in (render.HEADING_FAILURES, render_service.HEADING_SERVICE):
        assert f"<h2>{heading}</h2>" in page
    assert f"<h2>{render_service.HEADING_ACTIVITY}</h2>" in page
    for name in ("pins", "entries", "migrations", "red", "flakiest", "failures", "activity"):
        assert f'<table class="{name}">' in page
    assert "2025-07-31 22:13 UTC" in page


def test_pin_cells_link_the_pr_and_the_commits() -> None:
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r", pins=(pin(),)),)))
    # A commit abbreviated, whole in its tooltip, linked to its upstream.
    assert f'<a href="{COMMIT_URL}" rel="noreferrer"><code title="{SHA}">aaaaaaa</code></a>' in page
    assert f'<code title="{"b" * 40}">bbbbbbb</code>' in page  # no upstream known: no link
    assert f'<a href="{PR_URL}" rel="noreferrer">#12</a>' in page
    assert '<span class="badge merged">merged</span>' in page
    assert '<span class="badge active">active</span>' in page
    assert '<td data-label="behind">3</td><td data-label="oldest unrolled commit">2 days</td>' in (
        page
    )
    tag = pin(pin_row(pinned="v4.4.2", behind=0, oldest_unrolled_age_days=None, pr=None),
              pinned=Linked("v4.4.2", None), pr=None, pr_state=None)  # fmt: skip
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r", pins=(tag,)),)))
    assert "<code>v4.4.2</code>" in page  # a tag, whole
    assert '<td data-label="behind">0</td><td data-label="oldest unrolled commit">-</td>' in page
    assert '<td data-label="bump PR">-</td><td data-label="PR state">-</td>' in page


def test_the_service_section() -> None:
    page = render.render_page(full())
    assert "2: 0123456789ab since 2025-07-31 21:13 UTC, fedcba since 2025-07-31 22:12 UTC" in page
    assert "3 queued, 1 running" in page
    assert "1 min ago (2025-07-31 22:11 UTC)" in page
    assert "2025-07-31 22:11 UTC (2 min ago), done" in page
    assert "buildkite: 180 requests left; github: 4321 requests left" in page
    one = ServiceStatus(None, 0, 0, None, None, None)
    page = render.render_page(StatusData(NOW, service=one))
    for text in (
        render_service.ONE_PROCESS,
        render_service.OLDEST_NONE,
        render_service.TICK_NONE,
        render_service.RATE_LIMIT_NONE,
    ):
        assert text in page


def test_ages() -> None:
    assert [age(s) for s in (-1, 42, 300, 7200, 86400, 3 * 86400)] == [
        "0 s", "42 s", "5 min", "2 h", "1 day", "3 days",
    ]  # fmt: skip


def test_empty_sections_say_so() -> None:
    page = render.render_page(StatusData(NOW, (RepoStatus("o/r"),)))
    for text in (
        render.NO_PINS,
        render.NO_ENTRIES,
        render.NO_MIGRATIONS,
        render.NO_RED,
        render.NO_FLAKY,
        render.NO_FAILURES,
        render_service.NO_ACTIVITY,
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
    quoted = Linked("x", 'https://github.com/o/r"><script>alert(1)</script>')
    page = render.render_page(StatusData(NOW, activity=(ActivityRow(NOW, "o/r", "x", (quoted,)),)))
    assert "<script" not in page
    assert 'https://github.com/o/r"><script>alert(1)</script>' in parse(page).hrefs


def test_links_are_in_the_page_as_given() -> None:
    hrefs = parse(render.render_page(full())).hrefs
    assert PR_URL in hrefs
    assert COMMIT_URL in hrefs
    assert "https://github.com/o/r/issues/7" in hrefs
    assert "#service" in hrefs  # the navigation


def test_the_same_data_gives_the_same_page() -> None:
    assert render.render_page(full()) == render.render_page(full())


def test_the_login_and_outage_pages() -> None:
    page = pages.login_page("/status", wrong=False)
    assert '<form class="login" method="post" action="/status">' in page
    assert f'name="{pages.TOKEN_FIELD}"' in page
    assert pages.LOGIN_WRONG not in page
    assert pages.LOGIN_WRONG in pages.login_page("/status", wrong=True)
    unknown = pages.unavailable_page(None)
    assert pages.DATABASE_UNREACHABLE in unknown
    assert pages.DOWN_SINCE.split("{", 1)[0] not in unknown
    since = pages.unavailable_page(NOW)
    assert pages.DOWN_SINCE.format(when="2025-07-31 22:13 UTC") in since
