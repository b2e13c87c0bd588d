"""``server.address`` / ``server.port`` from ADK's real model classes (no
request made): the endpoint each class's client is configured with, the SDKs'
defaults when none is, nothing for what cannot be known, never an exception."""

from __future__ import annotations

import gc
import os
from typing import Any

import pytest
from google.adk.models.anthropic_llm import AnthropicLlm, Claude
from google.adk.models.google_llm import Gemini
from google.adk.models.lite_llm import LiteLlm

from adk_otel.reading import attributes as attrs
from adk_otel.reading import endpoint

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_ENDPOINT_VARIABLES = (
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_CLOUD_LOCATION",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def gemini(**fields: Any) -> Gemini:
    return Gemini(model="gemini-2.5-flash", **fields)


@pytest.mark.parametrize(
    ("env", "model", "expected"),
    [
        ({}, gemini, ("generativelanguage.googleapis.com", 443)),
        ({}, lambda: gemini(base_url="http://127.0.0.1:8080/v1beta"), ("127.0.0.1", 8080)),
        ({}, lambda: gemini(base_url="https://proxy.example"), ("proxy.example", 443)),
        ({"GOOGLE_GEMINI_BASE_URL": "http://gw.internal:8000/"}, gemini, ("gw.internal", 8000)),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, gemini, ("aiplatform.googleapis.com", 443)),
        (
            {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_LOCATION": "europe-west4"},
            gemini,
            ("europe-west4-aiplatform.googleapis.com", 443),
        ),
        (
            {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_LOCATION": "us"},
            gemini,
            ("aiplatform.us.rep.googleapis.com", 443),
        ),
        (
            {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_VERTEX_BASE_URL": "http://vx:81"},
            gemini,
            ("vx", 81),
        ),
        (
            {},
            lambda: gemini(client_kwargs={"vertexai": True, "location": "asia-east1"}),
            ("asia-east1-aiplatform.googleapis.com", 443),
        ),
        (
            {},
            lambda: gemini(client_kwargs={"http_options": {"base_url": "http://[::1]:9000"}}),
            ("::1", 9000),
        ),
        ({}, lambda: AnthropicLlm(model="claude-sonnet-4"), ("api.anthropic.com", 443)),
        (
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:7000"},
            lambda: AnthropicLlm(model="claude-sonnet-4"),
            ("127.0.0.1", 7000),
        ),
        (
            {},
            lambda: LiteLlm(model="openai/gpt-4o", api_base="http://localhost:4000/v1"),
            ("localhost", 4000),
        ),
        # No api_base: LiteLLM resolves the endpoint per provider inside its call.
        ({}, lambda: LiteLlm(model="openai/gpt-4o"), None),
        # Anthropic on Vertex AI: its regional endpoint is not derived.
        ({}, lambda: Claude(model="claude-3-5-sonnet-v2@20241022"), None),
    ],
)
def test_endpoint_of_real_model_objects(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], model: Any, expected: Any
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert attrs.model_server(model()) == expected


@pytest.mark.parametrize(
    "base_url",
    ["not a url", "http://host:99999", "http://host:port", "ftp://files.example", "//x", "http://"],
)
def test_odd_base_urls_give_no_endpoint(base_url: str) -> None:
    assert attrs.model_server(gemini(base_url=base_url)) is None


def test_a_hostile_value_gives_no_endpoint() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert endpoint.from_url(Hostile()) is None
    assert endpoint.from_url(None) is None


def test_computed_once_per_model_object(monkeypatch: pytest.MonkeyPatch) -> None:
    model = gemini()
    assert attrs.model_server(model) == ("generativelanguage.googleapis.com", 443)
    # The client a model object builds keeps the endpoint it was built with.
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://elsewhere:1")
    assert attrs.model_server(model) == ("generativelanguage.googleapis.com", 443)
    assert attrs.model_server(gemini()) == ("elsewhere", 1)


def test_the_cache_forgets_a_model_object_that_goes() -> None:
    model = gemini(base_url="http://127.0.0.1:1")
    key = id(model)
    attrs.model_server(model)
    assert key in attrs._server_cache
    del model
    gc.collect()
    assert key not in attrs._server_cache


def _takes_a_client(cls: type) -> bool:
    """google-adk 2.13's Gemini and AnthropicLlm take a client of your own; 2.5's do not."""
    return "client" in cls.model_fields


def test_a_gemini_client_of_your_own_is_read() -> None:
    from google import genai

    if not _takes_a_client(Gemini):
        assert "client" not in Gemini.model_fields  # google-adk 2.5: nothing to read
        return
    client = genai.Client(api_key="test-key", http_options={"base_url": "http://127.0.0.1:9100"})
    assert attrs.model_server(gemini(client=client)) == ("127.0.0.1", 9100)


def test_an_anthropic_client_of_your_own_is_read() -> None:
    from anthropic import AsyncAnthropic

    if not _takes_a_client(AnthropicLlm):
        assert "client" not in AnthropicLlm.model_fields  # google-adk 2.5: nothing to read
        return
    client = AsyncAnthropic(api_key="test-key", base_url="http://127.0.0.1:9200")
    model = AnthropicLlm(model="claude-sonnet-4", client=client)
    assert attrs.model_server(model) == ("127.0.0.1", 9200)


def test_apigee_is_not_derived() -> None:
    from google.adk.models.apigee_llm import ApigeeLlm

    model = ApigeeLlm(model="apigee/gemini-2.5-flash", proxy_url="https://proxy.example")
    assert attrs.model_server(model) is None
