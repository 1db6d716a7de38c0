"""Retention: daily archive bundles of match logs, and the end of old bot output, live events and
failed uploads.

A season writes millions of match logs (about 5 KB each, :mod:`arena.match.log`). The database
keeps every result and every log's last hash for ever; the log files themselves are kept as files
for :attr:`Retention.logs_days` days, then moved into **one bundle per day** (UTC), which ``arena
replay`` and the web page still read:

* ``<logs>/archive/<YYYY-MM-DD>.zip``: a zip file (APPNOTE 6.3; ``unzip -l`` lists it, ``unzip
  -p BUNDLE t3-m0042.jsonl.gz | zcat`` prints a log) whose members are the log files of the
  matches that finished that day, byte for byte, *stored* (the logs are gzip already: deflating
  them again gains nothing), named ``<match_key>.jsonl.gz`` (or ``.jsonl``), each with its CRC-32;
* the match's ``log_path`` in the database becomes ``<bundle>#<member>@<offset>``: the bundle, the
  member and the byte offset of the member's local header, so that reading one match is one
  seek and one read (:func:`read_stored`), whatever the number of matches in the bundle, and the
  CRC-32 of the member is checked on every read (:class:`BundleError` names a damaged member).

:func:`apply_retention` (``arena archive``; a running contest runs that once a day in a child process,
:mod:`arena.schedule.retention`) is idempotent and safe to interrupt at any point; a log is never lost:

1. for each whole UTC day older than the cut-off that is not yet archived, the bundle is written
   under a temporary name (the members of a bundle already there are kept), flushed, synced,
   renamed into place and the folder synced;
2. a journal (``<day>.delete.json``) lists the files the bundle now holds, synced;
3. the matches' ``log_path`` move to the bundle (with their workers' copies deleted), in
   transactions of :data:`BATCH` matches;
4. the files are deleted, then the journal. A run that finds a journal finishes its deletions
   first, deleting only files whose match points to a bundle already;
5. ``state.json`` records the first day not yet archived, so the next run starts there: a run
   reads the matches of the days it archives (index ``matches_by_finished_at``) and no others.

A day is archived once it ended at least :data:`SLACK_S` before the cut-off, so results committed
by a worker whose clock is a little late still find their day open. The bundles are kept until
the organiser removes them (``arena replay`` then says the bundle is missing).

The same run deletes launched bots' output logs (``<logs>/bots/``, a tournament's
``<logs>/t<id>/bots/``, and the ones workers keep under ``<logs>/t<id>/workers/``) not written
to for :attr:`Retention.bot_output_days` days, live events older than
:attr:`Retention.events_days` and failed uploads (their row and report) refused more than
:attr:`Retention.failed_uploads_days` ago.
"""

from __future__ import annotations

import calendar
import fcntl
import json
import logging
import math
import os
import struct
import threading
import time
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from arena.match.log import ChainError, complete_gzip
from arena.store import test_matches

log = logging.getLogger("arena.store.log_archive")

DAY_S = 86_400
"""Seconds in a (UTC) day: bundles are per day."""
SLACK_S = 3_600
"""A day is archived only once it ended this long before the cut-off (seconds): room for a result
committed late by a worker whose clock is behind."""
ARCHIVE_DIR = "archive"
"""The folder of the bundles, under the logs folder."""
STATE_FILE = "state.json"
"""In the archive folder: ``{"next_day": "YYYY-MM-DD"}``, the first day not yet archived."""
BATCH = 500
"""Matches whose ``log_path`` move to their bundle in one transaction (a short one: results
committed meanwhile never wait long for the writer lock)."""
MAX_DAYS = 36_500.0
"""The longest retention a contest file may set (days)."""
RETENTION_KEYS = ("logs_days", "bot_output_days", "events_days", "failed_uploads_days", "test_matches_days")
"""The keys of :class:`Retention` that are numbers of days (``arena archive`` has an option for each)."""


