"""A payments service served over A2A (a2a-sdk's request handler under
uvicorn, no ADK agent behind it) whose executor ends the task in a way ADK's
own executor never does. Its task goes ``working`` (with a message), then:

``python a2a_task_server.py unfinished``: the executor returns, so the
response stream closes cleanly before the task reached a terminal state.

``python a2a_task_server.py canceled``: a final ``canceled`` status with a
message.

``python a2a_task_server.py canceled-bare``: a final ``canceled`` status
without one, as ``TaskUpdater.cancel()`` publishes by default.

``python a2a_task_server.py completed-bare``: an artifact, then a final
``completed`` status without a message (a success).

It exports nothing. Prints ``PORT n`` once listening."""

from __future__ import annotations

import sys
import warnings

warnings.filterwarnings("ignore")

from a2a.helpers.proto_helpers import (  # noqa: E402
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from adk_otel.cli.demo_remote import loopback_socket, serve_on  # noqa: E402

ENDINGS = ("unfinished", "canceled", "canceled-bare", "completed-bare")


class EndingExecutor(AgentExecutor):
    def __init__(self, ending: str) -> None:
        self._ending = ending

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work(new_text_message("charging the card"))
        if self._ending == "canceled":
            await updater.cancel(new_text_message("the charge was canceled"))
        elif self._ending == "canceled-bare":
            await updater.cancel()
        elif self._ending == "completed-bare":
            await updater.add_artifact([new_text_part("payment taken")])
            await updater.complete()
        # "unfinished": return with the task still working.

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("no cancel requests in these tests")


def main(ending: str) -> None:
    if ending not in ENDINGS:
        raise SystemExit(f"ending: one of {', '.join(ENDINGS)}")
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    card = AgentCard(
        name="payments",
        description="Takes payment.",
        version="0.0.1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="charge", name="charge", description="Charges a card.", tags=[])],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(
        agent_executor=EndingExecutor(ending), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    serve_on(Starlette(routes=routes), sock)


if __name__ == "__main__":
    main(sys.argv[1])
