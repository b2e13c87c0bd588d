"""util/wrappers.py against the real wrappers other libraries put around
providers, tracers and client methods: logfire's proxy provider and tracer,
wrapt's ObjectProxy and FunctionWrapper, OpenInference's OITracer."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import wrapt
from logfire._internal.tracer import ProxyTracerProvider as LogfireProvider
from openinference.instrumentation import OITracer, TraceConfig
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import TracerProvider

from adk_otel.pipeline import processor_swap
from adk_otel.pipeline.provider import sdk_provider_of
from adk_otel.util import wrappers

SDK = TracerProvider()
TRACER = SDK.get_tracer("an-application")
LOGFIRE = LogfireProvider(provider=SDK, config=None)  # type: ignore[arg-type]
LOGFIRE_TRACER = LOGFIRE.get_tracer("an-application-through-logfire")


def test_the_objects_are_the_libraries_own() -> None:
    """What the cases below stand on: each wrapper keeps what it wraps as its library does."""
    assert LOGFIRE_TRACER.tracer is not TRACER and isinstance(LOGFIRE_TRACER.tracer, SdkTracer)
    assert LOGFIRE_TRACER.provider is LOGFIRE, "a logfire tracer keeps its proxy provider too"
    assert isinstance(wrapt.ObjectProxy(TRACER), SdkTracer), "a wrapt proxy passes as its object"


@pytest.mark.parametrize(
    ("wrapped", "sdk"),
    [
        pytest.param(TRACER, TRACER, id="the-sdk-tracer"),
        pytest.param(LOGFIRE_TRACER, LOGFIRE_TRACER.tracer, id="logfire-tracer"),
        pytest.param(wrapt.ObjectProxy(TRACER), TRACER, id="wrapt-proxy"),
        pytest.param(OITracer(TRACER, TraceConfig()), TRACER, id="oitracer"),
        pytest.param(
            OITracer(LOGFIRE_TRACER, TraceConfig()), LOGFIRE_TRACER.tracer, id="oitracer-on-logfire"
        ),
        pytest.param(
            wrapt.ObjectProxy(OITracer(TRACER, TraceConfig())), TRACER, id="proxy-on-oitracer"
        ),
    ],
)
def test_the_sdk_tracer_is_found_inside_every_wrapper(wrapped: Any, sdk: SdkTracer) -> None:
    """The span-processor check follows the SDK tracer itself (a proxy would pass
    an isinstance check but is not the tracer the provider holds)."""
    assert processor_swap._sdk_tracer(wrapped) is sdk


@pytest.mark.parametrize(
    "wrapped",
    [
        pytest.param(SDK, id="the-sdk-provider"),
        pytest.param(LOGFIRE, id="logfire-provider"),
        pytest.param(wrapt.ObjectProxy(SDK), id="wrapt-proxy"),
        pytest.param(wrapt.ObjectProxy(LOGFIRE), id="proxy-on-logfire"),
    ],
)
def test_the_sdk_provider_is_found_inside_every_wrapper(wrapped: Any) -> None:
    assert sdk_provider_of(wrapped) is SDK


def test_what_is_no_sdk_object_inside_is_none() -> None:
    assert sdk_provider_of(object()) is None
    assert processor_swap._sdk_tracer(LOGFIRE) is None, "a provider is not a tracer"
    assert sdk_provider_of(TRACER) is None


@pytest.mark.parametrize(
    ("wrapped", "reached"),
    [
        pytest.param(TRACER, TRACER, id="the-sdk-tracer"),
        pytest.param(OITracer(TRACER, TraceConfig()), TRACER, id="oitracer"),
        pytest.param(wrapt.ObjectProxy(OITracer(TRACER, TraceConfig())), TRACER, id="two-proxies"),
        # logfire's tracer is a tracer of its own (its methods add logfire's span
        # wrapper): the object a proxy around it reaches, and answered for as such.
        pytest.param(LOGFIRE_TRACER, LOGFIRE_TRACER, id="logfire-tracer"),
        pytest.param(
            OITracer(LOGFIRE_TRACER, TraceConfig()), LOGFIRE_TRACER, id="oitracer-on-logfire"
        ),
    ],
)
def test_innermost_is_the_object_a_proxys_calls_reach(wrapped: Any, reached: Any) -> None:
    """The tracer ADK holds is answered for at this object (pipeline/held_tracer.py)."""
    assert wrappers.innermost(wrapped) is reached


def _client_method(prompt: str) -> str:
    return prompt


def _wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return wrapped(*args, **kwargs)


def test_layers_are_each_wrapper_of_a_client_method_outermost_first() -> None:
    """The chain the inference recorders read, one wrapper module per layer."""
    inner = wrapt.FunctionWrapper(_client_method, _wrapper)
    outer = wrapt.FunctionWrapper(inner, _wrapper)
    replaced = functools.wraps(outer)(lambda prompt: outer(prompt))
    assert list(wrappers.layers(replaced)) == [replaced, outer, inner, _client_method]
    assert [layer._self_wrapper for layer in (outer, inner)] == [_wrapper, _wrapper]
    assert list(wrappers.layers(_client_method)) == [_client_method]
    assert list(wrappers.layers(None)) == []


class _Endless:
    """A wrapper whose ``__wrapped__`` is a new wrapper each time."""

    @property
    def __wrapped__(self) -> _Endless:
        return _Endless()

    @property
    def tracer(self) -> Any:
        raise RuntimeError("another library's property that fails")


def test_hostile_wrappers_end_the_walk() -> None:
    assert 1 < len(list(wrappers.layers(_Endless()))) <= 16, "bounded"
    assert isinstance(wrappers.innermost(_Endless()), _Endless)
    assert wrappers.inner(_Endless(), SdkTracer) is None
    looped = functools.partial(print)
    looped.__dict__["__wrapped__"] = looped  # a wrapper naming itself
    assert list(wrappers.layers(looped)) == [looped]
