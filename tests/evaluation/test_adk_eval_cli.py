"""``adk eval`` with adk-otel's plugin in the App: ADK's own CLI command (its
click entry, in process, as ``adk eval AGENT_DIR EVAL_SET_FILE`` runs it) scores
an eval set over the scripted clerk, offline. The plugin's spans go to an OTLP
JSON file; ADK writes its eval set result file into the agent's eval history.
``adk-otel tree``, ``summarize`` and ``compare`` read the two side by side:
each score joined to the run it judges by ADK's invocation id (trace ids from
the spans), each run labelled with its eval set and case, and the eval gate
tripping on a careless release with flips naming a real trace of each side.

ADK 2.5 runs no App plugin in an eval: no span is written there, and reading
its result file alone says so in one line."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.adk.cli.cli_tools_click import main as adk
from google.adk.evaluation.eval_case import EvalCase
from google.adk.evaluation.eval_result import EvalSetResult
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

import adk_otel
from adk_otel import semconv as sc
from adk_otel.cli.main import main
from adk_otel.evaluations import TracedLocalEvalService
from adk_otel.testing.capture import TraceCapture
from adk_otel.traces.io import eval_set_results, evaluations
from adk_otel.traces.io.files import read_records

from . import evalkit as kit
from .test_eval_traces import infer_and_score

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CASES = {
    **{f"sku-{n}": [kit.turn("sku A1", "in stock", ["lookup"])] for n in range(8)},
    "expects-in-stock": kit.STANDARD["expects-in-stock"],  # fails response match every time
    "in-stock": kit.STANDARD["in-stock"],  # two invocations: case results on the last
}
MATCH = "response_match_score"
TRAJECTORY = "tool_trajectory_avg_score"
CRITERIA = {TRAJECTORY: 1.0, MATCH: 0.8}

AGENT = """\
from google.adk.apps import App
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import adk_otel
from adk_otel.traces import OtlpJsonFileExporter
from {kit} import {turns}, agent as clerk

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter({traces!r})))
root_agent = clerk({turns}())
plugin = adk_otel.AdkOtelPlugin(tracer_provider=provider)
app = App(name="shop", root_agent=root_agent, plugins=[plugin])
"""


@dataclass(frozen=True)
class Side:
    """One ``adk eval`` run: what it printed, the plugin's span file, ADK's
    result file, and a folder holding both (as a CI job collects them)."""

    output: str
    traces: Path
    results: Path
    folder: Path

    def eval_set_result(self) -> EvalSetResult:
        """The result file as ADK itself reads it back."""
        return EvalSetResult.model_validate_json(self.results.read_text(encoding="utf-8"))


def run_adk_eval(root: Path, evalset: Path, config: Path, turns: str) -> Side:
    """``adk eval root/shop evalset --config_file_path config`` through ADK's
    click command, with the clerk answering as ``evalkit.<turns>``."""
    agent_dir = root / "shop"
    agent_dir.mkdir(parents=True)
    traces = root / "otel-output" / "traces.json"
    traces.parent.mkdir()
    (agent_dir / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (agent_dir / "agent.py").write_text(
        AGENT.format(kit=kit.__name__, turns=turns, traces=str(traces)), encoding="utf-8"
    )
    adk_logger = logging.getLogger("google_adk")
    level = adk_logger.level
    stale = {name: sys.modules.pop(name, None) for name in ("agent", "agent.agent")}
    try:  # ADK imports the agent folder as module "agent" (its package, then agent.py)
        args = ["eval", str(agent_dir), str(evalset), "--config_file_path", str(config)]
        done = CliRunner().invoke(adk, [*args, "--log_level", "ERROR"])
    finally:
        adk_logger.setLevel(level)
        for name, module in stale.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module
    assert "Eval Run Summary" in done.output, (done.output, done.exception)
    (results,) = (agent_dir / ".adk" / "eval_history").glob("*.evalset_result.json")
    folder = root / "collected"
    folder.mkdir()
    if traces.exists():
        shutil.copy(traces, folder)
    shutil.copy(results, folder)
    return Side(done.output, traces, results, folder)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Side]:
    root = tmp_path_factory.mktemp("adk-eval")
    evalset = root / "stock.evalset.json"
    cases = [EvalCase(eval_id=case, conversation=turns) for case, turns in CASES.items()]
    evalset.write_text(
        EvalSet(eval_set_id=kit.SET, eval_cases=cases).model_dump_json(), encoding="utf-8"
    )
    config = root / "test_config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    return {
        name: run_adk_eval(root / name, evalset, config, turns)
        for name, turns in (("baseline", "Turns"), ("again", "Turns"), ("careless", "Careless"))
    }


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def invocation_spans(side: Side) -> dict[str, Any]:
    """The plugin's invocation spans of the run, by ADK invocation id."""
    return {
        record.attributes[sc.ADK_INVOCATION_ID]: record
        for record in read_records([str(side.traces)])
        if record.adk_kind == "invocation"
    }


