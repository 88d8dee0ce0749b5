"""The deployment guide's setup, run for real (issue 23): nginx with deploy/nginx-site.conf,
terminating TLS with a certificate made here, in front of two `regdesk serve` processes whose
environment is deploy/regdesk.env. Both files are used as they are, their @PLACEHOLDERS@
filled in for this machine.

Addresses: regdesk answers plain HTTP from any loopback peer, so a client on 127.0.0.1 would
prove nothing about the proxy rules. The clients here use the machine's own network address
instead: they connect to nginx (and, to be refused, straight to a process) at that address, so
that is their source address too, as a visitor's is. The processes listen on every address, as
on hosts of their own behind the proxy; nginx reaches them on 127.0.0.1, which the guide's
REGDESK_TRUSTED_PROXIES trusts. Nothing of the system's configuration changes.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from regdesk.transport import is_loopback
from tests import forkserver, http_calls
from tests.faults.support import wait_until
from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "deploy" / "nginx-site.conf"
ENVIRONMENT = ROOT / "deploy" / "regdesk.env"
NGINX = Path("/usr/sbin/nginx")  # Debian's package (.ci/run installs it)
PLACEHOLDER = re.compile(r"@[A-Z0-9_]+@")
START_SECONDS = 60  # a process's start, on a busy machine


# --- the guide's files, filled in ------------------------------------------------------------


def filled(template: str, values: Mapping[str, str]) -> str:
    """`template` with each @NAME@ replaced by values[NAME]. Its placeholders outside comments
    must be exactly those of `values`: a renamed or new one fails here, not later."""
    code = "\n".join(line.split("#", 1)[0] for line in template.splitlines())
    assert set(PLACEHOLDER.findall(code)) == {f"@{name}@" for name in values}, (
        f"the file's placeholders are {sorted(set(PLACEHOLDER.findall(code)))}"
    )
    for name, value in values.items():
        template = template.replace(f"@{name}@", value)
    return template


def environment_file(text: str) -> dict[str, str]:
    """NAME=value lines, as systemd's EnvironmentFile= and `set -a; . file` read them here."""
    variables: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, separator, value = line.partition("=")
            assert separator, f"not NAME=value: {line!r}"
            assert name.isidentifier(), f"not a variable's name: {name!r}"
            variables[name] = value
    return variables


# --- addresses and certificates --------------------------------------------------------------


def machine_address() -> str:
    """This machine's own IPv4 address on its network. Connecting a UDP socket sends nothing:
    the kernel only picks the source address of the route (203.0.113.1 is a documentation
    address, never reached)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))
        except OSError as error:
            raise AssertionError(f"no IPv4 route off this machine: {error}") from None
        address: str = probe.getsockname()[0]
    assert not is_loopback(address), "this machine has no network address but loopback"
    return address


@dataclass(frozen=True)
class Certificates:
    authority: Path  # the test's CA, PEM: what the clients trust
    certificate: Path  # nginx's, for `address`, signed by that CA
    private_key: Path
    spki_pin: str  # base64 SHA-256 of the certificate's public key, as Chromium pins it


def make_certificates(directory: Path, address: str) -> Certificates:
    """A CA of the test's own and a server certificate for `address` signed by it."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "regdesk test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = Certificates(
        directory / "ca.pem",
        directory / "fullchain.pem",
        directory / "privkey.pem",
        base64.b64encode(
            hashlib.sha256(
                key.public_key().public_bytes(
                    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            ).digest()
        ).decode(),
    )
    paths.authority.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.certificate.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths.private_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths.private_key.chmod(0o600)
    return paths


# --- the processes -----------------------------------------------------------------------


