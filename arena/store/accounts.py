"""Who may play: bots and their tokens, submissions, stored archives, spectators, authors, invitations, uploads.

Tokens are never stored: only a random salt and a hash, with the way it was made
(:mod:`arena.store.tokens`). A mixin of :class:`arena.store.sqlite.Store` (``self.run``,
``self._tx()``, ``self.dialect``); every statement is built once, at import.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any

from sqlalchemy import Table, bindparam, delete, exists, func, insert, select, text, update

from arena.names import check_name
from arena.store.archives import ArchiveLimits
from arena.store.archives import check as check_archive
from arena.store.archives import sha256 as archive_sha256
from arena.store.fast import Hot
from arena.store.schema import (
    authors,
    bot_archives,
    bot_owners,
    bot_status,
    bots,
    invitations,
    ladder,
    spectators,
    submissions,
    uploads,
)
from arena.store.tokens import DUMMY_TOKEN_HASH, FAST, SLOW, TokenHash, fast_token_hash, hash_token, looks_generated
from arena.store.upserts import replace

_NAME = bindparam("name")
_BOT = bindparam("bot")
_SECRET_TABLES: dict[str, Table] = {"bots": bots, "spectators": spectators, "authors": authors}

SET_SECRET = {name: replace(t, ("name",), ("salt", "token_hash", "hash_scheme"))
              for name, t in _SECRET_TABLES.items() if name != "authors"}
UPGRADE_HASH = {name: update(t).where(t.c.name == bindparam("who"), t.c.salt == bindparam("old_salt"),
                                      t.c.token_hash == bindparam("old_digest"),
                                      t.c.hash_scheme == bindparam("old_scheme")).values(
    token_hash=bindparam("digest"), hash_scheme=bindparam("scheme")) for name, t in _SECRET_TABLES.items()}
BOT_ID = select(text("rowid")).select_from(bots).where(bots.c.name == _NAME)
_BOT_TOKEN = select(bots.c.salt, bots.c.token_hash, bots.c.hash_scheme).where(bots.c.name == _NAME)
BOT_TOKEN = Hot(_BOT_TOKEN)  # hot: check_token and bot_secret run at every hello (arena.store.fast)
WITHDRAWN = select(bot_owners.c.bot).join(authors, authors.c.id == bot_owners.c.author_id).where(
    authors.c.status != "active")
"""The bots of suspended authors: they neither connect nor are launched (a subquery)."""
BOT_SECRET = Hot(_BOT_TOKEN.where(~exists().where(
    bot_owners.c.bot == bots.c.name, authors.c.id == bot_owners.c.author_id, authors.c.status != "active")))
BOT_NAMES = select(bots.c.name).order_by(bots.c.name)
SPECTATOR_SECRET = select(spectators.c.salt, spectators.c.token_hash, spectators.c.hash_scheme).where(
    spectators.c.name == _NAME)
SUBMIT = replace(submissions, ("name",), ("manifest", "sandbox", "created_at"))
SUBMISSIONS = select(submissions.c.name, submissions.c.manifest, submissions.c.sandbox).where(
    submissions.c.name.not_in(WITHDRAWN)).order_by(submissions.c.name)
SUBMISSION_TIMES = select(submissions.c.name, submissions.c.created_at)
CLEAR_STATUS = delete(bot_status)
INSERT_STATUS = insert(bot_status)
ALL_STATUS = select(bot_status)
DELETE_SUBMISSION = delete(submissions).where(submissions.c.name == _NAME)
DELETE_BOT = delete(bots).where(bots.c.name == _NAME)

NEWEST_ARCHIVE = select(bot_archives.c.version, bot_archives.c.sha256, bot_archives.c.data).where(
    bot_archives.c.bot == _BOT).order_by(bot_archives.c.version.desc()).limit(1)
ARCHIVE = select(bot_archives.c.version, bot_archives.c.sha256, bot_archives.c.data).where(
    bot_archives.c.bot == _BOT, bot_archives.c.version == bindparam("version"))
INSERT_ARCHIVE = insert(bot_archives)
ARCHIVE_VERSIONS = select(bot_archives.c.version, bot_archives.c.sha256, bot_archives.c.size,
                          bot_archives.c.created_at).where(bot_archives.c.bot == _BOT).order_by(bot_archives.c.version)

AUTHOR_TAKEN = select(authors.c.id).where(authors.c.name == _NAME)
INSERT_AUTHOR = insert(authors).returning(authors.c.id)
SPEND_INVITATION = update(invitations).where(invitations.c.code_hash == bindparam("code"),
                                             invitations.c.used_by.is_(None)).values(
    used_by=bindparam("author"), used_at=bindparam("now"))
AUTHOR_SECRET = select(authors.c.salt, authors.c.token_hash, authors.c.hash_scheme).where(
    authors.c.name == _NAME, authors.c.status == "active")
AUTHOR = select(authors.c.id, authors.c.name, authors.c.status, authors.c.created_at, authors.c.salt).where(
    authors.c.name == _NAME)
AUTHORS = select(authors.c.id, authors.c.name, authors.c.status, authors.c.created_at,
                 func.count(bot_owners.c.bot).label("bots")).outerjoin(
    bot_owners, bot_owners.c.author_id == authors.c.id).group_by(
    authors.c.id, authors.c.name, authors.c.status, authors.c.created_at).order_by(authors.c.name)
SET_AUTHOR_STATUS = update(authors).where(authors.c.name == bindparam("who")).values(status=bindparam("status"))
AUTHOR_BOTS = select(bot_owners.c.bot).where(bot_owners.c.author_id == bindparam("author"))
DELETE_AUTHOR_UPLOADS = delete(uploads).where(uploads.c.author_id == bindparam("author"))
DELETE_AUTHOR = delete(authors).where(authors.c.id == bindparam("author"))
RELEASE = [delete(submissions).where(submissions.c.name == _BOT), delete(bots).where(bots.c.name == _BOT),
           delete(bot_archives).where(bot_archives.c.bot == _BOT), delete(uploads).where(uploads.c.bot == _BOT),
           delete(bot_owners).where(bot_owners.c.bot == _BOT)]
INSERT_INVITATION = insert(invitations)
BOT_OWNER = select(bot_owners.c.author_id, bot_owners.c.kind).where(bot_owners.c.bot == _BOT)
OWNED = select(bot_owners.c.bot, bot_owners.c.kind).where(bot_owners.c.author_id == bindparam("author")).order_by(
    bot_owners.c.bot)
BOT_EXISTS = select(bots.c.name).where(bots.c.name == _BOT)
INSERT_OWNER = insert(bot_owners)

INSERT_UPLOAD = insert(uploads).returning(uploads.c.id)
_UPLOAD_ID = bindparam("upload")
UPLOAD = select(uploads.c.id, uploads.c.bot, uploads.c.author_id, uploads.c.status, uploads.c.sha256,
                uploads.c.size, uploads.c.version, uploads.c.report, uploads.c.created_at,
                uploads.c.finished_at).where(uploads.c.id == _UPLOAD_ID)
UPLOAD_DATA = select(uploads.c.data).where(uploads.c.id == _UPLOAD_ID)
UPLOAD_BOT_DATA = select(uploads.c.bot, uploads.c.data).where(uploads.c.id == _UPLOAD_ID)
UPLOADS_OF = select(uploads.c.id).where(uploads.c.bot == _BOT).order_by(uploads.c.id.desc()).limit(bindparam("lim"))
UNDECIDED = select(uploads.c.id).where(uploads.c.status.in_(("queued", "checking"))).order_by(uploads.c.id)
SET_UPLOAD = update(uploads).where(uploads.c.id == _UPLOAD_ID)  # values as parameters
UPLOAD_BOT = select(uploads.c.bot).where(uploads.c.id == _UPLOAD_ID)
NOTHING_ELSE = text(
    "SELECT 1 FROM bot_owners WHERE bot=:bot AND kind='uploaded' AND NOT EXISTS (SELECT 1 FROM bot_archives "
    "WHERE bot=:bot) AND NOT EXISTS (SELECT 1 FROM submissions WHERE name=:bot) AND NOT EXISTS (SELECT 1 FROM "
    "uploads WHERE bot=:bot AND status IN ('queued', 'checking'))")
PLAYED = select(ladder.c.bot).where(ladder.c.bot == _BOT).limit(1)
DELETE_OWNER = delete(bot_owners).where(bot_owners.c.bot == _BOT)
FAILED_UPLOADS = text(
    "SELECT id FROM uploads WHERE author_id=:author AND status='failed' AND NOT EXISTS (SELECT 1 FROM bot_owners o "
    "WHERE o.bot=uploads.bot AND o.author_id=uploads.author_id) ORDER BY id DESC LIMIT :lim")


def _secret(row: Any) -> TokenHash | None:
    return TokenHash(bytes(row[0]), bytes(row[1]), row[2]) if row else None


class Accounts:
    """Bots, tokens, spectators, authors and uploads of :class:`arena.store.sqlite.Store` (a mixin)."""

    dialect: str
    run: Any
    _tx: Any

    # ------------------------------------------------------------------ bots and tokens

    def add_bot(self, name: str, token: str | None = None, *, generated: bool = False) -> str:
        """Register ``name`` (or replace its token) and return the token. With no ``token`` a
        fresh one is generated (192 random bits) and stored as a salted HMAC-SHA256
        (:func:`~arena.store.tokens.fast_token_hash`); a ``token`` the caller chose is stored as a
        salted scrypt hash (:func:`~arena.store.tokens.hash_token`), since a person's choice may be
        guessable, unless ``generated``: the caller vouches that it made ``token`` with
        ``secrets.token_urlsafe(24)`` (say one token for many bots of a benchmark), and it is
        stored fast too. Raises :class:`arena.names.BadName` (a ``ValueError``) for a name outside
        the rule of :mod:`arena.names`, ``ValueError`` for a ``generated`` token of another shape
        (:func:`~arena.store.tokens.looks_generated`)."""
        if generated and (token is None or not looks_generated(token)):
            raise ValueError("a generated token is secrets.token_urlsafe(24): 32 URL-safe characters")
        return self._set_secret("bots", "bot", name, token, generated)

    def add_launched_bot(self, name: str) -> None:
        """Register ``name`` (or lock it out) with no token anyone holds, for a bot the arena
        launches (each copy gets a token in memory at launch: :mod:`arena.schedule.copies`): a
        random salt and a random 32-byte digest under the fast scheme, which no token's
        HMAC-SHA256 matches, so nothing slow is ever hashed for it. Raises
        :class:`arena.names.BadName` as :meth:`add_bot`."""
        check_name(name, "bot")
        self.run(SET_SECRET["bots"][self.dialect], {"name": name, "salt": secrets.token_bytes(16),
                                                    "token_hash": secrets.token_bytes(32), "hash_scheme": FAST,
                                                    "created_at": time.time()})

    def _set_secret(self, table: str, what: str, name: str, token: str | None, generated: bool = False) -> str:
        """Store ``name``'s token in ``table`` (``bots`` or ``spectators``): a fresh generated
        one (if ``token`` is None) or a ``generated`` one under :data:`FAST`, a chosen one under
        :data:`SLOW` (see :meth:`add_bot`); return the token."""
        check_name(name, what)  # names are data: never markup or paths (arena.names)
        salt = secrets.token_bytes(16)
        if not token or generated:
            token = token or secrets.token_urlsafe(24)
            scheme, digest = FAST, fast_token_hash(token, salt)
        else:
            scheme, digest = SLOW, hash_token(token, salt)
        self.run(SET_SECRET[table][self.dialect], {"name": name, "salt": salt, "token_hash": digest,
                                                   "hash_scheme": scheme, "created_at": time.time()})
        return token

    def upgrade_token_hash(self, table: str, name: str, old: TokenHash, token: str) -> bool:
        """Re-store ``name``'s verified ``token`` in ``table`` (``bots``, ``spectators`` or
        ``authors``) under the fast scheme, keeping its salt (so the author pages' session
        fingerprints and the verified-token cache keep their meaning), if the row still holds
        ``old`` (a token replaced meanwhile is left alone). The caller has checked ``token``
        against ``old`` and that it :func:`looks_generated`. Returns True if the row changed."""
        if table not in UPGRADE_HASH:
            raise ValueError(f"no tokens in {table!r}")
        return self.run(UPGRADE_HASH[table], {
            "digest": fast_token_hash(token, old.salt), "scheme": FAST, "who": name, "old_salt": old.salt,
            "old_digest": old.digest, "old_scheme": old.scheme}).rowcount == 1

    def bot_id(self, name: str) -> int:
        """The database id of registered bot ``name`` (for file names: never a name in a
        path). Raises ``KeyError`` if it is not registered."""
        found = self.run(BOT_ID, {"name": name}).scalar()
        if found is None:
            raise KeyError(name)
        return int(found)

    def check_token(self, name: str, token: str) -> bool:
        """True if ``name`` is registered and ``token`` is its token (constant-time compare; the
        row's own scheme: scrypt costs about 30 ms, the fast hash a microsecond). For a server,
        :class:`arena.net.auth.Authenticator` does this with rate limits and off the event loop."""
        row = self.run(BOT_TOKEN, {"name": name}).first()
        secret = DUMMY_TOKEN_HASH if row is None else _secret(row)
        return secret.matches(token) and row is not None  # an unknown name costs a generated token's check

    def bot_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of a registered bot whose author (if any) is active, or None
        (check it with :meth:`TokenHash.matches`, never ``==``: see :mod:`arena.net.auth`). One
        index probe per table, whatever the number of bots and authors."""
        return _secret(self.run(BOT_SECRET, {"name": name}).first())

    def bot_names(self) -> list[str]:
        """All registered bot names, sorted."""
        return list(self.run(BOT_NAMES).scalars())

    def add_spectator(self, name: str, token: str | None = None) -> str:
        """Register a betting spectator (or replace its token); return the token, stored only
        as a salted hash: HMAC-SHA256 of a generated one, scrypt of a chosen one (as :meth:`add_bot`)."""
        return self._set_secret("spectators", "spectator", name, token)

    def spectator_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of a betting spectator, or None."""
        return _secret(self.run(SPECTATOR_SECRET, {"name": name}).first())

    # ------------------------------------------------------------------ submissions and archives

    def submit_bot(self, name: str, manifest: str, sandbox: bool = False) -> None:
        """Register ``name`` as a bot the contest server launches from ``manifest`` (an
        absolute path). Its token is made afresh at each launch."""
        self.add_launched_bot(name)
        self.run(SUBMIT[self.dialect], {"name": name, "manifest": manifest, "sandbox": int(sandbox),
                                        "created_at": time.time()})

    def put_archive(self, bot: str, data: bytes, limits: ArchiveLimits = ArchiveLimits()) -> int:
        """Store ``data`` (checked by :func:`arena.store.archives.check`; its
        :class:`~arena.store.archives.ArchiveError` propagates) as the next version of ``bot``'s
        archive and return that version (1, 2, ...). The same bytes as the newest version are
        not stored twice: its version is returned."""
        check_archive(data, limits)
        digest = archive_sha256(data)
        with self._tx():
            row = self.run(NEWEST_ARCHIVE, {"bot": bot}).first()
            if row is not None and row[1] == digest:
                return row[0]
            version = 1 if row is None else row[0] + 1
            self.run(INSERT_ARCHIVE, {"bot": bot, "version": version, "sha256": digest, "size": len(data),
                                      "data": data, "created_at": time.time()})
        return version

    def archive(self, bot: str, version: int | None = None) -> tuple[int, str, bytes] | None:
        """``(version, sha256, bytes)`` of ``bot``'s archive (the newest when ``version`` is
        None), or None if there is none."""
        row = (self.run(NEWEST_ARCHIVE, {"bot": bot}) if version is None
               else self.run(ARCHIVE, {"bot": bot, "version": version})).first()
        return None if row is None else (row[0], row[1], bytes(row[2]))

    def archive_versions(self, bot: str) -> list[tuple[int, str, int, float]]:
        """Every stored version of ``bot``'s archive, oldest first: ``(version, sha256, size in
        bytes, created at (Unix seconds))``."""
        return [tuple(r) for r in self.run(ARCHIVE_VERSIONS, {"bot": bot})]

    def submissions(self) -> list[tuple[str, str, int]]:
        """Submitted bots as ``(name, manifest path, sandbox)``."""
        return [tuple(r) for r in self.run(SUBMISSIONS)]

    def submission_times(self) -> dict[str, float]:
        """When each submitted bot was last submitted (Unix seconds): a new time means a fresh
        start for its supervision (:mod:`arena.schedule.supervisor`)."""
        return {r[0]: r[1] for r in self.run(SUBMISSION_TIMES)}

    def save_bot_status(self, rows: list[tuple]) -> None:
        """Replace the contest server's view of its bots: rows ``(name, state, failures, next
        launch (Unix seconds) or None, last output lines, connected 0/1)``, stamped now."""
        now = time.time()
        keys = ("name", "state", "failures", "next_launch", "last_output", "connected")
        with self._tx():
            self.run(CLEAR_STATUS)
            if rows:
                self.run(INSERT_STATUS, [{**dict(zip(keys, r)), "connected": int(r[5]), "updated_at": now}
                                         for r in rows])

    def bot_status(self) -> dict[str, dict[str, Any]]:
        """The last view saved by :meth:`save_bot_status`, by bot name (with ``updated_at``)."""
        return {r.name: dict(r._mapping) for r in self.run(ALL_STATUS)}

    def remove_bot(self, name: str) -> bool:
        """Unregister a bot (token and submission; its matches and ladder history stay).
        Returns False if it was not registered."""
        with self._tx():
            self.run(DELETE_SUBMISSION, {"name": name})
            return self.run(DELETE_BOT, {"name": name}).rowcount > 0


    # ------------------------------------------------------------------ authors (self-service)

    def add_author(self, name: str, invitation: str | None = None) -> tuple[int, str]:
        """Register author ``name`` and return ``(id, secret)``; the secret is generated (192
        random bits) and only its salted HMAC-SHA256 is stored (:func:`fast_token_hash`). With
        ``invitation``, that unused code is spent in the same transaction. Raises
        :class:`arena.names.BadName` for a bad name, ``ValueError`` if the name is taken or the
        code unknown or spent."""
        check_name(name, "author")
        secret = secrets.token_urlsafe(24)
        salt = secrets.token_bytes(16)
        with self._tx():
            if self.run(AUTHOR_TAKEN, {"name": name}).first() is not None:
                raise ValueError(f"the author name {name!r} is taken: choose another")
            author_id = int(self.run(INSERT_AUTHOR, {"name": name, "salt": salt, "token_hash": fast_token_hash(
                secret, salt), "hash_scheme": FAST, "created_at": time.time()}).scalar_one())
            if invitation is not None:
                used = self.run(SPEND_INVITATION, {"author": author_id, "now": time.time(),
                                                   "code": hashlib.sha256(invitation.encode()).hexdigest()})
                if used.rowcount != 1:
                    raise ValueError("unknown or already used invitation code: ask the organiser for one")
        return author_id, secret

    def author_secret(self, name: str) -> TokenHash | None:
        """The :class:`TokenHash` of an *active* author, or None (unknown or suspended)."""
        return _secret(self.run(AUTHOR_SECRET, {"name": name}).first())

    def author(self, name: str) -> dict[str, Any] | None:
        """Author ``name`` as ``{id, name, status, created_at, salt}``, or None."""
        row = self.run(AUTHOR, {"name": name}).first()
        return dict(row._mapping) if row else None

    def authors(self) -> list[dict[str, Any]]:
        """Every author with ``bots`` (how many they own), by name."""
        return [dict(r._mapping) for r in self.run(AUTHORS)]

    def set_author_status(self, name: str, status: str) -> bool:
        """Set ``status`` (``active`` or ``suspended``); False if there is no such author."""
        with self._tx():
            return self.run(SET_AUTHOR_STATUS, {"who": name, "status": status}).rowcount > 0

    def delete_author(self, name: str) -> list[str] | None:
        """Delete author ``name`` with their bots' registrations, submissions, uploads and
        archives (their code); matches and results stay. Returns the bots removed, or None if
        there is no such author."""
        with self._tx():
            author_id = self.run(AUTHOR_TAKEN, {"name": name}).scalar()
            if author_id is None:
                return None
            bots = list(self.run(AUTHOR_BOTS, {"author": author_id}).scalars())
            for bot in bots:
                self.release_bot(bot)
            self.run(DELETE_AUTHOR_UPLOADS, {"author": author_id})
            self.run(DELETE_AUTHOR, {"author": author_id})
        return bots

    def release_bot(self, bot: str) -> None:
        """Delete an author's bot: registration, submission, uploads, stored versions and
        ownership (its matches stay; the name is free again)."""
        with self._tx():
            for statement in RELEASE:
                self.run(statement, {"bot": bot})

    def add_invitation(self, note: str = "") -> str:
        """A fresh single-use invitation code (stored as its SHA-256 only)."""
        code = secrets.token_urlsafe(12)
        self.run(INSERT_INVITATION, {"code_hash": hashlib.sha256(code.encode()).hexdigest(), "note": note,
                                     "created_at": time.time()})
        return code

    def bot_owner(self, bot: str) -> tuple[int, str] | None:
        """``(author id, kind)`` of an author's bot (kind ``uploaded`` or ``remote``), or None."""
        row = self.run(BOT_OWNER, {"bot": bot}).first()
        return (row[0], row[1]) if row else None

    def owned_bots(self, author_id: int) -> list[tuple[str, str]]:
        """The bots of an author: ``(name, kind)``, by name."""
        return [tuple(r) for r in self.run(OWNED, {"author": author_id})]

    def claim_bot(self, bot: str, author_id: int, kind: str, limit: int) -> None:
        """Make ``bot`` a bot of the author (registered with a fresh token no one is shown,
        until it is launched or given a remote token), unless it is already theirs. Raises
        :class:`arena.names.BadName`, or ``ValueError`` if the name belongs to someone else
        or the author already owns ``limit`` bots."""
        check_name(bot)
        with self._tx():
            owner = self.bot_owner(bot)
            if owner is not None and owner[0] == author_id:
                if owner[1] != kind:
                    raise ValueError(f"{bot} is your {owner[1]} bot: choose another name for a {kind} bot")
                return
            if owner is not None or self.run(BOT_EXISTS, {"bot": bot}).first():
                raise ValueError(f"the bot name {bot!r} is taken: choose another (the manifest's name)")
            if len(self.owned_bots(author_id)) >= limit:
                raise ValueError(f"you already have {limit} bots, the most this contest allows")
            self.add_bot(bot)
            self.run(INSERT_OWNER, {"bot": bot, "author_id": author_id, "kind": kind, "created_at": time.time()})

    def add_upload(self, bot: str, author_id: int, data: bytes) -> int:
        """Keep an uploaded archive (already checked) for the doctor: a ``queued`` upload; its id."""
        return int(self.run(INSERT_UPLOAD, {"bot": bot, "author_id": author_id, "status": "queued",
                                            "sha256": archive_sha256(data), "size": len(data), "data": data,
                                            "created_at": time.time()}).scalar_one())

    def upload(self, upload_id: int) -> dict[str, Any] | None:
        """An upload without its bytes: ``{id, bot, author_id, status, sha256, size, version,
        report (decoded or None), created_at, finished_at}``, or None."""
        row = self.run(UPLOAD, {"upload": upload_id}).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["report"] = json.loads(out["report"]) if out["report"] else None
        return out

    def upload_data(self, upload_id: int) -> bytes | None:
        """The archive of an upload the doctor has not decided yet, or None."""
        data = self.run(UPLOAD_DATA, {"upload": upload_id}).scalar()
        return None if data is None else bytes(data)

    def uploads_of(self, bot: str, limit: int = 20) -> list[dict[str, Any]]:
        """The newest uploads of ``bot`` (as :meth:`upload`), newest first."""
        return [self.upload(i) for i in list(self.run(UPLOADS_OF, {"bot": bot, "lim": limit}).scalars())]

    def undecided_uploads(self) -> list[int]:
        """Uploads still ``queued`` or ``checking`` (a stopped server leaves some), oldest first."""
        return list(self.run(UNDECIDED).scalars())

    def set_upload_status(self, upload_id: int, status: str) -> None:
        """Mark an undecided upload (``checking``)."""
        self.run(SET_UPLOAD, {"upload": upload_id, "status": status})

    def refuse_upload(self, upload_id: int, report: dict[str, Any]) -> None:
        """The doctor refused the upload: keep its ``report`` (its author still sees it), drop
        its bytes, and, when the bot has nothing else (no version that passed, no submission,
        no match), free its name: a failed upload holds no name and no bot."""
        with self._tx():
            self.run(SET_UPLOAD, {"upload": upload_id, "status": "failed", "report": json.dumps(report),
                                  "data": None, "finished_at": time.time()})
            bot = self.run(UPLOAD_BOT, {"upload": upload_id}).scalar()
            if bot is None or self.run(NOTHING_ELSE, {"bot": bot}).first() is None:
                return
            if self.run(PLAYED, {"bot": bot}).first() is not None:
                return  # it played (under an earlier owner's version that was deleted): keep the name with its results
            self.run(DELETE_OWNER, {"bot": bot})
            self.run(DELETE_BOT, {"name": bot})

    def failed_uploads(self, author_id: int, limit: int = 10) -> list[dict[str, Any]]:
        """The author's newest failed uploads of bots they do not own (a failed first upload
        frees its name: :meth:`refuse_upload`), as :meth:`upload`, newest first."""
        return [self.upload(i) for i in list(self.run(FAILED_UPLOADS, {"author": author_id, "lim": limit}).scalars())]

    def accept_upload(self, upload_id: int, manifest: str, report: dict[str, Any],
                      limits: ArchiveLimits = ArchiveLimits()) -> int:
        """The doctor passed the upload: in one transaction its archive becomes the bot's newest
        version (:meth:`put_archive`), the bot is submitted from ``manifest`` (the unpacked
        archive's manifest, sandboxed) and the upload marked ``passed``. Returns the version."""
        with self._tx():
            bot, data = self.run(UPLOAD_BOT_DATA, {"upload": upload_id}).one()
            version = self.put_archive(bot, bytes(data), limits)
            self.submit_bot(bot, manifest, sandbox=True)
            self.run(SET_UPLOAD, {"upload": upload_id, "status": "passed", "version": version,
                                  "report": json.dumps(report), "data": None, "finished_at": time.time()})
        return version
