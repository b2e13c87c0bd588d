"""Every healthcheck in docker-compose.yml calls a program its image has.

A healthcheck that cannot run never reports healthy, and every service that
waits on it (``depends_on: condition: service_healthy``) never starts. What
each pinned image contains is read off its upstream build files and written
down, with the source, in ``image_tools.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .conftest import load_yaml

IMAGE_TOOLS = load_yaml(Path(__file__).with_name("image_tools.yaml"))


def test_every_image_is_described() -> None:
    from .conftest import COMPOSE_FILE

    images = {s["image"] for s in load_yaml(COMPOSE_FILE)["services"].values()}
    assert images <= set(IMAGE_TOOLS), "describe each new pin in image_tools.yaml"


def test_every_healthcheck_calls_a_program_its_image_has(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        check = service.get("healthcheck")
        if check is None:
            continue
        form, program = check["test"][0], check["test"][1]
        assert form == "CMD", f"{name}: exec form (CMD-SHELL needs a shell)"
        tools = IMAGE_TOOLS[service["image"]]["programs"]
        assert program in tools, f"{name}: {service['image']} has no {program!r} ({tools})"


def test_images_without_any_program_are_probed_from_outside(compose: dict[str, Any]) -> None:
    """The collector image is a bare binary: a sidecar probes it."""
    for name, service in compose["services"].items():
        if not IMAGE_TOOLS[service["image"]]["programs"]:
            assert "healthcheck" not in service, name
            assert any(name in str(s.get("depends_on", "")) for s in compose["services"].values())


def test_the_check_catches_a_missing_program(compose: dict[str, Any]) -> None:
    """What the issue measured: wget in Tempo's distroless image would fail."""
    assert "wget" not in IMAGE_TOOLS["grafana/tempo:3.0.3"]["programs"]
    assert "curl" not in IMAGE_TOOLS["grafana/grafana:13.1.0"]["programs"]