def table_row(report: str, *cells: str) -> list[str]:
    """The cells after ``cells`` of the one report line starting with them."""
    prefix = " ".join(cells).split()
    (row,) = [
        words[len(prefix) :]
        for words in map(str.split, report.splitlines())
        if words[: len(prefix)] == prefix
    ]
    return row


# -- what adk eval leaves ------------------------------------------------------------


def test_adk_eval_scores_the_set_and_the_plugin_traces_each_run(sides) -> None:
    baseline, careless = sides["baseline"], sides["careless"]
    assert "Tests passed: 9\n  Tests failed: 1" in baseline.output
    assert "Tests passed: 0\n  Tests failed: 10" in careless.output
    ids = {
        per.actual_invocation.invocation_id
        for case in baseline.eval_set_result().eval_case_results
        for per in case.eval_metric_result_per_invocation
    }
    assert len(ids) == 11  # one invocation per case, two for "in-stock"
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not baseline.traces.exists()  # ADK 2.5: no App plugin in an eval run
        return
    spans = invocation_spans(baseline)
    assert set(spans) == ids  # the spans' adk.invocation.id is ADK's invocation_id
    # adk eval never tells the Runner the case: the spans carry no eval labels.
    assert not any(sc.ADK_EVAL_CASE_ID in record.attributes for record in spans.values())


# -- tree ----------------------------------------------------------------------------


def test_tree_prints_each_score_under_the_run_it_judges(sides, capsys) -> None:
    side = sides["baseline"]
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not side.traces.exists()  # ADK 2.5: nothing to draw (the next test)
        return
    code, out, err = cli(capsys, "tree", str(side.traces), str(side.results), "--no-color")
    assert (code, err) == (0, "")
    # Per trace, the score lines under its invocation line.
    scores: dict[str, list[str]] = {}
    trace = ""
    for line in out.splitlines():
        if line.startswith("trace "):
            trace = line.split()[1]
        elif line.lstrip("│ ").startswith("score "):
            scores.setdefault(trace, []).append(line.lstrip("│ "))
    spans = invocation_spans(side)
    assert len(scores) == len(spans) == 11
    # The truth, independently of the join: ADK's session id per case, which
    # the plugin put on each span as gen_ai.conversation.id.
    for case in side.eval_set_result().eval_case_results:
        last = len(case.eval_metric_result_per_invocation) - 1
        for index, per in enumerate(case.eval_metric_result_per_invocation):
            span = spans[per.actual_invocation.invocation_id]
            assert span.attributes[sc.GEN_AI_CONVERSATION_ID] == case.session_id
            lines = scores[span.trace_id]
            for metric in per.eval_metric_results:
                status = metric.eval_status
                label = {1: "pass", 2: "fail"}.get(status.value, status.name.lower())
                expected = f"score {metric.metric_name} {metric.score:.3g} {label}"
                assert f"{expected} (invocation {index} of {case.eval_id})" in lines
            # The case's overall verdicts judge its last invocation, as the events do.
            overall = [line for line in lines if "(case of " in line]
            assert len(overall) == (len(case.overall_eval_metric_results) if index == last else 0)
    assert "score response_match_score 0.4 fail (case of expects-in-stock)" in out


