"""Launched bots are isolated by default (issue 9): an attacking bot, run as a real process
under the sandbox, cannot read another bot's token from /proc, kill it, read its directory,
read our match logs (while its match is played) or our database, or open a network
connection. Each attack is also run unsandboxed (``--trust-bots``) where it succeeds: the
tests can fail. Those that need bwrap skip without it (CI installs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from arena.schedule.copies import Halves
from arena.schedule.formats import Pairing
from arena.schedule.launcher import (
    Limits,
    Manifest,
    SandboxError,
    launch,
    load_manifest,
    sandbox_command,
)
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from tests.conftest import needs_bwrap

ROOT = Path(__file__).resolve().parent.parent
ATTACKER = ROOT / "tests" / "bots" / "attacker.py"
VICTIM_TOKEN = "victim-token-4f1c9a"


def probes(log: Path) -> list[dict]:
    """The attacker's ``PROBE`` reports found in its output log."""
    return [json.loads(line[6:]) for line in log.read_text().splitlines() if line.startswith("PROBE ")]


def group_pids(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,pgid=,args="], capture_output=True, text=True).stdout
    return [int(f[0]) for f in (line.split(None, 2) for line in out.splitlines()) if int(f[1]) == pgid]


async def attack_a_running_bot(tmp_path: Path, sandbox: bool) -> tuple[dict, bool]:
    """Launch a victim bot (sleeping, with a token and a secret file in its directory), then the
    attacker aimed at it; return the attacker's report and whether the victim survived."""
    victim_dir, attacker_dir, logs = tmp_path / "victim", tmp_path / "attacker", tmp_path / "logs"
    for d in (victim_dir, attacker_dir, logs):
        d.mkdir()
    (victim_dir / "secret.txt").write_text("the victim's strategy\n")
    (victim_dir / "victim.py").write_text("import time\ntime.sleep(60)\n")
    shutil.copy(ATTACKER, attacker_dir / "attacker.py")
    (logs / "t1-m0001.jsonl").write_text('{"kind":"deck","cards":["Kh","8s","Ks","7h","Qh"]}\n')
    store = Store(tmp_path / "arena.db")
    store.add_bot("victim")
    victim = Manifest(name="victim", command=["{python}", "victim.py"], directory=str(victim_dir))
    attacker = Manifest(name="attacker", command=["{python}", "attacker.py"], directory=str(attacker_dir))
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    hide = [logs, tmp_path / "arena.db"]
    async with trio.open_nursery() as n:
        v = await launch(n, victim, {"ARENA_TOKEN": VICTIM_TOKEN, "ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(port)},
                         tmp_path / "victim.log", sandbox=sandbox, hide=hide, others=[attacker_dir])
        with trio.fail_after(60):
            while not any("victim.py" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
                          for p in group_pids(v.process.pid) if Path(f"/proc/{p}/cmdline").exists()):
                await trio.sleep(0.02)
        env = {"ARENA_TOKEN": "attacker-token", "ARENA_HOST": "127.0.0.1", "ARENA_PORT": str(port),
               "ATTACK_ONLY": "1", "ATTACK_PIDS": ",".join(map(str, group_pids(v.process.pid))),
               "ATTACK_SECRET": str(victim_dir / "secret.txt"), "ATTACK_LOGS": str(logs),
               "ATTACK_DB": str(tmp_path / "arena.db"), "ATTACK_NET": f"127.0.0.1:{port}"}
        a = await launch(n, attacker, env, tmp_path / "attacker.log", sandbox=sandbox, hide=hide, others=[victim_dir])
        with trio.fail_after(20):
            await a.process.wait()
        with trio.fail_after(30):  # its output is relayed to the log by another task: bounds a hang only
            while not probes(tmp_path / "attacker.log"):
                await trio.sleep(0.02)
        (report,) = probes(tmp_path / "attacker.log")
        if report["killed"]:  # its SIGKILL is delivered at once: wait for the exit (bounds a hang only)
            with trio.move_on_after(30):
                await v.process.wait()
        else:  # nothing to wait for: a victim that was never hit has no exit to report
            await trio.sleep(0.1)
        alive = v.running
        v.stop_now()
        n.cancel_scope.cancel()
    await listener.aclose()
    return report, alive


@needs_bwrap
async def test_a_sandboxed_bot_cannot_read_kill_or_reach_another_bot_our_logs_or_the_network(tmp_path):
    report, victim_alive = await attack_a_running_bot(tmp_path, sandbox=True)
    assert VICTIM_TOKEN not in report["tokens"]
    assert report["killed"] == [] and victim_alive
    assert report["secret"] is None
    assert report["logs"] == [] and report["log_files"] == 0
    assert report["db"] is False
    assert report["network"] is False


async def test_unsandboxed_the_same_attacks_succeed(tmp_path):
    """The control: with --trust-bots every attack above works, so those assertions can fail."""
    report, victim_alive = await attack_a_running_bot(tmp_path, sandbox=False)
    assert VICTIM_TOKEN in report["tokens"]
    assert report["killed"] and not victim_alive
    assert report["secret"] == "the victim's strategy"
    assert report["logs"] == [["Kh", "8s", "Ks", "7h", "Qh"]] and report["db"] is True
    assert report["network"] is True


async def tournament_attack(tmp_path: Path, trust: bool) -> list[dict]:
    """A tournament attacker v greedy (one duplicate pair) with the attacker's directory holding
    our logs and database; the attacker probes them at its first request of each match."""
    shutil.copy(ATTACKER, tmp_path / "attacker.py")
    logs, db = tmp_path / "logs", tmp_path / "arena.db"
    (tmp_path / "attacker.toml").write_text(
        f'name = "attacker"\ncommand = ["{{python}}", "attacker.py", "ATTACK_LOGS={logs}", "ATTACK_DB={db}"]\n')
    manifests = [load_manifest(tmp_path / "attacker.toml"), load_manifest(ROOT / "sample_bots" / "greedy.toml")]
    store = Store(db)
    cfg = TournamentConfig(games=2, seed=5, logs_dir=str(logs), trust_bots=trust, connect_timeout_s=10)
    with trio.fail_after(60):
        report = await run_tournament(store, manifests, cfg)
    rows = store.matches(report.tournament_id)
    assert len(rows) == 2 and all(r["status"] == "done" for r in rows)
    bots = logs / f"t{report.tournament_id}" / "bots"
    found = [p for c in (0, 1) for p in probes(bots / f"b{store.bot_id('attacker')}-c{c}.log")]
    assert len(found) == 4  # each copy: once at start, once in its match
    return found


@needs_bwrap
async def test_a_playing_bot_cannot_read_its_match_log_or_the_database_even_inside_its_directory(tmp_path):
    for report in await tournament_attack(tmp_path, trust=False):
        assert report["logs"] == [] and report["log_files"] == 0 and report["db"] is False, report
        assert report["unmounted"] == [], report


async def test_unsandboxed_a_playing_bot_reads_the_pack_of_its_match(tmp_path):
    """The control: a trusted bot reads the deck of the very match it is playing."""
    found = await tournament_attack(tmp_path, trust=True)
    assert any(r["logs"] for r in found) and any(r["db"] for r in found)


def test_a_bot_directory_inside_our_logs_is_refused(tmp_path):
    logs = tmp_path / "logs"
    (logs / "bot").mkdir(parents=True)
    with pytest.raises(SandboxError, match="must not read"):
        sandbox_command(["python3", "bot.py"], str(logs / "bot"), hide=[logs])
    # the other way round, the logs are covered by a read-only tmpfs, the database by /dev/null
    (tmp_path / "arena.db").write_text("x")
    cmd = sandbox_command(["python3", "bot.py"], str(tmp_path), hide=[logs, tmp_path / "arena.db"])
    assert str(logs.resolve()) in tmpfs_targets(cmd)
    assert ["--remount-ro", str(logs.resolve())] == cmd[cmd.index("--remount-ro"):][:2]
    assert ["--ro-bind", "/dev/null", str((tmp_path / "arena.db").resolve())] == cmd[cmd.index("/dev/null") - 1:][:3]
    # another bot sharing this bot's directory is not covered (it would hide this bot)
    assert str(tmp_path.resolve()) not in tmpfs_targets(sandbox_command(["x"], str(tmp_path), others=[tmp_path]))


def tmpfs_targets(cmd: list[str]) -> list[str]:
    return [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--tmpfs"]


def test_without_bwrap_the_tournament_refuses_in_one_line_unless_trusted(tmp_path):
    bots = [str(ROOT / "sample_bots" / "greedy.toml"), str(ROOT / "sample_bots" / "random.toml")]
    args = [sys.executable, "-m", "arena.cli", "tournament", "--bots", *bots, "--games", "2", "--quiet",
            "--db", str(tmp_path / "a.db"), "--logs", str(tmp_path / "logs")]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=ROOT, env={"PATH": "/nonexistent"})
    assert out.returncode == 3  # Unavailable (docs/contests.md §10)
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "is not installed" in lines[0] and "--trust-bots" in lines[0], lines
    trusted = subprocess.run([*args, "--trust-bots"], capture_output=True, text=True, timeout=120, cwd=ROOT,
                             env={"PATH": "/nonexistent"})
    assert trusted.returncode == 0, trusted.stderr
    assert "greedy" in trusted.stdout


def test_the_two_halves_of_a_pair_go_to_different_copies():
    halves = Halves(lambda name: 1 if name == "remote" else 2)
    first = Pairing(index=0, bot0="a", bot1="b", seed=1, pair="a|b|0")
    second = Pairing(index=1, bot0="b", bot1="a", seed=1, pair="a|b|0")
    assert halves.assign(first) == (0, 0) and halves.assign(second) == (1, 1)
    # whichever half starts first is played by copy 0; a match without a pair by copy 0
    assert halves.assign(Pairing(index=3, bot0="b", bot1="a", seed=2, pair="a|b|1")) == (0, 0)
    assert halves.assign(Pairing(index=4, bot0="a", bot1="b", seed=3)) == (0, 0)
    assert halves.assign(Pairing(index=2, bot0="a", bot1="b", seed=2, pair="a|b|1")) == (1, 1)
    # a bot with one copy (remote) plays both halves itself
    halves.assign(Pairing(index=5, bot0="a", bot1="remote", seed=4, pair="p"))
    assert halves.assign(Pairing(index=6, bot0="remote", bot1="a", seed=4, pair="p")) == (0, 1)


@needs_bwrap
async def test_a_sandboxed_bot_has_a_small_private_tmp_and_a_read_only_dev(tmp_path):
    (tmp_path / "filler.py").write_text(
        "import sys\n"
        "for path in ('/tmp/a', '/tmp/b', '/dev/shm/a', '/dev/x'):\n"
        "    try:\n"
        "        with open(path, 'wb') as fh:\n"
        "            fh.write(b'x' * 900_000)\n"
        "        print(path, 'written', file=sys.stderr)\n"
        "    except OSError as exc:\n"
        "        print(path, 'refused', exc.errno, file=sys.stderr)\n"
        "open('/dev/null', 'w').write('fine')\n"
        "print('done', file=sys.stderr)\n"
    )
    m = Manifest(name="filler", command=["{python}", "filler.py"], directory=str(tmp_path))
    async with trio.open_nursery() as n:
        proc = await launch(n, m, {"ARENA_HOST": "127.0.0.1", "ARENA_PORT": "9"}, tmp_path / "out.log",
                            Limits(tmp_bytes=2**20), sandbox=True)
        with trio.fail_after(20):
            await proc.process.wait()
    out = (tmp_path / "out.log").read_text()
    assert "/tmp/a written" in out and "/tmp/b refused" in out  # 1 MiB in all
    assert "/dev/shm/a written" in out and "/dev/x refused" in out and "done" in out


def test_without_bwrap_a_contest_says_in_one_line_it_will_not_launch_submitted_bots(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'db = "{tmp_path / "a.db"}"\nlogs = "{tmp_path / "logs"}"\nhttp_port = 0\n[server]\nport = 0\n')
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PATH": "/nonexistent"})
    try:
        first = proc.stdout.readline()
        second = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert first.startswith("submitted bots will not be launched:") and "trust_bots = true" in first, first
    assert "bots and spectators on tcp://" in second  # remote bots can still play
