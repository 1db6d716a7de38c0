"""``python -m arena.tools.doctor MANIFEST --game G [--sandbox]``: the doctor's report as one JSON
object on stdout, for a program that runs the doctor in a separate process (the contest's upload
gate, :mod:`arena.schedule.gate`): ``{"ok", "summary", "seconds", "checks": [{"key", "title",
"status", "details"}], "log_tail", "limits"}``. Exit status 0 if every check passed, 1 otherwise."""

from __future__ import annotations

import argparse
import sys

import msgspec
import trio

from arena.tools.doctor import run_doctor
from arena.tools.doctor.report import Report

LOG_TAIL_CHARS = 4000
"""Longest tail of the bot's output kept in the report (the last characters)."""


def report_dict(report: Report) -> dict:
    """The parts of ``report`` an author may see: the checks, the summary, the tail of their
    own bot's output and how its memory was limited, without the server's paths (the
    transcript and its token are left out)."""
    return {"ok": report.ok, "summary": report.summary(), "seconds": round(report.seconds, 1),
            "checks": [{"key": c.key, "title": c.title, "status": c.status, "details": c.details}
                       for c in report.checks],
            "log_tail": report.log_tail[-LOG_TAIL_CHARS:], "limits": report.limits_brief}


def main(argv: list[str] | None = None) -> int:
    """Run the doctor and print its report as JSON."""
    parser = argparse.ArgumentParser(prog="python -m arena.tools.doctor")
    parser.add_argument("manifest")
    parser.add_argument("--game", choices=["ecarte", "piquet"], default="ecarte")
    parser.add_argument("--move-ms", type=int, default=2000)
    parser.add_argument("--sandbox", action="store_true")
    args = parser.parse_args(argv)
    report = trio.run(lambda: run_doctor(args.manifest, move_ms=args.move_ms, sandbox=args.sandbox, game=args.game,
                                         keep_logs=False))
    sys.stdout.buffer.write(msgspec.json.encode(report_dict(report)) + b"\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
