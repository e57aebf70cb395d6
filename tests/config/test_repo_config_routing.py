"""The `routing` and `migrations` sections."""

from __future__ import annotations

from bot.config import messages as msg
from bot.config.parse import parse_repo_config
from bot.config.routing import DEFAULT_REQUIRED_KEYS, DEFAULT_ROUTING_PATHS

from .samples import FILENAME, problems_of

SWEEP = """\
routing:
  required_commands: ['check-torch-abi']
  warnings: [unknown-field]
migrations:
  - name: l4-eks
    select: {queue: gpu_1_queue, plugin: docker}     # which steps are still to move
    exclude:
      - {key: torch-stable-abi-audit, reason: audits the CUDA wheel on gpu_1_queue}
      - {multi_node: true, reason: multi-node stays off Kubernetes}
    set: {device: l4, num_devices: 1}
"""


def test_the_sweep_of_the_issue_parses() -> None:
    config = parse_repo_config(SWEEP, filename=FILENAME)
    assert config.routing is not None
    assert config.routing.paths == DEFAULT_ROUTING_PATHS
    assert config.routing.required_keys == DEFAULT_REQUIRED_KEYS
    assert config.routing.warnings == ("unknown-field",)
    [sweep] = config.migrations
    assert (sweep.select.queue, sweep.select.plugin) == ("gpu_1_queue", "docker")
    assert [rule.reason for rule in sweep.exclude] == [
        "audits the CUDA wheel on gpu_1_queue",
        "multi-node stays off Kubernetes",
    ]
    assert (sweep.set.device, sweep.set.num_devices) == ("l4", 1)
    assert hash(config) == hash(parse_repo_config(SWEEP, filename=FILENAME))


def test_an_empty_routing_section_is_off() -> None:
    assert parse_repo_config("routing:\n", filename=FILENAME).routing is None


def test_mistakes_are_named_with_their_place() -> None:
    text = SWEEP.replace("queue: gpu_1_queue", "queu: gpu_1_queue").replace(
        "[unknown-field]", "[unknown-feild]"
    )
    warning, key = problems_of(text)
    assert warning == (
        f"{FILENAME}:3:14: routing.warnings[0]: must be one of 'cuda-required', "
        "'image-producer', 'multi-node-kubernetes', 'kubernetes-plugin', 'l4-num-devices', "
        "'unknown-device', 'unknown-field', 'duplicate-key', 'missing-dependency', "
        "'required-optional', got string 'unknown-feild'"
    )
    assert key == (
        f"{FILENAME}:6:14: migrations[0].select.queu: unknown key 'queu' (did you mean 'queue'?)"
    )


def test_migration_names_are_unique_ignoring_case() -> None:
    [problem] = problems_of(SWEEP + "  - name: L4-EKS\n    select: {}\n    set: {}\n")
    duplicate = msg.MSG_DUPLICATE_MIGRATION.format(name="L4-EKS", index=0)
    assert problem.endswith("migrations[1].name: " + duplicate)


def test_an_exclusion_needs_its_reason() -> None:
    [problem] = problems_of(SWEEP.replace(", reason: multi-node stays off Kubernetes", ""))
    assert "migrations[0].exclude[1].reason: " + msg.MSG_MISSING in problem


TABLES = """\
routing:
  tables:
    device_queues: {h300: h300_queue}
    kubernetes_devices: [h100, a100, b200-k8s, l4, h300]
"""


def test_table_overrides_are_plain_data_and_the_config_still_hashes() -> None:
    config = parse_repo_config(TABLES, filename=FILENAME)
    assert config.routing is not None
    assert config.routing.tables["device_queues"] == {"h300": "h300_queue"}
    assert hash(config) == hash(parse_repo_config(TABLES, filename=FILENAME))
    other = parse_repo_config(TABLES.replace("h300_queue", "x"), filename=FILENAME)
    assert (hash(config), config) != (hash(other), other)
