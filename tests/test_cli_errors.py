"""A user's mistake gets one clear line and a documented exit status, never a traceback
(arena/errors.py; docs/contests.md, "Exit statuses"). Every case runs the real ``arena``
command: the console script in a subprocess, or, where one such run covers the process's side,
its entry point ``arena.cli.main`` in this process."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arena.errors import DATABASE, INTERRUPTED, UNAVAILABLE, USAGE, UserError
from arena.schedule.contest import load_config
from arena.store.schema import HEAD
from arena.store.sqlite import SCHEMA_VERSION, Store
from tests.conftest import cli_in_process
from tests.legacy_db import LEGACY_SCHEMA as SCHEMA

ROOT = Path(__file__).resolve().parent.parent
BOTS = ROOT / "sample_bots"
RANDOM, GREEDY = str(BOTS / "random.toml"), str(BOTS / "greedy.toml")


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def one_line_error(proc: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    assert proc.returncode == status, out
    errors = [line for line in out.splitlines() if "error:" in line]
    assert len(errors) == 1, out
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


TOURNAMENT = ("tournament", "--bots", RANDOM, GREEDY, "--db", "t.db", "--quiet")


BAD_COMMAND_LINES = [
    (TOURNAMENT + ("--games", "0"), USAGE, ("--games", "from 1 to", "not 0")),
    (TOURNAMENT + ("--move-ms", "0"), USAGE, ("--move-ms", "from 1 to")),
    (TOURNAMENT + ("--concurrency", "0"), USAGE, ("--concurrency", "from 1 to")),
    (TOURNAMENT + ("--format", "gauntlet", "--hero", "nobody"), USAGE, ("--hero 'nobody'", "random, greedy")),
    (("tournament", "--bots", RANDOM, RANDOM, "--db", "t.db"), USAGE, ("bot name 'random'", "`name`")),
    (("tournament", "--bots", "missing.toml", RANDOM, "--db", "t.db"), USAGE, ("missing.toml", "no such")),
    (("tournament", "--resume", "--db", "t.db"), USAGE, ("nothing to resume", "t.db")),
    (("spectators", "add", "bob", "--deposit", "-500", "--db", "t.db"), USAGE, ("--deposit", "from 1 to")),
    (("bots", "remove", "zed", "--db", "t.db"), 4, ("no database at t.db", "creates none")),
    (("serve", "--config", "nothere.toml"), USAGE, ("nothere.toml", "no such contest file")),
    (("watch", "--port", "1"), UNAVAILABLE, ("cannot connect to 127.0.0.1:1", "arena serve")),
]


@pytest.mark.parametrize(("args", "status", "needles"), BAD_COMMAND_LINES, ids=range(len(BAD_COMMAND_LINES)))
def test_bad_command_lines(args: tuple[str, ...], status: int, needles: tuple[str, ...], tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each bad input through the command's own entry point, in this process (a process each cost
    about a second of imports; the console script itself is run by the tests below)."""
    monkeypatch.chdir(tmp_path)
    one_line_error(cli_in_process(*args, capsys=capsys), status, *needles)


def test_missing_bot_program(tmp_path: Path) -> None:
    (tmp_path / "nope.toml").write_text('name = "nope"\ncommand = ["./no-such-program"]\n')
    proc = arena("tournament", "--bots", "nope.toml", RANDOM, "--db", "t.db", "--quiet", cwd=tmp_path)
    one_line_error(proc, UNAVAILABLE, "bot nope", "./no-such-program", "No such file", "`command`")


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("my shopping list\n" * 200)
    one_line_error(arena("bots", "list", "--db", "notes.db", cwd=tmp_path), DATABASE,
                   "notes.db is not an arena database")
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE recipes (x)")
    other.commit()
    one_line_error(arena("bots", "list", "--db", "other.db", cwd=tmp_path), DATABASE, "another program", "recipes")


def test_a_database_newer_than_the_code(tmp_path: Path) -> None:
    Store(tmp_path / "new.db").close()
    db = sqlite3.connect(tmp_path / "new.db")
    db.execute("UPDATE alembic_version SET version_num='ffff'")  # a revision this arena does not know
    db.commit()
    db.close()
    one_line_error(arena("bots", "list", "--db", "new.db", cwd=tmp_path), DATABASE,
                   "schema version ffff", "newer arena", "upgrade")


