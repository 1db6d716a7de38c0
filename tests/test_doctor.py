"""``arena doctor``: the sample bots pass, deliberately broken bots fail the right check with the
exact line quoted, and the scripted deals force the situations they claim to force.

The broken bots are ``tests/bots/doctor_faulty.py MODE``; each test writes a manifest for one
mode into its temporary directory.
"""

from __future__ import annotations

import copy
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

import arena.tools.doctor as doctor
import arena.tools.doctor.session as doctor_session
from arena.cards import PACK_32
from arena.games.ecarte import EcarteMatch
from arena.schedule import cgroups
from arena.schedule.launcher import Limits, sandbox_available
from arena.tools.doctor import (
    DEALER_X,
    ELDER_X,
    FOLLOW,
    KING_ELDER,
    SITUATIONS,
    TRUMP,
    DealPlan,
    Opponent,
    Report,
    Wire,
    classify,
    draw_pack,
    opponent_discard_count,
    run_doctor,
)
from arena.tools.doctor.__main__ import report_dict
from protocol.messages import Rules

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
FAULTY = Path(__file__).resolve().parent / "bots" / "doctor_faulty.py"
NODE = shutil.which("node")

try:
    from c_bot import ensure_c_bot
except ImportError:  # tests/ imported as a package
    from tests.c_bot import ensure_c_bot

SAMPLE_BOTS = [
    "greedy",
    "random",
    pytest.param("c_bot", marks=pytest.mark.skipif(ensure_c_bot() is None, reason="gcc not on PATH")),
    *(
        pytest.param(name, marks=pytest.mark.skipif(NODE is None, reason="node not on PATH"))
        for name in ("cautious", "highcard")
    ),
]
CHOICE = {key for key, _, forced in SITUATIONS if not forced}


def faulty_manifest(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"{mode}.toml"
    path.write_text(f'name = "faulty-{mode}"\ncommand = ["{{python}}", "{FAULTY}", "{mode}"]\n')
    return path


def table(report: Report) -> str:
    return "\n".join(f"{c.title}: {c.status}: {c.details}" for c in report.checks)


def statuses(report: Report) -> dict[str, str]:
    return {c.key: c.status for c in report.checks}


def bot_lines(report: Report) -> list[str]:
    return [wl.raw.decode() for wl in report.transcript if wl.src == "bot"]


def quoted(details: str) -> str:
    """The line after ``bot sent:`` in a check's details."""
    m = re.search(r"bot sent: (.*?)(?: after \d+ ms)?$", details, re.MULTILINE)
    assert m, details
    return m.group(1)


# --------------------------------------------------------------------------- sample bots


@pytest.mark.parametrize("name", SAMPLE_BOTS)
async def test_sample_bots_pass_every_check(name: str) -> None:
    report = await run_doctor(SAMPLES / f"{name}.toml")
    assert report.ok, table(report)
    # random exchanges by coin flip: its exchange situations may, in principle, stay untested
    allowed = CHOICE if name == "random" else set()
    not_passed = {k: s for k, s in statuses(report).items() if s != "PASS" and k not in allowed}
    assert not not_passed, table(report)
    n = 2 + len(SITUATIONS) + len(doctor.GLOBAL_CHECKS)  # manifest, launch and connect, the rest
    assert len(report.checks) == n
    assert report.summary().startswith(f"{n} checks, ")
    assert report.log_dir == ""  # a clean run leaves nothing behind


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert doctor.main(str(SAMPLES / "greedy.toml")) == 0
    out = capsys.readouterr().out
    assert "arena doctor: greedy" in out
    assert "keeps reading" in out and "PASS" in out and "FAIL" not in out
    n = 2 + len(SITUATIONS) + len(doctor.GLOBAL_CHECKS)
    assert out.strip().splitlines()[-1].startswith(f"{n} checks, {n} passed")
    assert "limits: memory: 2 GiB" in out  # which mechanism limits the bot: a cgroup, or RLIMIT_DATA


# --------------------------------------------------------------------------- the limits


def test_the_report_says_how_the_bots_memory_is_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doctor's report (printed and in the gate's JSON) names the mechanism: the bot's cgroup
    with its peak use where one can be made, else RLIMIT_DATA and why there is no cgroup."""
    report = trio.run(lambda: run_doctor(SAMPLES / "greedy.toml", keep_logs=False))
    public = report_dict(report)["limits"]
    assert public == report.limits_brief and "/sys/" not in public  # an author never sees the server's paths
    if isinstance(setup := cgroups.setup("auto"), cgroups.Setup):
        assert f"per bot copy, all its processes together ({setup.describe()})" in report.limits
        assert re.search(r"; peak use of the bot: [\d.]+ (MiB|KiB|GiB)$", report.limits), report.limits
        assert f"per bot copy, all its processes together (cgroup v{setup.version});" in public
    else:
        assert f"(RLIMIT_DATA; no cgroup: {setup})" in report.limits
        assert "(RLIMIT_DATA; no cgroup here)" in public
    report = trio.run(lambda: run_doctor(SAMPLES / "greedy.toml", keep_logs=False, limits=Limits(cgroup="no")))
    assert report.ok and 'no cgroup: rlimits only ([limits] cgroup = "no")' in report.limits


def go_like_bot(tmp_path: Path) -> Path:
    """tests/bots/bigreserve.c (the C bot behind a 64 GiB PROT_NONE reservation, as Go and .NET
    make; neither is installed here) built in ``tmp_path``; its manifest."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not on PATH: the Go-like reservation bot cannot be built")
    subprocess.run(["gcc", "-O2", "-std=c11", "-I", str(SAMPLES), "-o", str(tmp_path / "bigreserve"),
                    str(Path(__file__).resolve().parent / "bots" / "bigreserve.c")], check=True, timeout=120)
    (tmp_path / "go_like.toml").write_text('name = "go_like"\ncommand = ["./bigreserve"]\n')
    return tmp_path / "go_like.toml"


