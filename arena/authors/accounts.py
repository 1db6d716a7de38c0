"""Self-service for bot authors: accounts, uploads, remote bots, and what an author may see.

The policy, without HTTP (the routes are in :mod:`arena.authors.pages`):

* **Accounts.** The contest's ``registration`` says who may create one: ``organiser`` (only
  ``arena authors add``), ``open`` (anyone) or ``invite`` (a single-use code from ``arena authors
  invite``). An author's token is ``NAME:SECRET``; only a salted HMAC-SHA256 of the secret (192
  random bits) is stored (:meth:`arena.store.sqlite.Store.add_author`) and it is shown once. A
  suspended author cannot log in, and their bots neither connect nor are launched.
* **Uploads** (:func:`accept_archive`): the archive is checked (:func:`arena.store.archives.check`:
  size caps, path safety), its manifest validated as ``arena bots submit`` validates one
  (:func:`arena.schedule.launcher.load_manifest`) plus the program named by a relative command
  must be in the archive and executable; the manifest's name becomes the author's bot (a name
  of someone else's is refused); then the upload waits for the doctor
  (:mod:`arena.schedule.gate`). Nothing of the upload runs outside the sandbox, and nothing
  runs at all before the doctor's sandboxed run.
* **Remote bots** (:func:`register_remote`): a token for a bot that connects over TCP.
* **Views** (:func:`author_view`): an author's bots, versions, uploads with the doctor's
  reports, ratings with intervals, recent matches, failures and output - their own only - and
  their test matches (:func:`test_summary`, :func:`own_test`; asked and played by
  :mod:`arena.schedule.on_demand`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import trio

from arena.errors import UserError
from arena.names import BadName, check_name
from arena.net.history import finished_matches
from arena.schedule.copies import bot_log
from arena.schedule.gate import QueueFull, refusal
from arena.schedule.launcher import load_manifest, sandbox_problem
from arena.store import pages
from arena.store import test_matches as tests
from arena.store.archives import MANIFEST, ArchiveError, check, manifest_text

TOKEN_SEPARATOR = ":"
"""An author token is ``NAME:SECRET`` (a name never holds a colon)."""

OUTPUT_BYTES = 64 * 1024
"""The most of a bot's captured output an author page shows (the last bytes of each copy)."""


