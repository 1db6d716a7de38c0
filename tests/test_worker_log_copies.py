"""The local workers of ``arena tournament --workers`` commit no copy of each log to the database
(they share the front's logs folder, issue 24 item 4); ``arena worker`` alone still does."""

from __future__ import annotations

from arena.cli import build_parser
from arena.schedule.front import worker_command


def test_local_workers_are_told_not_to_copy_their_logs_and_a_plain_worker_copies_them() -> None:
    cmd = worker_command("w.db", 1, "h:1:w0", False, 30.0, 0)
    assert "--no-log-copies" in cmd
    parser = build_parser()
    assert parser.parse_args(cmd[cmd.index("worker"):]).log_copies is False
    assert parser.parse_args(["worker", "--db", "w.db"]).log_copies is True