@pytest.mark.skipif(not sandbox_available(), reason="bwrap (Debian bubblewrap) is not installed")
@pytest.mark.parametrize("cgroup", ["auto", "no"])
async def test_a_bot_that_reserves_64_gib_like_go_passes_the_doctor_sandboxed(tmp_path: Path, cgroup: str) -> None:
    """Under the default limits (the bot's cgroup where there is one, else RLIMIT_DATA) a
    runtime's big reservation costs nothing: the bot starts and plays."""
    report = await run_doctor(go_like_bot(tmp_path), keep_logs=False, sandbox=True, limits=Limits(cgroup=cgroup))
    assert report.ok, table(report)
    assert "bigreserve: 64 GiB reserved, 16 MiB committed and touched" in report.log_tail


# --------------------------------------------------------------------------- broken bots


async def test_illegal_card_is_reported_with_the_bot_line(tmp_path: Path) -> None:
    """The bot plays a card it does not hold on its 3rd play: the check of that situation and
    "answers are legal" fail, quoting the bot's line and the server's error."""
    report = await run_doctor(faulty_manifest(tmp_path, "badplay"))
    assert not report.ok
    legal = report.check("legal")
    assert legal.status == "FAIL"
    line = quoted(legal.details)
    assert line in bot_lines(report)
    action = msgspec.json.decode(line)
    assert "error illegal_action:" in legal.details
    assert f'"{action["action"]}" is not in the hand' in legal.details
    assert "(fatal)" in legal.details and f"request {action['id']} (play" in legal.details
    # the same line is quoted by the play situation it happened in
    play_rows = [c for c in report.checks if c.title.startswith("play:") and c.status == "FAIL"]
    assert len(play_rows) == 1 and line in play_rows[0].details
    # one mistake does not hide the rest: everything else still passes
    failed = {c.key for c in report.checks if c.status == "FAIL"}
    assert failed == {"legal", play_rows[0].key}, table(report)
    assert report.log_dir and Path(report.log_dir).is_dir()
    shutil.rmtree(report.log_dir)