class Retention(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[retention]`` section of a contest file: how many days things are kept (fractions
    allowed; 0: only today's). The database keeps every result and log hash for ever."""

    logs_days: float = 7.0
    """Match logs stay loose files this long, then go into their day's archive bundle (still
    replayable). A week: the matches people look at are recent ones, read from their files; a
    season's older days are thousands of files each, kept as one file per day."""
    bot_output_days: float = 14.0
    """A launched bot's output log not written to for this long is deleted. Two weeks: an author
    reads the output of a failing bot within days; rotation already caps its size."""
    events_days: float = 1.0
    """Live events of worker-played matches (table ``match_events``) older than this are deleted.
    They are read within a second by the front (which also drops them after ten minutes when it
    runs): a day covers a front that was down for a while."""
    failed_uploads_days: float = 30.0
    """A failed upload (its row and the doctor's report; its archive is dropped at once) is deleted
    this long after it was refused: a month for its author to read why."""
    test_matches_days: float = 30.0
    """A finished test match (an author's unrated game, :mod:`arena.store.test_matches`: its row,
    its replay and its organiser's log) is deleted this long after it ended: a month, as a failed
    upload."""
    enabled: bool = True
    """A running contest applies this retention once a day (false: only ``arena archive`` does, e.g.
    from cron)."""

    def check(self) -> None:
        """``ValueError`` (one line naming the key) for a retention that is not a number of days
        from 0 to :data:`MAX_DAYS`."""
        for key in RETENTION_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not (math.isfinite(value) and 0 <= value <= MAX_DAYS):
                raise ValueError(f"[retention] {key} must be a number of days from 0 to {MAX_DAYS:g}, not {value!r}")


class ArchiveReport(msgspec.Struct):
    """What one :func:`apply_retention` run did. ``days``: the days archived (``YYYY-MM-DD``);
    ``archived``: logs moved into bundles; ``bundle_bytes``: the bytes of the bundles written;
    ``missing``: match keys whose log was found neither as a file nor as a worker's copy (left as
    they were); ``bot_logs``: bot output files deleted; ``events``, ``uploads``, ``test_matches``:
    rows deleted."""

    days: list[str] = msgspec.field(default_factory=list)
    archived: int = 0
    bundle_bytes: int = 0
    missing: list[str] = msgspec.field(default_factory=list)
    bot_logs: int = 0
    events: int = 0
    test_matches: int = 0
    uploads: int = 0
    interrupted: bool = False


class ArchiveBusy(OSError):
    """Another run holds the archive folder's lock (:func:`archive_logs`)."""


class BundleError(ChainError):
    """An archived log that cannot be read back intact (a damaged bundle or member, a member not
    where the database says); the message names the bundle and the member."""


# ---------------------------------------------------------------------- reading


def is_bundle_ref(path: str | None) -> bool:
    """True if ``path`` (a match's ``log_path``) names a member of an archive bundle."""
    if not path or "#" not in path:
        return False
    return path.rsplit("#", 1)[0].endswith(".zip")


def bundle_ref(bundle: str | Path, member: str, offset: int) -> str:
    """The ``log_path`` of a log archived as ``member`` of ``bundle`` at byte ``offset``."""
    return f"{bundle}#{member}@{offset}"


def parse_ref(ref: str) -> tuple[str, str, int | None]:
    """``(bundle, member, offset or None)`` of a bundle reference (``BUNDLE#MEMBER@OFFSET`` or
    ``BUNDLE#MEMBER``, as ``arena replay`` accepts it)."""
    bundle, fragment = ref.rsplit("#", 1)
    member, at, offset = fragment.rpartition("@")
    if at and offset.isdigit():
        return bundle, member, int(offset)
    return bundle, fragment, None


_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
"""A zip local file header: signature, version, flags, method, time, date, CRC-32, compressed
size, size, name length, extra length (APPNOTE 4.3.7)."""


def read_member(ref: str) -> bytes:
    """The bytes of an archived log (as its file held them) from its bundle reference; with an
    offset, one seek and one read. Raises ``OSError`` if the bundle cannot be read (removed),
    :class:`BundleError` if the member is not there or is damaged (its CRC-32 differs)."""
    bundle, member, offset = parse_ref(ref)
    if offset is not None:
        with open(bundle, "rb") as fh:
            fh.seek(offset)
            head = fh.read(_LOCAL_HEADER.size)
            if len(head) == _LOCAL_HEADER.size and head[:4] == b"PK\x03\x04":
                _, _, flags, method, _, _, crc, csize, size, nlen, xlen = _LOCAL_HEADER.unpack(head)
                name = fh.read(nlen).decode("utf-8", "replace")
                if name == member and method == zipfile.ZIP_STORED and not flags & 0x08 and csize == size \
                        and csize != 0xFFFFFFFF:
                    fh.seek(xlen, 1)
                    data = fh.read(csize)
                    if len(data) != csize or zlib.crc32(data) != crc:
                        raise BundleError(f"{bundle}: member {member} is damaged (its CRC-32 or length differs "
                                          "from the bundle's record): restore the bundle from a backup")
                    return data
        # not where the database says (a bundle rewritten by hand): look it up by name
    try:
        with zipfile.ZipFile(bundle) as zf:
            return zf.read(member)
    except KeyError:
        raise BundleError(f"{bundle}: no member {member}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise BundleError(f"{bundle}: member {member} cannot be read ({exc}): restore the bundle from a backup") \
            from None


def read_stored(path: str) -> bytes:
    """The bytes of a log as written (gzip or plain) from a match's ``log_path``: its file, or
    its member of a bundle (:func:`read_member`). ``OSError`` if it is not there."""
    if is_bundle_ref(path):
        return read_member(path)
    return Path(path).read_bytes()


# ---------------------------------------------------------------------- archiving


def day_of(t: float) -> int:
    """The UTC day number (days since 1970-01-01) of Unix time ``t``."""
    return int(t // DAY_S)


def day_name(day: int) -> str:
    """``YYYY-MM-DD`` of a day number."""
    return time.strftime("%Y-%m-%d", time.gmtime(day * DAY_S))


def day_number(name: str) -> int:
    """The day number of ``YYYY-MM-DD``; ``ValueError`` if it is not such a date."""
    return day_of(calendar.timegm(time.strptime(name, "%Y-%m-%d")))


def cut_day(now: float, days: float) -> int:
    """The first day *not* archived by a run at ``now`` keeping ``days`` of logs: every day
    before it ended at least ``days`` days and :data:`SLACK_S` before ``now``."""
    return day_of(now - days * DAY_S - SLACK_S)


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file, synced, renamed, the folder synced."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _sync_dir(path.parent)


def _locate(log_path: str, logs: Path) -> Path | None:
    """The file of a match's log: ``log_path`` as recorded (relative to where the server ran), or
    the same ``t<id>/<name>`` under ``logs``; None if neither exists."""
    recorded = Path(log_path)
    for candidate in (recorded, logs / recorded.parent.name / recorded.name):
        if candidate.is_file():
            return candidate
    return None


class _Stopped(Exception):
    """A run asked to stop in the middle of a day's bundle (its temporary file is removed)."""


def _write_bundle(bundle: Path, day: int, names: set[str], members: Iterable[tuple[str, bytes]]
                  ) -> tuple[dict[str, int], int]:
    """Write ``bundle`` with the members of the bundle already there (if any) but those named in
    ``names``, then ``members`` (read one at a time: a day's logs are never all in memory),
    stored, under a temporary name, synced, renamed into place. Returns ``({member: offset of
    its local header}, bundle bytes)``; nothing is in place if it raises."""
    stamp = max(tuple(time.gmtime(day * DAY_S)[:3]), (1980, 1, 1)) + (0, 0, 0)  # zip dates start in 1980
    tmp = bundle.with_name(bundle.name + ".tmp")
    offsets: dict[str, int] = {}
    sizes: dict[str, int] = {}
    try:
        with open(tmp, "wb") as fh:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:

                def add(name: str, data: bytes) -> None:
                    info = zipfile.ZipInfo(name, date_time=stamp)  # the day, no wall clock: same bytes again
                    info.external_attr = 0o644 << 16
                    zf.writestr(info, data)
                    offsets[name], sizes[name] = info.header_offset, len(data)

                if bundle.exists():  # a run interrupted after its rename, or results of a day already archived
                    with zipfile.ZipFile(bundle) as old:
                        for info in old.infolist():
                            if info.filename not in names:
                                add(info.filename, old.read(info))
                for name, data in members:
                    add(name, data)
            fh.flush()
            os.fsync(fh.fileno())
            size = fh.tell()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, bundle)
    _sync_dir(bundle.parent)
    with zipfile.ZipFile(bundle) as zf:  # its directory reads back: every member is there with its length
        listed = {info.filename: info.file_size for info in zf.infolist()}
    for name, length in sizes.items():
        if listed.get(name) != length:
            raise BundleError(f"{bundle}: member {name} missing after writing it; nothing was deleted")
    return offsets, size


def _finish_journal(store: Any, journal: Path) -> None:
    """After an interrupted run: delete the files a journal lists whose match now points to a
    bundle (the others were not moved: the next run archives them again), then the journal."""
    try:
        entries = json.loads(journal.read_text())
    except (OSError, ValueError):
        entries = []
    for key, path in entries:
        found = store.match_log_of(key)
        if found is not None and is_bundle_ref(found[0]):
            Path(path).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def _archive_day(store: Any, logs: Path, folder: Path, day: int, rows: list[tuple[str, str]],
                 report: ArchiveReport, stop: threading.Event | None) -> None:
    """Archive the logs of ``rows`` (``(match_key, log_path)``, none archived yet), all of ``day``."""
    sources: list[tuple[str, str, Path | None]] = []  # key, recorded path, file to delete

    def members() -> Iterable[tuple[str, bytes]]:
        for key, log_path in rows:
            if stop is not None and stop.is_set():
                raise _Stopped
            file = _locate(log_path, logs)
            if file is not None:
                data = file.read_bytes()
            else:  # played on another host and never fetched: the copy its worker committed
                copy = store.match_log_copy(key)
                if copy is None:
                    report.missing.append(key)
                    continue
                data = complete_gzip(copy)
            sources.append((key, log_path, file))
            yield Path(log_path).name, data

    bundle = folder / f"{day_name(day)}.zip"
    offsets, size = _write_bundle(bundle, day, {Path(p).name for _, p in rows}, members())
    if not sources:  # every log of the day missing
        if not offsets:
            bundle.unlink()  # an empty bundle is no use
        return
    journal = folder / f"{day_name(day)}.delete.json"
    write_synced(journal, json.dumps([[key, str(file)] for key, _, file in sources if file is not None]).encode())
    moves = [(key, log_path, bundle_ref(bundle, Path(log_path).name, offsets[Path(log_path).name]))
             for key, log_path, _ in sources]
    for i in range(0, len(moves), BATCH):
        store.move_match_logs(moves[i : i + BATCH])
    for _, _, file in sources:  # every match points to the bundle now
        if file is not None:
            file.unlink(missing_ok=True)
    journal.unlink()
    report.days.append(day_name(day))
    report.archived += len(sources)
    report.bundle_bytes += size


def mark_archived(logs: str | Path, logs_days: float, now: float | None = None) -> str:
    """Record in ``logs``' archive folder that every day a retention run at ``now`` (default:
    the clock) keeping ``logs_days`` days would archive has been (its state file's next day: the
    next run starts there); returns that day (``YYYY-MM-DD``). For a store whose older logs are
    gone as if archived, as the season bench's seeded history (:mod:`arena.store.season_seed`):
    its contest's first retention run then walks only the days since, as a season's daily run
    does, not weeks of matches whose logs never existed."""
    folder = Path(logs) / ARCHIVE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return _write_state(folder, cut_day(time.time() if now is None else now, logs_days))


def _write_state(folder: Path, next_day: int) -> str:
    """Record ``next_day`` (a day number) as the first day not yet archived; returns its name."""
    name = day_name(next_day)
    write_synced(folder / STATE_FILE, json.dumps({"next_day": name}).encode())
    return name


def _read_state(folder: Path) -> int | None:
    try:
        return day_number(json.loads((folder / STATE_FILE).read_text())["next_day"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def archive_logs(store: Any, logs: str | Path, logs_days: float, now: float | None = None,
                 stop: threading.Event | None = None, report: ArchiveReport | None = None) -> ArchiveReport:
    """Move the logs of every whole day before :func:`cut_day` that is not archived yet into its
    bundle (see the module docstring). ``stop`` set: return after the day in hand
    (``report.interrupted``). Raises ``OSError`` for a bundle that cannot be written (nothing
    of that day is deleted)."""
    report = report or ArchiveReport()
    logs = Path(logs)
    folder = logs / ARCHIVE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "wb") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArchiveBusy(f"another archive run is using {folder} (a running contest's daily retention, or "
                              "`arena archive`): try again once it is done") from None
        store.ensure_retention_indexes()
        for journal in sorted(folder.glob("*.delete.json")):  # a run interrupted between its commit and its deletions
            _finish_journal(store, journal)
        last = cut_day(time.time() if now is None else now, logs_days)
        start = _read_state(folder)
        t = store.first_finished_at(start * DAY_S if start is not None else 0.0)
        while t is not None and day_of(t) < last:
            day = day_of(t)
            rows = [(k, p) for k, p in store.logs_finished_between(day * DAY_S, (day + 1) * DAY_S)
                    if not is_bundle_ref(p)]
            try:
                if stop is not None and stop.is_set():
                    raise _Stopped
                if rows:
                    _archive_day(store, logs, folder, day, rows, report, stop)
            except _Stopped:
                report.interrupted = True
                break
            _write_state(folder, day + 1)
            t = store.first_finished_at((day + 1) * DAY_S)
    return report


# ---------------------------------------------------------------------- the other retention rules


BOT_OUTPUT = ("bots/*", "t*/bots/*", "t*/workers/*/bots/*")
"""Where launched bots' output logs are, under the logs folder: the contest server's, a
tournament's, each worker's (:func:`arena.schedule.copies.bot_log`), rotated ones included."""


def bot_output_files(logs: str | Path) -> Iterable[Path]:
    """The launched bots' output logs under ``logs`` (:data:`BOT_OUTPUT`)."""
    logs = Path(logs)
    for pattern in BOT_OUTPUT:
        yield from (p for p in logs.glob(pattern) if p.is_file())


def prune_bot_output(logs: str | Path, before: float) -> int:
    """Delete the bot output logs (:func:`bot_output_files`) last written before ``before``
    (Unix seconds), and the worker folders left empty; return how many files."""
    removed = 0
    for path in list(bot_output_files(logs)):
        try:
            if path.stat().st_mtime < before:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    for folder in Path(logs).glob("t*/workers/*/bots"):
        for empty in (folder, folder.parent, folder.parent.parent):
            try:
                empty.rmdir()
            except OSError:  # not empty
                break
    return removed


def apply_retention(store: Any, logs: str | Path, retention: Retention, now: float | None = None,
                    stop: threading.Event | None = None) -> ArchiveReport:
    """Everything ``[retention]`` says, once (``arena archive``): archive the match logs
    (:func:`archive_logs`), delete old bot output (:func:`prune_bot_output`), live events and
    failed uploads (:meth:`arena.store.sqlite.Store.prune_retention`). ``now``: Unix seconds
    (default: the clock). Raises ``OSError`` or a database error if the storage fails (what was
    done stays done; a later run goes on)."""
    now = time.time() if now is None else now
    report = archive_logs(store, logs, retention.logs_days, now, stop)
    report.bot_logs = prune_bot_output(logs, now - retention.bot_output_days * DAY_S)
    report.events, report.uploads = store.prune_retention(int((now - retention.events_days * DAY_S) * 1000),
                                                          now - retention.failed_uploads_days * DAY_S)
    report.test_matches = test_matches.prune(store, now - retention.test_matches_days * DAY_S, logs)
    return report


def describe_report(report: ArchiveReport, logs: str | Path) -> str:
    """One line saying what a retention run did."""
    days = (f" of {len(report.days)} days ({report.days[0]} to {report.days[-1]})" if len(report.days) > 1
            else f" of {report.days[0]}" if report.days else "")
    text = (f"archived {report.archived} match logs{days} into {Path(logs) / ARCHIVE_DIR}/ "
            f"({report.bundle_bytes} bytes of bundles); deleted {report.bot_logs} bot output logs, "
            f"{report.events} live events, {report.uploads} failed uploads, {report.test_matches} test matches")
    if report.missing:
        shown = ", ".join(report.missing[:5]) + (", ..." if len(report.missing) > 5 else "")
        text += f"; {len(report.missing)} logs not found, left as they were ({shown})"
    if report.interrupted:
        text += "; stopped early (run it again to go on)"
    return text
