"""Who opens and who ends each span: the runs in flight (runs.py), how a
layer's span opens (opening.py) and ends (outcomes.py, transfers.py, aborts.py),
workflow node spans from ADK's own node tracing (nodes.py, registered as the tracer
of ADK's scope by node_routing.py),
the nets that close what ADK leaves open (runner.py around a runner instance,
teardown.py at ``close()`` and interpreter exit), content capture and remote
agents wired to the hooks (capture.py, remote.py), the hooks' guard
(hook_guard.py) and the plugin's options (options.py)."""
