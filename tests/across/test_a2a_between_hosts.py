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

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from adk_otel.demo_remote import start_listening, stop

from .conftest import HERE, otlp_env, run_caller
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


@pytest.fixture(scope="module")
def served(receiver, tmp_path_factory) -> Iterator[tuple[Documented, Certificates, int]]:
    doc = documented()
    certs = make_certificates(tmp_path_factory.mktemp("tls"), doc.host)
    log_path = tmp_path_factory.mktemp("tls-service") / "stderr.log"
    with log_path.open("w") as log:
        process, port = start_listening(
            [
                str(HERE / "tls_server.py"),
                doc.host,
                doc.protocol,
                str(certs.cert),
                str(certs.key),
            ],
            otlp_env(receiver, "payments-service"),
            log,
        )
    yield doc, certs, port
    assert stop(process) in (0, -15)
    assert "Failed to detach context" not in log_path.read_text()


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
