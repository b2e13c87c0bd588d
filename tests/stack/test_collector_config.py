"""collector-config/ checked statically: pipelines, component names, and wiring to compose."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from .conftest import CONFIG_DIR, load_yaml

# Component type names otelcol-contrib 0.160.0 accepts, for the components this stack may use.
# Source: the distribution manifest (opentelemetry-collector-releases,
# distributions/otelcol-contrib/manifest.yaml) and the component renames of collector core
# v0.144.0 (`otlp` -> `otlp_grpc`, `otlphttp` -> `otlp_http`, old names kept as deprecated
# aliases). `load_balancing` (was `loadbalancing`) is listed for the gateway layout in the docs.
ACCEPTED = {
    "receivers": {"otlp"},
    "processors": {"memory_limiter", "batch", "tail_sampling"},
    "exporters": {"otlp_grpc", "otlp_http", "debug", "file", "load_balancing", "clickhouse"},
    "extensions": {"health_check"},
}
REFUSED = {
    "logging": "removed in 0.111.0: use `debug`",
    "otlp": "deprecated exporter alias since 0.144.0: use `otlp_grpc`",
    "otlphttp": "deprecated alias since 0.144.0: use `otlp_http`",
    "loadbalancing": "deprecated alias: use `load_balancing`",
}
KINDS = ("receivers", "processors", "exporters")


def component_type(component_id: str) -> str:
    """`otlp_grpc/jaeger` -> `otlp_grpc`."""
    return component_id.split("/", 1)[0]


def host_port(endpoint: str) -> tuple[str, int]:
    parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    assert parts.hostname and parts.port, endpoint
    return parts.hostname, parts.port


@pytest.fixture(scope="module")
def pipelines(collector_config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    return collector_config["service"]["pipelines"]


def test_everything_used_is_defined_and_everything_defined_is_used(
    collector_config: dict[str, Any], pipelines: dict[str, dict[str, list[str]]]
) -> None:
    for kind in KINDS:
        used = {component for pipeline in pipelines.values() for component in pipeline[kind]}
        assert used == set(collector_config[kind]), kind
    assert set(collector_config["service"]["extensions"]) == set(collector_config["extensions"])
    assert set(pipelines) == {"traces", "traces/file", "traces/clickhouse", "logs"}


def test_component_names_are_accepted_by_the_pinned_release(
    collector_config: dict[str, Any],
) -> None:
    for kind in (*KINDS, "extensions"):
        for component_id in collector_config[kind]:
            name = component_type(component_id)
            if kind == "exporters" or name != "otlp":  # the `otlp` receiver is still `otlp`
                assert name not in REFUSED, f"{component_id}: {REFUSED[name]}"
            assert name in ACCEPTED[kind], f"{kind}: {component_id} is not in the allow-list"


def test_processor_order(pipelines: dict[str, dict[str, list[str]]]) -> None:
    for name, pipeline in pipelines.items():
        processors = pipeline["processors"]
        assert processors[0] == "memory_limiter", f"{name}: memory_limiter must come first"
        assert processors[-1] == "batch", f"{name}: batch must come last"
        if "tail_sampling" in processors:
            assert processors.index("tail_sampling") < processors.index("batch")


def test_tail_sampling_always_keeps_errors(collector_config: dict[str, Any]) -> None:
    policies = collector_config["processors"]["tail_sampling"]["policies"]
    by_type = {policy["type"]: policy for policy in policies}
    assert by_type["status_code"]["status_code"]["status_codes"] == ["ERROR"]
    rest = by_type["probabilistic"]["probabilistic"]["sampling_percentage"]
    assert rest == "${env:TRACE_SAMPLE_PERCENT:-100}"  # every trace by default in a dev stack


def test_the_file_pipeline_is_unsampled(pipelines: dict[str, dict[str, list[str]]]) -> None:
    assert "tail_sampling" not in pipelines["traces/file"]["processors"]
    assert pipelines["traces/file"]["exporters"] == ["file"]


def test_the_logs_pipeline_writes_a_logs_file_beside_the_traces(
    collector_config: dict[str, Any],
    pipelines: dict[str, dict[str, list[str]]],
    compose: dict[str, Any],
) -> None:
    """adk-otel's log records (evaluation results, details events) reach a
    file in the bind-mounted output folder, beside the traces, where the CLI
    reads both (tests/cli/test_collector_files.py reads that layout)."""
    logs = pipelines["logs"]
    assert logs["receivers"] == ["otlp"]
    assert logs["processors"] == ["memory_limiter", "batch"]  # unsampled, as traces/file
    assert logs["exporters"] == ["file/logs", "debug"]
    exporters = collector_config["exporters"]
    logs_file, traces_file = exporters["file/logs"]["path"], exporters["file"]["path"]
    assert logs_file == "/otel-output/logs.json"
    assert logs_file.rsplit("/", 1)[0] == traces_file.rsplit("/", 1)[0]
    assert exporters["file/logs"].get("format", "json") == "json"
    assert "./otel-output:/otel-output" in compose["services"]["otel-collector"]["volumes"]


def test_receivers_listen_on_all_interfaces_on_the_published_ports(
    collector_config: dict[str, Any], compose: dict[str, Any]
) -> None:
    protocols = collector_config["receivers"]["otlp"]["protocols"]
    listening = {name: host_port(spec["endpoint"]) for name, spec in protocols.items()}
    assert listening == {"grpc": ("0.0.0.0", 4317), "http": ("0.0.0.0", 4318)}
    published = {
        str(port).rsplit(":", 1)[1] for port in compose["services"]["otel-collector"]["ports"]
    }
    assert published == {"4317", "4318"}


def test_exporters_reach_compose_services_not_localhost(
    collector_config: dict[str, Any], compose: dict[str, Any]
) -> None:
    tempo = load_yaml(CONFIG_DIR / "tempo.yaml")
    tempo_grpc = tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    expected = {"jaeger": 4317, "tempo": host_port(tempo_grpc)[1]}  # Jaeger v2's default OTLP
    targets = {}
    for component_id, spec in collector_config["exporters"].items():
        if component_type(component_id) in ("otlp_grpc", "otlp_http"):
            host, port = host_port(spec["endpoint"])
            assert host not in ("localhost", "127.0.0.1", "0.0.0.0"), component_id
            assert host in compose["services"], f"{component_id}: {host} is not a compose service"
            assert spec["tls"]["insecure"] is True  # plain gRPC inside the compose network
            targets[host] = port
    assert targets == expected


def test_health_check_and_file_output_match_compose(
    collector_config: dict[str, Any], compose: dict[str, Any]
) -> None:
    assert host_port(collector_config["extensions"]["health_check"]["endpoint"]) == (
        "0.0.0.0",
        13133,
    )
    file_exporter = collector_config["exporters"]["file"]
    assert file_exporter["path"] == "/otel-output/traces.json"
    assert file_exporter.get("format", "json") == "json"
    assert "./otel-output:/otel-output" in compose["services"]["otel-collector"]["volumes"]


def test_tempo_is_monolithic_with_local_storage_and_otlp(compose: dict[str, Any]) -> None:
    tempo = load_yaml(CONFIG_DIR / "tempo.yaml")
    assert not {"ingester", "compactor", "ingest"} & set(tempo), "removed or Kafka-only in 3.0"
    assert tempo["server"]["http_listen_port"] == 3200
    grpc = tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert host_port(grpc) == ("0.0.0.0", 4317)
    storage = tempo["storage"]["trace"]
    assert storage["backend"] == "local"
    assert storage["local"]["path"].startswith("/var/tempo/")
    assert storage["wal"]["path"].startswith("/var/tempo/")
    assert "tempo-data:/var/tempo" in compose["services"]["tempo"]["volumes"]
    probe = compose["services"]["tempo"]["healthcheck"]["test"]
    assert "-health.url=http://127.0.0.1:3200/ready" in probe
    assert tempo["distributor"]["max_attribute_bytes"] >= 16384, "stack traces kept whole"


def test_grafana_datasources_point_at_compose_services() -> None:
    provisioning = load_yaml(CONFIG_DIR / "grafana/provisioning/datasources/datasources.yaml")
    assert provisioning["apiVersion"] == 1
    sources = {source["type"]: source for source in provisioning["datasources"]}
    assert set(sources) == {"tempo", "jaeger"}
    assert sources["tempo"]["url"] == "http://tempo:3200"
    assert sources["jaeger"]["url"] == "http://jaeger:16686"
    assert [source["uid"] for source in sources.values() if source.get("isDefault")] == ["tempo"]
    assert all(source["access"] == "proxy" for source in sources.values())


def test_dashboards_are_provisioned_from_the_repository_folder(compose: dict[str, Any]) -> None:
    provider = load_yaml(CONFIG_DIR / "grafana/provisioning/dashboards/dashboards.yaml")
    (entry,) = provider["providers"]
    mount = f"./collector-config/grafana/dashboards:{entry['options']['path']}:ro"
    assert mount in compose["services"]["grafana"]["volumes"]
    dashboards = sorted((CONFIG_DIR / "grafana/dashboards").glob("*.json"))
    assert "adk-otel.json" in {path.name for path in dashboards}
    datasource_uids = {"tempo", "jaeger"}
    for path in dashboards:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        assert dashboard["uid"] and dashboard["title"], path.name
        assert dashboard["panels"], f"{path.name}: no panels"
        for panel in dashboard["panels"]:
            assert panel["datasource"]["uid"] in datasource_uids, f"{path.name}: {panel['title']}"


def test_grafana_provisioning_has_no_dollar_signs() -> None:
    """Grafana expands $VAR in provisioning files: a stray `$` silently becomes empty."""
    provisioning = CONFIG_DIR / "grafana/provisioning"
    files = sorted(path for path in provisioning.rglob("*") if path.is_file())
    # Every provisioning file is read, whatever its extension: the two the stack mounts at least.
    names = {path.relative_to(provisioning).as_posix() for path in files}
    assert names >= {"datasources/datasources.yaml", "dashboards/dashboards.yaml"}, names
    for path in files:
        assert "$" not in path.read_text(encoding="utf-8"), path.name