def test_results_without_their_traces_are_one_clear_line(sides, capsys) -> None:
    side = sides["baseline"]
    for command in (["tree"], ["summarize"], ["compare", str(side.results)]):
        code, out, err = cli(capsys, *command, str(side.results))
        assert (code, out) == (2, ""), command
        assert err == (
            f"adk-otel: error: {side.results}: ADK eval set results only, no traces (give the"
            " trace files of the same runs beside them: the results join their runs by"
            " invocation id)\n"
        )
    if kit.APP_PLUGINS_IN_EVAL:
        # Traces of other runs: nothing joins, and tree says how many it could not show.
        other = sides["careless"].traces
        code, out, err = cli(capsys, "tree", str(other), str(side.results), "--no-color")
        assert code == 0 and "score " not in out
        results = len(eval_set_results.read([str(side.results)]))
        assert err == (
            f"adk-otel: {results} eval results not shown: their runs (ADK invocation ids) are"
            " not in the traces read\n"
        )


# -- summarize and compare -----------------------------------------------------------


def test_summarize_labels_each_run_with_its_case_from_the_results(sides, capsys) -> None:
    side = sides["baseline"]
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not side.traces.exists()  # ADK 2.5: no run to label (the test above)
        return
    code, out, err = cli(capsys, "summarize", str(side.folder), "--group-by", sc.ADK_EVAL_CASE_ID)
    assert (code, err) == (0, "")
    assert out.startswith("adk-otel summarize: 11 runs in 10 group(s)")
    group = f"EvaluationGenerator, {sc.ADK_EVAL_CASE_ID}"
    # results, passed, failed, pass rate, mean score
    assert table_row(out, f"{group}=expects-in-stock", MATCH) == ["1", "0", "1", "0.0%", "0.4"]
    assert table_row(out, f"{group}=sku-3", MATCH) == ["1", "1", "0", "100.0%", "1"]
    # "in-stock" ran twice (two invocations, two runs in its group), judged once.
    assert table_row(out, f"{group}=in-stock", TRAJECTORY) == ["1", "1", "0", "100.0%", "1"]
    code, out, _ = cli(capsys, "summarize", str(side.folder), "--format", "json")
    document = json.loads(out)
    assert document["unattached_evaluations"] == 0
    assert document["runs"] == 11


def test_compare_trips_eval_on_a_careless_release_and_links_the_flips(sides, capsys) -> None:
    baseline, careless = sides["baseline"], sides["careless"]
    if not kit.APP_PLUGINS_IN_EVAL:
        code, out, err = cli(capsys, "compare", str(baseline.folder), str(careless.folder))
        assert (code, out) == (2, "") and "ADK eval set results only, no traces" in err
        return
    code, out, err = cli(
        capsys, "compare", str(baseline.folder), str(careless.folder), "--fail-on", "eval"
    )
    assert code == 1, out + err
    assert out.startswith("adk-otel compare: REGRESSION (tripped: eval)")
    assert f"TRIPPED eval: EvaluationGenerator: eval {MATCH} pass rate 90.0% -> 0.0%" in out
    assert f"TRIPPED eval: EvaluationGenerator: eval {MATCH} mean score" in out
    assert table_row(out, f"eval {TRAJECTORY} pass rate")[-2:] == ["not", "worse"]
    code, out, _ = cli(
        capsys,
        "compare",
        str(baseline.folder),
        str(careless.folder),
        "--fail-on",
        "eval",
        "--format",
        "json",
    )
    flips = json.loads(out)["flips"]
    assert {flip["eval_case_id"] for flip in flips} == {*(f"sku-{n}" for n in range(8)), "in-stock"}
    # Each flip's traces are that case's run on each side, by ADK's own session ids.
    for side, key in ((baseline, "baseline_trace_id"), (careless, "candidate_trace_id")):
        sessions = {
            case.eval_id: case.session_id for case in side.eval_set_result().eval_case_results
        }
        runs = {
            record.trace_id: record.attributes[sc.GEN_AI_CONVERSATION_ID]
            for record in invocation_spans(side).values()
        }
        for flip in flips:
            assert runs[flip[key]] == sessions[flip["eval_case_id"]]


def test_the_same_agent_again_does_not_trip_and_a_summary_stands_for_its_side(
    sides, tmp_path, capsys
) -> None:
    baseline, again, careless = sides["baseline"], sides["again"], sides["careless"]
    if not kit.APP_PLUGINS_IN_EVAL:
        assert not again.traces.exists()  # ADK 2.5: no run to compare (the test above)
        return
    code, out, _ = cli(
        capsys, "compare", str(baseline.folder), str(again.folder), "--fail-on", "eval"
    )
    assert code == 0, out
    assert table_row(out, f"eval {MATCH} pass rate")[:2] == ["90.0%", "90.0%"]
    summary = tmp_path / "baseline.summary.json"
    code, _, _ = cli(capsys, "summarize", str(baseline.folder), "-o", str(summary))
    assert code == 0
    code, out, _ = cli(capsys, "compare", str(summary), str(careless.folder), "--fail-on", "eval")
    assert code == 1, out
    assert "eval cases flipped from pass to fail: 9" in out


