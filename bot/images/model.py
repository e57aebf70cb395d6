"""One registry check of a build's images, as stored and shown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ImageRow:
    image: str  # registry/repository:tag
    tag: str
    status: str  # what the registry answered: "200", "404", "429 rate limited", ...
    exists: bool | None  # None: the answer says nothing about the tag
    consumers: tuple[str, ...]
    producer: str | None
    counterpart_of: str | None = None  # the missing tag this stable one stands in for


@dataclass(frozen=True)
class ImageCheck:
    build_number: int
    build_url: str
    commit: str
    branch: str
    nightly: bool
    checked_at: float
    rows: tuple[ImageRow, ...]
    problem: str | None = None  # why nothing could be checked (no routing, no registry)

    @property
    def missing(self) -> tuple[ImageRow, ...]:
        return tuple(r for r in self.rows if r.exists is False and r.counterpart_of is None)

    def dump(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def load(cls, doc: Mapping[str, Any]) -> ImageCheck:
        rows = tuple(
            ImageRow(
                image=str(r["image"]),
                tag=str(r["tag"]),
                status=str(r["status"]),
                exists=r.get("exists"),
                consumers=tuple(r.get("consumers") or ()),
                producer=r.get("producer"),
                counterpart_of=r.get("counterpart_of"),
            )
            for r in doc.get("rows") or ()
        )
        return cls(
            build_number=int(doc["build_number"]),
            build_url=str(doc.get("build_url") or ""),
            commit=str(doc.get("commit") or ""),
            branch=str(doc.get("branch") or ""),
            nightly=bool(doc.get("nightly")),
            checked_at=float(doc.get("checked_at") or 0.0),
            rows=rows,
            problem=doc.get("problem"),
        )
