"""TLS on the bots' and spectators' port and on the web page ([server] tls_cert / tls_key), and
the clients that ask for it (ARENA_TLS=1 or tls://host:port, ARENA_TLS_CA): a contest played
over TLS, a token that never crosses the wire in clear, each side's mistake told in one line,
and ``arena serve``'s warning when it listens beyond loopback without TLS. The certificates come
from a throwaway CA (the ``trustme`` package, in the test extra)."""

from __future__ import annotations

import io
import shutil
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trio
from rich.console import Console

from arena.authors import client as author_client
from arena.errors import UserError
from arena.metrics import METRICS
from arena.net.server import ArenaServer, ServerConfig
from arena.net.tls import TLSFailure, exposure_warning, is_loopback, open_stream, split_address
from arena.schedule.contest import Contest, ContestConfig, load_config
from arena.store.sqlite import Store
from arena.tools.doctor import run_doctor
from arena.tools.watch import _watch
from tests.conftest import TRUST_BOTS, Client

trustme = pytest.importorskip("trustme")

ROOT = Path(__file__).resolve().parent.parent
RANDOM_BOT = ROOT / "sample_bots" / "random_bot.py"


@dataclass
class Pki:
    """A throwaway CA's certificate and a server certificate it signed, as PEM files."""

    ca: Path
    cert: Path
    key: Path


def make_pki(folder: Path, *names: str) -> Pki:
    """A fresh CA and a server certificate for ``names`` (host names or IP addresses)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    issued = ca.issue_cert(*names)
    pki = Pki(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    ca.cert_pem.write_to_path(str(pki.ca))
    issued.cert_chain_pems[0].write_to_path(str(pki.cert))
    issued.private_key_pem.write_to_path(str(pki.key))
    return pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), "localhost", "127.0.0.1")


def tls_config(pki: Pki, **kw) -> ServerConfig:
    return ServerConfig(port=0, tls_cert=str(pki.cert), tls_key=str(pki.key), handshake_timeout_s=30.0, **kw)


def bot_env(name: str, token: str, host: str, port: int, **extra: str) -> dict[str, str]:
    """A remote sample bot's environment: only what it needs (no ARENA_TLS of the caller's)."""
    return {"PATH": "/usr/bin:/bin", "ARENA_HOST": host, "ARENA_PORT": str(port), "ARENA_NAME": name,
            "ARENA_TOKEN": token, **extra}


def start_bot(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(RANDOM_BOT)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> str:
    """Stop ``proc`` (if still running) and return its stderr."""
    if proc.poll() is None:
        proc.terminate()
    return proc.communicate(timeout=30)[1]


def metric(code: str) -> float:
    return METRICS.protocol_errors.labels(code)._value.get()


async def wait_done(store: Store, n: int) -> None:
    with trio.fail_after(120):  # bounds a hang only
        while store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0] < n:
            await trio.sleep(0.1)


# --------------------------------------------------------------------------- a contest over TLS


@pytest.mark.parametrize("trust", [False, True], ids=["sandboxed", "trusted"])
async def test_a_bot_over_tls_plays_a_contest_and_the_web_page_is_https(tmp_path, pki, monkeypatch, trust):
    """A remote sample bot connects with ``tls://127.0.0.1:port`` and ARENA_TLS_CA and plays the
    contest's matches against a submitted bot (sandboxed: attached, no listener; trusted: over
    the plain loopback port the TLS server keeps for its own bots). The web page, the author
    client and a spectator (``arena watch``) all reach the server over TLS."""
    if not trust and TRUST_BOTS:
        pytest.skip("bwrap cannot sandbox here: the trusted case covers the launch")
    store = Store(tmp_path / "arena.db")
    store.submit_bot("greedy", str(ROOT / "sample_bots" / "greedy.toml"))
    token = store.add_bot("remote")
    cfg = ContestConfig(db=str(tmp_path / "arena.db"), logs=str(tmp_path / "logs"), http_port=0, seed=7,
                        server=tls_config(pki), max_matches=6, trust_bots=trust)
    contest = Contest(cfg, store)
    async with trio.open_nursery() as nursery:
        port, http_port = await nursery.start(contest.run)
        remote = start_bot(bot_env("remote", token, f"tls://127.0.0.1:{port}", 1, ARENA_TLS_CA=str(pki.ca)))
        try:
            await wait_done(store, 6)
            verify = ssl.create_default_context(cafile=str(pki.ca))
            async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{http_port}", verify=verify) as http:
                board = (await http.get("/api/leaderboard")).json()["leaderboard"]
            with pytest.raises(httpx.HTTPError):  # the web port speaks HTTPS only
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}") as http:
                    await http.get("/api/leaderboard")
            monkeypatch.setenv("ARENA_TLS_CA", str(pki.ca))
            status = await trio.to_thread.run_sync(
                author_client.request, f"https://127.0.0.1:{http_port}", "GET", "/api/status")
            out = io.StringIO()
            watched = await _watch("127.0.0.1", port, "no-such-match", True, "watcher",
                                   Console(file=out, width=200), tls=True, ca=str(pki.ca))
        finally:
            err = stop(remote)
            contest.stop()
    games = {row["bot"]: row["games"] for row in board}
    assert games == {"greedy": 6, "remote": 6}, (games, err)  # every match: the TLS bot against the launched one
    assert isinstance(status, dict) and status  # the author client's https:// with ARENA_TLS_CA
    assert watched == 1 and "no match 'no-such-match' in play" in out.getvalue()  # welcomed, listed, over TLS
    assert contest.server.local_port is not None


# --------------------------------------------------------------------------- what crosses the wire


async def relay(listener_port_out: list[int], server_port: int, captured: bytearray, *,
                task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A TCP relay between clients and ``server_port`` that appends every byte it carries, both
    ways, to ``captured``: what an eavesdropper on the network would see."""

    async def pump(src: trio.SocketStream, dst: trio.SocketStream) -> None:
        try:
            while data := await src.receive_some(65536):
                captured.extend(data)
                await dst.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.CancelScope(shield=True):
                await dst.aclose()

    async def handle(client: trio.SocketStream) -> None:
        upstream = await trio.open_tcp_stream("127.0.0.1", server_port)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, client, upstream)
            nursery.start_soon(pump, upstream, client)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener_port_out.append(listeners[0].socket.getsockname()[1])
    task_status.started()
    await trio.serve_listeners(handle, listeners)


