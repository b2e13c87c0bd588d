"""``service.instance.id``: tells the processes of one service apart.

Several workers of one server (``uvicorn --workers``, gunicorn) share a
``service.name``; without an instance id their spans cannot be told apart,
nor can their loss. The resource conventions recommend a random UUID per
process (opentelemetry-sdk 1.44's ``Resource.create()`` makes one itself;
earlier versions, and ADK's server's ``OTEL_*``-only resource, do not); a
value the user sets (``OTEL_RESOURCE_ATTRIBUTES``) wins.
"""

from __future__ import annotations

import uuid
from typing import Any

from opentelemetry.sdk.resources import Resource

SERVICE_INSTANCE_ID = "service.instance.id"


def with_instance_id(resource: Resource) -> Resource:
    """``resource`` with a random ``service.instance.id`` unless it has one."""
    if resource.attributes.get(SERVICE_INSTANCE_ID):
        return resource
    return resource.merge(Resource({SERVICE_INSTANCE_ID: str(uuid.uuid4())}))


def give_instance_id(provider: Any) -> None:
    """Adds ``service.instance.id`` to an SDK provider already in use, for
    every tracer it made, so that other libraries' spans of this process (a
    FastAPI instrumentation's tracer, made before) carry it too."""
    resource = with_instance_id(provider.resource)
    if resource is provider.resource:
        return
    update = getattr(provider, "_update_resource", None)  # opentelemetry-sdk >= 1.44
    if callable(update):
        update(Resource({SERVICE_INSTANCE_ID: resource.attributes[SERVICE_INSTANCE_ID]}))
        return
    provider._resource = resource
    for tracer in dict(getattr(provider, "_tracers", None) or {}).values():
        tracer.resource = resource
