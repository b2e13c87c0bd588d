"""``OTEL_SEMCONV_STABILITY_OPT_IN``: which GenAI conventions version to emit.

The GenAI conventions ask instrumentations not to change what they emit by
default when a name changes, and to emit the latest experimental form only
when ``OTEL_SEMCONV_STABILITY_OPT_IN`` (a comma-separated list) holds
``gen_ai_latest_experimental``. adk-otel gates on it exactly the attributes
whose name or meaning changed (docs/telemetry.md, "Latest conventions"):

* ``gen_ai.usage.cache_creation.input_tokens`` becomes
  ``gen_ai.usage.cache_write.input_tokens`` (and the roll-up
  ``adk.usage.cache_creation.input_tokens`` becomes ``adk.usage.cache_write.input_tokens``);
* ``gen_ai.request.top_k`` is an int, not a double;
* ``gen_ai.provider.name`` is no longer written on agent spans (the current
  agent-span conventions dropped it; model spans keep it);
* the model-call metrics: ``gen_ai.client.operation.duration`` becomes
  ``gen_ai.client.inference.duration``; ``gen_ai.client.token.usage`` gives way
  to the ``gen_ai.client.inference.usage.*`` counters and the
  ``gen_ai.client.inference.operation.{input,output}_tokens`` histograms; the
  chunk metrics move from ``gen_ai.client.operation.*`` to
  ``gen_ai.client.inference.*`` (agent, tool and run metrics keep their names).

Read when the plugin resolves its providers, like the content settings.
"""

from __future__ import annotations

from .. import settings

OPT_IN_ENV = settings.SEMCONV_STABILITY_OPT_IN.env[0]
LATEST_GEN_AI = "gen_ai_latest_experimental"


def latest_gen_ai() -> bool:
    """Whether the latest experimental GenAI conventions were opted into."""
    # As opentelemetry-instrumentation reads it: comma-separated, spaces ignored.
    return LATEST_GEN_AI in settings.load(settings.SEMCONV_STABILITY_OPT_IN)