@pytest.mark.parametrize("tls", [True, False], ids=["tls", "plain-control"])
async def test_a_token_never_crosses_a_tls_listener_in_clear(tmp_path, pki, tls):
    """The sample bot's hello and the matches' lines pass through a relay that records every
    byte: over TLS neither the token nor any JSON is in them. The plain control run shows the
    capture would have caught it."""
    store = Store(tmp_path / "arena.db")
    server = ArenaServer(store, tls_config(pki) if tls else ServerConfig(port=0, handshake_timeout_s=30.0))
    token = store.add_bot("eve-proof")
    captured = bytearray()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        relay_port: list[int] = []
        await nursery.start(relay, relay_port, server.port, captured)
        host = "tls://127.0.0.1" if tls else "127.0.0.1"
        bot = start_bot(bot_env("eve-proof", token, host, relay_port[0], ARENA_TLS_CA=str(pki.ca)))
        try:
            conn = await server.wait_for("eve-proof", 60)  # the hello has crossed the relay: it is captured
            assert conn is not None
            seen = len(captured)
            event = b'{"type":"event","note":"server to bot, after the welcome"}\n'
            await conn.send_bytes(event)
            with trio.fail_after(30):  # bounds a hang only
                while len(captured) < seen + len(event):
                    await trio.sleep(0.01)
        finally:
            err = stop(bot)
            nursery.cancel_scope.cancel()
    store.close()
    wire = bytes(captured)
    if tls:
        assert token.encode() not in wire, err
        assert b'"hello"' not in wire and b'"welcome"' not in wire and b"after the welcome" not in wire
    else:
        assert token.encode() in wire and b'"welcome"' in wire  # the capture sees everything in clear


# --------------------------------------------------------------------------- each side's mistake


