"""The types of a step's fields, coerced as the generator's pydantic model coerces them.

The generator validates each step in pydantic's lax mode: ``num_devices: "2"`` becomes 2,
``no_plugin: "yes"`` becomes true, and a value it cannot coerce (a text ``depends_on``, a list
``soft_fail``, ``group: ~``) refuses the whole pipeline. The same library does the same
coercion here, from the field types ci-routing.md lists, so the model accepts exactly what the
generator accepts. Fields that a table override adds are taken as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

# ``None`` is accepted wherever the generator's field is optional: it reads as missing.
_OPTIONAL_TYPES: Mapping[str, Any] = {
    "working_dir": str,
    "key": str,
    "depends_on": list[str],
    "commands": list[str],
    "device": str,
    "agent_tags": dict[str, str],
    "num_devices": int,
    "num_nodes": int,
    "source_file_dependencies": list[str],
    "soft_fail": bool,
    "parallelism": int,
    # Strictly a whole number above zero: "2" is refused here, unlike elsewhere.
    "concurrency": Annotated[int, Field(strict=True, gt=0)],
    "concurrency_group": str,
    "timeout_in_minutes": int,
    "mount_buildkite_agent": bool,
    "env": dict[str, str],
    "retry": dict[str, Any],
    "optional": bool,
    "no_plugin": bool,
    "no_gpu": bool,
    "mirror": dict[str, dict[str, Any]],
}
# Required or defaulted, never null: ``label`` must be there, ``group: ~`` and ``dind: ~``
# are refused.
_REQUIRED_TYPES: Mapping[str, Any] = {"label": str, "group": str, "dind": bool}

KNOWN = frozenset(_OPTIONAL_TYPES) | frozenset(_REQUIRED_TYPES)


@dataclass(frozen=True)
class Coerced:
    value: object
    error: str | None = None


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    if name in _REQUIRED_TYPES:
        return TypeAdapter(_REQUIRED_TYPES[name])
    return TypeAdapter(_OPTIONAL_TYPES[name] | None)


def coerce(name: str, value: object) -> Coerced:
    """``value`` as the generator would hold it, or the reason it refuses it."""
    if name not in KNOWN:
        return Coerced(value)
    try:
        return Coerced(_adapter(name).validate_python(value))
    except ValidationError as exc:
        return Coerced(None, "; ".join(str(error["msg"]) for error in exc.errors()))
