"""docker-compose.yml checked without Docker: spec schema, pins, ports, health, mounts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import COMPOSE_FILE, CONFIG_DIR, REPO, interpolate, load_yaml

EXPECTED_SERVICES = {
    "otel-collector",
    "otel-collector-health",
    "jaeger",
    "tempo",
    "grafana",
    "clickhouse",
    "otel-agent",
    "otel-gateway-1",
    "otel-gateway-2",
    "two-tier-health",
}
TWO_TIER = {"otel-agent", "otel-gateway-1", "otel-gateway-2", "two-tier-health"}
PUBLISHED = {
    "otel-collector": {4317, 4318},
    "otel-agent": {14317, 14318},
    "jaeger": {16686},
    "grafana": {3000},
    "clickhouse": {8123},
}
OUTPUT_DIRS = {"./otel-output"}  # written by the stack, not shipped
VERSION_TAG = re.compile(r"^\d+\.\d+\.\d+(\.\d+)?$")  # ClickHouse's tags have a build number
# Any network use by the validator must fail fast instead of leaving the machine.
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    """The Compose Specification schema vendored in check-jsonschema: no download."""
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", path],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **OFFLINE},
    )


def test_compose_file_matches_the_compose_specification() -> None:
    result = check_jsonschema(COMPOSE_FILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_would_catch_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  app:\n    image: 1\n    ports: [{bogus: 1}]\n")
    result = check_jsonschema(broken)
    assert result.returncode != 0
    assert "services.app" in result.stdout + result.stderr


def test_services(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == EXPECTED_SERVICES


def test_images_are_pinned_to_release_tags(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image, _, tag = service["image"].rpartition(":")
        assert image and VERSION_TAG.match(tag), f"{name}: pin {service['image']!r} to a release"
    images = {service["image"] for service in compose["services"].values()}
    assert "otel/opentelemetry-collector-contrib:0.160.0" in images
    assert any(image.startswith("jaegertracing/jaeger:2.") for image in images)


def published_ports(service: dict[str, Any], env: dict[str, str]) -> list[tuple[str, int, int]]:
    """(host_ip, host_port, container_port) of each short-syntax port mapping."""
    mappings = []
    for port in service.get("ports", []):
        host_ip, host_port, container_port = interpolate(str(port), env).rsplit(":", 2)
        mappings.append((host_ip, int(host_port), int(container_port)))
    return mappings


def test_only_needed_ports_are_published_on_loopback_by_default(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        mappings = published_ports(service, env={})
        assert {host for _, host, _ in mappings} == PUBLISHED.get(name, set()), name
        for host_ip, host_port, container_port in mappings:
            assert host_ip == "127.0.0.1", f"{name}: {host_port} is not bound to loopback"
            # The two-tier agent beside the single collector: the same ports, 10000 up.
            assert host_port == container_port + (10000 if name in TWO_TIER else 0), name


def test_bind_address_can_be_overridden(compose: dict[str, Any]) -> None:
    mappings = published_ports(compose["services"]["grafana"], env={"ADK_OTEL_BIND": "0.0.0.0"})
    assert mappings == [("0.0.0.0", 3000, 3000)]


def is_collector(service: dict[str, Any]) -> bool:
    return bool(service["image"].startswith("otel/opentelemetry-collector"))


def test_every_service_reports_health(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        if is_collector(service):
            continue  # no shell in the image: probed by a busybox sidecar
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD", f"{name}: exec form, no shell needed"
        assert any("http://" in arg for arg in test), name
    probe = services["otel-collector-health"]["healthcheck"]["test"]
    assert "http://otel-collector:13133/" in probe
    assert services["otel-collector-health"]["depends_on"] == ["otel-collector"]
    # The two-tier sidecar probes every collector of its profile.
    two_tier = sorted(name for name in TWO_TIER if is_collector(services[name]))
    probe = services["two-tier-health"]["healthcheck"]["test"]
    assert [f"http://{name}:13133/" for name in two_tier] == [
        arg for arg in probe if arg.startswith("http://")
    ]
    assert sorted(services["two-tier-health"]["depends_on"]) == two_tier


def test_the_two_tier_set_up_is_a_profile_of_its_own(compose: dict[str, Any]) -> None:
    """`docker compose up` starts the single collector only, as before; the two tiers come
    with `--profile two-tier`, in front of the same backends."""
    for name, service in compose["services"].items():
        assert service.get("profiles", []) == (["two-tier"] if name in TWO_TIER else []), name
    services = compose["services"]
    for gateway in ("otel-gateway-1", "otel-gateway-2"):
        assert services[gateway]["depends_on"] == services["otel-collector"]["depends_on"]
        assert services[gateway]["user"] == services["otel-collector"]["user"]
        environment = services[gateway]["environment"]
        assert environment["GATEWAY_NAME"] == gateway.removeprefix("otel-")
        single = services["otel-collector"]["environment"]
        assert {key: environment[key] for key in single} == single
    assert set(services["otel-agent"]["depends_on"]) == {"otel-gateway-1", "otel-gateway-2"}
    assert "agent-queue:/var/lib/otelcol" in services["otel-agent"]["volumes"]


def test_start_order_waits_for_healthy_backends(compose: dict[str, Any]) -> None:
    services = compose["services"]
    backends = {
        "jaeger": {"condition": "service_healthy"},
        "tempo": {"condition": "service_healthy"},
    }
    assert services["grafana"]["depends_on"] == backends
    assert services["otel-collector"]["depends_on"] == {
        **backends,
        "clickhouse": {"condition": "service_healthy"},
    }


def bind_mounts(compose: dict[str, Any]) -> dict[str, dict[str, str]]:
    """source -> {service: container path} for every ./relative bind mount."""
    mounts: dict[str, dict[str, str]] = {}
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("./"):
                mounts.setdefault(source, {})[name] = target
    return mounts


def test_mounted_config_files_exist_in_the_repository(compose: dict[str, Any]) -> None:
    mounts = bind_mounts(compose)
    assert set(mounts) >= OUTPUT_DIRS
    for source in set(mounts) - OUTPUT_DIRS:
        assert (REPO / source).exists(), f"{source} is mounted but not in the repository"
        assert (REPO / source).resolve().is_relative_to(CONFIG_DIR), source


def test_services_are_started_with_the_mounted_configs(compose: dict[str, Any]) -> None:
    services, mounts = compose["services"], bind_mounts(compose)
    for config, users in {
        "otel-collector.yaml": {"otel-collector"},
        "otel-agent.yaml": {"otel-agent"},
        "otel-gateway.yaml": {"otel-gateway-1", "otel-gateway-2"},
    }.items():
        targets = mounts[f"./collector-config/{config}"]
        assert set(targets) == users, config
        for name, target in targets.items():
            assert services[name]["command"] == [f"--config={target}"]
    tempo_target = mounts["./collector-config/tempo.yaml"]["tempo"]
    assert services["tempo"]["command"] == [f"-config.file={tempo_target}"]
    assert mounts["./collector-config/grafana/provisioning"] == {
        "grafana": "/etc/grafana/provisioning"
    }
    assert mounts["./otel-output"] == {
        name: "/otel-output" for name in ("otel-collector", "otel-gateway-1", "otel-gateway-2")
    }


def test_header_names_the_versions_it_targets(compose: dict[str, Any]) -> None:
    """Every config file says which releases it was written for, matching the pins."""
    tags = {service["image"].rsplit(":", 1)[1] for service in compose["services"].values()}
    tags.discard("1.37.0")  # busybox probe: no config of its own
    configs = ("otel-collector.yaml", "otel-agent.yaml", "otel-gateway.yaml")
    for path in (COMPOSE_FILE, *(CONFIG_DIR / name for name in configs)):
        header = path.read_text(encoding="utf-8").split("\n\n", 1)[0]
        for tag in tags:
            assert tag in header, f"{path.name} header does not mention {tag}"
    tempo_tag = compose["services"]["tempo"]["image"].rsplit(":", 1)[1]
    assert tempo_tag in (CONFIG_DIR / "tempo.yaml").read_text(encoding="utf-8")


def test_yaml_files_parse() -> None:
    for path in [COMPOSE_FILE, *CONFIG_DIR.rglob("*.yaml")]:
        assert isinstance(load_yaml(path), dict), path


def test_docs_match_the_stack(compose: dict[str, Any]) -> None:
    docs = (REPO / "docs" / "collector.md").read_text(encoding="utf-8")
    for name, service in compose["services"].items():
        tag = service["image"].rsplit(":", 1)[1]
        assert name.endswith("-health") or tag in docs, f"docs miss {name} {tag}"
    for ports in PUBLISHED.values():
        for port in ports:
            assert f"localhost:{port}" in docs, f"docs miss port {port}"