def test_a_database_from_before_versions_is_upgraded(tmp_path: Path) -> None:
    """Today's schema without a version (and without the columns added later) opens, gets
    every migration and the current ``user_version``; its data stays."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.replace("    margin        INTEGER,\n", "").replace("    log_hash      TEXT,\n", ""))
    db.execute("INSERT INTO bots VALUES ('old', x'00', x'00', 0)")
    db.commit()
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    db.close()
    proc = arena("bots", "list", "--db", "old.db", cwd=tmp_path)  # refused, with the command that upgrades it
    assert proc.returncode == 4 and proc.stderr.splitlines() == [
        f"arena: error: old.db has schema version 0 (before Alembic), older than this arena's ({HEAD}): run "
        "`arena db upgrade --db old.db` (back it up first)"], proc.stderr
    proc = arena("db", "upgrade", "--db", "old.db", cwd=tmp_path)
    assert proc.returncode == 0 and f"upgraded to revision {HEAD}" in proc.stdout, proc.stdout + proc.stderr
    proc = arena("bots", "list", "--db", "old.db", cwd=tmp_path)
    assert proc.returncode == 0 and "old" in proc.stdout, proc.stdout + proc.stderr
    store = Store(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    columns = {r[1] for r in store.db.execute("PRAGMA table_info(matches)")}
    assert {"margin", "log_hash"} <= columns
    assert store.db.execute("SELECT COUNT(*) FROM bot_status").fetchone()[0] == 0
    assert store.bot_names() == ["old"]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("[rules]\ntargt = 7\n", ("unknown key 'targt' in [rules]", "did you mean 'target'?")),
        ("[time]\nmove_sm = 100\n", ("unknown key 'move_sm' in [time]", "'move_ms'")),
        ("[server]\nprot = 7001\n", ("unknown key 'prot' in [server]", "'port'")),
        ("[limits]\ncpu = 10\n", ("unknown key 'cpu' in [limits]", "'cpu_s'")),
        ("concurency = 4\n", ("unknown key 'concurency';", "'concurrency'")),
        ("[ruels]\ntarget = 7\n", ("unknown key 'ruels';", "'rules'")),
        ("zzz = 1\n", ("unknown key 'zzz'; remove it",)),
        ('[rules]\ntarget = "seven"\n', ("rules.target",)),
    ],
)
def test_contest_files_refuse_unknown_keys(tmp_path: Path, text: str, needles: tuple[str, ...]) -> None:
    (tmp_path / "contest.toml").write_text(text)
    with pytest.raises(UserError) as err:
        load_config(tmp_path / "contest.toml")
    for needle in ("contest.toml", *needles):
        assert needle in str(err.value)


def test_serve_names_the_unknown_key(tmp_path: Path) -> None:
    """Through the real command: ``targt = 7`` no longer plays a contest to 5."""
    (tmp_path / "contest.toml").write_text("[rules]\ntargt = 7\n")
    one_line_error(arena("serve", "--config", "contest.toml", cwd=tmp_path), USAGE, "contest.toml",
                   "unknown key 'targt' in [rules]", "did you mean 'target'?")


def test_manifests_refuse_unknown_keys(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('name = "b"\nlangauge = "c"\ncommand = ["./b"]\n')
    proc = arena("tournament", "--bots", "bot.toml", RANDOM, "--db", "t.db", cwd=tmp_path)
    one_line_error(proc, USAGE, "bot.toml", "unknown key 'langauge'", "did you mean 'language'?")


@pytest.mark.parametrize("which", ["tcp", "http"])
def test_a_port_in_use(tmp_path: Path, which: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        tcp, http = (port, 0) if which == "tcp" else (0, port)
        (tmp_path / "contest.toml").write_text(f'db = "c.db"\nhttp_port = {http}\n[server]\nport = {tcp}\n')
        proc = arena("serve", "--config", "contest.toml", cwd=tmp_path)
    what = "TCP port for bots" if which == "tcp" else "HTTP port of the web page"
    one_line_error(proc, UNAVAILABLE, what, f"127.0.0.1:{port}", "in use")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = arena("--debug", "tournament", "--bots", RANDOM, RANDOM, "--db", "t.db", cwd=tmp_path)
    assert "Traceback" in proc.stderr and "UserError" in proc.stderr


def test_the_resume_command_repeats_every_option_but_the_bots() -> None:
    from arena.cli.tournament import resume_command

    assert resume_command(["tournament", "--bots", "a.toml", "b c.toml", "--logs", "my logs", "--workers", "0",
                           "--trust-bots", "--db", "x.db"], 7) == \
        "arena tournament --resume 7 --logs 'my logs' --workers 0 --trust-bots --db x.db"
    assert resume_command(["--debug", "tournament", "--resume", "3", "--quiet", "--bots=a.toml"], 3) == \
        "arena tournament --resume 3 --quiet"
    assert resume_command(["tournament", "--resume", "--logs", "L"], 4) == "arena tournament --resume 4 --logs L"


def test_ctrl_c_in_a_tournament_gives_the_resume_command(tmp_path: Path) -> None:
    """SIGINT once matches are being played (the first plain progress line: stdout is a pipe)
    stops the tournament with the ``--resume`` command, exit 130, no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "tournament", "--bots", RANDOM, GREEDY, "--games", "400",
         "--concurrency", "1", "--progress-every", "2", "--db", "c.db"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background shell ignores it
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "Score of" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=60)[0]
    out = "".join(seen) + rest
    assert proc.returncode == INTERRUPTED, out
    assert "Traceback" not in out, out
    assert "arena tournament --resume 1 --games 400 --concurrency 1 --progress-every 2 --db c.db`" in out
    store = Store(tmp_path / "c.db")
    done = store.db.execute("SELECT COUNT(*) FROM matches WHERE status='done'").fetchone()[0]
    pending = store.db.execute("SELECT COUNT(*) FROM matches WHERE status='pending'").fetchone()[0]
    assert done >= 2 and pending > 0


