"""The intake's one INFO line per delivery: the delivery's id and event are fields of the
record (keys in the JSON log), not only words of its message."""

from __future__ import annotations

import logging

import pytest

from bot.service.inbox import Inbox
from bot.service.webhooks import LOG_ACCEPTED
from bot.store.sqlite import SQLiteStore

from .test_webhooks import ClientFactory, body_of, headers, make_app, nothing


async def test_one_info_line_with_the_delivery_fields(
    store: SQLiteStore, aiohttp_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    client = await aiohttp_client(make_app(Inbox(store, nothing)))
    caplog.set_level(logging.DEBUG, logger="bot.service.webhooks")
    body = body_of({"repository": {"full_name": "o/r"}})
    response = await client.post("/webhooks/github", data=body, headers=headers(body))
    assert response.status == 202
    assert await response.json() == {"status": "accepted"}
    lines = [r for r in caplog.records if r.name == "bot.service.webhooks"]
    assert [r.levelno for r in lines] == [logging.INFO]
    (line,) = lines
    assert line.msg == LOG_ACCEPTED
    assert (line.__dict__.get("delivery_id"), line.__dict__.get("event")) == ("d-1", "push")