async def test_unanswered_king_decision_times_out(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "noking"), move_ms=800)  # short, but met under load
    st = statuses(report)
    assert st["king_elder"] == "FAIL" and st["king_dealer"] == "FAIL" and st["in_time"] == "FAIL"
    king = report.check("king_elder")
    assert king.title == "king announcement as elder"
    assert "no answer within the time limit" in king.details
    assert "(king," in king.details and '["announce","decline"]' in king.details
    assert "bot sent: nothing" in king.details
    assert re.search(r"server: error timeout: no answer to request \d+ within 850 ms \(fatal\)", king.details)
    assert st["legal"] == "PASS" and st["goodbye"] == "PASS", table(report)
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_second_answer_is_reported(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "double"))
    once = report.check("once")
    assert once.status == "FAIL"
    assert "a second answer to request 4" in once.details
    assert "server: error duplicate_answer: request 4 was already answered (fatal)" in once.details
    assert quoted(once.details) in bot_lines(report)
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_wrong_id_is_reported(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "wrongid"))
    ids = report.check("ids")
    assert ids.status == "FAIL"
    assert "answered id 1005 while request 5 was pending" in ids.details
    assert '"id": 1005' in quoted(ids.details)
    assert "error unknown_request" in ids.details
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_refused_hello_shows_the_error_code(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "badtoken"))
    connects = report.check("connects")
    assert connects.status == "FAIL"
    assert "hello refused: server: error auth_failed: unknown bot name or wrong token" in connects.details
    assert '"token": "<ARENA_TOKEN>-wrong"' in connects.details  # the line, its secret masked
    assert {c.status for c in report.checks[2:]} == {"SKIP"}
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_bot_that_never_connects(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "noconnect"), connect_timeout_s=600)
    connects = report.check("connects")
    assert connects.status == "FAIL"
    assert "never connected: the bot exited with status 3" in connects.details
    assert "giving up before connecting" in report.log_tail
    assert report.seconds < 600  # the exit ended the wait, not the (hang-bounding) connect time-out
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_bot_that_hangs_without_connecting(tmp_path: Path) -> None:
    path = tmp_path / "sleeper.toml"
    path.write_text('name = "sleeper"\ncommand = ["{python}", "-c", "import time; time.sleep(30)"]\n')
    report = await run_doctor(path, connect_timeout_s=1.0)
    assert report.check("connects").status == "FAIL"
    assert "never connected within 1 s" in report.check("connects").details
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_crash_on_unknown_message_type(tmp_path: Path) -> None:
    report = await run_doctor(faulty_manifest(tmp_path, "unknowncrash"))
    st = statuses(report)
    assert st["connects"] == "PASS"  # the hello was accepted; what follows is another matter
    assert st["types"] == "FAIL" and st["goodbye"] == "FAIL", table(report)
    assert "its process exited with status 1" in report.check("types").details
    assert "ValueError: unknown message type 'doctor_notice'" in report.log_tail
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_bot_that_does_not_exit_after_goodbye(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor_session, "LINGER_S", 0.3)  # read by the session where it waits
    monkeypatch.setattr(doctor_session, "EXIT_WAIT_S", 0.3)
    report = await run_doctor(faulty_manifest(tmp_path, "linger"))
    goodbye = report.check("goodbye")
    assert goodbye.status == "FAIL"
    assert "stayed connected" in goodbye.details and "still running" in goodbye.details
    assert {c.key for c in report.checks if c.status == "FAIL"} == {"goodbye"}, table(report)
    shutil.rmtree(report.log_dir, ignore_errors=True)


