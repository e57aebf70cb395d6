"""Reads shared by every handler of one delivery (and every pin of one sync).

A delivery runs several handlers, and a reconcile tick syncs many pins; each used to
read the repository's config, the default branch's head and an upstream's head on
its own. Within one delivery those answers cannot usefully change (the handlers all
act on the same moment), so the first read is kept for the rest of the delivery in a
context-local memo that ``dispatch`` opens and closes around the handlers. Outside a
delivery (the command line, tests calling a flow directly) nothing is memoized.

Concurrent callers of the same key share one read: the memo keeps the task, not only
its result. A read that fails is forgotten, so the next caller tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_MEMO: ContextVar[dict[Hashable, asyncio.Future[Any]] | None] = ContextVar(
    "delivery_memo", default=None
)


@contextmanager
def delivery_memo() -> Iterator[None]:
    """Share reads among everything run inside this block (one delivery)."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


async def memoized(key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
    """``read()``'s answer, read once per delivery for ``key``."""
    memo = _MEMO.get()
    if memo is None:
        return await read()
    found = memo.get(key)
    if found is None:
        found = asyncio.ensure_future(read())
        memo[key] = found
    try:
        return await asyncio.shield(found)
    except BaseException:
        if memo.get(key) is found and found.done():
            del memo[key]  # a failed read is not an answer: the next caller reads again
        raise


def forget(key: Hashable) -> None:
    """Drop ``key``: the caller just changed what it names (e.g. moved a branch)."""
    memo = _MEMO.get()
    if memo is not None:
        memo.pop(key, None)


def active() -> bool:
    """Whether a delivery's memo is open (outside one, an answer has nowhere to be kept)."""
    return _MEMO.get() is not None


def known(key: Hashable) -> bool:
    """Whether ``key`` has an answer (or a read under way) in this delivery."""
    memo = _MEMO.get()
    return memo is not None and key in memo


def remember(key: Hashable, value: object) -> None:
    """Keep ``value`` as ``key``'s answer, read some other way (one query for many keys)."""
    memo = _MEMO.get()
    if memo is not None:
        answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        answered.set_result(value)
        memo[key] = answered