# -- the file as ADK writes it, read as the events are sent ---------------------------


async def test_results_read_from_the_file_equal_the_events_sent_for_them(tmp_path, capsys) -> None:
    """The same eval run, its results sent as events by TracedLocalEvalService
    and saved by ADK's LocalEvalSetResultsManager: the file reads back as the
    events (same run, metric, score, label, explanation, status), including a
    judged metric's rubric verdicts; and read both ways, each counts once."""
    capture = TraceCapture()
    root = kit.agent()
    plugin = adk_otel.AdkOtelPlugin(tracer_provider=capture.tracer_provider)
    cases = {case: CASES[case] for case in ("sku-0", "expects-in-stock", "in-stock")}
    service = TracedLocalEvalService(
        root,
        kit.eval_set(cases),
        eval_set_results_manager=LocalEvalSetResultsManager(agents_dir=str(tmp_path)),
        **kit.app_with(plugin, root),
        tracer_provider=capture.tracer_provider,
        logger_provider=capture.logger_provider,
    )
    await infer_and_score(service, [*kit.local_metrics(), kit.judged_metric()])
    (saved,) = (tmp_path / kit.APP / ".adk" / "eval_history").glob("*.evalset_result.json")
    sent = evaluations.from_log_records(capture.log_exporter.get_finished_logs())
    read = eval_set_results.join(eval_set_results.read([str(saved)]), capture.spans)

    def facts(result: evaluations.EvaluationResult) -> tuple[Any, ...]:
        status = result.attributes.get(sc.ADK_EVAL_STATUS)
        threshold = result.attributes.get(sc.ADK_EVAL_THRESHOLD)
        return (
            result.trace_id,
            result.span_id,
            result.name,
            result.score,
            result.label,
            result.explanation,
            result.error_type,
            result.scope,
            result.eval_set_id,
            result.eval_case_id,
            result.index,
            status,
            threshold,
        )

    assert len(sent) == len(read) == 3 * (4 + 3)  # 4 invocations, 3 cases; 3 metrics each
    assert sorted(map(facts, read), key=repr) == sorted(map(facts, sent), key=repr)
    assert any(r.explanation and r.explanation.startswith("says-stock: ") for r in read)
    if not kit.APP_PLUGINS_IN_EVAL:
        assert all(r.trace_id is None for r in read)  # ADK 2.5: no span to join
        return
    assert all(r.trace_id is not None for r in read)

    folder = tmp_path / "collected"
    folder.mkdir()
    capture.save(folder / "traces.json")
    (folder / "logs.json").write_text(
        kit.collector_logs([encode_logs(capture.log_exporter.get_finished_logs())]),
        encoding="utf-8",
    )
    code, out, _ = cli(capsys, "summarize", str(folder), "--format", "json")
    with_logs = json.loads(out)
    shutil.copy(saved, folder)
    code, out, _ = cli(capsys, "summarize", str(folder), "--format", "json")
    assert code == 0
    both = json.loads(out)
    assert both["groups"] == with_logs["groups"]  # read twice, counted once
    assert both["unattached_evaluations"] == with_logs["unattached_evaluations"] == 0
    (folder / "logs.json").unlink()
    code, out, _ = cli(capsys, "summarize", str(folder), "--format", "json")
    assert json.loads(out)["groups"] == with_logs["groups"]  # the file alone, the same


# -- hostile and odd files -----------------------------------------------------------


@pytest.fixture
def document(sides) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(sides["baseline"].results.read_text(encoding="utf-8"))
    return result


@pytest.fixture
def traces() -> Path:
    """A collector's trace file of other runs to read the results beside: the
    results are checked before any span is read, and join nothing here."""
    return Path(__file__).parents[1] / "cli" / "data" / "collector_shop.jsonl"


