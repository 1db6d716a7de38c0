"""The doctor gate: an uploaded bot enters the ladder only once ``arena doctor`` passes it.

An author's upload (:mod:`arena.authors.accounts`) has already been checked as an archive (size
caps, path safety: :func:`arena.store.archives.check`) and its manifest validated; it waits in
the ``uploads`` table as ``queued``. :class:`DoctorGate` works through the queue in the
contest server's background:

1. the archive is unpacked (:func:`arena.store.archives.unpack`) into ``<uploads dir>/u<id>``, a
   directory the server owns, named by the upload's id (never by a name);
2. ``arena doctor`` runs there for the contest's game **in the sandbox** (bubblewrap, stdio
   transport) as a separate process (``python -m arena.tools.doctor``), killed after
   ``doctor_timeout_s``; at most ``doctor_concurrency`` run at once and at most ``queue`` uploads
   wait (:class:`QueueFull` beyond);
3. a passing bot's archive becomes its newest version in the database and the bot is submitted
   from the unpacked manifest (:meth:`arena.store.sqlite.Store.accept_upload`): the contest
   launches it (sandboxed, always) and replaces the version that played before; a refused
   upload keeps only the doctor's report, and its directory is removed.

The author polls the upload's status and reads the report (web page, ``arena bots upload``).
Uploads a stopped server left undecided are checked again at the next start.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.store.archives import ArchiveError, ArchiveLimits, unpack
from arena.store.health import STORAGE_ERRORS

log = logging.getLogger("arena.schedule.gate")


class UploadConfig(msgspec.Struct, forbid_unknown_fields=True):
    """The ``[uploads]`` section of a contest file: where uploaded bots are unpacked, the doctor
    gate's bounds, and the caps on what authors send (docs/contests.md, "Self-service")."""

    dir: str = "uploads"
    """Where accepted bots are unpacked (``u<upload id>`` below it); keep it outside ``logs``."""
    doctor_timeout_s: float = 120.0
    """A doctor run still going after this many seconds is stopped and the upload refused."""
    doctor_concurrency: int = 1
    """Doctor runs at once (each one a bot process and a private arena)."""
    queue: int = 20
    """Uploads waiting for the doctor, all authors together; more are refused (try later)."""
    bots_per_author: int = 5
    """Bots (uploaded and remote) one author may own."""
    uploads_per_hour: float = 12.0
    """Uploads per author per hour (a burst of as many, then refilled at this rate)."""
    registrations_per_hour: float = 60.0
    """Accounts created per hour, whoever asks (a burst of 10 per address within it)."""
    packed_bytes: int = 8 << 20
    unpacked_bytes: int = 32 << 20
    files: int = 500

    def __post_init__(self) -> None:
        for key in ("doctor_timeout_s", "doctor_concurrency", "queue", "bots_per_author", "uploads_per_hour",
                    "registrations_per_hour", "packed_bytes", "unpacked_bytes", "files"):
            value = getattr(self, key)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"[uploads] {key} must be a positive number, not {value!r}")

    def archive_limits(self) -> ArchiveLimits:
        """The archive caps of these settings."""
        return ArchiveLimits(packed_bytes=self.packed_bytes, unpacked_bytes=self.unpacked_bytes, files=self.files)


class QueueFull(Exception):
    """Too many uploads wait for the doctor: the author should try again later."""


def shown_to_author(report: Any, folder: Path) -> Any:
    """``report`` (the doctor's JSON report) as its author may see it: the server's paths taken
    out of every string: the folder the upload was unpacked in (paths become relative to the
    bot's own folder) and this Python's installation (``python``)."""
    if isinstance(report, dict):
        return {k: shown_to_author(v, folder) for k, v in report.items()}
    if isinstance(report, list):
        return [shown_to_author(v, folder) for v in report]
    if not isinstance(report, str):
        return report
    for root in {str(folder), str(folder.resolve())}:
        report = report.replace(root + "/", "").replace(root, ".")
    for prefix in sorted({sys.executable, sys.prefix, sys.base_prefix, os.path.realpath(sys.executable)},
                         key=len, reverse=True):
        report = report.replace(prefix, "python")
    return report


def refusal(summary: str) -> dict[str, Any]:
    """A report for an upload refused before or without a doctor run (one line, no checks)."""
    return {"ok": False, "summary": summary, "seconds": 0.0, "checks": [], "log_tail": ""}


