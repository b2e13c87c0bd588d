"""The two-tier set-up's configs checked statically: the agent routes by trace id to the
gateways compose runs, the gateways sample as the single collector does, and the builder
manifest names exactly the components the configs use.

Run on real collectors by hand: benchmarks/two_tier.py (docs/collector.md has its numbers).
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import CONFIG_DIR, load_yaml
from .test_collector_config import ACCEPTED, KINDS, REFUSED, component_type, host_port

CONFIGS = ("otel-collector.yaml", "otel-agent.yaml", "otel-gateway.yaml")
GATEWAY_SERVICES = ("otel-gateway-1", "otel-gateway-2")
EXTENSIONS = ACCEPTED["extensions"] | {"file_storage"}


@pytest.fixture(scope="module")
def agent() -> dict[str, Any]:
    return load_yaml(CONFIG_DIR / "otel-agent.yaml")


@pytest.fixture(scope="module")
def gateway() -> dict[str, Any]:
    return load_yaml(CONFIG_DIR / "otel-gateway.yaml")


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return load_yaml(CONFIG_DIR / "builder-config.yaml")


@pytest.mark.parametrize("name", ["otel-agent.yaml", "otel-gateway.yaml"])
def test_wiring_and_names(name: str) -> None:
    """As the single collector's: everything defined is used, current names only,
    memory_limiter first and batch last in every pipeline."""
    config = load_yaml(CONFIG_DIR / name)
    pipelines = config["service"]["pipelines"]
    for kind in KINDS:
        used = {component for pipeline in pipelines.values() for component in pipeline[kind]}
        assert used == set(config[kind]), kind
    assert set(config["service"]["extensions"]) == set(config["extensions"])
    for kind in (*KINDS, "extensions"):
        allowed = EXTENSIONS if kind == "extensions" else ACCEPTED[kind]
        for component_id in config[kind]:
            type_name = component_type(component_id)
            if kind == "exporters" or type_name != "otlp":
                assert type_name not in REFUSED, f"{component_id}: {REFUSED[type_name]}"
            assert type_name in allowed, f"{kind}: {component_id}"
    for pipeline_name, pipeline in pipelines.items():
        processors = pipeline["processors"]
        assert processors[0] == "memory_limiter", pipeline_name
        assert processors[-1] == "batch", pipeline_name


def test_the_agent_samples_nothing_and_routes_everything_by_trace_id(
    agent: dict[str, Any],
) -> None:
    pipelines = agent["service"]["pipelines"]
    assert set(pipelines) == {"traces", "logs"}
    for pipeline in pipelines.values():
        assert "tail_sampling" not in pipeline["processors"]
        assert pipeline["exporters"] == ["load_balancing"]
    exporter = agent["exporters"]["load_balancing"]
    assert exporter["routing_key"] == "traceID"
    assert exporter["protocol"]["otlp"]["tls"]["insecure"] is True


def test_the_agent_reaches_each_gateway_compose_runs(
    agent: dict[str, Any], gateway: dict[str, Any], compose: dict[str, Any]
) -> None:
    hostnames = agent["exporters"]["load_balancing"]["resolver"]["static"]["hostnames"]
    grpc = gateway["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert host_port(grpc) == ("0.0.0.0", 4317)
    assert set(gateway["receivers"]["otlp"]["protocols"]) == {"grpc"}  # the agents' protocol
    assert [host_port(hostname) for hostname in hostnames] == [
        (service, 4317) for service in GATEWAY_SERVICES
    ]
    assert all(service in compose["services"] for service in GATEWAY_SERVICES)
    receiver = agent["receivers"]["otlp"]["protocols"]
    listening = {name: host_port(spec["endpoint"]) for name, spec in receiver.items()}
    assert listening == {"grpc": ("0.0.0.0", 4317), "http": ("0.0.0.0", 4318)}
    published = {
        str(port).rsplit(":", 2)[-1] for port in compose["services"]["otel-agent"]["ports"]
    }
    assert published == {"4317", "4318"}


def test_the_agent_queue_is_persistent_and_the_only_one(
    agent: dict[str, Any], compose: dict[str, Any]
) -> None:
    """Failures go back to the exporter's own queue, kept on disk by file_storage: a queue
    per gateway would hold them in memory, lost when the agent restarts."""
    exporter = agent["exporters"]["load_balancing"]
    queue = exporter["sending_queue"]
    assert queue["enabled"] is True
    storage = queue["storage"]
    assert component_type(storage) == "file_storage"
    assert storage in agent["service"]["extensions"]
    assert exporter["retry_on_failure"]["enabled"] is True
    per_gateway = exporter["protocol"]["otlp"]
    assert per_gateway["sending_queue"]["enabled"] is False
    assert per_gateway["retry_on_failure"]["enabled"] is False
    directory = agent["extensions"][storage]["directory"]
    volumes = compose["services"]["otel-agent"]["volumes"]
    mounted = [volume.split(":")[1] for volume in volumes if not volume.startswith("./")]
    assert any(directory.startswith(f"{target}/") for target in mounted), directory
    assert agent["extensions"][storage]["create_directory"] is True


def test_the_gateway_samples_as_the_single_collector_does(
    gateway: dict[str, Any], collector_config: dict[str, Any]
) -> None:
    for section in ("processors", "extensions"):
        assert gateway[section] == collector_config[section], section
    assert gateway["service"]["pipelines"] == collector_config["service"]["pipelines"]
    single = collector_config["exporters"]
    assert {key: value for key, value in gateway["exporters"].items() if "file" not in key} == {
        key: value for key, value in single.items() if "file" not in key
    }


def test_each_gateway_writes_its_own_files_in_the_shared_folder(
    gateway: dict[str, Any], collector_config: dict[str, Any], compose: dict[str, Any]
) -> None:
    """Two gateways on one folder: each file carries the gateway's name, and the folder is
    the single collector's, so `adk-otel tree otel-output/` reads them all."""
    names = set()
    for service in GATEWAY_SERVICES:
        names.add(compose["services"][service]["environment"]["GATEWAY_NAME"])
    assert len(names) == len(GATEWAY_SERVICES)
    for exporter in ("file", "file/logs"):
        path = gateway["exporters"][exporter]["path"]
        single = collector_config["exporters"][exporter]["path"]
        assert "${env:GATEWAY_NAME}" in path
        assert path.rsplit("/", 1)[0] == single.rsplit("/", 1)[0]
        stem, suffix = single.rsplit("/", 1)[1].split(".")
        assert path.rsplit("/", 1)[1] == f"{stem}-${{env:GATEWAY_NAME}}.{suffix}"
        # A restarted gateway appends: the default would truncate what it wrote before.
        assert gateway["exporters"][exporter]["append"] is True


