"""docs/across-services.md's A2A setup between two hosts, as written: the
served agent advertises the documented public URL, the caller uses the
documented card URL, and both pass ADK's URL checks for a host that is not
loopback (google-adk 2.13 refuses plain http there). The traffic stays on
this machine: the caller reaches only the host name ``payments``, connected
to loopback with the name kept for TLS (SNI and the certificate check), and
trusts a CA made here, through ``SSL_CERT_FILE`` as the page says."""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from adk_otel.cli.demo_remote import start_listening, stop

from .conftest import HERE, otlp_env, run_caller, run_process
from .test_a2a import assert_chain, assert_one_clean_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "across-services.md"


@dataclass(frozen=True)
class Documented:
    card_url: str  # what the caller is given
    host: str  # what to_a2a advertises
    port: int
    protocol: str


def documented() -> Documented:
    """The card URL and ``to_a2a``'s arguments, read from the page."""
    text = DOC.read_text(encoding="utf-8")
    (card_url,) = re.findall(r'agent_card="([^"]+)"', text)
    (call,) = re.findall(r"app = to_a2a\(([^)]*)\)", text)
    kwargs = dict(re.findall(r'(\w+)="?([^",]+)"?', call))
    return Documented(card_url, kwargs["host"], int(kwargs["port"]), kwargs.get("protocol", "http"))


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path


def make_certificates(folder: Path, name: str) -> Certificates:
    """A CA, and a server certificate it signed for host ``name``."""
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, issuer: str, public: object, signer: object, ca: bool) -> object:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(public)  # type: ignore[arg-type]
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())  # type: ignore[arg-type]

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("test CA", "test CA", ca_key.public_key(), ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = build(name, "test CA", key.public_key(), ca_key, ca=False)
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))  # type: ignore[attr-defined]
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))  # type: ignore[attr-defined]
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def is_loopback_name(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(receiver, tmp_path_factory, *args: str) -> Iterator[int]:
    """Run tls_server.py ARGS; yields its port."""
    log_path = tmp_path_factory.mktemp("service") / "stderr.log"
    with log_path.open("w") as log:
        process, port = start_listening(
            [str(HERE / "tls_server.py"), *args], otlp_env(receiver, "payments-service"), log
        )
    yield port
    assert stop(process) in (0, -15)
    assert "Failed to detach context" not in log_path.read_text()


@pytest.fixture(scope="module")
def served(receiver, tmp_path_factory) -> Iterator[tuple[Documented, Certificates, int]]:
    doc = documented()
    certs = make_certificates(tmp_path_factory.mktemp("tls"), doc.host)
    args = (doc.host, doc.protocol, str(certs.cert), str(certs.key))
    for port in serve(receiver, tmp_path_factory, *args):
        yield doc, certs, port


@pytest.fixture(scope="module")
def served_plain(receiver, tmp_path_factory) -> Iterator[int]:
    """The same agent advertising plain ``http://payments:port``."""
    yield from serve(receiver, tmp_path_factory, "payments", "http")


def adk_release() -> tuple[int, int]:
    from google.adk import version

    major, minor = version.__version__.split(".")[:2]
    return int(major), int(minor)


def test_the_documented_urls_name_one_public_origin() -> None:
    doc = documented()
    card = urlsplit(doc.card_url)
    assert not is_loopback_name(doc.host), "the page shows two hosts, not loopback"
    assert (card.scheme, card.hostname, card.port) == (doc.protocol, doc.host, doc.port)
    assert card.path == "/.well-known/agent-card.json"


def test_a_call_between_hosts_as_documented_is_one_trace(receiver, served) -> None:
    doc, certs, port = served
    # The documented origin, on the port the test server got.
    card_url = doc.card_url.replace(f":{doc.port}/", f":{port}/", 1)
    call = run_caller(
        receiver,
        card_url.removesuffix("/.well-known/agent-card.json"),
        "charge 19.90 EUR",
        "--resolve",
        doc.host,
        env={"SSL_CERT_FILE": str(certs.ca)},
    )
    assert call.report["error"] is None, call.report["error"]
    assert_one_clean_trace(call)
    assert_chain(call, "execute_tool charge_card")
    assert all(s.status_code == "OK" for s in call.spans)


def test_plain_http_to_another_host_is_refused_from_adk_2_13(receiver, served_plain) -> None:
    """Why the page says https: google-adk 2.13 refuses a plain-http card URL
    on a host that is not loopback (2.5 does not check)."""
    call = run_process(
        receiver,
        ["caller.py", f"http://payments:{served_plain}", "charge 19.90", "--resolve", "payments"],
        served="invocation shop",
    )
    if adk_release() >= (2, 13):
        assert "must use https" in str(call.report["error_messages"]), call.report
        assert not any(s.name == "invocation payments-service" for s in call.spans)
    else:
        assert call.report["error"] is None and not call.report["error_messages"], call.report


def test_plain_http_between_hosts_with_the_card_given_as_a_file(
    receiver, served_plain, tmp_path
) -> None:
    """The page's way to keep plain http inside a private network: a card the
    caller is given (a file here) is not one ADK fetched, so it is not checked."""
    card = httpx.get(f"http://127.0.0.1:{served_plain}/.well-known/agent-card.json", timeout=60)
    assert f'"http://payments:{served_plain}' in card.text, card.text
    path = tmp_path / "payments-card.json"
    path.write_text(card.text, encoding="utf-8")
    call = run_caller(receiver, str(path), "charge 19.90 EUR", "--resolve", "payments")
    assert call.report["error"] is None, call.report["error"]
    assert_one_clean_trace(call)
    assert_chain(call, "execute_tool charge_card")