class DoctorGate:
    """Runs the doctor on queued uploads (see the module docstring). ``store``: the contest's
    :class:`arena.store.sqlite.Store`; ``game``: the contest's game. ``run_doctor`` is a seam
    for tests: ``async (manifest path) -> report dict``."""

    def __init__(self, store: Any, game: str, config: UploadConfig, run_doctor: Any = None) -> None:
        self.store = store
        self.game = game
        self.config = config
        self.limits = config.archive_limits()
        self.waiting = 0
        self._send, self._receive = trio.open_memory_channel[int](math.inf)
        self.run_doctor = run_doctor or self._doctor_process
        self.idle = trio.Event()
        self.idle.set()
        self._queued: set[int] = set()

    def submit(self, upload_id: int) -> None:
        """Queue upload ``upload_id``; :class:`QueueFull` if ``queue`` uploads already wait."""
        if self.waiting >= self.config.queue:
            raise QueueFull(f"{self.waiting} uploads are waiting for the doctor: try again in a few minutes")
        self._enqueue(upload_id)

    def _enqueue(self, upload_id: int) -> None:
        if upload_id in self._queued:  # already waiting (queued before the start, and requeued)
            return
        self._queued.add(upload_id)
        self.waiting += 1
        self.idle = trio.Event()
        self._send.send_nowait(upload_id)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Requeue what a stopped server left undecided, then check uploads until cancelled."""
        Path(self.config.dir).mkdir(parents=True, exist_ok=True)
        try:
            self.tidy()
        except (OSError, ArchiveError, *STORAGE_ERRORS) as exc:  # never a reason not to serve
            log.warning("uploads directory not tidied: %s", exc)
        for upload_id in self.store.undecided_uploads():
            self._enqueue(upload_id)
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.doctor_concurrency):
                nursery.start_soon(self._worker)
            task_status.started()

    def tidy(self) -> None:
        """At start: an uploaded bot whose unpacked directory is gone (a new host, a wiped
        disk) is unpacked again from its newest archive (``b<bot id>-v<version>``); directories
        of versions no longer submitted (replaced, refused, deleted authors) are removed."""
        root = Path(self.config.dir).resolve()
        used = set()
        for name, manifest, _ in self.store.submissions():
            owner = self.store.bot_owner(name)
            if owner is None or owner[1] != "uploaded":
                continue
            if not Path(manifest).is_file():
                stored = self.store.archive(name)
                if stored is None:
                    continue
                dest = root / f"b{self.store.bot_id(name)}-v{stored[0]}"
                shutil.rmtree(dest, ignore_errors=True)
                manifest = str(unpack(stored[2], dest, self.limits))
                self.store.submit_bot(name, manifest, sandbox=True)
            used.add(Path(manifest).resolve().parent)
        waiting = {root / f"u{i}" for i in self.store.undecided_uploads()}
        for d in root.iterdir():
            if d.is_dir() and d not in used and d not in waiting and d.name[:1] in ("u", "b"):
                shutil.rmtree(d, ignore_errors=True)

    async def _worker(self) -> None:
        async for upload_id in self._receive:
            try:
                await self.check(upload_id)
            except STORAGE_ERRORS as exc:  # left queued in the database: checked again at the next start
                log.warning("upload %d not decided: storage failed (%s)", upload_id, exc)
            finally:
                self._queued.discard(upload_id)
                self.waiting -= 1
                if self.waiting == 0:
                    self.idle.set()

    async def check(self, upload_id: int) -> str:
        """Decide one upload; returns its new status (``passed`` or ``failed``; ``gone`` if the
        upload no longer waits, e.g. its author was deleted)."""
        data = self.store.upload_data(upload_id)
        if data is None:
            return "gone"
        self.store.set_upload_status(upload_id, "checking")
        dest = Path(self.config.dir) / f"u{upload_id}"
        shutil.rmtree(dest, ignore_errors=True)
        try:
            manifest = await trio.to_thread.run_sync(unpack, data, dest, self.limits)  # not on the matches' loop
        except (ArchiveError, OSError) as exc:
            shutil.rmtree(dest, ignore_errors=True)
            self.store.refuse_upload(upload_id, refusal(f"cannot unpack the archive: {exc}"))
            return "failed"
        report = shown_to_author(await self.run_doctor(str(manifest)), dest)
        if self.store.upload_data(upload_id) is None:  # deleted (or decided) meanwhile
            shutil.rmtree(dest, ignore_errors=True)
            return "gone"
        if report.get("ok"):
            self.store.accept_upload(upload_id, str(manifest.resolve()), report, self.limits)
            return "passed"
        shutil.rmtree(dest, ignore_errors=True)
        self.store.refuse_upload(upload_id, report)
        return "failed"

    def command(self, manifest: str) -> list[str]:
        """The doctor's command line for ``manifest`` (always sandboxed)."""
        return [sys.executable, "-m", "arena.tools.doctor", manifest, "--game", self.game, "--sandbox"]

    async def _doctor_process(self, manifest: str) -> dict[str, Any]:
        """``python -m arena.tools.doctor MANIFEST --game G --sandbox`` in a separate process,
        stopped after ``doctor_timeout_s``; its JSON report (or a refusal saying what went wrong)."""
        cmd = self.command(manifest)
        timeout = self.config.doctor_timeout_s
        with trio.move_on_after(timeout) as scope:
            proc = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False)
        if scope.cancelled_caught:
            return refusal(f"the doctor did not finish within {timeout:g} s: the bot is too slow or hangs")
        try:
            report = json.loads(proc.stdout.decode("utf-8", "replace"))
            if not isinstance(report, dict) or "ok" not in report:
                raise ValueError("not a report")
        except ValueError:
            last = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1][:300]
            log.error("doctor run on %s failed: %s", manifest, last)
            return refusal("the doctor could not run (an error on the server; the organiser sees it in the log)")
        return report
