"""The baseline summary file ``adk-otel summarize`` writes and ``compare`` reads.

A small JSON document, fit to commit: per group, the run counts, outcome
and error-category counts, histograms of latency, tokens and calls, the
path counts, per agent / model / tool stats and per evaluation metric the
case verdicts and scores; per eval case and metric, the verdicts. No span,
id or content is kept (so a flip from a summary names no baseline trace).
``format`` comes first so a reader recognizes the file by its first
bytes; a ``version`` newer than this reader is refused, not misread.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..io.otlp_json import OtlpJsonError
from .eval_summary import CaseTally, MetricSummary
from .runs import DISTRIBUTIONS, GroupSummary, LayerStats, Summary
from .stats import Distribution, Scores

FORMAT = "adk-otel-summary"
VERSION = 1
_SNIFF = 256
_MAX_BYTES = 64 << 20


def to_json(summary: Summary) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "group_by": list(summary.group_by),
        "spans": summary.spans,
        "unattached_spans": summary.unattached_spans,
        "duplicate_spans": summary.duplicate_spans,
        "unattached_evaluations": summary.unattached_evaluations,
        "groups": [_group_json(key, group) for key, group in summary.groups.items()],
        "eval_cases": [
            {"case": case, "metric": metric, "passed": tally.passed, "failed": tally.failed}
            for (case, metric), tally in sorted(summary.eval_cases.items())
        ],
    }


def _group_json(key: Any, group: GroupSummary) -> dict[str, Any]:
    return {
        "key": dict(key),
        "runs": group.runs,
        "outcomes": dict(group.outcomes),
        "error_runs": dict(group.error_runs),
        **{name: getattr(group, name).as_pairs() for name in DISTRIBUTIONS},
        "paths": [[list(path), count] for path, count in group.paths.most_common()],
        "layers": [
            {
                "kind": kind,
                "name": name,
                "spans": stats.spans,
                "outcomes": dict(stats.outcomes),
                "errors": dict(stats.errors),
                "latency_ms": stats.latency_ms.as_pairs(),
            }
            for (kind, name), stats in group.layers.items()
        ],
        "evaluations": [
            {
                "metric": name,
                "passed": metric.passed,
                "failed": metric.failed,
                "other": metric.other,
                "scores": metric.scores.as_pairs(),
            }
            for name, metric in sorted(group.evaluations.items())
        ],
    }


def dumps(summary: Summary) -> str:
    return json.dumps(to_json(summary), ensure_ascii=False, separators=(",", ":")) + "\n"


def is_summary_file(path: str) -> bool:
    """Whether ``path`` is a summary file (by its first bytes, not its name)."""
    if path == "-" or not Path(path).is_file():
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF)
    except OSError:
        return False
    return f'"format":"{FORMAT}"'.encode() in head.replace(b" ", b"")


def load(path: str) -> Summary:
    """Read a summary file; one-line :class:`OtlpJsonError` on anything wrong."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise OtlpJsonError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > _MAX_BYTES:
        raise OtlpJsonError(f"{path}: larger than {_MAX_BYTES >> 20} MiB, not a summary")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise OtlpJsonError(f"{path}: not valid JSON (a damaged summary file)") from None
    return from_json(document, path)


def from_json(document: Any, where: str = "<summary>") -> Summary:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise OtlpJsonError(f"{where}: not an adk-otel summary")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise OtlpJsonError(f"{where}: the summary has no format version")
    if version > VERSION:
        raise OtlpJsonError(
            f"{where}: summary format version {version} is newer than this adk-otel reads "
            f"({VERSION}); upgrade adk-otel"
        )
    try:
        summary = Summary(
            group_by=tuple(str(name) for name in document.get("group_by", ())),
            spans=int(document.get("spans", 0)),
            unattached_spans=int(document.get("unattached_spans", 0)),
            duplicate_spans=int(document.get("duplicate_spans", 0)),
            unattached_evaluations=int(document.get("unattached_evaluations", 0)),
            source=where,
        )
        for item in document["groups"]:
            key = tuple((str(k), str(v)) for k, v in item["key"].items())
            summary.groups[key] = _group(item)
        for item in document.get("eval_cases", ()):
            summary.eval_cases[(str(item["case"]), str(item["metric"]))] = CaseTally(
                passed=int(item["passed"]), failed=int(item["failed"])
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise OtlpJsonError(f"{where}: a malformed summary ({type(exc).__name__}: {exc})") from None
    return summary


def _group(item: dict[str, Any]) -> GroupSummary:
    group = GroupSummary(
        runs=int(item["runs"]),
        outcomes=Counter({str(k): int(v) for k, v in item["outcomes"].items()}),
        error_runs=Counter({str(k): int(v) for k, v in item["error_runs"].items()}),
    )
    for name in DISTRIBUTIONS:
        setattr(group, name, Distribution.from_pairs(item[name]))
    for path, count in item["paths"]:
        group.paths[tuple(str(step) for step in path)] += int(count)
    for layer in item["layers"]:
        group.layers[(str(layer["kind"]), str(layer["name"]))] = LayerStats(
            spans=int(layer["spans"]),
            outcomes=Counter({str(k): int(v) for k, v in layer["outcomes"].items()}),
            errors=Counter({str(k): int(v) for k, v in layer["errors"].items()}),
            latency_ms=Distribution.from_pairs(layer["latency_ms"]),
        )
    for metric in item.get("evaluations", ()):
        group.evaluations[str(metric["metric"])] = MetricSummary(
            passed=int(metric["passed"]),
            failed=int(metric["failed"]),
            other=int(metric["other"]),
            scores=Scores.from_pairs(metric["scores"]),
        )
    return group
