"""Which pins of a repository one sync looks at: a typed selection.

A trigger's selection travels inside the internal sync delivery as a small JSON
document (``dump``/``load``, the same document as before it was typed, so a
delivery queued by an older release still reads); a sync asks ``matches`` of each
pin. Order of precedence when a document names several things: a pin, the files a
push touched, an upstream's tags, an upstream branch; nothing: every pin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.config.models import PinConfig
from bot.core.payload import optional
from bot.pins.changed import main_push_selection, touches


@dataclass(frozen=True, kw_only=True)
class Selection:
    pin: str | None = None  # the one pin by name
    files: frozenset[str] | None = None  # pins whose files a downstream push touched
    upstream: str | None = None  # pins following this upstream (lower case)...
    branch: str | None = None  # ...on this branch
    tags: bool = False  # ...or its release tags

    @classmethod
    def every(cls) -> Selection:
        return cls()

    @classmethod
    def of_pin(cls, name: str) -> Selection:
        return cls(pin=name)

    @classmethod
    def upstream_branch(cls, upstream: str, branch: str) -> Selection:
        return cls(upstream=upstream.lower(), branch=branch)

    @classmethod
    def upstream_tags(cls, upstream: str) -> Selection:
        return cls(upstream=upstream.lower(), tags=True)

    @classmethod
    def main_push(cls, payload: Mapping[str, Any]) -> Selection:
        """A push to the downstream default branch: the pins whose files it touched."""
        return cls.load(main_push_selection(payload))

    @classmethod
    def load(cls, doc: Mapping[str, Any]) -> Selection:
        """The selection a delivery carries (what ``dump`` wrote)."""
        # A field of the wrong type is a PermanentError, as for any payload.
        name, files = optional(doc, "pin"), optional(doc, "files", list)
        upstream, branch = optional(doc, "upstream"), optional(doc, "branch")
        if name is not None:
            return cls.of_pin(name)
        if files is not None:
            return cls(files=frozenset(str(path) for path in files))
        if upstream is not None and optional(doc, "tags", bool) is True:
            return cls.upstream_tags(upstream)
        if upstream is not None and branch is not None:
            return cls.upstream_branch(upstream, branch)
        return cls.every()

    def dump(self) -> dict[str, Any]:
        if self.pin is not None:
            return {"pin": self.pin}
        if self.files is not None:
            return {"files": sorted(self.files)}
        if self.upstream is not None and self.tags:
            return {"upstream": self.upstream, "tags": True}
        if self.upstream is not None and self.branch is not None:
            return {"upstream": self.upstream, "branch": self.branch}
        return {"all": True}

    @property
    def upstream_push(self) -> bool:
        """Whether the sync follows a push to an upstream branch (its pins compare anyway)."""
        return self.pin is None and self.files is None and self.branch is not None

    def matches(self, pin: PinConfig) -> bool:
        if self.pin is not None:
            return pin.name == self.pin
        if self.files is not None:
            return touches(pin, self.files)
        if self.upstream is not None and self.tags:
            return pin.upstream.lower() == self.upstream and pin.track == "tags"
        if self.upstream is not None and self.branch is not None:
            return (
                pin.upstream.lower() == self.upstream
                and pin.track == "branch"
                and pin.branch == self.branch
            )
        return True
