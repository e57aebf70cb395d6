"""The status pages' shared HTML pieces, pure: the document around a body, tables, links.

Every value is escaped here or by the caller before it is joined. Tables wrap long
values instead of widening the page, and on a phone each row becomes a small card
whose cells carry their column's name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from html import escape
from typing import TypeVar

from bot.status.model import Linked

T = TypeVar("T")

NONE = "-"
UNKNOWN = "?"

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1rem 1.5rem;
  max-width: 1200px; color: #1f2328; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem;
  margin-top: 2rem; overflow-wrap: anywhere; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
a { color: #0969da; }
nav a { margin-right: 1rem; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
th, td { border: 1px solid #d0d7de; padding: .25rem .4rem; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f8fa; }
table.activity th:nth-child(1), table.failures th:nth-child(1) { width: 10.5rem; }
table.activity th:nth-child(2) { width: 22%; }
table.activity th:nth-child(4) { width: 20%; }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.empty { color: #59636e; font-style: italic; }
.errors { background: #fff1f0; border: 1px solid #cf222e; padding: .5rem; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 1rem; font-size: .85rem;
  border: 1px solid #d0d7de; background: #f6f8fa; }
.badge.open, .badge.active { background: #dafbe1; border-color: #4ac26b; }
.badge.merged { background: #fbefff; border-color: #a475f9; }
.badge.closed, .badge.failing { background: #ffebe9; border-color: #ff8182; }
.badge.paused, .badge.waiting, .badge.human-owned { background: #fff8c5; border-color: #d4a72c; }
.down { background: #ffebe9; border: 1px solid #cf222e; padding: .75rem; font-size: 1.1rem; }
form.login { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
form.login input[type=password] { flex: 1 1 14rem; min-width: 0; padding: .3rem; font: inherit; }
form.login button { padding: .3rem .9rem; font: inherit; }
@media (max-width: 700px) {
  body { padding: .75rem; }
  table, tbody, tr, td { display: block; width: auto; }
  thead { display: none; }
  tr { border: 1px solid #d0d7de; margin-bottom: .5rem; }
  td { border: 0; border-bottom: 1px solid #eaeef2; display: flow-root; padding-left: 8.5rem; }
  td::before { content: attr(data-label); float: left; width: 7.6rem; margin-left: -8.1rem;
    font-size: .8rem; color: #59636e; }
  dl.facts { grid-template-columns: 1fr; }
}
"""


def document(title: str, body: Iterable[str]) -> str:
    """One self-contained HTML document: its inline style, no script, no outside resource."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def table(
    name: str,
    columns: Sequence[str],
    rows: Iterable[T],
    cells: Callable[[T], Sequence[str]],
    empty: str,
) -> str:
    """A table of ``rows`` (``cells`` gives each row's cells, already HTML), or ``empty``."""
    labels = [escape(column, quote=True) for column in columns]
    lines = [
        "<tr>"
        + "".join(
            f'<td data-label="{label}">{cell}</td>'
            for label, cell in zip(labels, cells(row), strict=True)
        )
        + "</tr>"
        for row in rows
    ]
    if not lines:
        return empty_note(empty)
    head = "<tr>" + "".join(f"<th>{escape(column)}</th>" for column in columns) + "</tr>"
    return (
        f'<table class="{name}"><thead>{head}</thead><tbody>' + "".join(lines) + "</tbody></table>"
    )


def link(value: Linked | None, *, code: bool = False) -> str:
    """``value``'s text, a link when it has an address; ``-`` when there is no value."""
    if value is None:
        return NONE
    shown = f"<code>{escape(value.text)}</code>" if code else escape(value.text)
    if value.href is None:
        return shown
    return f'<a href="{escape(value.href, quote=True)}" rel="noreferrer">{shown}</a>'


def badge(value: str | None) -> str:
    if not value:
        return NONE
    return f'<span class="badge {escape(value, quote=True)}">{escape(value)}</span>'


def code(value: str) -> str:
    return f"<code>{escape(value)}</code>"


def text(value: str | None) -> str:
    return escape(value) if value else NONE


def paragraph(value: str) -> str:
    return f"<p>{escape(value)}</p>"


def empty_note(value: str) -> str:
    return f'<p class="empty">{escape(value)}</p>'


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def age(seconds: float) -> str:
    """A duration in its largest whole unit: 42 s, 5 min, 3 h, 2 days."""
    whole = int(max(seconds, 0.0))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min"
    if whole < 86400:
        return f"{whole // 3600} h"
    days = whole // 86400
    return "1 day" if days == 1 else f"{days} days"
