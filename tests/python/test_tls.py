"""TLS on the TLS port and, with memcached's -Z, on the main port: real handshakes with
redis-cli --tls, openssl s_client, redis-py (ssl=True) and pymemcache (tls_context), mutual
TLS with a certificate that names a tenant, and certificates swapped by SIGHUP under open
connections. Certificates are made at test time with the openssl command."""

import getpass
import os
import re
import shutil
import socket
import ssl
import subprocess
import time

import pymemcache.client.base
import pytest
import redis

from conftest import drain, fridge_binary, stop, tenants_toml

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class Certs:
    """A CA, and certificates it signs, in a directory."""

    def __init__(self, path):
        self.dir = path
        openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=fridge test CA", cwd=path)
        self.ca = str(path / "ca.crt")

    def issue(self, name, cn, serial, usage, san=None):
        """Signs a certificate for `cn`; returns (cert path, key path)."""
        openssl("req", "-new", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/O=fridge tests/CN={cn}", cwd=self.dir)
        ext = [f"extendedKeyUsage={usage}"]
        if san:
            ext.append(f"subjectAltName={san}")
        (self.dir / f"{name}.ext").write_text("\n".join(ext) + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-set_serial", str(serial), "-days", "2", "-extfile", f"{name}.ext",
                "-out", f"{name}.crt", cwd=self.dir)
        return str(self.dir / f"{name}.crt"), str(self.dir / f"{name}.key")

    def server(self, name="server", serial=1001):
        return self.issue(name, "localhost", serial, "serverAuth",
                          "DNS:localhost,IP:127.0.0.1")

    def client(self, cn, serial=3001):
        return self.issue(f"client-{cn}", cn, serial, "clientAuth")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(tmp_path_factory.mktemp("certs"))


def launch_tls(*args):
    """Starts fridge; returns (process, main port, TLS port or None) once it serves."""
    env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
    proc = subprocess.Popen([fridge_binary(), "-p", "0", "-m", "64", "-t", "2", *args],
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    main = re.search(r"on 127\.0\.0\.1:(\d+)", line)
    assert main, f"unexpected startup line: {line!r}"
    tls = re.search(r"TLS on 127\.0\.0\.1:(\d+)", line)
    drain(proc)
    return proc, int(main.group(1)), int(tls.group(1)) if tls else None


@pytest.fixture
def servers():
    """A factory: servers(*args) starts fridge with those arguments; all stop afterwards."""
    procs = []

    def start(*args):
        proc, port, tls_port = launch_tls(*args)
        procs.append(proc)
        return proc, port, tls_port

    yield start
    for proc in procs:
        stop(proc)


def tls_args(certs, cert="server"):
    crt, key = (str(certs.dir / f"{cert}.crt"), str(certs.dir / f"{cert}.key"))
    if not os.path.exists(crt):
        crt, key = certs.server(cert)
    return ["--tls-port", "0", "--tls-cert-file", crt, "--tls-key-file", key]


def context(certs, client=None):
    ctx = ssl.create_default_context(cafile=certs.ca)
    if client:
        ctx.load_cert_chain(*client)
    return ctx


def tls_socket(certs, port, client=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context(certs, client).wrap_socket(raw, server_hostname="localhost")


def roundtrip(sock, request, end):
    """Sends `request`, reads until the reply ends with `end`."""
    sock.sendall(request)
    reply = b""
    while not reply.endswith(end):
        chunk = sock.recv(65536)
        assert chunk, f"closed after {reply!r}"
        reply += chunk
    return reply


def redis_cli(port, certs, *args, client=None):
    tls = ["--tls", "--cacert", certs.ca]
    if client:
        tls += ["--cert", client[0], "--key", client[1]]
    run = subprocess.run(["redis-cli", "-p", str(port), *tls, *args], capture_output=True,
                         text=True, timeout=30)
    return (run.stdout + run.stderr).strip()


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="no redis-cli")
def test_redis_cli_over_tls(certs, servers):
    _, port, tls_port = servers(*tls_args(certs))
    assert redis_cli(tls_port, certs, "SET", "greeting", "hello") == "OK"
    assert redis_cli(tls_port, certs, "GET", "greeting") == "hello"
    # The plain port serves the same data, without TLS.
    assert redis.Redis(port=port).get("greeting") == b"hello"
    assert redis_cli(tls_port, certs, "CONFIG", "GET", "tls-port") == f"tls-port\n{tls_port}"
    assert redis_cli(tls_port, certs, "CONFIG", "GET", "tls-auth-clients").endswith("no")
    refused = redis_cli(tls_port, certs, "CONFIG", "SET", "tls-cert-file", "/x")
    assert "SIGHUP or CONFIG RELOAD" in refused, refused


def test_openssl_s_client_handshake(certs, servers):
    _, _, tls_port = servers(*tls_args(certs))
    for version, flag in [("TLSv1.3", "-tls1_3"), ("TLSv1.2", "-tls1_2")]:
        run = subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{tls_port}", "-brief", flag,
             "-CAfile", certs.ca, "-verify_return_error", "-servername", "localhost",
             "-ign_eof"],
            input="version\r\nquit\r\n", capture_output=True, text=True, timeout=30)
        assert f"Protocol version: {version}" in run.stderr, run.stderr
        assert "Verification: OK" in run.stderr, run.stderr
        # Inside TLS a connection's first bytes pick its protocol, as on the plain port.
        assert re.search(r"^VERSION 1\.6\.0-fridge", run.stdout), run.stdout


