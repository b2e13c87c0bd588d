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

from opentelemetry.sdk.resources import Resource

SERVICE_INSTANCE_ID = "service.instance.id"


def with_instance_id(resource: Resource) -> Resource:
    """``resource`` with a random ``service.instance.id`` unless it has one."""
    if resource.attributes.get(SERVICE_INSTANCE_ID):
        return resource
    return resource.merge(Resource({SERVICE_INSTANCE_ID: str(uuid.uuid4())}))
