"""Reading and writing trace files: the Collector's ``file`` exporter layouts
(:mod:`.files`, bounded by :mod:`.limits`, split into lines by :mod:`.lines`),
the OTLP JSON codec (:mod:`.otlp_json`, :mod:`.record_json`) and the
span-record model (:mod:`.model`); evaluation results beside the spans, from
log records (:mod:`.evaluations`) and ADK's eval set result files
(:mod:`.eval_set_results`). Public names are re-exported by
:mod:`adk_otel.traces`."""