def test_redis_py_ssl(certs, servers):
    _, _, tls_port = servers(*tls_args(certs))
    r = redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca)
    assert r.ping()
    assert r.set("k", "v") and r.get("k") == b"v"
    # Values larger than the socket buffers, both ways, several in one reply: replies go out
    # in TLS records over many writable edges.
    big = {f"big{i}": os.urandom(900_000) for i in range(6)}
    pipe = r.pipeline(transaction=False)
    for k, v in big.items():
        pipe.set(k, v)
    assert all(pipe.execute())
    assert r.mget(list(big)) == list(big.values())
    r3 = redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca, protocol=3)
    assert r3.hset("h", mapping={"a": "1"}) == 1 and r3.hgetall("h") == {b"a": b"1"}
    info = r.info("stats")
    assert info["tls_handshakes"] >= 2 and info["tls_handshake_errors"] == 0


def test_pymemcache_over_tls(certs, servers):
    _, _, tls_port = servers(*tls_args(certs))
    mc = pymemcache.client.base.Client(("127.0.0.1", tls_port), tls_context=context(certs))
    assert mc.set("a", b"1") is True
    assert mc.get("a") == b"1"
    values = {f"v{i}": os.urandom(500_000) for i in range(5)}
    assert mc.set_many(values) == []
    assert mc.get_many(list(values)) == values
    assert int(mc.stats()[b"tls_handshakes"]) >= 1


def test_memcached_z_puts_tls_on_the_main_port(certs, servers):
    crt, key = certs.server("z-server", serial=1500)
    _, port, tls_port = servers("-Z", "-o", f"ssl_chain_cert={crt},ssl_key={key}")
    assert tls_port is None
    mc = pymemcache.client.base.Client(("127.0.0.1", port), tls_context=context(certs))
    assert mc.set("z", b"tls") is True and mc.get("z") == b"tls"
    settings = mc.stats("settings")
    assert settings[b"ssl_enabled"] == b"yes" and settings[b"ssl_chain_cert"] == crt.encode()
    assert int(settings[b"ssl_verify_mode"]) == 0
    with pytest.raises(Exception):
        # A plain client on the main port gets no memcached reply: the port speaks TLS.
        plain = pymemcache.client.base.Client(("127.0.0.1", port), timeout=2)
        plain.get("z")


