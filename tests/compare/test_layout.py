"""The reading half's public names, after its split into sub-packages."""

from __future__ import annotations

import importlib

import adk_otel.traces as traces


def test_every_public_name_still_loads_from_adk_otel_traces() -> None:
    for name in traces.__all__:
        assert getattr(traces, name) is not None, name
    assert set(traces.__all__) <= set(dir(traces))


def test_the_compare_function_is_not_shadowed_by_a_sub_package() -> None:
    # Importing a sub-package sets it as an attribute of its parent: one named
    # ``compare`` would replace the public function of that name.
    importlib.import_module("adk_otel.traces.comparisons.regression")
    importlib.import_module("adk_otel.traces.io.files")
    assert callable(traces.compare) and traces.compare.__module__.endswith(".regression")