async def test_a_plain_client_on_a_tls_port_gets_tls_required_and_the_server_lives_on(tmp_path, pki):
    """A plain client is told ``tls_required`` in plain text before its hello is read; a
    client that starts a TLS handshake with garbage, and one that leaves at once, only lose
    their own connections; a TLS client is welcomed afterwards."""
    store = Store(tmp_path / "arena.db")
    server = ArenaServer(store, tls_config(pki))
    token = store.add_bot("alice")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        plain = await Client.connect(server.port)
        await plain.send({"type": "hello", "name": "alice", "token": token, "protocol": 1})
        refusal = await plain.recv()
        assert refusal is not None and refusal["code"] == "tls_required" and refusal["fatal"] is True
        assert "connect with TLS" in refusal["message"]
        assert await plain.recv() is None  # closed
        await plain.aclose()

        before = metric("tls_handshake")
        junk = await trio.open_tcp_stream("127.0.0.1", server.port)
        await junk.send_all(b"\x16\x03\x01\x00\x05not a client hello at all\n")
        with trio.fail_after(30):
            try:
                while await junk.receive_some(1024):
                    pass
            except trio.BrokenResourceError:  # a reset is a close too
                pass
        await junk.aclose()
        assert metric("tls_handshake") == before + 1
        gone = await trio.open_tcp_stream("127.0.0.1", server.port)
        await gone.aclose()

        stream = await open_stream("127.0.0.1", server.port, tls=True, ca=str(pki.ca))
        client = Client(stream)
        welcome = await client.hello("alice", token)
        assert welcome is not None and welcome["type"] == "welcome"
        await client.aclose()
        assert server.local_port is not None  # the plain loopback port for the server's own bots
        local = await Client.connect(server.local_port)
        assert (await local.hello("bob", "wrong"))["code"] == "auth_failed"  # plain, the usual checks
        await local.aclose()
        nursery.cancel_scope.cancel()
    store.close()


async def test_a_tls_client_on_a_plain_port_gets_one_clear_line(tmp_path, pki):
    """``tls_unavailable`` reaches a TLS client at once as a record it cannot read: the
    library, the sample bot and ``arena watch`` each say in one line that the port does not
    speak TLS; the server goes on serving plain clients."""
    store = Store(tmp_path / "arena.db")
    server = ArenaServer(store, ServerConfig(port=0, handshake_timeout_s=30.0))
    token = store.add_bot("alice")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        with pytest.raises(TLSFailure) as failure:
            await open_stream("127.0.0.1", server.port, tls=True, ca=str(pki.ca))
        assert "does not speak TLS" in str(failure.value) and "\n" not in str(failure.value)
        env = bot_env("alice", token, "127.0.0.1", server.port, ARENA_TLS="1", ARENA_TLS_CA=str(pki.ca))
        done = await trio.run_process([sys.executable, str(RANDOM_BOT)], env=env, capture_stdout=True,
                                      capture_stderr=True, check=False)
        lines = done.stderr.decode().strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and "does not speak TLS" in lines[0], lines
        out = io.StringIO()
        status = await _watch("127.0.0.1", server.port, None, True, "w", Console(file=out, width=300), tls=True)
        assert status == 3 and "does not speak TLS" in out.getvalue() and out.getvalue().count("\n") == 1
        client = await Client.connect(server.port)
        assert (await client.hello("alice", token))["type"] == "welcome"
        await client.aclose()
        nursery.cancel_scope.cancel()
    store.close()


async def test_a_certificate_that_is_not_accepted_is_one_line(tmp_path, pki):
    """Without the CA (the system's trust store knows nothing of it), and with the CA but a
    certificate for another name, the client refuses before sending anything: one line that
    names the fix. The server lives on."""
    store = Store(tmp_path / "arena.db")
    other = make_pki(tmp_path / "other", "arena.test")
    server = ArenaServer(store, tls_config(pki))
    misnamed = ArenaServer(store, tls_config(other))
    token = store.add_bot("alice")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        await nursery.start(misnamed.serve)
        with pytest.raises(TLSFailure) as unknown_ca:
            await open_stream("127.0.0.1", server.port, tls=True)
        assert "was not accepted" in str(unknown_ca.value) and "ARENA_TLS_CA" in str(unknown_ca.value)
        with pytest.raises(TLSFailure) as wrong_name:
            await open_stream("127.0.0.1", misnamed.port, tls=True, ca=str(other.ca))
        assert "was not accepted" in str(wrong_name.value) and "mismatch" in str(wrong_name.value)
        env = bot_env("alice", token, f"tls://127.0.0.1:{server.port}", 1)
        done = await trio.run_process([sys.executable, str(RANDOM_BOT)], env=env, capture_stdout=True,
                                      capture_stderr=True, check=False)
        lines = done.stderr.decode().strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1 and "was not accepted" in lines[0], lines
        with pytest.raises(UserError, match="no such file"):
            await open_stream("127.0.0.1", server.port, tls=True, ca=str(tmp_path / "missing.pem"))
        stream = await open_stream("localhost", server.port, tls=True, ca=str(pki.ca))  # by name this time
        client = Client(stream)
        assert (await client.hello("alice", token))["type"] == "welcome"
        await client.aclose()
        nursery.cancel_scope.cancel()
    store.close()


