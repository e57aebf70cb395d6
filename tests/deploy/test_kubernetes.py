"""deploy/kubernetes/: well-formed manifests whose names, ports and secrets agree."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from tests.deploy.deploy_files import (
    KUBERNETES,
    SETTING_NAMES,
    dockerfile,
    kubernetes_documents,
    load_mapping,
)

KUSTOMIZATION = "kustomization.yaml"
# Not applied: it only shows the keys of the Secret created out of band.
SECRET_EXAMPLE = "secret.example.yaml"
MIGRATE = ["followup-bot", "migrate"]
SERVE = ["followup-bot", "serve"]


def _resources() -> dict[str, dict[str, Any]]:
    documents = kubernetes_documents()
    del documents[KUSTOMIZATION]
    return documents


def _one(kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in _resources().values() if doc["kind"] == kind]
    return found


def _pod() -> dict[str, Any]:
    pod: dict[str, Any] = _one("Deployment")["spec"]["template"]["spec"]
    return pod


def _containers() -> list[dict[str, Any]]:
    pod = _pod()
    containers: list[dict[str, Any]] = [*pod.get("initContainers", []), *pod["containers"]]
    return containers


def _server() -> dict[str, Any]:
    (server,) = [each for each in _pod()["containers"] if each["command"] == SERVE]
    found: dict[str, Any] = server
    return found


def _secret_keys() -> tuple[str, set[str]]:
    secret = _one("Secret")
    return secret["metadata"]["name"], set(secret["stringData"])


def test_every_resource_has_api_version_kind_and_name() -> None:
    for name, doc in _resources().items():
        assert doc["apiVersion"], name
        assert doc["kind"], name
        assert doc["metadata"]["name"], name


def test_the_kustomization_lists_every_resource_but_the_example_secret() -> None:
    kustomization = load_mapping(KUBERNETES / KUSTOMIZATION)
    assert kustomization["kind"] == "Kustomization"
    expected = set(_resources()) - {SECRET_EXAMPLE}
    assert set(kustomization["resources"]) == expected
    images = {image["name"] for image in kustomization["images"]}
    assert {container["image"] for container in _containers()} <= images


def test_deployment_runs_two_replicas_its_selector_and_the_service_pick() -> None:
    deployment = _one("Deployment")
    assert deployment["spec"]["replicas"] == 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    assert _one("Service")["spec"]["selector"].items() <= labels.items()


def test_the_service_targets_the_named_container_port() -> None:
    ports = {port["name"] for port in _server()["ports"]}
    for port in _one("Service")["spec"]["ports"]:
        assert port["targetPort"] in ports


def test_probes_are_healthz_and_readyz_on_the_named_port() -> None:
    server = _server()
    ports = {port["name"] for port in server["ports"]}
    liveness = server["livenessProbe"]["httpGet"]
    readiness = server["readinessProbe"]["httpGet"]
    assert liveness["path"] == "/healthz"
    assert readiness["path"] == "/readyz"
    assert liveness["port"] in ports
    assert readiness["port"] in ports


def test_the_server_listens_on_its_container_port() -> None:
    server = _server()
    env = {var["name"]: var.get("value") for var in server["env"]}
    (port,) = server["ports"]
    assert env["FOLLOWUP_BOT_PORT"] == str(port["containerPort"])
    assert env["FOLLOWUP_BOT_HOST"] == "0.0.0.0"


def test_every_container_has_an_image_requests_and_a_memory_limit() -> None:
    for container in _containers():
        assert container["image"], container["name"]
        requests = container["resources"]["requests"]
        assert {"cpu", "memory"} <= set(requests), container["name"]
        assert container["resources"]["limits"]["memory"], container["name"]


def test_pods_run_as_the_images_non_root_user() -> None:
    context = _pod()["securityContext"]
    assert context["runAsNonRoot"] is True
    (user,) = [each for each in dockerfile() if each.keyword == "USER"]
    assert str(context["runAsUser"]) == user.arguments.partition(":")[0]
    for container in _containers():
        assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_migrate_runs_before_the_server() -> None:
    (migrate,) = _pod()["initContainers"]
    assert migrate["command"] == MIGRATE
    assert migrate["image"] == _server()["image"]


def test_secret_references_name_the_secret_and_its_keys() -> None:
    name, keys = _secret_keys()
    for container in _containers():
        for var in container.get("env", []):
            ref = var.get("valueFrom", {}).get("secretKeyRef")
            if ref is not None:
                assert ref["name"] == name, var["name"]
                assert ref["key"] in keys, var["name"]
    volumes = [volume["secret"] for volume in _pod()["volumes"] if "secret" in volume]
    assert volumes
    for volume in volumes:
        assert volume["secretName"] == name
        assert {item["key"] for item in volume["items"]} <= keys


def test_the_private_key_file_is_the_mounted_secret() -> None:
    server = _server()
    env = {var["name"]: var for var in server["env"]}
    assert "FOLLOWUP_BOT_PRIVATE_KEY" not in env
    path = PurePosixPath(env["FOLLOWUP_BOT_PRIVATE_KEY_FILE"]["value"])
    secret_volumes = {
        volume["name"]: volume["secret"] for volume in _pod()["volumes"] if "secret" in volume
    }
    (mount,) = [each for each in server["volumeMounts"] if each["name"] in secret_volumes]
    assert path.parent == PurePosixPath(mount["mountPath"])
    items = secret_volumes[mount["name"]]["items"]
    assert path.name in {item["path"] for item in items}


def test_every_variable_given_to_the_pods_is_a_setting() -> None:
    names = {var["name"] for container in _containers() for var in container.get("env", [])}
    names |= set(_one("ConfigMap")["data"])
    assert names <= SETTING_NAMES
    config_maps = [
        source["configMapRef"]["name"]
        for container in _containers()
        for source in container.get("envFrom", [])
    ]
    assert set(config_maps) <= {_one("ConfigMap")["metadata"]["name"]}