def run_on(capsys, traces: Path, path: Path, *flags: str) -> tuple[int, str, str]:
    return cli(capsys, "summarize", str(traces), str(path), *flags)


def one_line(result: tuple[int, str, str], message: str) -> None:
    code, out, err = result
    assert (code, out) == (2, ""), err
    assert err.startswith("adk-otel: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_malformed_result_files_are_one_line_naming_what_is_wrong(
    document, traces, tmp_path, capsys
) -> None:
    path = tmp_path / "run.evalset_result.json"
    text = json.dumps(document)
    cases: list[tuple[str, str]] = [
        (text[: len(text) // 2], "(invalid JSON at line "),
        ("[1, 2]", "(the file: expected an object, got a list)"),
        (
            json.dumps({**document, "eval_case_results": {"a": 1}}),
            "(eval_case_results: expected a list, got an object)",
        ),
        (
            json.dumps({**document, "eval_case_results": [7]}),
            "(eval_case_results[0]: expected an object, got a number)",
        ),
        (text.replace('"eval_status": 1', '"eval_status": 9', 1), ".eval_status: expected an"),
        (text.replace('"score": 1.0', '"score": "high"', 1), ".score: expected a number"),
        (text.replace('"score": 1.0', '"score": NaN', 1), "(NaN is not a JSON number)"),
        (text.replace('"score": 1.0', '"score": 1' + "0" * 5000, 1), "(Exceeds the limit"),
        ('{"eval_set_result_id": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ]
    for content, message in cases:
        path.write_text(content, encoding="utf-8")
        one_line(run_on(capsys, traces, path), f"{path}: not an ADK eval set result")
        one_line(run_on(capsys, traces, path), message)
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    one_line(run_on(capsys, traces, path), f"{path}: not an ADK eval set result (not UTF-8")
    path.write_bytes(gzip.compress(text.encode())[:200])
    one_line(run_on(capsys, traces, path.rename(path.with_suffix(".json.gz"))), "corrupt gzip")


def test_a_huge_result_file_stops_at_the_document_limit(document, traces, tmp_path, capsys):
    big = tmp_path / "big.evalset_result.json.gz"  # about 2 MiB inflated, from a few kB
    padded = {**document, "padding": "x" * (2 << 20)}
    big.write_bytes(gzip.compress(json.dumps(padded).encode()))
    one_line(
        run_on(capsys, traces, big, "--max-document-mb", "1"),
        f"{big}: an eval set result longer than allowed (the limit for one JSON document or"
        " line is 1 MiB; raise it with --max-document-mb or ADK_OTEL_MAX_DOCUMENT_MB)",
    )
    code, _, err = run_on(capsys, traces, big, "--max-document-mb", "3")
    assert (code, err) == (0, "")


def test_result_files_are_told_by_their_bytes_in_any_form_adk_wrote(
    sides, document, traces, tmp_path, capsys
) -> None:
    """Renamed, gzipped, double-encoded (older ADK), camelCase (ADK's web
    API), or saved twice: the same results, counted once."""
    expected = len(eval_set_results.read([str(sides["baseline"].results)]))
    text = json.dumps(document)
    camel = json.loads(text, object_hook=lambda item: {_camel(k): v for k, v in item.items()})
    forms = {
        "renamed.json": text.encode(),
        "gzipped": gzip.compress(text.encode()),
        "double-encoded.json": json.dumps(text).encode(),
        "camel.json": json.dumps(camel).encode(),
    }
    for name, data in forms.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert eval_set_results.is_eval_set_result(str(path)), name
        assert len(eval_set_results.read([str(path)])) == expected, name
    assert not eval_set_results.is_eval_set_result(str(traces))
    # The same eval set result (its id) in two files counts once.
    assert len(eval_set_results.read([str(tmp_path / n) for n in forms])) == expected
    code, out, err = cli(capsys, "summarize", str(traces), str(tmp_path), "--format", "json")
    assert (code, err) == (0, "")
    once = cli(capsys, "summarize", str(traces), str(sides["baseline"].results), "--format", "json")
    assert json.loads(out) == json.loads(once[1])
    # None of these runs is in that trace file: every case result is unattached, once.
    assert json.loads(out)["unattached_evaluations"] == sum(
        r.scope == "case" for r in eval_set_results.read([str(sides["baseline"].results)])
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
