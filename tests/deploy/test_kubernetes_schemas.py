"""deploy/kubernetes/ against Kubernetes' published JSON schemas, and the two replicas' spread.

The schemas come bundled with kubernetes-validate (a dev dependency), so nothing is fetched.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.deploy_files import kubernetes_documents

KUSTOMIZATION = "kustomization.yaml"
HOSTNAME = "kubernetes.io/hostname"


def _resources() -> dict[str, dict[str, Any]]:
    documents = kubernetes_documents()
    del documents[KUSTOMIZATION]
    return documents


def _one(kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in _resources().values() if doc["kind"] == kind]
    return found


def _server_labels() -> dict[str, str]:
    labels: dict[str, str] = _one("Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def test_every_manifest_is_valid_against_the_kubernetes_schema() -> None:
    validate = pytest.importorskip("kubernetes_validate")
    version = validate.utils.latest_version()
    for name, document in _resources().items():
        # strict: a misspelt or misplaced field is an error, not silently dropped.
        try:
            validate.validate(document, version, strict=True)
        except validate.ValidationError as error:  # pragma: no cover - the failure's detail
            pytest.fail(f"{name}: {error}")


def test_the_disruption_budget_keeps_one_of_the_replicas() -> None:
    budget = _one("PodDisruptionBudget")["spec"]
    replicas = _one("Deployment")["spec"]["replicas"]
    assert budget["selector"]["matchLabels"].items() <= _server_labels().items()
    assert "minAvailable" not in budget
    assert 1 <= budget["maxUnavailable"] < replicas


def test_the_replicas_prefer_different_nodes() -> None:
    pod = _one("Deployment")["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == HOSTNAME
    selector = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert selector.items() <= _server_labels().items()


def test_the_status_token_comes_from_the_secret_and_is_required() -> None:
    (server,) = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    (var,) = [each for each in server["env"] if each["name"] == "FOLLOWUP_BOT_STATUS_TOKEN"]
    ref = var["valueFrom"]["secretKeyRef"]
    secret = _one("Secret")
    assert ref["name"] == secret["metadata"]["name"]
    assert ref["key"] in secret["stringData"]
    # An optional key would leave the status page open when it is missing.
    assert not ref.get("optional", False)