def test_mutual_tls_required(certs, servers):
    client = certs.client("anyone")
    _, _, tls_port = servers(*tls_args(certs), "--tls-ca-cert-file", certs.ca)
    # Without a certificate the handshake fails (TLS 1.3 says so at the client's first read).
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca).ping()
    if shutil.which("redis-cli"):
        assert redis_cli(tls_port, certs, "PING") != "PONG"
        assert redis_cli(tls_port, certs, "PING", client=client) == "PONG"
    with_cert = redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca,
                            ssl_certfile=client[0], ssl_keyfile=client[1])
    assert with_cert.ping()
    # A certificate from another CA is refused too.
    (certs.dir / "other").mkdir(exist_ok=True)
    other = Certs(certs.dir / "other")
    stranger = other.client("anyone")
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca, ssl_certfile=stranger[0],
                    ssl_keyfile=stranger[1]).ping()
    assert with_cert.info("stats")["tls_handshake_errors"] >= 2


def test_optional_client_certificates(certs, servers):
    client = certs.client("anyone")
    _, _, tls_port = servers(*tls_args(certs), "--tls-ca-cert-file", certs.ca,
                             "--tls-auth-clients", "optional")
    assert redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca).ping()
    assert redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca, ssl_certfile=client[0],
                       ssl_keyfile=client[1]).ping()


def test_certificate_names_a_tenant(certs, tmp_path, servers):
    billing = certs.client("billing", serial=3101)
    nobody = certs.client("nobody", serial=3102)
    config = tmp_path / "fridge.toml"
    crt, key = certs.server("tenant-server", serial=1600)
    # Redis's names for the TLS settings, in the TOML file (before the tenant tables).
    config.write_text(
        f'tls-port = 0\ntls-cert-file = "{crt}"\ntls-key-file = "{key}"\n'
        f'tls-ca-cert-file = "{certs.ca}"\ntls-auth-clients = "optional"\n'
        + tenants_toml({"billing": ("bpw", ['reserved = "8MiB"'])}, allow_unauthenticated="false")
    )
    _, port, tls_port = servers("--config", str(config))

    def client(pair=None):
        extra = {"ssl_certfile": pair[0], "ssl_keyfile": pair[1]} if pair else {}
        return redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca, **extra)

    as_billing = client(billing)
    assert as_billing.execute_command("ACL", "WHOAMI") == b"billing"
    assert as_billing.set("invoice", "42")
    # The same key, logged in by password on the plain port: billing's.
    by_password = redis.Redis(port=port, username="billing", password="bpw")
    assert by_password.get("invoice") == b"42"
    for anonymous in (client(), client(nobody)):
        with pytest.raises(redis.exceptions.AuthenticationError):
            anonymous.get("invoice")
    # memcached over TLS too: no `set` login needed with the certificate.
    mc = pymemcache.client.base.Client(("127.0.0.1", tls_port),
                                       tls_context=context(certs, billing))
    assert mc.get("invoice") == b"42"


def test_certificate_logins_count_against_max_connections(certs, tmp_path, servers):
    metered = certs.client("metered", serial=3201)
    config = tmp_path / "fridge.toml"
    crt, key = certs.server("metered-server", serial=1700)
    tenants = {"default": ("root", []), "metered": ("mpw", ["max_connections = 1"])}
    config.write_text(
        f'tls-port = 0\ntls-cert-file = "{crt}"\ntls-key-file = "{key}"\n'
        f'tls-ca-cert-file = "{certs.ca}"\ntls-auth-clients = "optional"\n'
        + tenants_toml(tenants, allow_unauthenticated="false")
    )
    _, port, tls_port = servers("--config", str(config))

    def client():
        return redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca,
                           ssl_certfile=metered[0], ssl_keyfile=metered[1])

    first = client()
    assert first.execute_command("ACL", "WHOAMI") == b"metered"
    # Past max_connections, the certificate logs nobody in: the connection stays logged out.
    with pytest.raises(redis.exceptions.AuthenticationError):
        client().get("k")
    row = redis.Redis(port=port, password="root").info("tenants")["tenant_metered"]
    assert row["connections"] == 1
    assert row["rejected_connections"] >= 1, "each handshake (redis-py retries) is counted"
    assert first.execute_command("ACL", "WHOAMI") == b"metered", "the first goes on"


