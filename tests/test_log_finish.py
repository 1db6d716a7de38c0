"""A gzip match log flushed but never closed (a process killed after the result's commit and
before the log's close) is completed byte for byte by arena.match.log.finish_logs."""

from __future__ import annotations

from arena.match.log import MatchLog, finish_logs, read_bytes


def _write(path, lines: int, close: bool) -> MatchLog:
    log = MatchLog(path)
    for k in range(lines):
        log.write({"line": k, "text": "x" * (k % 7)})
    log.flush()
    if close:
        log.close()
    return log


def test_a_flushed_log_never_closed_is_completed_as_its_close_would_have(tmp_path):
    whole = tmp_path / "whole" / "t1-m0001.jsonl.gz"
    _write(whole, 40, close=True)
    cut = tmp_path / "cut" / "t1-m0001.jsonl.gz"
    log = _write(cut, 40, close=False)
    flushed = cut.read_bytes()  # what a SIGKILL leaves: the file as of the last flush
    log.close()
    cut.write_bytes(flushed)
    assert flushed != whole.read_bytes() and read_bytes(cut) == read_bytes(whole)
    other = cut.parent / "t1-m0002.jsonl.gz"  # a complete log beside it is left alone
    _write(other, 5, close=True)
    kept = other.read_bytes()
    broken = cut.parent / "t1-m0003.jsonl.gz"  # cut mid-block (a match not recorded): left as it is
    broken.write_bytes(flushed[:-9] + b"\x00\x00\xff\xff")
    broken_bytes = broken.read_bytes()
    assert finish_logs(cut.parent) == 1
    assert cut.read_bytes() == whole.read_bytes()
    assert other.read_bytes() == kept and broken.read_bytes() == broken_bytes
    assert not list(cut.parent.glob("*.part"))
    assert finish_logs(cut.parent) == 0  # nothing left to complete
    assert finish_logs(tmp_path / "missing") == 0