@pytest.mark.parametrize("workers", ["0", pytest.param("2", marks=pytest.mark.slow)])  # workers: make test-slow
def test_a_bot_that_cannot_start_stops_the_tournament_at_once_and_says_why(tmp_path: Path, workers: str) -> None:
    """A manifest naming a missing script, and one naming a program outside the bot's folder
    (invisible in the sandbox, or simply missing here): exit 3 before any match is scored, one
    line naming the manifest, the command as written, the folder and the bot's last output."""
    ghost = tmp_path / "ghost"
    ghost.mkdir()
    (ghost / "bot.toml").write_text('name = "ghost"\ncommand = ["{python}", "ghost.py"]\n')
    far = tmp_path / "far"
    far.mkdir()
    (far / "bot.toml").write_text('name = "far"\ncommand = ["/nonexistent/arena-test/bot"]\n')
    for manifest, said in ((ghost / "bot.toml", "ghost.py"), (far / "bot.toml", "/nonexistent/arena-test/bot")):
        proc = subprocess.run([sys.executable, "-m", "arena.cli", "tournament", "--bots", str(manifest), RANDOM,
                               "--games", "2", "--db", "s.db", "--quiet", "--workers", workers, "--trust-bots"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 3, proc.stderr
        assert "Traceback" not in proc.stderr
        line = proc.stderr.strip()
        assert "\n" not in line and str(manifest) in line and "did not start" in line, line
        assert f"run in {manifest.parent}," in line and said in line and "arena-worker" not in line, line
    store = Store(tmp_path / "s.db")
    assert store.db.execute("SELECT COUNT(*) FROM matches WHERE status<>'pending'").fetchone()[0] == 0


def test_submit_and_upload_refuse_a_command_that_cannot_start(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``arena bots submit`` and ``arena bots upload`` check the manifest's command against the
    bot's folder first: a missing script, a program outside the folder, a missing program (the
    first through the console script, the others in this process)."""
    cases = {
        "ghost": ('["{python}", "ghost.py"]', "'ghost.py', which is not in the bot's folder"),
        "far": ('["/usr/bin/true"]', "outside the bot's folder"),
        "nowhere": ('["./ghost2"]', "'./ghost2' is missing"),
    }
    for name, (command, said) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "bot.toml").write_text(f'name = "{name}"\ncommand = {command}\n')
        for argv in (["bots", "submit", str(folder / "bot.toml"), "--db", str(tmp_path / "s.db")],
                     ["bots", "upload", str(folder), "--server", "http://127.0.0.1:9", "--token", "x"]):
            if name == "ghost" and argv[1] == "submit":
                proc = subprocess.run([sys.executable, "-m", "arena.cli", *argv], capture_output=True, text=True,
                                      timeout=60)
            else:
                proc = cli_in_process(*argv, capsys=capsys)
            assert proc.returncode == 3 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    ok = tmp_path / "ok"
    ok.mkdir()
    (ok / "bot.py").write_text("print()\n")
    (ok / "bot.toml").write_text('name = "ok"\ncommand = ["{python}", "bot.py"]\n')
    proc = cli_in_process("bots", "submit", str(ok / "bot.toml"), "--db", str(tmp_path / "s.db"), capsys=capsys)
    assert proc.returncode == 0, proc.stderr
    assert [n for n, _, _ in Store(tmp_path / "s.db").submissions()] == ["ok"]  # nothing of the refused ones


def test_read_only_commands_and_a_failed_serve_create_nothing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``bots list`` (and the other listings) on a database that does not exist: one line, exit
    4, no folder or file made; ``arena serve`` whose port is taken leaves no new database, logs
    or uploads folder behind."""
    import socket

    for argv in (["bots", "list"], ["authors", "list"], ["spectators", "list"]):  # the first as a process
        proc = (subprocess.run([sys.executable, "-m", "arena.cli", *argv, "--db", str(tmp_path / "no" / "x.db")],
                               capture_output=True, text=True, timeout=60) if argv[0] == "bots"
                else cli_in_process(*argv, "--db", str(tmp_path / "no" / "x.db"), capsys=capsys))
        assert proc.returncode == 4 and "no database at" in proc.stderr and "Traceback" not in proc.stderr, argv
        assert not (tmp_path / "no").exists()
    Store(tmp_path / "have.db").close()
    proc = cli_in_process("bots", "remove", "zed", "--db", str(tmp_path / "have.db"), capsys=capsys)
    assert proc.returncode == 1 and "no bot 'zed'" in proc.stderr
    for made in tmp_path.glob("have.db*"):
        made.unlink()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "c.toml").write_text(f'db = "{tmp_path / "new.db"}"\nlogs = "{tmp_path / "logs"}"\n'
                                         f'http_port = 0\n[server]\nport = {port}\n'
                                         f'[uploads]\ndir = "{tmp_path / "uploads"}"\n')
        proc = subprocess.run([sys.executable, "-m", "arena.cli", "serve", "--config", str(tmp_path / "c.toml")],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]
