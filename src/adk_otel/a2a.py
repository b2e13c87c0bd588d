"""Helpers for remote agents (``RemoteA2aAgent``) you configure yourself.

adk-otel adds its trace-context interceptor to every remote agent of a traced
run on its own. Two cases need these (docs/across-services.md):

* a remote agent built with ``a2a_request_meta_provider``: wrap the provider,
  ``a2a_request_meta_provider=adk_otel.a2a.with_trace_context(my_provider)``;
* an ``A2aRemoteAgentConfig`` built by hand: ``trace_context_interceptor()`` is
  the interceptor adk-otel adds (listing it yourself is harmless).

The interceptor itself lives in ``integrations/a2a.py``.
"""

from .integrations.a2a import trace_context_interceptor, with_trace_context

__all__ = ["trace_context_interceptor", "with_trace_context"]