# --------------------------------------------------------------------------- configuration


def test_tls_settings_are_read_and_a_bad_one_is_one_line(tmp_path, pki):
    toml = tmp_path / "c.toml"
    toml.write_text(f'[server]\ntls_cert = "{pki.cert}"\ntls_key = "{pki.key}"\n')
    cfg = load_config(toml)
    assert cfg.server.tls_cert == str(pki.cert) and cfg.server.ssl_context() is not None
    assert ServerConfig().ssl_context() is None
    store = Store(tmp_path / "arena.db")
    with pytest.raises(UserError, match=r"tls_cert is set but tls_key is not"):
        ArenaServer(store, ServerConfig(tls_cert=str(pki.cert)))
    with pytest.raises(UserError, match=r"tls_key = .*: no such file"):
        ArenaServer(store, ServerConfig(tls_cert=str(pki.cert), tls_key=str(tmp_path / "nope.pem")))
    other = make_pki(tmp_path / "other", "localhost")
    with pytest.raises(UserError, match="cannot be used") as mismatch:
        ArenaServer(store, ServerConfig(tls_cert=str(pki.cert), tls_key=str(other.key)))
    assert "\n" not in str(mismatch.value)
    store.close()


def test_addresses_and_the_exposure_warning():
    assert split_address("tls://arena.example.org:7443", 7000) == ("arena.example.org", 7443, True)
    assert split_address("tls://[::1]", 7000) == ("::1", 7000, True)
    assert split_address("arena.example.org", 7000) == ("arena.example.org", 7000, False)
    with pytest.raises(UserError):
        split_address("https://arena.example.org", 7000)
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "", "192.0.2.7", "arena.example.org"))
    assert exposure_warning("127.0.0.1", False, "127.0.0.1", False) is None
    assert exposure_warning("0.0.0.0", True, "::", True) is None
    line = exposure_warning("0.0.0.0", False, "127.0.0.1", False)
    assert line is not None and "[server] host = '0.0.0.0'" in line and "http_host" not in line
    assert "tls_cert" in line and "\n" not in line
    both = exposure_warning("0.0.0.0", False, "192.0.2.7", False)
    assert both is not None and "http_host = '192.0.2.7'" in both


def test_arena_serve_warns_in_one_line_when_it_listens_beyond_loopback_without_tls(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'db = "{tmp_path / "arena.db"}"\nlogs = "{tmp_path / "logs"}"\nhttp_port = 0\n'
                   'shutdown_grace_s = 0.2\ntrust_bots = true\n[server]\nhost = "0.0.0.0"\nport = 0\n')
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        end = time.monotonic() + 60  # bounds a hang only
        while time.monotonic() < end and not any("bots and spectators on" in line for line in lines):
            lines.append(proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    warnings = [line for line in lines if "warning:" in line]
    assert len(warnings) == 1 and "without TLS" in warnings[0] and "'0.0.0.0'" in warnings[0], (lines, err)
    assert proc.returncode == 0, err


# --------------------------------------------------------------------------- the doctor


@pytest.mark.skipif(shutil.which("openssl") is None, reason="arena doctor --tls makes its certificate with openssl")
async def test_the_doctor_checks_a_bot_over_tls():
    report = await run_doctor(ROOT / "sample_bots" / "random.toml", tls=True, keep_logs=False)
    connects = next(c for c in report.checks if c.key == "connects")
    assert report.ok, [(c.key, c.status, c.details) for c in report.checks if c.status != "PASS"]
    assert "over TLS" in connects.details
