"""Launched bots are contained: resource limits, capped output, the whole process group
killed at the end, and (where bwrap exists) a sandbox with no network and a read-only
filesystem whose bot speaks the protocol over stdin/stdout."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from functools import partial
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from arena.schedule import cgroups, launcher
from arena.schedule.contest import load_config
from arena.schedule.launcher import Limits, launch, load_manifest
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from tests.conftest import TRUST_BOTS, needs_bwrap

ROOT = Path(__file__).resolve().parent.parent
CGROUP = cgroups.setup("auto")
needs_cgroup = pytest.mark.skipif(isinstance(CGROUP, str), reason=f"no cgroup for bots here: {CGROUP}")


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


RLIMITS_CODE = (
    "import resource as r\n"
    "for n in ('CPU','AS','DATA','NOFILE','NPROC','FSIZE'):\n"
    "    print(n, r.getrlimit(getattr(r, 'RLIMIT_' + n))[0])\n"
    "print('cgroup', open('/proc/self/cgroup').read().replace('\\n', ' '))\n"
)


def rlimits_of(out: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in out.splitlines() if line.split()[0].isupper())}


async def test_without_a_cgroup_rlimits_limit_the_memory_used_not_the_address_space(tmp_path):
    """``cgroup = "no"`` (or no cgroup to be had): RLIMIT_DATA for the memory, RLIMIT_NPROC for
    the processes, and no RLIMIT_AS unless asked (the JVM, Go and .NET reserve far more)."""
    limits = Limits(cpu_s=7, open_files=33, processes=44, file_bytes=12345, memory_bytes=900 * 2**20, cgroup="no")
    got = rlimits_of(await _run_to_exit(manifest(tmp_path, "lim", RLIMITS_CODE), tmp_path, limits))
    assert got == {"CPU": 7, "AS": resource.RLIM_INFINITY, "DATA": cgroups.data_limit(900 * 2**20), "NOFILE": 33,
                   "NPROC": 44, "FSIZE": 12345}
    assert cgroups.data_limit(900 * 2**20) >= 900 * 2**20
    (tmp_path / "out.log").unlink()
    limits = Limits(address_space=900 * 2**20, cgroup="no")
    got = rlimits_of(await _run_to_exit(manifest(tmp_path, "lim", RLIMITS_CODE), tmp_path, limits))
    assert got["AS"] == 900 * 2**20


async def test_a_bot_that_cannot_join_its_cgroup_gets_the_rlimits_instead(tmp_path, monkeypatch):
    """Should writing to the group's ``cgroup.procs`` fail between fork and exec, the bot still
    has a memory limit: RLIMIT_DATA and RLIMIT_NPROC, as without a cgroup."""
    gone = cgroups.BotGroup(1, {"memory": tmp_path / "gone", "pids": tmp_path / "gone"}, 900 * 2**20)
    monkeypatch.setattr(launcher, "_make_group", lambda limits: gone)
    limits = Limits(memory_bytes=900 * 2**20, processes=44)
    got = rlimits_of(await _run_to_exit(manifest(tmp_path, "lim", RLIMITS_CODE), tmp_path, limits))
    assert got["DATA"] == cgroups.data_limit(900 * 2**20) and got["NPROC"] == 44


def test_the_data_limit_lets_a_jvm_start_on_any_host(monkeypatch):
    """RLIMIT_DATA is at least what a JVM commits at start: its initial heap, a 64th of the RAM
    it sees (at most MaxRAM, 128 GiB), and a margin; the configured limit on smaller hosts."""
    for ram, expected in ((16 * 2**30, 2 * 2**30), (64 * 2**30, 2 * 2**30),
                          (256 * 2**30, 2 * 2**30 + cgroups.JVM_MARGIN), (2**40, 2 * 2**30 + cgroups.JVM_MARGIN)):
        monkeypatch.setattr(cgroups.os, "sysconf", lambda name, ram=ram: ram // 4096 if "PAGES" in name else 4096)
        assert cgroups.data_limit(2 * 2**30) == expected
    assert cgroups.data_limit(64 * 2**30) == 64 * 2**30


@needs_cgroup
async def test_each_bot_copy_gets_a_cgroup_of_its_own_removed_when_it_exits(tmp_path):
    """Where the arena can make a cgroup: the bot runs in a fresh one (memory.max, pids.max),
    without RLIMIT_DATA nor RLIMIT_NPROC (the group counts the whole copy), and the group is gone
    once the bot has exited."""
    setup = cgroups.setup("auto")
    limits = Limits(memory_bytes=300 * 2**20, processes=77)
    m = manifest(tmp_path, "grouped", RLIMITS_CODE + "import time; time.sleep(60)\n")
    async with trio.open_nursery() as n:
        proc = await launch(n, m, {}, tmp_path / "out.log", limits)
        assert proc.group is not None and proc.group.pids() == [proc.process.pid]
        with trio.fail_after(60):  # bounds a hang only
            while "cgroup" not in (tmp_path / "out.log").read_text():
                await trio.sleep(0.02)
        mem = proc.group.dirs["memory"]
        limit_file = "memory.max" if setup.version == 2 else "memory.limit_in_bytes"
        assert (mem / limit_file).read_text().strip() == str(300 * 2**20)
        if "pids" in setup.bases:
            assert (proc.group.dirs["pids"] / "pids.max").read_text().strip() == "77"
        await proc.stop(grace_s=0.5, exit_grace_s=0)
        n.cancel_scope.cancel()
    out = (tmp_path / "out.log").read_text()
    got = rlimits_of(out)
    assert got["DATA"] == resource.getrlimit(resource.RLIMIT_DATA)[0]  # inherited, not set
    assert got["AS"] == resource.RLIM_INFINITY
    assert proc.group.name in out  # /proc/self/cgroup names the copy's group
    assert proc.group.removed and not any(d.exists() for d in proc.group.dirs.values())


async def test_cgroup_yes_refuses_to_launch_in_one_line_where_none_can_be_made(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "memory_setup", lambda limits: "cgroup v2: /sys/fs/cgroup/x is not writable")
    monkeypatch.setattr(cgroups, "data_limit", lambda memory_bytes: memory_bytes)  # whatever this host's RAM
    async with trio.open_nursery() as n:
        with pytest.raises(launcher.SandboxError, match=r'^\[limits\] cgroup = "yes" but cgroup v2: .* not writable$'):
            await launch(n, manifest(tmp_path, "x", "pass\n"), {}, tmp_path / "out.log", Limits(cgroup="yes"))
    line = launcher.limits_line(Limits(cgroup="auto"))
    assert line.startswith("memory: 2 GiB of private writable memory per process (RLIMIT_DATA")
    assert line.endswith("(RLIMIT_DATA; no cgroup: cgroup v2: /sys/fs/cgroup/x is not writable); "
                         "256 processes per user (RLIMIT_NPROC)")


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


@needs_cgroup
async def test_with_a_cgroup_even_an_unsandboxed_bot_leaves_no_process_behind(tmp_path):
    """Outside the sandbox (``--trust-bots``) a process that leaves the bot's process group with
    ``setsid`` escapes ``killpg``; it stays in the copy's cgroup, which is emptied at the end."""
    marker = "7654.123"
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execvp('sleep', ['sleep', '{marker}'])\n"
        "print('forked', flush=True)\n"
        "time.sleep(120)\n"
    )
    async with trio.open_nursery() as n:
        proc = await launch(n, manifest(tmp_path, "escaper", code), {}, tmp_path / "out.log")
        with trio.fail_after(60):
            while "forked" not in (tmp_path / "out.log").read_text():
                await trio.sleep(0.02)
        assert len(proc.group.pids()) == 2  # the bot and its escaped child
        await proc.stop(grace_s=0.5)
        n.cancel_scope.cancel()
    with trio.fail_after(60):  # bounds a hang only
        while marker in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout:
            await trio.sleep(0.05)
    assert proc.group.remove()


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