def module_component(gomod: str) -> tuple[str, str]:
    """`.../exporter/loadbalancingexporter v0.160.0` -> (`loadbalancing`, `v0.160.0`)."""
    path, version = gomod.split()
    last = path.rsplit("/", 1)[1]
    for kind in ("receiver", "processor", "exporter", "extension"):
        last = last.removesuffix(kind)
    return last, version


def test_the_builder_manifest_names_exactly_the_components_the_configs_use(
    manifest: dict[str, Any], compose: dict[str, Any]
) -> None:
    """A module is named after its component without underscores; a component renamed since
    (`otlp` -> `otlp_grpc`) keeps its module's old name."""
    renamed = {reason.split("`")[-2]: old for old, reason in REFUSED.items() if "alias" in reason}
    release = compose["services"]["otel-collector"]["image"].rsplit(":", 1)[1]
    for kind in (*KINDS, "extensions"):
        used = set()
        for name in CONFIGS:
            config = load_yaml(CONFIG_DIR / name)
            used |= {component_type(component_id) for component_id in config[kind]}
        built = {}
        for entry in manifest[kind]:
            module, version = module_component(entry["gomod"])
            assert version == f"v{release}", entry["gomod"]
            built[module] = entry
        assert set(built) == {renamed.get(t, t).replace("_", "") for t in used}, kind
    assert manifest["dist"]["version"] == release
    providers = {entry["gomod"].split()[0].rsplit("/", 1)[1] for entry in manifest["providers"]}
    assert providers == {"envprovider", "fileprovider"}  # ${env:...} and --config=file