async def test_bad_manifest(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n')
    report = await run_doctor(path)
    assert report.check("manifest").status == "FAIL"
    assert "bad bot manifest" in report.check("manifest").details
    assert not report.ok


async def test_good_fixture_passes(tmp_path: Path) -> None:
    """The fixture without a fault passes: the failures above are the faults, not the fixture."""
    report = await run_doctor(faulty_manifest(tmp_path, "good"))
    assert all(c.status == "PASS" for c in report.checks), table(report)


# --------------------------------------------------------------------------- the scripted deals


def request_of(match: EcarteMatch, match_id: str = "t1-m0001") -> dict[str, Any]:
    return {
        "type": "request",
        "id": 1,
        "match_id": match_id,
        "decision": match.decision,
        "legal": copy.deepcopy(match.legal_actions()),
        "state": msgspec.to_builtins(match.view(match.to_act)),
        "time_ms": 2000,
    }


def deal_paths(plan: DealPlan, monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """Play the first deal of ``plan`` with the real engine and the scripted opponent, trying
    every legal action of the bot at each of its decisions; the situation tags met on each
    path (until the deal ends)."""
    bot_seat = 0
    dealer = bot_seat if plan.bot_role == "dealer" else 1 - bot_seat
    match = EcarteMatch(Rules(), random.Random(1), packs=[draw_pack(dealer), plan.pack()])
    events = [ev for ev, seen in match.start() if bot_seat in seen]
    opp = Opponent("opp", "", 0, Wire())
    opp.plans["t1-m0001"] = plan
    paths: list[set[str]] = []

    def walk(m: EcarteMatch, seen: list[Any], tags: set[str]) -> None:
        while not m.over and m.deal_no == 1 and m.to_act != bot_seat:
            action = opp.decide(request_of(m))
            seen = seen + [ev for ev, by in m.apply(action) if bot_seat in by]
        if m.over or m.deal_no != 1:
            paths.append(tags)
            return
        req = request_of(m)
        here = tags | set(classify(req, [msgspec.to_builtins(e) for e in seen]))
        for action in req["legal"]:
            branch = copy.deepcopy(m)
            after = [ev for ev, by in branch.apply(action) if bot_seat in by]
            walk(branch, after, here)

    walk(match, events, set())
    return paths


@pytest.mark.parametrize("plan", [KING_ELDER, FOLLOW, TRUMP], ids=lambda p: p.name)
def test_forced_situations_are_forced(plan: DealPlan, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the bot does, the deal meets every situation it is meant to force."""
    paths = deal_paths(plan, monkeypatch)
    assert len(paths) > 10
    for tags in paths:
        assert set(plan.goals) <= tags, (plan.name, set(plan.goals) - tags)


@pytest.mark.parametrize("plan", [KING_ELDER, FOLLOW, TRUMP, DEALER_X, ELDER_X], ids=lambda p: p.name)
def test_plans_deal_whole_packs(plan: DealPlan) -> None:
    pack = plan.pack()
    assert sorted(pack) == sorted(PACK_32)
    assert pack[10] == plan.turn_up


@pytest.mark.parametrize("xmin", [0, 1])
@pytest.mark.parametrize("fast", [False, True])
def test_opponent_steers_the_stock_short(xmin: int, fast: bool) -> None:
    """Against a bot that discards as many cards as it may, the opponent's discards lead to a
    discard of the bot with 1 to 4 cards left in the stock."""
    stock = 21 if xmin else 16  # as dealer the opponent speaks after the bot's first discard
    for _ in range(10):
        x = opponent_discard_count(stock, xmin, "short", fast=fast)
        assert xmin <= x <= min(5, stock)
        stock -= x
        if 1 <= stock <= 4:
            return
        stock -= min(5, stock)
        assert stock > 0
    raise AssertionError("the stock never ran short")


@pytest.mark.parametrize("fast", [False, True])
def test_opponent_steers_the_stock_empty(fast: bool) -> None:
    """As elder, the opponent arranges to empty the stock itself (the bot's discard is skipped)."""
    stock = 21
    for _ in range(10):
        x = opponent_discard_count(stock, 1, "skip", fast=fast)
        stock -= x
        if stock == 0:
            return
        stock -= min(5, stock)
        assert stock > 0
    raise AssertionError("the opponent never emptied the stock")


def test_classify_play_obligations() -> None:
    def req(hand: list[str], trick: list[str], trump: str = "s") -> dict[str, Any]:
        state = {"seat": 0, "elder": 1, "hand": hand, "trump": trump, "stock": 21,
                 "trick": [{"seat": 1, "card": c} for c in trick]}  # fmt: skip
        return {"decision": "play", "state": state}

    assert classify(req(["7c", "Kh"], []), []) == ["lead"]
    assert classify(req(["7c", "Qc"], ["Jc"]), []) == ["follow_win"]
    assert classify(req(["7c", "Ac"], ["Jc"]), []) == ["follow_low"]  # the ace ranks below the jack
    assert classify(req(["7s", "Kh"], ["Jc"]), []) == ["trump"]
    assert classify(req(["7d", "Kh"], ["Jc"]), []) == ["any"]
    exchange = {"kind": "exchange", "seat": 1, "count": 3, "stock": 0, "discarded": None, "drawn": None}
    assert classify(req(["7d", "Kh"], ["Jc"]), [exchange]) == ["any", "skip"]


async def test_a_bot_with_a_fixed_32_kib_buffer_fails_the_long_line_check(tmp_path: Path) -> None:
    """Issue 12: such a bot passes every Écarté (and compact Piquet) line the arena sends, then
    loses every match with a long line; the kit must catch it, and say the line's size."""
    report = await run_doctor(faulty_manifest(tmp_path, "fixedbuf"), keep_logs=False)
    long = report.check("long")
    assert long.status == "FAIL", table(report)
    assert f"{doctor.LONG_LINE_BYTES:,} bytes" in long.details
    assert "no answer within the time limit" in long.details
    assert "grow the read buffer" in long.details
    assert report.check("fields").status == "PASS" and report.check("goodbye").status == "PASS"


@pytest.mark.parametrize("name", [
    "random",
    pytest.param("c_bot", marks=pytest.mark.skipif(ensure_c_bot() is None, reason="gcc not on PATH")),
])
async def test_piquet_doctor_covers_every_piquet_decision(name: str) -> None:
    """``arena doctor --game piquet``: every Piquet decision, both packs, the bid; the sample
    bots ask for the compact form and pass."""
    report = await run_doctor(SAMPLES / f"{name}.toml", keep_logs=False, game="piquet")
    assert report.ok, table(report)
    got = statuses(report)
    forced = [k for k, _, f in doctor.PIQUET_SITUATIONS if f]
    assert all(got[k] == "PASS" for k in forced), table(report)
    assert "compact form" in report.check("pq_discard_elder").details
    assert len(report.checks) == 2 + len(doctor.PIQUET_SITUATIONS) + len(doctor.GLOBAL_CHECKS)


async def test_piquet_doctor_on_a_full_form_bot_and_a_fixed_buffer(tmp_path: Path) -> None:
    """A protocol-1 bot (full lists) passes in Piquet, told about the compact form; one with a
    fixed 32 KiB buffer fails the long-line check there too."""
    good = await run_doctor(faulty_manifest(tmp_path, "good"), keep_logs=False, game="piquet")
    assert good.ok, table(good)
    assert "full form: ask for the compact one" in good.check("pq_discard_younger").details
    fixed = await run_doctor(faulty_manifest(tmp_path, "fixedbuf"), keep_logs=False, game="piquet")
    assert statuses(fixed)["long"] == "FAIL", table(fixed)


@pytest.mark.skipif(not sandbox_available(), reason="bwrap (Debian bubblewrap) is not installed")
async def test_doctor_sandbox_runs_the_bot_over_stdin_stdout() -> None:
    report = await run_doctor(SAMPLES / "random.toml", keep_logs=False, sandbox=True)
    assert report.ok, table(report)
    assert "over stdin/stdout" in report.check("connects").details


def test_the_doctor_runs_a_bot_as_the_gate_does_by_default(tmp_path):
    """``arena doctor`` with no option runs the bot sandboxed over stdin/stdout, as the upload
    gate and the ladder do: a bot that prints a debug line to stdout fails there (``bad_json``
    quoting the line) though it passes with ``--tcp``, where stdout is only its log."""
    import shutil
    import subprocess
    import sys

    from arena.schedule.launcher import sandbox_problem

    if sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    shutil.copy(SAMPLES / "random_bot.py", tmp_path / "random_bot.py")
    (tmp_path / "chatty.py").write_text("import runpy\nprint('debug: starting', flush=True)\n"
                                        "runpy.run_path('random_bot.py', run_name='__main__')\n")
    (tmp_path / "chatty.toml").write_text('name = "chatty"\ncommand = ["{python}", "chatty.py"]\n')

    def doctor(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "arena.cli", "doctor", str(tmp_path / "chatty.toml"), *extra],
                              capture_output=True, text=True, timeout=300)

    sandboxed, tcp = doctor(), doctor("--tcp")
    assert sandboxed.returncode == 1 and "debug: starting" in sandboxed.stdout, sandboxed.stdout[-2000:]
    assert tcp.returncode == 0, tcp.stdout[-2000:]
