"""Comparing two sets of runs: per-run numbers (:mod:`.runs`), the pure-Python
statistics (:mod:`.stats`), paths (:mod:`.paths`), the gates
(:mod:`.comparison`), their reports (:mod:`.compare_report`), summary files
(:mod:`.summary_file`) and the entry point (:mod:`.regression`).

Not named ``compare``: ``adk_otel.traces.compare`` is the public function,
and a sub-package of that name would replace it once imported."""
