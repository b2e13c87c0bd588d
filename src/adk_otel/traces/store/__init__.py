"""Runs kept in ClickHouse: the OpenTelemetry Collector ClickHouse exporter's
``otel_traces`` table, on a server or in an embedded chDB store.

The same SQL serves both: the engine computes each run's figures and folds
them into the distributions a comparison needs, so what comes back is bounded
by the number of distinct values, never by the number of runs stored.
Needs ``pip install 'adk-otel[clickhouse]'``.
"""
