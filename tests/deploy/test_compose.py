"""The compose file: valid against the Compose specification, and consistent with our images."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.support import DEPLOY, OTHER_ENV, ROOT, VERSION, component_settings

COMPOSE = DEPLOY / "compose.yaml"
OURS = {"account-svc", "render-svc", "publish-svc", "webhook-svc", "sandbox-net", "edge"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def compose_schema() -> dict[str, Any]:
    # The Compose specification's schema, as check-jsonschema vendors it (offline).
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    schema: dict[str, Any] = json.loads(vendored.read_text())
    return schema


def test_the_file_validates_against_the_compose_specification(compose: dict[str, Any]) -> None:
    jsonschema.validate(compose, compose_schema())


def test_the_schema_check_is_real() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"services": {"x": {"image": "a", "ports": "not-a-list"}}}, compose_schema()
        )


def test_dependencies_are_the_official_images_with_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["mongo"]["image"] == "mongo:7"
    assert services["nats"]["image"].startswith("nats:2.10")
    assert "-js" in services["nats"]["command"]
    assert services["seaweedfs"]["image"].startswith("chrislusf/seaweedfs")
    for name in ("mongo", "nats", "seaweedfs"):
        assert services[name]["healthcheck"]["test"][0] == "CMD", name
    assert (COMPOSE.parent / "compose" / "s3.json").is_file()


def test_our_services_are_built_from_deploy_docker_and_wait_for_health(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert set(services) >= OURS
    for name in OURS:
        service = services[name]
        assert service["image"] == f"storypost/{name}:{VERSION}"
        build = service["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
            ROOT / "deploy" / "docker" / f"{name}.Dockerfile"
        )
        for dependency, condition in service.get("depends_on", {}).items():
            # The migrate run ends (docs/migrations.md); the others serve.
            wanted = (
                "service_completed_successfully" if dependency == "migrate" else "service_healthy"
            )
            assert dependency in services and condition["condition"] == wanted
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert set(services["edge"]["depends_on"]) == {"account-svc"}


def test_every_environment_variable_is_a_setting(compose: dict[str, Any]) -> None:
    known = component_settings()
    for name in OURS:
        env = compose["services"][name].get("environment", {})
        unknown = set(env) - set().union(*known.values()) - OTHER_ENV
        assert not unknown, f"{name}: {unknown}"


def test_the_schema_is_migrated_before_any_service_starts(compose: dict[str, Any]) -> None:
    services = compose["services"]
    migrate = services["migrate"]
    assert migrate["command"][:3] == ["python", "-m", "storypost_cli.migrate"]
    assert migrate["restart"] == "no" and set(migrate["depends_on"]) == {"mongo"}
    for name in OURS - {"edge", "sandbox-net"}:
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