def serial_of(certs, port):
    with tls_socket(certs, port) as s:
        return int(s.getpeercert()["serialNumber"], 16)


def test_sighup_swaps_the_certificate_under_open_connections(certs, servers):
    crt, key = certs.server("swap", serial=1700)
    live_crt, live_key = certs.dir / "live.crt", certs.dir / "live.key"
    shutil.copy(crt, live_crt)
    shutil.copy(key, live_key)
    proc, _, tls_port = servers("--tls-port", "0", "--tls-cert-file", str(live_crt),
                                "--tls-key-file", str(live_key))
    assert serial_of(certs, tls_port) == 1700
    old = tls_socket(certs, tls_port)
    assert roundtrip(old, b"PING\r\n", b"\r\n") == b"+PONG\r\n"

    new_crt, new_key = certs.server("swap2", serial=2700)
    shutil.copy(new_crt, live_crt)
    shutil.copy(new_key, live_key)
    proc.send_signal(1)  # SIGHUP
    deadline = time.monotonic() + 10
    while serial_of(certs, tls_port) != 2700:
        assert time.monotonic() < deadline, "the new certificate was not taken"
        time.sleep(0.05)
    # The connection made with the old certificate goes on.
    assert roundtrip(old, b"SET kept ok\r\n", b"\r\n") == b"+OK\r\n"
    assert roundtrip(old, b"GET kept\r\n", b"ok\r\n") == b"$2\r\nok\r\n"

    # A certificate file that does not load: the one in use stays, and the reload fails.
    live_crt.write_text("not a certificate\n")
    proc.send_signal(1)
    deadline = time.monotonic() + 10
    while redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca).info("stats")[
            "reload_failures"] < 1:
        assert time.monotonic() < deadline, "the bad reload was not counted"
        time.sleep(0.05)
    assert serial_of(certs, tls_port) == 2700
    # CONFIG RELOAD says so too.
    with pytest.raises(redis.exceptions.ResponseError, match="certificates not reloaded"):
        admin = redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=certs.ca)
        admin.execute_command("CONFIG", "RELOAD")
    assert roundtrip(old, b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    old.close()


def check_config(*args):
    run = subprocess.run([fridge_binary(), "--check-config", "-u", getpass.getuser(), *args],
                         capture_output=True, text=True, timeout=30)
    return run.returncode, run.stdout + run.stderr


def test_settings_fridge_lacks_are_refused(certs, tmp_path):
    crt, key = certs.server("check", serial=1800)
    code, out = check_config("-Z", "-o", f"ssl_chain_cert={crt},ssl_key={key}")
    assert code == 0 and "tls=main,clients:no" in out, out
    code, out = check_config("-Z", "-o", f"ssl_chain_cert={crt},ssl_key={key},ssl_ciphers=HIGH")
    assert code != 0 and 'Unsupported suboption "ssl_ciphers=HIGH"' in out, out
    code, out = check_config("--tls-port", "0")
    assert code != 0 and "needs tls_cert_file and tls_key_file" in out, out
    code, out = check_config("--tls-port", "0", "--tls-cert-file", crt, "--tls-key-file", crt)
    assert code != 0 and "tls_key_file" in out, out
    code, out = check_config(*tls_args(certs), "--tls-auth-clients", "yes")
    assert code != 0 and "needs tls_ca_cert_file" in out, out
    code, out = check_config("--tls-cert-file", crt, "--tls-key-file", key)
    assert code != 0 and "no port speaks TLS" in out, out
    config = tmp_path / "redis-names.toml"
    config.write_text('tls-protocols = "TLSv1.3"\n')
    code, out = check_config("--config", str(config))
    assert code != 0 and "tls-protocols: fridge has no such TLS setting" in out, out
