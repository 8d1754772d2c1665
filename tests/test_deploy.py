"""The deployment files: ``deploy/k8s`` validated against the Kubernetes API
schemas that ``kubernetes-validate`` bundles (strict: an unknown field is an
error), the kustomization's own references checked, and ``compose.yaml``
against the Compose specification's JSON schema (the copy ``check-jsonschema``
vendors from the compose-spec repository, Apache-2.0). All offline; docker
and a cluster are not needed (nor run: a live trial is docs/operations.md's "Load
testing")."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
#: The oldest Kubernetes whose schemas the manifests must fit (autoscaling/v2
#: is GA since 1.23; gRPC probes since 1.27).
KUBERNETES_VERSIONS = ("1.27.0", kubernetes_validate.latest_version())


def kustomization() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return data


def resources_of_kustomization() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for name in kustomization()["resources"]:
        found += [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]
    return found


def by_kind(kind: str) -> dict[str, Any]:
    (found,) = [r for r in resources_of_kustomization() if r["kind"] == kind]
    return found


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_fits_the_kubernetes_schema(version: str) -> None:
    manifests = resources_of_kustomization()
    assert {m["kind"] for m in manifests} >= {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "StatefulSet",
        "Secret",
    }
    for manifest in manifests:
        kubernetes_validate.validate(manifest, version, strict=True)


def test_the_validator_refuses_what_it_should() -> None:
    """kubernetes-validate really checks (strict: a misspelt field fails)."""
    deployment = by_kind("Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_hpa_scales_the_deployment_on_cpu_and_owns_its_replicas() -> None:
    hpa, deployment = by_kind("HorizontalPodAutoscaler"), by_kind("Deployment")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"]["type"] == "Utilization"
    # Utilization is a share of the request: there must be one.
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"]["cpu"]
    assert "replicas" not in deployment["spec"]
    # The disruption budget can be met at the smallest size.
    assert by_kind("PodDisruptionBudget")["spec"]["minAvailable"] < hpa["spec"]["minReplicas"]


def test_the_read_only_root_has_a_writable_tmp() -> None:
    pod = by_kind("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume
    assert not mount.get("readOnly", False)


def test_the_kustomization_names_its_images_and_files() -> None:
    data = kustomization()
    assert all((K8S / name).is_file() for name in data["resources"])
    used = {
        container["image"].split(":")[0]
        for resource in resources_of_kustomization()
        if resource["kind"] in ("Deployment", "StatefulSet")
        for container in resource["spec"]["template"]["spec"]["containers"]
    }
    named = {image["name"] for image in data["images"]}
    assert named == used == {"railyard", "redis"}
    assert all("newTag" in image or "newName" in image for image in data["images"])


# ------------------------------------------------------------------ compose.yaml


def compose_schema() -> dict[str, Any]:
    vendored = resources.files("check_jsonschema") / "builtin_schemas/vendor/compose-spec.json"
    schema: dict[str, Any] = json.loads(vendored.read_text())
    return schema


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return data


def test_compose_fits_the_compose_specification() -> None:
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker()
    )
    errors = sorted(validator.iter_errors(compose()), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    # The schema does refuse what is not Compose.
    broken = compose()
    broken["services"]["railyard-1"]["portz"] = ["1:1"]
    assert list(validator.iter_errors(broken))


def test_compose_runs_two_replicas_on_distinct_ports_sharing_redis() -> None:
    services = compose()["services"]
    replicas = {name: s for name, s in services.items() if name.startswith("railyard")}
    assert len(replicas) == 2
    published: list[str] = []
    for replica in replicas.values():
        assert replica["build"] == "."
        assert replica["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert replica["environment"]["RAILYARD_WORKERS"] == "1"  # the replicas are the services
        assert replica["depends_on"]["redis"]["condition"] == "service_healthy"
        assert replica["read_only"] is True
        assert "/tmp" in replica["tmpfs"]
        # host ip:host port:container port; the container ports are the Dockerfile's.
        ports = [p.rsplit(":", 2) for p in replica["ports"]]
        assert sorted(container for _, _, container in ports) == ["50051", "8080"]
        published += [host for _, host, _ in ports]
    assert len(published) == len(set(published)) == 4
    assert "healthcheck" in services["redis"]


def test_a_pod_runs_one_worker() -> None:
    """Sized for one replica (CPU request, memory limit), a pod sets one
    worker: the default with Redis, one per CPU of the node, would not fit."""
    (container,) = by_kind("Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["RAILYARD_WORKERS"] == "1"