class Regdesk:
    """One `regdesk serve` of the deployment, on every address at `port`, with the guide's
    environment (and the test's own additions); its output goes to `log`."""

    def __init__(self, environment: Mapping[str, str], port: int, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGDESK_")}
        env.update(environment)
        regdesk = Path(sys.executable).with_name("regdesk")
        with open(log, "ab") as output:
            self.process = forkserver.popen(
                [str(regdesk), "serve", "--host", "0.0.0.0", "--port", str(port)],  # noqa: S104
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        self.port = port
        self.log = log

    @property
    def upstream(self) -> str:
        """How nginx's log names it."""
        return f"127.0.0.1:{self.port}"

    def wait_until_healthy(self) -> None:
        def healthy() -> bool:
            assert self.process.poll() is None, f"regdesk serve exited:\n{self.tail()}"
            try:
                return (
                    http_calls.get(f"http://{self.upstream}/healthz", timeout=5).status_code == 200
                )
            except httpx.TransportError:
                return False

        wait_until(healthy, START_SECONDS, f"regdesk on {self.port}\n{self.tail()}", 0.05)

    def stop(self, how: signal.Signals = signal.SIGTERM) -> int:
        """Send `how` and wait for the process to end; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        return self.process.returncode

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@dataclass(frozen=True)
class LogLine:
    """One line of the guide's access log format (`log_format regdesk`)."""

    client: str
    request: str
    status: int
    upstreams: tuple[str, ...]  # every process nginx tried, in order; () for nginx's own answer

    @property
    def answered_by(self) -> str | None:
        return self.upstreams[-1] if self.upstreams else None


ACCESS_LINE = re.compile(
    r'^(?P<client>\S+) \[[^\]]*\] "(?P<request>[^"]*)" (?P<status>\d{3}) \d+ [\d.]+ '
    r'"(?:[^"\\]|\\.)*" upstream=(?P<upstreams>.*) upstream_status=\S.*$'
)


def parse_log_line(line: str) -> LogLine:
    found = ACCESS_LINE.match(line)
    assert found, f"not the guide's log format: {line!r}"
    upstreams = found["upstreams"]
    return LogLine(
        found["client"],
        found["request"],
        int(found["status"]),
        () if upstreams == "-" else tuple(u.strip() for u in re.split(r"[,:]\s", upstreams)),
    )


class Nginx:
    """Debian's nginx with the guide's site, everything it writes in `directory`, in the
    foreground (its own process, stopped by the test)."""

    def __init__(self, directory: Path, site: str) -> None:
        assert NGINX.exists(), f"{NGINX} is not installed: apt-get install nginx (.ci/run does)"
        self.directory = directory
        self.access_log = directory / "regdesk.access.log"
        self.error_log = directory / "error.log"
        (directory / "site.conf").write_text(site)
        # What Debian's /etc/nginx/nginx.conf is on a server, with every path in `directory`.
        conf = directory / "nginx.conf"
        conf.write_text(
            f"{'user root;' if os.geteuid() == 0 else ''}\n"  # workers write the temp paths
            "worker_processes 1;\n"
            f"pid {directory}/nginx.pid;\n"
            f"error_log {self.error_log} notice;\n"
            "events { worker_connections 512; }\n"
            "http {\n"
            "    include /etc/nginx/mime.types;\n"
            "    default_type application/octet-stream;\n"
            + "".join(
                f"    {kind}_temp_path {directory}/{kind};\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
            + f"    include {directory}/site.conf;\n"
            "}\n"
        )
        with open(directory / "nginx.out", "ab") as output:
            self.process = subprocess.Popen(
                [
                    *(str(NGINX), "-p", str(directory), "-c", str(conf)),
                    *("-e", str(self.error_log), "-g", "daemon off;"),
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def wait_until_listening(self, address: str, port: int) -> None:
        def listening() -> bool:
            assert self.process.poll() is None, f"nginx exited:\n{self.errors()}"
            try:
                socket.create_connection((address, port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_until(listening, 10, f"nginx on {port}\n{self.errors()}", 0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # fast shutdown: the workers close their connections
            self.process.wait(timeout=30)

    def log_size(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def lines(self, since: int = 0) -> list[LogLine]:
        """The access log's lines from byte `since` (a `log_size()` taken earlier)."""
        with open(self.access_log, "rb") as log:
            log.seek(since)
            return [parse_log_line(line) for line in log.read().decode().splitlines()]

    def errors(self) -> str:
        texts = (
            p.read_text(errors="replace")
            for p in (self.error_log, self.directory / "nginx.out")
            if p.exists()
        )
        return "\n".join(texts)[-4000:]


# --- the whole deployment --------------------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    address: str  # this machine's network address: the clients', nginx's public one
    public_url: str  # https://address:port, REGDESK_PUBLIC_URL
    http_port: int  # nginx's plain HTTP
    certificates: Certificates
    nginx: Nginx
    processes: tuple[Regdesk, ...]

    def client(self) -> httpx.Client:
        """An HTTPS client of nginx trusting the test's CA, from this machine's address."""
        trust = ssl.create_default_context(cafile=str(self.certificates.authority))
        return http_calls.client(base_url=self.public_url, verify=trust, timeout=30)


@contextmanager
def deployment(
    directory: Path, database_url: str, redis_url: str, settings: Mapping[str, str]
) -> Iterator[Deployment]:
    """nginx and two regdesk processes as the guide sets them up, on this machine's address;
    `settings`: the test's own additions to the guide's environment (none may replace one of
    its values). Every process is stopped on the way out, whatever happened."""
    address = machine_address()
    https_port, http_port = free_port(), free_port()
    ports = (free_port(), free_port())
    public_url = f"https://{address}:{https_port}"
    certificates = make_certificates(directory, address)
    environment = environment_file(
        filled(
            ENVIRONMENT.read_text(),
            {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "PUBLIC_URL": public_url},
        )
    )
    assert not set(settings) & set(environment), "the test replaces a value of the guide"
    site = filled(
        SITE.read_text(),
        {
            "PUBLIC_URL": public_url,
            "SERVER_NAME": address,
            "HTTPS_PORT": str(https_port),
            "HTTP_PORT": str(http_port),
            "CERTIFICATE": str(certificates.certificate),
            "PRIVATE_KEY": str(certificates.private_key),
            "REGDESK_1": f"127.0.0.1:{ports[0]}",
            "REGDESK_2": f"127.0.0.1:{ports[1]}",
            "LOG_DIRECTORY": str(directory),
        },
    )
    with ExitStack() as running:
        # Both start at once: a start is mostly Python importing the service, side by side.
        processes = []
        for number, port in enumerate(ports, 1):
            process = Regdesk({**environment, **settings}, port, directory / f"regdesk{number}.log")
            running.callback(process.stop)
            processes.append(process)
        nginx = Nginx(directory, site)
        running.callback(nginx.stop)
        nginx.wait_until_listening(address, https_port)
        for process in processes:
            process.wait_until_healthy()
        yield Deployment(address, public_url, http_port, certificates, nginx, tuple(processes))