class Refused(Exception):
    """A request refused with ``status`` (an HTTP status), ``code`` and a one-line ``message``
    saying what to fix."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def split_token(token: str) -> tuple[str, str] | None:
    """``(author name, secret)`` of a well-formed author token, else None."""
    name, sep, secret = token.strip().partition(TOKEN_SEPARATOR)
    if not sep or not secret or len(secret) > 200:
        return None
    try:
        check_name(name, "author")
    except BadName:
        return None
    return name, secret


def register(store: Any, registration: str, name: str, invitation: str | None) -> str:
    """Create author ``name`` under the contest's ``registration`` policy; returns the token
    (``NAME:SECRET``, shown once). :class:`Refused` when registration is closed, the code is
    missing or wrong, the name is bad or taken."""
    if registration == "organiser":
        raise Refused(403, "registration_closed", "this contest does not take registrations: ask its organiser "
                      "for an account")
    code = (invitation or "").strip() or None
    if registration == "invite" and code is None:
        raise Refused(403, "invitation_required", "this contest needs an invitation code to register: ask its "
                      "organiser for one")
    try:
        _, secret = store.add_author(name, code if registration == "invite" else None)
    except BadName as exc:
        raise Refused(400, "bad_name", str(exc)) from None
    except ValueError as exc:
        raise Refused(403 if "invitation" in str(exc) else 409, "refused", str(exc)) from None
    return f"{name}{TOKEN_SEPARATOR}{secret}"


def check_upload(data: bytes, limits: Any) -> str:
    """The bot name of an uploaded archive ``data`` once the archive and its manifest are
    acceptable; :class:`Refused` (400) with one line otherwise."""
    try:
        members = check(data, limits)
        text = manifest_text(data, limits)
    except ArchiveError as exc:
        message = str(exc) if exc.code != "archive_corrupt" else (
            "not a readable .tar.gz archive: make it with `arena bots upload` (or `tar czf`)")
        raise Refused(413 if exc.code == "archive_too_large" else 400, exc.code, message) from None
    with tempfile.TemporaryDirectory(prefix="arena-manifest-") as tmp:
        path = Path(tmp, MANIFEST)
        path.write_text(text, encoding="utf-8")
        try:
            manifest = load_manifest(path)
        except UserError as exc:
            raise Refused(400, "bad_manifest", str(exc).replace(str(path), MANIFEST)) from None
    program = manifest.command[0]
    if "/" in program and not program.startswith(("{", "/")):  # absolute: a system program, in the sandbox
        rel = "/".join(p for p in PurePosixPath(program).parts if p != ".")
        found = {m.path: m for m in members if not m.directory}.get(rel)
        if found is None:
            raise Refused(400, "bad_manifest", f"{MANIFEST}: the command's program {program!r} is not in the "
                          "archive: pack it beside the manifest (a compiled bot: build it first)")
        if not found.executable:
            raise Refused(400, "bad_manifest", f"{MANIFEST}: {program!r} is not executable: chmod +x it, then pack "
                          "again")
    return manifest.name


async def accept_archive(contest: Any, author: dict[str, Any], data: bytes) -> dict[str, Any]:
    """Take an author's upload: checked (:func:`check_upload`, in a worker thread: unpacking
    an archive to check it must not stall the matches in play), the bot claimed for the
    author, queued for the doctor. Returns ``{"upload", "bot", "status"}``; :class:`Refused`
    otherwise (503 when this server cannot sandbox bots or the doctor's queue is full)."""
    if sandbox_problem() is not None:
        raise Refused(503, "no_sandbox", "this server cannot sandbox bots, so it takes no uploads: tell the organiser")
    cfg = contest.config.uploads
    name = await trio.to_thread.run_sync(check_upload, data, cfg.archive_limits())
    store, gate = contest.store, contest.gate
    if gate.waiting >= cfg.queue:
        raise Refused(503, "queue_full", f"{gate.waiting} uploads are waiting for the doctor: try again in a few "
                      "minutes")
    try:
        store.claim_bot(name, author["id"], "uploaded", cfg.bots_per_author)
    except BadName as exc:
        raise Refused(400, "bad_name", str(exc)) from None
    except ValueError as exc:
        raise Refused(409, "name_taken", str(exc)) from None
    upload_id = store.add_upload(name, author["id"], data)
    try:
        gate.submit(upload_id)
    except QueueFull as exc:
        store.refuse_upload(upload_id, refusal(str(exc)))
        raise Refused(503, "queue_full", str(exc)) from None
    return {"upload": upload_id, "bot": name, "status": "queued"}


def register_remote(contest: Any, author: dict[str, Any], name: str) -> str:
    """A token (shown once) for the author's remote bot ``name`` (made theirs if the name is
    free; a new token replaces the old one). :class:`Refused` otherwise."""
    store = contest.store
    try:
        store.claim_bot(name, author["id"], "remote", contest.config.uploads.bots_per_author)
    except BadName as exc:
        raise Refused(400, "bad_name", str(exc)) from None
    except ValueError as exc:
        raise Refused(409, "name_taken", str(exc)) from None
    return store.add_bot(name)


def withdraw(contest: Any, author: dict[str, Any], bot: str) -> bool:
    """Withdraw the author's ``bot``: its registration, submission, uploads and stored versions
    are deleted (the server stops it within a second), its results stay, and its name is free
    again. False if it is not theirs."""
    if not owns(contest.store, author, bot):
        return False
    contest.store.release_bot(bot)
    tests.drop_bot(contest.store, bot, time.time(), f"not played: {bot} was withdrawn")
    return True


def owns(store: Any, author: dict[str, Any], bot: str) -> bool:
    """True if ``bot`` belongs to ``author``."""
    owner = store.bot_owner(bot)
    return owner is not None and owner[0] == author["id"]


def own_upload(store: Any, author: dict[str, Any], upload_id: int) -> dict[str, Any] | None:
    """Upload ``upload_id`` if it is the author's, else None (the same answer as for no upload)."""
    up = store.upload(upload_id)
    return up if up is not None and up["author_id"] == author["id"] else None


def bot_output(contest: Any, author: dict[str, Any], bot: str, idle_sizes: dict[Path, int]) -> str | None:
    """The last :data:`OUTPUT_BYTES` of each copy's captured output of the author's ``bot``, or
    None if it is not theirs. Files are found by the bot's id, never its name.

    While the bot plays (a duplicate pair's two halves are played one after the other, and the
    bot may print its hand), only what it wrote before is shown: up to the size the log had
    the last time it was read with the bot idle (``idle_sizes``, kept by the caller). So the
    output never tells its author a card of a match in play - or of its twin, which deals the
    same cards with the seats swapped."""
    store = contest.store
    if not owns(store, author, bot):
        return None
    try:
        bot_id = store.bot_id(bot)
    except KeyError:
        return ""
    playing = bot in contest.busy
    parts = []
    for copy in range(getattr(contest, "copies", 1)):
        path = bot_log(Path(contest.config.logs), bot_id, copy)
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, 2)
                end = min(size, idle_sizes.get(path, 0)) if playing else size
                if not playing:
                    idle_sizes[path] = size
                fh.seek(max(0, end - OUTPUT_BYTES))
                text = fh.read(end - fh.tell()).decode("utf-8", "replace")
        except OSError:
            continue
        held = " (what it writes during the match in play is shown once the match is over)" if playing else ""
        parts.append(f"===== copy {copy}{held} =====\n{text}")
    return "\n".join(parts)


