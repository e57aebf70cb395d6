"""Which invariant a routing problem breaks, by the message it was made from.

The repository decides per invariant whether breaking it fails the "CI routing" check
or only warns (``routing.warnings``); problems carry their text, and each text comes
from one template, so the template tells the invariant.
"""

from __future__ import annotations

import re
import string

from bot.routing import checks, model, read, required, yaml_nodes
from bot.routing.problems import RoutingProblem

# The names are the config's (``bot.config.types.Invariant``).
INVARIANT_OF_TEMPLATE = {
    required.MSG_OFF_CUDA_IMAGE: "cuda-required",
    required.MSG_NO_GPU: "cuda-required",
    required.MSG_NO_PLUGIN: "cuda-required",
    required.MSG_NOT_AFTER_BUILD: "cuda-required",
    required.MSG_NOT_REQUIRED: "required-optional",
    checks.MSG_NO_PRODUCER: "image-producer",
    checks.MSG_NOT_AFTER_PRODUCER: "image-producer",
    checks.MSG_MULTI_NODE_KUBERNETES: "multi-node-kubernetes",
    checks.MSG_KUBERNETES_NO_POD: "kubernetes-plugin",
    checks.MSG_L4_DEVICES: "l4-num-devices",
    checks.MSG_L4_NO_PLUGIN: "l4-num-devices",
    checks.MSG_UNKNOWN_DEVICE: "unknown-device",
    checks.MSG_DEVICE_CASE: "unknown-device",
    checks.MSG_UNKNOWN_FIELD: "unknown-field",
    # Keys the generator reads past, as it does an unknown step field.
    model.MSG_UNKNOWN_MIRROR: "unknown-field",
    read.MSG_UNKNOWN_CONFIG_KEY: "unknown-field",
    read.MSG_UNKNOWN_TOP_LEVEL: "unknown-field",
    yaml_nodes.MSG_DUPLICATE_KEY: "duplicate-key",
    checks.MSG_DUPLICATE_STEP_KEY: "duplicate-key",
    checks.MSG_UNKNOWN_DEPENDENCY: "missing-dependency",
}
# Anything else the model reports (a file it could not read) is "unreadable": never
# a warning, whatever the config says.
UNREADABLE = "unreadable"


def _pattern(template: str) -> re.Pattern[str]:
    pieces = [
        re.escape(text) + ("(.+?)" if field is not None else "")
        for text, field, _spec, _conversion in string.Formatter().parse(template)
    ]
    return re.compile("".join(pieces) + r"\Z", re.S)


_PATTERNS = [(_pattern(template), name) for template, name in INVARIANT_OF_TEMPLATE.items()]


def invariant_of(problem: RoutingProblem) -> str:
    if problem.fatal:
        return UNREADABLE
    return next((name for pattern, name in _PATTERNS if pattern.match(problem.message)), UNREADABLE)
