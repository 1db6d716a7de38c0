"""Retention of launched bots' output logs and their last lines (arena/schedule/botlog.py)."""

from __future__ import annotations

from pathlib import Path

from arena.schedule.botlog import rotate, tail


def test_a_full_log_is_rotated_and_only_keep_old_ones_stay(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    assert not rotate(log, 10, 2)  # nothing yet
    log.write_bytes(b"short\n")
    assert not rotate(log, 10, 2) and log.exists()  # under the cap: appended to
    for i in range(4):
        log.write_bytes(f"launch {i} ".encode() * 5)
        assert rotate(log, 10, 2)
        assert not log.exists()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["bot.log.1", "bot.log.2"]
    assert (tmp_path / "bot.log.1").read_bytes().startswith(b"launch 3")
    assert (tmp_path / "bot.log.2").read_bytes().startswith(b"launch 2")
    log.write_bytes(b"x" * 20)
    assert rotate(log, 10, 0) and sorted(tmp_path.glob("bot.log*")) == [tmp_path / "bot.log.1", tmp_path / "bot.log.2"]


def test_tail_gives_the_last_lines_leniently(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    assert tail(log) == []
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(100)) + b"\xff bad utf-8\n\n")
    assert tail(log, 3) == ["line 98", "line 99", "\ufffd bad utf-8"]
    log.write_bytes(b"y" * 10_000)
    assert tail(log, 2) == ["y" * 200]


def test_tail_from_where_the_last_launch_began(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    log.write_bytes(b"first launch\n")
    start = log.stat().st_size
    log.write_bytes(log.read_bytes() + b"second launch\n")
    assert tail(log, start=start) == ["second launch"]
    assert tail(log, start=10_000) == ["first launch", "second launch"]  # rotated since: the whole file