def author_view(contest: Any, author: dict[str, Any]) -> dict[str, Any]:
    """What the author's page shows, as JSON-ready data: ``{"author", "registration", "ratings"
    (how old they are: :func:`arena.store.pages.ratings_age`), "bots": [{"bot", "kind", "elo",
    "interval", "provisional", "games", "state", "failures", "last_output", "connected", "versions",
    "uploads", "matches", "matches_next", "faults", "faults_next"}], "failed_uploads": [...]}``,
    their own bots only; the lists are the newest page of each (``*_next``: the ``before`` cursor
    of the next, or None); ``failed_uploads``: uploads that failed before their bot ever passed
    (their name is free again)."""

    store, game = contest.store, contest.config.game
    owned = store.owned_bots(author["id"])
    ratings = pages.bot_ratings(store, game, [name for name, _ in owned])
    bots = []
    for name, kind in owned:
        rating = ratings.get(name)
        health = contest.supervisor.bots.get(name)
        matches = finished_matches(store, game, name, per_page=10)
        faults = pages.fault_page(store, name, limit=10)
        bots.append({
            "bot": name, "kind": kind,
            "elo": None if rating is None else round(rating["elo"], 1),
            "interval": None if rating is None or rating["ci95"] is None else round(rating["ci95"], 1),
            "provisional": rating is None or rating["provisional"],
            "games": 0 if rating is None else rating["games"],
            "state": health.state if health else ("remote" if kind == "remote" else "waiting to start"
                                                  if store.archive_versions(name) else "not in the ladder"),
            "failures": health.failures if health else 0,
            "last_output": list(health.last_output) if health else [],
            "connected": name in contest.server.bots,
            "versions": [{"version": v, "sha256": sha, "size": size, "created_at": at}
                         for v, sha, size, at in store.archive_versions(name)],
            "uploads": [{k: u[k] for k in ("id", "status", "version", "created_at", "finished_at")}
                        | {"summary": (u["report"] or {}).get("summary")} for u in store.uploads_of(name, 10)],
            "matches": matches["matches"], "matches_next": matches["next"],
            "faults": faults["rows"], "faults_next": faults["next"],
        })
    failed = [{k: u[k] for k in ("id", "bot", "status", "created_at", "finished_at")}
              | {"summary": (u["report"] or {}).get("summary")} for u in store.failed_uploads(author["id"])]
    age = pages.ratings_age(store, game)
    return {"author": author["name"], "game": game, "contest": contest.config.name,
            "ratings": {**age, "text": pages.describe_age(age)}, "bots": bots, "failed_uploads": failed,
            "tests": [test_summary(r) for r in tests.of_author(store, author["id"], limit=TESTS_SHOWN)],
            "tests_quota": contest.tests.quota(author)}


TESTS_SHOWN = 10
"""Test matches on the author's own page (the newest; older ones page by id)."""


def test_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A test match as its author sees it in a list: ``{"id", "bot", "vs", "seat", "status"
    (queued, playing, done, aborted), "score": [own, other] or None, "outcome" (won, lost, draw
    or None), "reason", "detail", "created_at", "finished_at", "replay" (path of its page or None)}``."""
    seat = row["seat"]
    done = row["status"] == "done"
    scores = [row["score0"], row["score1"]] if done else None
    outcome = None
    if done:
        w = row["winner_seat"]
        outcome = "draw" if w is None else "won" if w == seat else "lost"
    return {"id": row["id"], "bot": row["bot"], "vs": row["opponent"], "seat": seat, "status": row["status"],
            "score": [scores[seat], scores[1 - seat]] if scores else None, "outcome": outcome,
            "reason": row["reason"], "detail": row["detail"] or "", "created_at": row["created_at"],
            "finished_at": row["finished_at"],
            "replay": f"/author/tests/{row['id']}" if row["status"] in ("done", "aborted") else None}


def own_tests(store: Any, author: dict[str, Any], ids: list[int] | None = None,
              before: int | None = None) -> list[dict[str, Any]]:
    """The author's test matches as :func:`test_summary` rows: those of ``ids`` that are theirs
    (at most 100), else a page of :data:`pages.HISTORY_PAGE` older than id ``before`` (or the newest)."""
    if ids is not None:
        got = [tests.get(store, i) for i in ids[:100]]
        return [test_summary(r) for r in got if r is not None and r["author_id"] == author["id"]]
    return [test_summary(r) for r in tests.of_author(store, author["id"], before, pages.HISTORY_PAGE)]


def own_test(store: Any, author: dict[str, Any], test_id: int) -> dict[str, Any] | None:
    """Test match ``test_id`` with the author's seat's view (``"view"``, None until it is over),
    or None if it is not theirs (the same answer as for none)."""
    row = tests.get(store, test_id)
    if row is None or row["author_id"] != author["id"]:
        return None
    return {**test_summary(row), "game": row["game"], "view": tests.view_of(store, test_id)}
