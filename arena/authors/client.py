"""The author's side of self-service from the terminal: ``arena author register``, ``arena bots
upload``, ``arena bots remote`` and ``arena bots test`` talk to a contest server's ``/author/api`` over HTTP
(:mod:`arena.authors.pages`) with the standard library's ``urllib``.

The author token comes from ``--token`` or the ``ARENA_AUTHOR_TOKEN`` environment variable and
travels only in the ``Authorization`` header: give an ``https://`` address for any server beyond
this machine. An ``https://`` server's certificate is checked against the system's trust store,
or the CA file named by ``ARENA_TLS_CA`` (:mod:`arena.net.tls`). Every failure is one line: the
server's own message for a refusal (a bad archive, a name taken, a rate limit), a certificate
not accepted, or what could not be reached.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.errors import Unavailable, UserError
from arena.net.tls import ca_file, client_context, describe_failure
from arena.store.archives import MANIFEST, ArchiveError, pack

TOKEN_ENV = "ARENA_AUTHOR_TOKEN"
POLL_S = 1.0
"""Seconds between two looks at an upload the doctor is checking."""
WAIT_S = 600.0
"""How long ``arena bots upload`` waits for the doctor's verdict before giving up (the upload stays queued)."""
TEST_POLL_S = 2.0
"""Seconds between two looks at test matches that are queued or playing."""
TEST_WAIT_S = 3600.0
"""How long ``arena bots test`` waits for its games before giving up (they stay queued; the author page shows them)."""


def author_token(given: str | None) -> str:
    """``given`` or ``$ARENA_AUTHOR_TOKEN``; :class:`UserError` if neither is set."""
    token = given or os.environ.get(TOKEN_ENV, "")
    if not token.strip():
        raise UserError(f"no author token: pass --token NAME:SECRET or set {TOKEN_ENV} (`arena author register` "
                        "gives you one)")
    return token.strip()


def request(server: str, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
            token: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
    """One request to the server's author API; the decoded JSON answer. A refusal becomes a
    :class:`UserError` with the server's message, an unreachable server :class:`Unavailable`."""
    url = server.rstrip("/") + path
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--server {server!r}: give the contest's web address, like http://host:8080")
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    context = client_context(ca_file()) if url.startswith("https://") else None
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:  # noqa: S310 - http(s), checked
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read())
            message = answer.get("message") or answer.get("error") or exc.reason
        except ValueError:
            message = exc.reason
        raise UserError(f"the server refused ({exc.code}): {message}", 1) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ssl.SSLError):
            parsed = urllib.parse.urlsplit(url)
            raise Unavailable(describe_failure(reason, parsed.hostname or "?", parsed.port or 443)) from None
        raise Unavailable(f"cannot reach {server}: {reason}; check the address and that the contest runs") from None
    except ValueError:
        raise Unavailable(f"{server} did not answer with JSON: is it an arena contest's web address?") from None


def register(server: str, name: str, invitation: str | None) -> str:
    """Create an author account; returns the token."""
    body = {"name": name} | ({"invitation": invitation} if invitation else {})
    return request(server, "POST", "/author/api/register", json.dumps(body).encode(), "application/json")["token"]


def find_manifest(bot: str | Path) -> Path:
    """The manifest of ``bot``: a ``.toml`` file itself, or a directory's ``manifest.toml``, or
    its only ``*.toml``; :class:`UserError` otherwise."""
    path = Path(bot)
    if path.is_file():
        return path
    if not path.is_dir():
        raise UserError(f"{bot}: no such bot directory or manifest")
    if (path / MANIFEST).is_file():
        return path / MANIFEST
    tomls = sorted(path.glob("*.toml"))
    if len(tomls) != 1:
        raise UserError(f"{bot}: {'no' if not tomls else 'several'} manifests (*.toml) there: name the manifest "
                        "file itself")
    return tomls[0]


def upload(server: str, token: str, bot: str | Path, *, wait: bool = True,
           progress: Callable[[str], None] = lambda _: None, sleep: Callable[[float], None] = time.sleep) -> dict:
    """Pack the bot (:func:`arena.store.archives.pack`), upload it, and (``wait``) poll until the
    doctor has decided; returns the upload's last state (``status``, ``report``)."""
    manifest = find_manifest(bot)
    try:
        data = pack(manifest)
    except ArchiveError as exc:
        raise UserError(f"{manifest}: cannot pack the bot: {exc}") from None
    except OSError as exc:
        raise UserError(f"{manifest}: cannot read the bot's files: {exc}") from None
    sent = request(server, "POST", "/author/api/upload", data, "application/gzip", token)
    progress(f"uploaded {sent['bot']} ({len(data):,} bytes) as upload {sent['upload']}; the doctor checks it")
    state = {"id": sent["upload"], "bot": sent["bot"], "status": sent["status"], "report": None}
    deadline = time.monotonic() + WAIT_S
    while wait and state["status"] in ("queued", "checking") and time.monotonic() < deadline:
        sleep(POLL_S)
        state = request(server, "GET", f"/author/api/uploads/{sent['upload']}", token=token)
    return state


def remote(server: str, token: str, name: str) -> str:
    """A token for the author's remote bot ``name``."""
    return request(server, "POST", "/author/api/remote", json.dumps({"name": name}).encode(), "application/json",
                   token)["token"]


def test(server: str, token: str, bot: str, vs: str, games: int, *, wait: bool = True,
         progress: Callable[[str], None] = lambda _: None, sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic, wait_s: float = TEST_WAIT_S) -> dict[str, Any]:
    """Ask for ``games`` unrated test matches of the author's ``bot`` against ladder bot ``vs``
    (:mod:`arena.schedule.on_demand`) and (``wait``) poll until every one is over or ``wait_s``
    seconds pass. Returns ``{"tests": [summaries], "quota"}`` (:func:`arena.authors.accounts.test_summary`).
    A refusal (over the day's quota: the server's 429 with when it resets) is a :class:`UserError`."""
    body = json.dumps({"bot": bot, "vs": vs, "games": games}).encode()
    sent = request(server, "POST", "/author/api/tests", body, "application/json", token)
    ids = sent["tests"]
    left = sent["quota"]["left"]
    progress(f"asked for {len(ids)} test match{'es' if len(ids) != 1 else ''} of {bot} against {vs} "
             f"(x{ids[0]}{f'..x{ids[-1]}' if len(ids) > 1 else ''}); {left} left today")
    path = "/author/api/tests?ids=" + ",".join(str(i) for i in ids)
    state = request(server, "GET", path, token=token)
    deadline = clock() + wait_s
    seen = sum(t["status"] in ("done", "aborted") for t in state["tests"])
    while wait and any(t["status"] in ("queued", "playing") for t in state["tests"]) and clock() < deadline:
        sleep(TEST_POLL_S)
        state = request(server, "GET", path, token=token)
        over = sum(t["status"] in ("done", "aborted") for t in state["tests"])
        if over != seen:
            seen = over
            progress(f"{over} of {len(ids)} played")
    return state