# --------------------------------------------------------------------------- runtimes and the memory limit

MECHANISMS = [
    pytest.param(Limits(), id="cgroup", marks=needs_cgroup),
    pytest.param(Limits(cgroup="no"), id="rlimit_data"),
]


def bigreserve(folder: Path) -> Path:
    """tests/bots/bigreserve.c (the C bot behind a Go-like 64 GiB reservation) built in ``folder``."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not on PATH: the Go-like reservation bot cannot be built")
    out = folder / "bigreserve"
    subprocess.run(["gcc", "-O2", "-std=c11", "-I", str(ROOT / "sample_bots"), "-o", str(out),
                    str(ROOT / "tests" / "bots" / "bigreserve.c")], check=True, timeout=120)
    return out


RUNTIMES = {  # command, what it prints once started, what it prints when RLIMIT_AS stops it (None: it starts)
    "java": (["java", "-version"], "openjdk version", "Could not allocate compressed class space"),
    "node": (["node", "-e", "console.error('node ' + process.version + ' started')"], "started", None),
    "go_like": (["./bigreserve"], "64 GiB reserved, 16 MiB committed and touched", "cannot reserve 64 GiB"),
}


@needs_bwrap
@pytest.mark.parametrize("limits", MECHANISMS)
@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
async def test_runtimes_that_reserve_address_space_start_sandboxed_under_the_default_limits(tmp_path, runtime, limits):
    """``java`` (a 1 GiB class space and a heap of a quarter of the RAM, reserved), ``node`` and a
    Go-like 64 GiB ``PROT_NONE`` reservation start in the sandbox with no flag, under the cgroup
    and under the RLIMIT_DATA fallback; under the old 2 GiB RLIMIT_AS the JVM and the Go-like
    bot cannot (the control, so this test can fail)."""
    command, started, refused = RUNTIMES[runtime]
    if runtime == "go_like":
        bigreserve(tmp_path)
    elif shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} not on PATH")
    (tmp_path / "rt.toml").write_text(f'name = "rt"\ncommand = {json.dumps(command)}\n')
    m = load_manifest(tmp_path / "rt.toml")
    env = {"ARENA_HOST": "127.0.0.1", "ARENA_PORT": "9"}  # nothing listens: the bot's stdin closes, it exits
    async with trio.open_nursery() as n:
        proc = await launch(n, m, env, tmp_path / "out.log", limits, sandbox=True)
        with trio.fail_after(120):  # bounds a hang only
            code = await proc.process.wait()
    out = (tmp_path / "out.log").read_text()
    assert code == 0 and started in out, out
    if refused is not None:
        (tmp_path / "out.log").unlink()
        old = Limits(cgroup="no", address_space=2 * 2**30)  # the limit of protocol.md §3.3 until now
        async with trio.open_nursery() as n:  # unsandboxed: the JVM says why on stdout, which then goes to the log
            proc = await launch(n, m, env, tmp_path / "out.log", old)
            with trio.fail_after(120):
                code = await proc.process.wait()
        out = (tmp_path / "out.log").read_text()
        assert code != 0 and refused in out, out


HOG = """\
import json, os, socket, sys
if os.environ.get("ARENA_TRANSPORT") == "stdio":
    rfile, wfile = sys.stdin.buffer, sys.stdout.buffer
