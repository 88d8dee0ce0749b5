"""Transport (api.md 5.1; decisions.md, Transport): TLS 1.2 and 1.3 only, HSTS, and plain HTTP
only on loopback or from a trusted proxy that received HTTPS."""

from __future__ import annotations

import datetime as dt
import os
import socket
import ssl
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from regdesk.app import create_app
from regdesk.config import load_settings
from regdesk.db import make_engine
from regdesk.migrations.runner import upgrade
from regdesk.transport import tls_context
from tests import forkserver
from tests.client import TestClient
from tests.helpers import free_port

REMOTE = ("203.0.113.9", 41000)  # TEST-NET-3: a client address that is not loopback
PROXY = ("192.0.2.10", 42000)  # TEST-NET-1: the reverse proxy of the trusted-proxy tests


def client_for(sqlite_url: str, peer: tuple[str, int], scheme: str = "http", **settings: str):  # type: ignore[no-untyped-def]
    upgrade(make_engine(sqlite_url))
    app = create_app(load_settings(database_url=sqlite_url, **settings))
    return TestClient(app, base_url=f"{scheme}://reg.example.org", client=peer)


def refused(response) -> bool:  # type: ignore[no-untyped-def]
    return response.status_code == 403 and "transport" in response.json().get("errors", {})


def test_plain_http_from_a_remote_address_is_refused(sqlite_url: str) -> None:
    with client_for(sqlite_url, REMOTE) as client:
        for path in ("/", "/api/v0/users/1", "/login", "/api/oauth/token"):
            answer = client.get(path)
            assert refused(answer), path
            assert "HTTPS is required" in answer.json()["errors"]["transport"]["message"]
        assert client.get("/healthz").status_code == 200  # probes stay possible


def test_plain_http_on_loopback_is_answered(sqlite_url: str) -> None:
    for host in ("127.0.0.1", "::1"):
        with client_for(sqlite_url, (host, 40000)) as client:
            answer = client.get("/api/v0/users/1")
            assert answer.status_code == 401  # past the transport check, at the guard
            assert "strict-transport-security" not in answer.headers


def test_https_is_answered_with_hsts(sqlite_url: str) -> None:
    with client_for(sqlite_url, REMOTE, scheme="https") as client:
        for path in ("/", "/healthz", "/api/v0/users/1", "/login"):
            answer = client.get(path)
            assert not refused(answer)
            assert answer.headers["strict-transport-security"] == "max-age=31536000"


def test_a_trusted_proxy_that_received_https_is_answered(sqlite_url: str) -> None:
    with client_for(sqlite_url, PROXY, trusted_proxies="192.0.2.0/24") as client:
        answer = client.get(
            "/api/v0/users/1",
            headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"},
        )
        assert answer.status_code == 401
        assert answer.headers["strict-transport-security"] == "max-age=31536000"
        plain = client.get("/api/v0/users/1", headers={"X-Forwarded-Proto": "http"})
        assert refused(plain)


def test_forwarded_headers_from_an_untrusted_address_are_ignored(sqlite_url: str) -> None:
    with client_for(sqlite_url, REMOTE, trusted_proxies="192.0.2.10") as client:
        spoofed = client.get(
            "/api/v0/users/1",
            headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1"},
        )
        assert refused(spoofed)


# --- a live server with a certificate -----------------------------------------------------------


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def handshake(port: int, version: ssl.TLSVersion) -> str:
    """Connect with exactly `version`; the version agreed, or raise ssl.SSLError."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    # Let this client offer old versions at all (Debian's OpenSSL defaults refuse them).
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():  # naming TLS 1.1 at all is deprecated in Python
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = context.maximum_version = version
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        reply = tls.recv(4096).decode("latin-1")
        assert "strict-transport-security: max-age=31536000" in reply.lower()
        return str(tls.version())


@pytest.fixture
def tls_server(sqlite_url: str, tmp_path: Path) -> Iterator[int]:
    cert, key = self_signed(tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
    env["REGDESK_DATABASE_URL"] = sqlite_url
    regdesk = Path(sys.executable).with_name("regdesk")
    process = forkserver.popen(
        [
            str(regdesk),
            "serve",
            "--port",
            str(port),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "regdesk serve stopped"
            try:
                handshake(port, ssl.TLSVersion.TLSv1_3)
                break
            except OSError:
                assert time.monotonic() < deadline, "TLS server did not come up in 30 s"
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_tls_context_raises_the_floor_whatever_the_system_allows() -> None:
    # Debian's OpenSSL refuses TLS 1.1 by its own configuration too; this holds without it.
    def permissive() -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = ssl.TLSVersion.TLSv1
        return context

    assert tls_context(None, permissive).minimum_version == ssl.TLSVersion.TLSv1_2


def test_tls_1_2_and_1_3_are_spoken_and_1_1_is_refused(tls_server: int) -> None:
    assert handshake(tls_server, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
    assert handshake(tls_server, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    with pytest.raises(ssl.SSLError):
        handshake(tls_server, ssl.TLSVersion.TLSv1_1)
