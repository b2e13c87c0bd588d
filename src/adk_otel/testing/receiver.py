"""A real OTLP trace receiver for tests: gRPC and HTTP/protobuf on loopback
(and OTLP/HTTP logs, ``/v1/logs``).

In-memory exporters prove what the SDK *would* send; this proves what goes
over the wire. The standard OTLP exporters (or a collector in between) talk to
it exactly as they would to a backend, so encoding, compression, retries and
timeouts are exercised too::

    with OtlpReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True)
        ...
        spans = receiver.wait_for(3)

``set_behaviour("unavailable")`` answers every export with gRPC UNAVAILABLE /
HTTP 503, ``set_behaviour("hang")`` accepts and never answers (until the
client gives up, the behaviour changes, or the receiver stops), for
resilience tests. Only the standard library, grpcio and the protobuf stubs
that ship with the OTLP exporters are used. The HTTP side needs no grpcio: without
it (``adk-otel`` installed without the ``grpc`` extra) only ``http_endpoint``
is served, and reading ``grpc_endpoint`` says what to install.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Literal, TypeVar

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

if TYPE_CHECKING:
    import grpc

__all__ = ["Behaviour", "OtlpReceiver", "poll_until"]

T = TypeVar("T")
Behaviour = Literal["ok", "unavailable", "hang"]
_BEHAVIOURS: tuple[str, ...] = ("ok", "unavailable", "hang")
TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
HANG_LIMIT = 60.0
"""Longest a hung export is held, so a forgotten receiver cannot pin threads forever."""


class OtlpReceiver:
    """Receives OTLP trace exports on ephemeral loopback ports (gRPC and HTTP).

    ``requests`` holds every acknowledged export in arrival order, ``headers``
    the HTTP headers or gRPC metadata each came with (names lower-cased, so a
    test can check what ``OTEL_EXPORTER_OTLP_HEADERS`` sent); ``attempts``
    counts every export call, answered or not, so a test can see retries.
    Both are written under a lock from the server threads; ``spans()`` and
    ``resource_spans()`` return snapshots taken under that lock.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self._grpc_endpoint = ""
        self._grpc_missing = ""
        self.http_endpoint: str = ""
        self.requests: list[ExportTraceServiceRequest] = []
        self.log_requests: list[ExportLogsServiceRequest] = []
        """Every OTLP/HTTP log export received (always acknowledged)."""
        self.headers: list[dict[str, str]] = []
        self.attempts: int = 0
        self._behaviour: Behaviour = "ok"
        self.delay: float = 0.0
        """Seconds each trace export is held before it is answered: a slow collector."""
        self._cond = threading.Condition()
        self._held: set[threading.Event] = set()
        self._closing = False
        self._executor: ThreadPoolExecutor | None = None
        self._grpc_server: grpc.Server | None = None
        self._http_server: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> OtlpReceiver:
        """Listen on fresh ports; when this returns ``http_endpoint`` is set, and
        ``grpc_endpoint`` too where grpcio is installed."""
        if self._http_server is not None:
            raise RuntimeError("OtlpReceiver is already started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._closing = False
        self._start_grpc(host)

        server_class = _HttpServer6 if ":" in self.host else ThreadingHTTPServer
        http_server = server_class((self.host, 0), _handler_for(self))
        http_server.daemon_threads = True
        self._http_server = http_server
        self._http_thread = threading.Thread(
            target=http_server.serve_forever,
            kwargs={"poll_interval": 0.05},  # how soon shutdown() is noticed
            name="otlp-http",
            daemon=True,
        )
        self._http_thread.start()
        self.http_endpoint = f"http://{host}:{http_server.server_address[1]}{TRACES_PATH}"
        return self

    def _start_grpc(self, host: str) -> None:
        try:
            import grpc
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
                add_TraceServiceServicer_to_server,
            )
        except ImportError as exc:
            self._grpc_missing = f"{type(exc).__name__}: {exc}"
            return
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="otlp-grpc")
        server = grpc.server(self._executor)
        add_TraceServiceServicer_to_server(_servicer(self), server)  # type: ignore[no-untyped-call]
        grpc_port = server.add_insecure_port(f"{host}:0")
        server.start()
        self._grpc_server = server
        self._grpc_endpoint = f"http://{host}:{grpc_port}"

    @property
    def grpc_endpoint(self) -> str:
        """``http://host:port`` of the gRPC side ("" before ``start()``).

        Raises ``RuntimeError`` when grpcio is not installed, so a test that
        needs gRPC says what is missing instead of exporting nowhere.
        """
        if self._grpc_missing:
            raise RuntimeError(
                "OtlpReceiver: the gRPC endpoint needs grpcio, which is not installed "
                f"({self._grpc_missing}): pip install 'adk-otel[grpc]'. The HTTP endpoint "
                "(http_endpoint) works without it"
            )
        return self._grpc_endpoint

    def stop(self) -> None:
        """Close both servers; hung exports are released first so this never blocks."""
        with self._cond:
            self._closing = True
        self._release_held()
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait(5.0)
            self._grpc_server = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        if self._http_server is not None:
            self._http_server.shutdown()
            self._http_server.server_close()
            self._http_server = None
        if self._http_thread is not None:
            self._http_thread.join(5.0)
            self._http_thread = None

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- behaviour -------------------------------------------------------------

    @property
    def behaviour(self) -> Behaviour:
        return self._behaviour

    def set_behaviour(self, behaviour: Behaviour) -> None:
        """``ok`` acknowledges, ``unavailable`` refuses (retryable), ``hang`` never answers."""
        if behaviour not in _BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {_BEHAVIOURS}, not {behaviour!r}")
        self._behaviour = behaviour
        if behaviour != "hang":
            self._release_held()

    # -- reading ---------------------------------------------------------------

    def spans(self) -> list[Span]:
        """Every span received so far, flattened, in arrival order."""
        with self._cond:
            return _flatten(self.requests)

    def log_records(self) -> list[LogRecord]:
        """Every log record received so far (OTLP/HTTP, ``/v1/logs``), in arrival order."""
        with self._cond:
            return _flatten_logs(self.log_requests)

    def wait_for_logs(self, count: int, timeout: float = 10.0) -> list[LogRecord]:
        """Block until at least ``count`` log records arrived (no sleeping)."""
        with self._cond:
            if not self._cond.wait_for(
                lambda: len(_flatten_logs(self.log_requests)) >= count, timeout
            ):
                raise TimeoutError(
                    f"OTLP receiver: {len(_flatten_logs(self.log_requests))} log record(s) "
                    f"within {timeout}s, expected at least {count}"
                )
            return _flatten_logs(self.log_requests)

    def _received_logs(self, request: ExportLogsServiceRequest) -> None:
        with self._cond:
            self.log_requests.append(request)
            self._cond.notify_all()

    def resource_spans(self) -> list[ResourceSpans]:
        with self._cond:
            return [rs for request in self.requests for rs in request.resource_spans]

    def clear(self) -> None:
        with self._cond:
            self.requests.clear()
            self.log_requests.clear()
            self.headers.clear()
            self.attempts = 0

    def wait_for(
        self, predicate: Callable[[list[Span]], bool] | int, timeout: float = 10.0
    ) -> list[Span]:
        """Block until ``predicate(spans)`` holds (an int means "at least that many spans").

        Never trust ``force_flush()``'s return value as proof of delivery: it
        says the processor handed its spans on in time, not that a backend
        accepted them (``SimpleSpanProcessor``'s is always True). Wait on the
        receiver instead. Wakes on every export, no sleeping; raises
        ``TimeoutError`` naming what did arrive.
        """
        check = (lambda spans: len(spans) >= predicate) if isinstance(predicate, int) else predicate
        with self._cond:
            if self._cond.wait_for(lambda: check(_flatten(self.requests)), timeout):
                return _flatten(self.requests)
            spans = _flatten(self.requests)
            names = ", ".join(span.name for span in spans[:20]) + (
                " ..." if len(spans) > 20 else ""
            )
            wanted = f"at least {predicate} span(s)" if isinstance(predicate, int) else "predicate"
            raise TimeoutError(
                f"OTLP receiver: {wanted} not met within {timeout}s; {len(spans)} span(s) "
                f"arrived in {len(self.requests)} export(s) ({self.attempts} attempt(s)): "
                f"[{names}]"
            )

    def wait_for_attempts(self, count: int, timeout: float = 10.0) -> int:
        """Block until at least ``count`` export calls arrived, answered or not.

        For resilience tests, where nothing is acknowledged (``unavailable``,
        ``hang``) and so ``wait_for`` has no spans to look at.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self.attempts >= count, timeout):
                raise TimeoutError(
                    f"OTLP receiver: {self.attempts} export attempt(s) within {timeout}s, "
                    f"expected at least {count}"
                )
            return self.attempts

    # -- used by the servers ---------------------------------------------------

    def _answer(
        self,
        request: ExportTraceServiceRequest,
        gone: threading.Event,
        headers: dict[str, str],
    ) -> Behaviour:
        """Record one export attempt and decide how to answer it (blocking while hung)."""
        if self.delay > 0:
            time.sleep(self.delay)  # the slowness under test, not a synchronisation
        with self._cond:
            self.attempts += 1
            behaviour = self._behaviour
            if behaviour == "ok":
                self.requests.append(request)
                self.headers.append(headers)
            self._cond.notify_all()
            if behaviour == "hang" and not self._closing:
                self._held.add(gone)
            else:
                gone.set()
        if behaviour == "hang":
            gone.wait(HANG_LIMIT)
            with self._cond:
                self._held.discard(gone)
        return behaviour

    def _release_held(self) -> None:
        with self._cond:
            held, self._held = self._held, set()
        for event in held:
            event.set()


class _HttpServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _flatten(requests: list[ExportTraceServiceRequest]) -> list[Span]:
    return [
        span
        for request in requests
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]


def _flatten_logs(requests: list[ExportLogsServiceRequest]) -> list[LogRecord]:
    return [
        record
        for request in requests
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def _servicer(receiver: OtlpReceiver) -> object:
    """The gRPC trace service answering for ``receiver`` (grpcio imported here,
    only when the gRPC side is started)."""
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
        TraceServiceServicer,
    )

    class Servicer(TraceServiceServicer):
        def Export(
            self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
        ) -> ExportTraceServiceResponse:
            gone = threading.Event()
            context.add_callback(gone.set)  # the client cancelled or its deadline passed
            metadata = {key.lower(): str(value) for key, value in context.invocation_metadata()}
            behaviour = receiver._answer(request, gone, metadata)
            if behaviour == "unavailable":
                context.abort(grpc.StatusCode.UNAVAILABLE, "OtlpReceiver: behaviour=unavailable")
            if behaviour == "hang":
                context.abort(grpc.StatusCode.UNAVAILABLE, "OtlpReceiver: released while hanging")
            return ExportTraceServiceResponse()

    return Servicer()


def _handler_for(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?", 1)[0]
            if path == LOGS_PATH:
                return self._logs(body)
            if path != TRACES_PATH:
                return self._reply(404, b"only /v1/traces and /v1/logs are served")
            content_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip()
            if content_type != "application/x-protobuf":
                return self._reply(415, b"only application/x-protobuf is supported")
            request = ExportTraceServiceRequest()
            try:
                request.ParseFromString(_decompress(body, self.headers.get("Content-Encoding")))
            except Exception as exc:  # a malformed body is the client's bug: say so
                return self._reply(400, f"cannot decode body: {exc}".encode())
            headers = {key.lower(): value for key, value in self.headers.items()}
            behaviour = receiver._answer(request, threading.Event(), headers)
            if behaviour == "ok":
                return self._reply(200, ExportTraceServiceResponse().SerializeToString())
            return self._reply(503, f"OtlpReceiver: behaviour={behaviour}".encode())

        def _logs(self, body: bytes) -> None:
            request = ExportLogsServiceRequest()
            try:
                request.ParseFromString(_decompress(body, self.headers.get("Content-Encoding")))
            except Exception as exc:
                return self._reply(400, f"cannot decode body: {exc}".encode())
            receiver._received_logs(request)
            return self._reply(200, ExportLogsServiceResponse().SerializeToString())

        def _reply(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            kind = "application/x-protobuf" if status == 200 else "text/plain"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            try:
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (hang mode): nobody to tell

        def log_message(self, format: str, *args: object) -> None:
            """Silent: test output is not the place for access logs."""

    return Handler


def _decompress(body: bytes, encoding: str | None) -> bytes:
    encoding = (encoding or "").strip().lower()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding in ("", "identity"):
        return body
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def poll_until(
    predicate: Callable[[], T | bool | None],
    timeout: float,
    what: str,
    interval: float = 0.05,
) -> T:
    """Call ``predicate`` until it returns something other than None/False; return that.

    For cross-process conditions (a collector subprocess opening its port, a
    file another process writes) that nothing in this process can signal. In
    process, wait on a Condition or Event instead (``OtlpReceiver.wait_for``).
    Bounded by ``timeout``; the pause between tries is an Event wait, so the
    loop stays cheap and the deadline is exact.
    """
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        result = predicate()
        if result is not None and result is not False:
            return result  # type: ignore[return-value]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        pause.wait(min(interval, remaining))
