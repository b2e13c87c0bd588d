"""A new user's store: the same --where keys as every command, a typo answered
with the keys and values the runs hold, and load leaving nothing behind on
failure, counting duplicates and naming the seeded-random cause of repeated ids."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from compare.synth import Shape, runs

from adk_otel.cli import main

from .test_store import write


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def loaded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    rng = random.Random(3)
    records = runs(rng, 12, Shape(error_rate=0.5))
    source = write(tmp_path / "runs.jsonl", records, **{"service.version": "1.0"})
    store = f"chdb:{tmp_path / 'store'}"
    code, _, err = run(capsys, "load", str(source), "--into", store)
    assert code == 0, err
    return store


def test_short_keys_and_trimmed_values_select_as_attribute_keys(loaded, capsys):
    code, long_form, err = run(capsys, "summarize", loaded, "--where", "adk.outcome=error")
    assert code == 0, err
    for short in ("outcome=error", " outcome = error ", "outcome=error "):
        code, out, err = run(capsys, "summarize", loaded, "--where", short)
        assert code == 0, err
        assert out.splitlines()[1:] == long_form.splitlines()[1:]
    code, out, err = run(capsys, "summarize", loaded, "--where", "version=1.0")
    assert code == 0, err


def test_a_typo_is_answered_with_keys_and_values_present(loaded, capsys):
    code, _, err = run(capsys, "summarize", loaded, "--where", "service.versoin=1.0")
    assert code == 2
    assert "no run has 'service.versoin'; did you mean service.version" in err
    code, _, err = run(capsys, "tree", loaded, "--where", "service.version=1.1")
    assert code == 2
    assert "service.version holds '1.0' (12 runs)" in err
    assert len(err.splitlines()) == 1


def test_failed_load_writes_nothing(tmp_path, capsys):
    good = write(tmp_path / "runs.jsonl", runs(random.Random(1), 2))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"bad": 1}\n')
    target = tmp_path / "new-store"
    code, _, err = run(capsys, "load", str(good), str(bad), "--into", f"chdb:{target}")
    assert code == 2 and "bad.jsonl" in err
    assert not target.exists()


def test_a_directory_that_is_not_a_store_is_left_untouched(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    good = write(tmp_path / "runs.jsonl", runs(random.Random(1), 2))
    for argv in (("tree", f"chdb:{mine}"), ("load", str(good), "--into", f"chdb:{mine}")):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "not a store" in err, err
        assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_loading_twice_says_duplicates(loaded, tmp_path, capsys):
    source = tmp_path / "runs.jsonl"
    code, out, _ = run(capsys, "load", str(source), "--into", loaded)
    assert code == 0
    spans = int(out.split()[2])
    assert f"the store holds {spans} duplicate spans" in out


def test_repeated_ids_of_different_runs_name_seeded_random(tmp_path, capsys):
    first = runs(random.Random(5), 3)
    again = [replace(r, start_ns=r.start_ns + 10**9) for r in runs(random.Random(5), 3)]
    source = write(tmp_path / "runs.jsonl", first + again)
    code, _, err = run(capsys, "load", str(source), "--into", f"chdb:{tmp_path / 's'}")
    assert code == 0
    assert f"{len(again)} spans reuse the trace and span id" in err
    assert "random.seed" in err
    code, _, err = run(capsys, "load", str(source), "--into", f"chdb:{tmp_path / 's'}")
    assert "reuse" in err  # said on every load of them


def test_failed_load_into_a_store_adds_nothing(loaded, tmp_path, capsys, monkeypatch):
    from functools import partial

    from adk_otel.traces.store import spans

    # A row at a time, so a load that wrote as it read would have written some.
    monkeypatch.setattr(spans, "load", partial(spans.load, batch=1))
    _, before, _ = run(capsys, "summarize", loaded)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"bad": 1}\n')
    code, _, err = run(capsys, "load", str(tmp_path / "runs.jsonl"), str(bad), "--into", loaded)
    assert code == 2 and "bad.jsonl" in err
    code, after, _ = run(capsys, "summarize", loaded)
    assert code == 0 and after == before