else:
    sock = socket.create_connection((os.environ["ARENA_HOST"], int(os.environ["ARENA_PORT"])))
    rfile, wfile = sock.makefile("rb"), sock.makefile("wb")
def send(obj):
    wfile.write(json.dumps(obj).encode() + b"\\n")
    wfile.flush()
send({"type": "hello", "name": os.environ["ARENA_NAME"], "token": os.environ["ARENA_TOKEN"], "protocol": 1,
      "role": "bot"})
hoard = []
for line in rfile:
    msg = json.loads(line)
    if msg.get("type") == "request":
        print("hog: allocating", file=sys.stderr, flush=True)
        try:
            hoard.append(b"x" * (4 << 30))  # 4 GiB, every byte written
        except MemoryError:
            print("hog: MemoryError", file=sys.stderr, flush=True)
            sys.exit(3)
        print("hog: got it all", file=sys.stderr, flush=True)
        send({"type": "action", "id": msg["id"], "action": msg["legal"][0]})
    elif msg.get("type") == "goodbye":
        break
"""


@pytest.mark.parametrize("limits", MECHANISMS)
async def test_a_bot_that_uses_more_memory_than_its_limit_is_stopped_and_forfeits(tmp_path, limits):
    """A bot that allocates and writes 4 GiB under a 256 MiB limit: killed by the kernel (the
    cgroup; its log says why) or refused the memory (RLIMIT_DATA: MemoryError), and every one of
    its matches ends as for a bot that dies, ``forfeit_disconnect``, won by its opponent."""
    limits = msgspec.structs.replace(limits, memory_bytes=256 * 2**20)
    hog = manifest(tmp_path, "hog", HOG)
    store = Store(tmp_path / "a.db")
    cfg = TournamentConfig(games=2, seed=5, logs_dir=str(tmp_path / "logs"), limits=limits, trust_bots=TRUST_BOTS,
                           connect_timeout_s=60)
    report = await run_tournament(store, [hog, load_manifest(ROOT / "sample_bots" / "random.toml")], cfg)
    assert report.matches == 2 and report.reasons == {"forfeit_disconnect": 2}
    assert [r.name for r in report.ratings][0] == "random"
    logs = "".join(p.read_text() for p in (tmp_path / "logs").rglob("*.log"))
    assert "hog: allocating" in logs and "hog: got it all" not in logs
    if limits.cgroup == "no":
        assert "hog: MemoryError" in logs
    else:
        assert "[arena: the bot was killed for going over its memory limit (256 MiB, cgroup v" in logs


@pytest.mark.parametrize("text, error", [
    ('[limits]\ncgroup = "maybe"\n', '[limits] cgroup must be "auto", "yes" or "no", not \'maybe\''),
    ("[limits]\nmemory_bytes = 0\n", "[limits] memory_bytes must be from 1 to"),
    ("[limits]\naddress_space = -1\n", "[limits] address_space must be from 0 to"),
])
def test_a_contests_limits_are_checked_in_one_line(tmp_path, text, error):
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(ValueError) as info:
        load_config(tmp_path / "c.toml")
    assert error in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "ok.toml").write_text('[limits]\naddress_space = 0\ncgroup = "no"\nmemory_bytes = 1073741824\n')
    assert load_config(tmp_path / "ok.toml").limits == Limits(address_space=0, cgroup="no", memory_bytes=2**30)
