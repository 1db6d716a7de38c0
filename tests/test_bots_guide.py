"""docs/bots.md, followed step by step: every file it shows (``<!-- file: PATH -->`` before a code
block) is written where it says, and every shell example is run in order, in a folder that holds
only the project's ``sample_bots`` and ``docs`` (the guide runs in a checkout), with this
project's ``arena`` on the PATH. A command that fails fails the test, with its output.

Not run, each for the reason given in :data:`NOT_RUN`: the one-time set-up of a virtual
environment (the tests run in one), examples that reach a contest on another host, the
long-running ``arena serve`` and the remote bots that connect to it (``tests/test_contest.py``
runs those), and the Java build, indented inside §11 (``tests/test_java_bot.py`` builds it). The
upload example's target is still checked: it must name exactly one bot."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from arena.authors.client import find_manifest
from arena.schedule.launcher import sandbox_problem

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "bots.md"
NOT_RUN = {
    "python3 -m venv": "the one-time set-up: the tests run in the project's environment",
    "source .venv/bin/activate": "the one-time set-up",
    "contest.example": "a contest on another host",
    "arena.example.org": "a contest on another host",
    "arena serve": "a long-running server (tests/test_contest.py)",
    "ARENA_PORT=7000": "a remote bot connecting to that server (tests/test_contest.py)",
    "javac": "the Java build (tests/test_java_bot.py)",
}


def steps(text: str) -> list[tuple[str, str, str]]:
    """The guide's steps in order: ``("file", path, body)`` for a file to write, ``("sh", line,
    "")`` for each shell command (continuation lines joined)."""
    out: list[tuple[str, str, str]] = []
    for m in re.finditer(r"(?:<!-- file: (\S+) -->\s*)?^```(\w*)\n(.*?)^```", text, re.S | re.M):
        path, lang, body = m.group(1), m.group(2), m.group(3)
        if path:
            out.append(("file", path, body))
        elif lang == "sh":
            for command in body.replace("\\\n", " ").splitlines():
                command = command.split("  #")[0].strip()
                if command:
                    out.append(("sh", command, ""))
    return out


@pytest.mark.slow  # about half a minute of real tournaments: `make test-slow` (CI runs it)
def test_every_step_of_the_guide_runs_in_order(tmp_path):
    if sandbox_problem() is not None:
        pytest.skip(f"the doctor runs bots sandboxed: {sandbox_problem()}")
    for name in ("sample_bots", "docs"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("ARENA_TLS", None)
    ran, skipped, uploads = [], [], []
    for kind, what, body in steps(GUIDE.read_text()):
        if kind == "file":
            (tmp_path / what).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / what).write_text(body)
            continue
        if "arena bots upload" in what:
            uploads.append(shlex.split(what)[-1])
        reason = next((why for key, why in NOT_RUN.items() if key in what), None)
        if reason is not None:
            skipped.append(what)
            continue
        proc = subprocess.run(["bash", "-c", what], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, f"{what}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        ran.append(what)
    assert any(c.startswith("arena doctor") for c in ran) and any(c.startswith("arena tournament") for c in ran)
    assert any(c.startswith("arena replay") for c in ran) and any(c.startswith("arena bots list") for c in ran)
    assert len(ran) >= 10, ran
    assert uploads, "the guide's upload example was not found"
    for target in uploads:  # the bot it uploads is one bot, whatever else the guide put beside it
        assert find_manifest(tmp_path / target).is_file()
