"""Launched bots are contained: resource limits, capped output, the whole process group
killed at the end, and (where bwrap exists) a sandbox with no network and a read-only
filesystem whose bot speaks the protocol over stdin/stdout."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from arena.schedule.launcher import Limits, launch, load_manifest
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from tests.conftest import needs_bwrap

ROOT = Path(__file__).resolve().parent.parent


def manifest(tmp_path: Path, name: str, code: str):
    (tmp_path / f"{name}.py").write_text(code)
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\ncommand = ["{{python}}", "{name}.py"]\n')
    return load_manifest(path)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes; so is one reaped between the kill() and the read
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def _run_to_exit(m, tmp_path, limits=None, sandbox=False, env=None):
    async with trio.open_nursery() as n:
        proc = await launch(n, m, env or {}, tmp_path / "out.log", limits, sandbox)
        with trio.fail_after(20):
            await proc.process.wait()
    return (tmp_path / "out.log").read_text()


async def test_resource_limits_are_applied(tmp_path):
    code = (
        "import resource as r\n"
        "for n in ('CPU','AS','NOFILE','NPROC','FSIZE'):\n"
        "    print(n, r.getrlimit(getattr(r, 'RLIMIT_' + n))[0])\n"
    )
    limits = Limits(cpu_s=7, address_space=900 * 2**20, open_files=33, processes=44, file_bytes=12345)
    out = await _run_to_exit(manifest(tmp_path, "lim", code), tmp_path, limits)
    assert f"CPU 7\nAS {900 * 2**20}\nNOFILE 33\nNPROC 44\nFSIZE 12345\n" in out


async def test_output_is_capped(tmp_path):
    code = "import sys\nfor _ in range(5000): sys.stdout.write('x' * 1000 + '\\n')\n"
    await _run_to_exit(manifest(tmp_path, "chatty", code), tmp_path, Limits(log_bytes=100_000))
    size = (tmp_path / "out.log").stat().st_size
    assert 100_000 <= size < 100_200
    assert (tmp_path / "out.log").read_text().endswith("[output truncated at 100000 bytes]\n")


async def test_stop_kills_the_whole_process_group(tmp_path):
    code = (
        "import os, time, sys\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "print('child', pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    m = manifest(tmp_path, "forker", code)
    async with trio.open_nursery() as n:
        proc = await launch(n, m, {}, tmp_path / "out.log")
        with trio.fail_after(60):  # bounds a hang only
            while not (tmp_path / "out.log").read_text().endswith("\n"):  # the whole line "child <pid>"
                await trio.sleep(0.02)
        child = int((tmp_path / "out.log").read_text().split()[1])
        assert alive(child)
        await proc.stop(grace_s=0.5)
        n.cancel_scope.cancel()
    with trio.fail_after(60):  # bounds a hang only: SIGKILL is sent; the reaper may be slow under load
        while alive(child):
            await trio.sleep(0.02)


@needs_bwrap
async def test_sandbox_has_no_network_and_a_read_only_filesystem(tmp_path):
    code = (
        "import os, socket, sys\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', int(os.environ['ARENA_PORT'])), timeout=2)\n"
        "    print('network: open', file=sys.stderr)\n"
        "except OSError as e:\n"
        "    print('network: closed', file=sys.stderr)\n"
        "try:\n"
        "    open('written.txt', 'w').write('x')\n"
        "    print('fs: writable', file=sys.stderr)\n"
        "except OSError:\n"
        "    print('fs: read-only', file=sys.stderr)\n"
        "print('transport:', os.environ.get('ARENA_TRANSPORT'), file=sys.stderr)\n"
    )
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    out = await _run_to_exit(manifest(tmp_path, "jail", code), tmp_path, sandbox=True,
                             env={"ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(port)})
    await listener.aclose()
    assert "network: closed" in out and "fs: read-only" in out and "transport: stdio" in out
    assert not (tmp_path / "written.txt").exists()


@needs_bwrap
async def test_sandboxed_tournament_plays_over_stdin_stdout(tmp_path):
    bots = [load_manifest(ROOT / "sample_bots" / f"{n}.toml") for n in ("greedy", "random")]
    if shutil.which("node"):
        bots.append(load_manifest(ROOT / "sample_bots" / "cautious.toml"))
    store = Store(tmp_path / "a.db")
    cfg = TournamentConfig(games=2, seed=4, logs_dir=str(tmp_path / "logs"), sandbox=True)
    report = await run_tournament(store, bots, cfg)
    assert report.reasons == {"target": report.matches} and report.matches == len(bots) * (len(bots) - 1)


@needs_bwrap
async def test_sandbox_leaves_no_process_behind_even_one_that_escapes_its_group(tmp_path):
    marker = "7654.321"
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execvp('sleep', ['sleep', '{marker}'])\n"
        "print('forked', file=sys.stderr, flush=True)\n"
        "time.sleep(120)\n"
    )
    m = manifest(tmp_path, "escaper", code)
    async with trio.open_nursery() as n:
        proc = await launch(n, m, {"ARENA_HOST": "127.0.0.1", "ARENA_PORT": "9"}, tmp_path / "out.log",
                            sandbox=True)
        with trio.fail_after(60):
            while "forked" not in (tmp_path / "out.log").read_text():
                await trio.sleep(0.02)
        assert marker in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        await proc.stop(grace_s=0.5)
        n.cancel_scope.cancel()
    with trio.fail_after(60):  # bounds a hang only
        while marker in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout:
            await trio.sleep(0.05)


@pytest.mark.parametrize("exit_grace_s, exits_on_its_own", [(10.0, True), (0.0, False)])
async def test_a_bot_gets_a_grace_period_to_exit_before_sigterm(tmp_path, exit_grace_s, exits_on_its_own):
    """A bot that needs a moment after ``goodbye`` (here: until the test lets it go, once
    ``stop`` is waiting) finishes and exits 0 within the grace; without one it is terminated by
    SIGTERM first. No timing decides the outcome: the bot is released only when every task
    (``stop`` included) is blocked."""
    code = (
        "import os, time\n"
        "print('ready', flush=True)\n"
        "while not os.path.exists('go'):\n"
        "    time.sleep(0.01)\n"
        "open('done.txt', 'w').write('x')\n"
    )
    m = manifest(tmp_path, "slowexit", code)
    async with trio.open_nursery() as n:
        proc = await launch(n, m, {}, tmp_path / "out.log")
        with trio.fail_after(60):
            while "ready" not in (tmp_path / "out.log").read_text():
                await trio.sleep(0.02)
        async with trio.open_nursery() as stopping:
            stopping.start_soon(partial(proc.stop, grace_s=5.0, exit_grace_s=exit_grace_s))
            await trio.testing.wait_all_tasks_blocked()  # stop() is waiting (or has sent SIGTERM)
            (tmp_path / "go").write_text("")
        n.cancel_scope.cancel()
    assert (tmp_path / "done.txt").exists() == exits_on_its_own
    assert (proc.process.returncode == 0) == exits_on_its_own


@needs_bwrap
async def test_a_sandboxed_bots_stdin_and_stdout_are_one_tcp_socket_the_arena_reads_directly(tmp_path):
    """No relay between a sandboxed bot and the referee: ``attach`` gets the arena's end of a
    loopback TCP connection (so the kernel stamps arrivals for the fair clock) whose far end is
    the bot's stdin and stdout; what the bot writes is read there, and its reply to what it reads."""
    import socket

    from arena.match import fairclock

    code = (
        "import os, socket, stat, sys\n"
        "a, b = os.fstat(0), os.fstat(1)\n"
        "print('socket' if stat.S_ISSOCK(a.st_mode) else 'other', (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),\n"
        "      file=sys.stderr)\n"
        "sys.stdout.write('ping\\n'); sys.stdout.flush()\n"
        "sys.stdout.write(sys.stdin.readline().upper()); sys.stdout.flush()\n"
    )
    attached: list[socket.socket] = []
    async with trio.open_nursery() as n:
        proc = await launch(n, manifest(tmp_path, "direct", code), {}, tmp_path / "out.log", None, True,
                            attach=attached.append)
        assert len(attached) == 1
        ours = attached[0]
        assert ours.family == socket.AF_INET and ours.type == socket.SOCK_STREAM
        assert fairclock.enable_stamps(ours)
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
        got = b""
        with trio.fail_after(20):  # bounds a hang only
            while not got.endswith(b"\n"):
                got += await stream.receive_some(100)
            assert got == b"ping\n"
            await stream.send_all(b"pong\n")
            got = b""
            while not got.endswith(b"\n"):
                got += await stream.receive_some(100)
            assert got == b"PONG\n"
            await proc.process.wait()
        await stream.aclose()
    assert "socket True" in (tmp_path / "out.log").read_text()


def test_a_process_that_connects_first_to_the_loopback_listener_never_gets_a_bots_stream(monkeypatch):
    """Another local process (an unsandboxed bot, say) that reaches the short-lived listener of
    ``loopback_pair`` before the arena's own connection is refused: the pair is the arena's."""
    import socket

    from arena.schedule import launcher

    real = socket.create_connection
    intruders: list[socket.socket] = []

    def connect_after_intruders(address, *args, **kwargs):
        intruders.append(real(address, timeout=5))  # queued ahead of ours
        return real(address, *args, **kwargs)

    monkeypatch.setattr(launcher.socket, "create_connection", connect_after_intruders)
    ours, theirs = launcher.loopback_pair()
    monkeypatch.undo()
    try:
        assert ours.getpeername() == theirs.getsockname()
        ours.settimeout(5)
        theirs.sendall(b"hello\n")
        assert ours.recv(16) == b"hello\n"
        for intruder in intruders:  # closed by the arena, told nothing
            intruder.settimeout(5)
            assert intruder.recv(16) == b""
    finally:
        for sock in (ours, theirs, *intruders):
            sock.close()
