"""TLS for the bots' and spectators' port and for the web page, both sides.

The server's side: the contest file's ``[server] tls_cert`` and ``tls_key`` (PEM files: the
certificate chain, then its private key; one file may hold both) give :func:`server_context`,
TLS 1.2 or later. :class:`arena.net.server.ArenaServer` wraps every connection accepted on its
port in a ``trio.SSLStream``; :func:`arena.net.web.serve_http` hands the same two files to
hypercorn (HTTPS for the web page and the author pages).

The clients' side (``arena watch``, the author commands; the Python sample bots carry their own
copy of these rules, standard library only): a client uses TLS when it is asked to, by
``ARENA_TLS=1`` (:data:`TLS_ENV`; also ``true``, ``yes``, ``on``) or by an address written
``tls://host:port`` (:func:`split_address`). The server's certificate is verified against the
system's trust store, or against the CA file named by ``ARENA_TLS_CA`` (:data:`CA_ENV`), and must
be for the host name (or IP address) the client connects to. Every failure becomes one line
(:func:`describe_failure`): a certificate that is not accepted, a port that does not speak TLS,
a handshake cut short.

Both directions of a mistake are recognised by the server before anything is read as a line:
the first byte of a TLS client is ``0x16`` (a TLS handshake record, RFC 8446 §5.1; a JSON
line starts with ``{`` or white space). A plain client on a TLS port is answered, in plain
text, with the error ``tls_required``; a TLS client on a plain port with ``tls_unavailable``,
which its TLS layer reads as a record it cannot parse ("wrong version number"), at once.

:func:`exposure_warning` is the line ``arena serve`` prints when it listens beyond loopback
without TLS; :func:`throwaway_certificate` makes the self-signed certificate ``arena doctor
--tls`` gives its private arena (with the ``openssl`` command).
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import trio

from arena.errors import Unavailable, UserError

TLS_ENV = "ARENA_TLS"
"""Environment variable: ``1`` (or ``true``, ``yes``, ``on``) asks a client for TLS."""
CA_ENV = "ARENA_TLS_CA"
"""Environment variable: a PEM file of the CA certificates a client trusts (default: the system's)."""
HANDSHAKE_RECORD = 0x16
"""The first byte of a TLS client's first record (content type ``handshake``, RFC 8446 §5.1)."""
CLIENT_HANDSHAKE_S = 10.0
"""How long a client waits for the TCP connection and the TLS handshake together, in seconds."""

_NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL",
            "HTTP_REQUEST", "BAD_RECORD_TYPE"}
"""OpenSSL's reasons for a peer whose bytes are not TLS records."""
_EOF = {"UNEXPECTED_EOF_WHILE_READING", "EOF_OCCURRED_IN_VIOLATION_OF_PROTOCOL"}


class TLSFailure(Unavailable):
    """A TLS connection could not be made (exit status 3); the message is the one line to show."""


# --------------------------------------------------------------------------- the server's side


def server_context(cert: str, key: str, what: str = "[server]") -> ssl.SSLContext:
    """A server context (TLS 1.2 or later) holding ``cert`` (PEM: the certificate, then the
    chain) and ``key`` (PEM: its private key, unencrypted; may be the same file). Raises
    :class:`UserError` naming ``what``'s key and the fix when a file is missing, unreadable or
    not the key of that certificate."""
    for field, path in (("tls_cert", cert), ("tls_key", key)):
        if not Path(path).is_file():
            raise UserError(f"{what} {field} = {path!r}: no such file (give the PEM file's path, absolute or "
                            "relative to the directory arena serve runs in)")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise UserError(f"{what} tls_cert {cert!r} and tls_key {key!r} cannot be used: {exc.reason or exc} "
                        "(both PEM, the key unencrypted and the key of that certificate)") from None
    except OSError as exc:
        raise UserError(f"{what} tls_cert {cert!r} / tls_key {key!r}: {exc.strerror or exc}") from None
    return ctx


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and the loopback addresses (127.0.0.0/8, ::1); False for every
    other host, the wildcard addresses ``0.0.0.0``, ``::`` and ``""`` included."""
    if host.strip("[]").lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(bots_host: str, bots_tls: bool, http_host: str, http_tls: bool) -> str | None:
    """The one-line warning of a server that listens beyond loopback without TLS, or None.
    ``bots_host``: the ``[server] host`` (bots and spectators); ``http_host``: the web page's."""
    exposed = []
    if not bots_tls and not is_loopback(bots_host):
        exposed.append(f"[server] host = {bots_host!r} (bots' tokens)")
    if not http_tls and not is_loopback(http_host):
        exposed.append(f"http_host = {http_host!r} (author logins)")
    if not exposed:
        return None
    return (f"warning: {' and '.join(exposed)} listen beyond loopback without TLS: secrets cross the network in "
            "clear; set [server] tls_cert and tls_key, or listen on 127.0.0.1 behind a TLS proxy "
            "(docs/contests.md, \"TLS\")")


def throwaway_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and ``127.0.0.1``, valid two days, and its
    key, written in ``folder`` (``cert.pem``, ``key.pem``); the certificate is its own CA.
    Made by the ``openssl`` command; :class:`Unavailable` if it is missing or fails."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise Unavailable("a throwaway TLS certificate needs the openssl command (Debian: apt-get install openssl)")
    cert, key = folder / "cert.pem", folder / "key.pem"
    cmd = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
           "-keyout", str(key), "-out", str(cert)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0 or not cert.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"openssl could not make a throwaway certificate: {last}")
    return cert, key


# --------------------------------------------------------------------------- the clients' side


def tls_asked(flag: bool = False) -> bool:
    """``flag``, or ``ARENA_TLS`` set to ``1``, ``true``, ``yes`` or ``on``."""
    return flag or os.environ.get(TLS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def ca_file(given: str | None = None) -> str | None:
    """``given``, else ``$ARENA_TLS_CA``, else None (the system's trust store)."""
    return given or os.environ.get(CA_ENV) or None


def split_address(host: str, port: int) -> tuple[str, int, bool]:
    """``(host, port, tls)`` from an address given as a host: ``tls://host[:port]`` asks for
    TLS, ``tcp://host[:port]`` for plain TCP, a bare host keeps ``port`` and asks for nothing
    (``tls`` False: see :func:`tls_asked`). IPv6 addresses go in brackets: ``tls://[::1]:7000``.
    Raises :class:`UserError` for another scheme or a port that is not a number."""
    tls = False
    if "://" in host:
        scheme, host = host.split("://", 1)
        if scheme.lower() not in ("tls", "tcp"):
            raise UserError(f"{scheme}://{host}: the address is tls://host:port (TLS) or host (plain TCP)")
        tls = scheme.lower() == "tls"
        host = host.rstrip("/")
        tail = ""
        if host.startswith("["):
            host, _, tail = host[1:].partition("]")
        elif host.count(":") == 1:
            host, _, number = host.partition(":")
            tail = ":" + number
        if tail:
            if not tail.startswith(":") or not tail[1:].isdigit():
                raise UserError(f"{host}{tail}: the port after the host must be a number, as in tls://host:7000")
            port = int(tail[1:])
    return host, port, tls


def client_context(ca: str | None = None) -> ssl.SSLContext:
    """A client context, TLS 1.2 or later, that checks the server's certificate and host name
    against ``ca`` (a PEM file) or the system's trust store. :class:`UserError` if ``ca``
    cannot be read."""
    if ca is not None and not Path(ca).is_file():
        raise UserError(f"TLS CA file {ca!r} ({CA_ENV}): no such file")
    try:
        ctx = ssl.create_default_context(cafile=ca)
    except (ssl.SSLError, OSError) as exc:
        raise UserError(f"TLS CA file {ca!r} ({CA_ENV}) cannot be read as PEM certificates: {exc}") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def describe_failure(exc: BaseException | None, host: str, port: int) -> str:
    """One line for a failed TLS handshake with ``host:port`` (``exc``: the ``ssl`` error, or
    None if the server closed without a word)."""
    where = f"{host}:{port}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or exc.reason or "not verified"
        return (f"TLS: the certificate of {where} was not accepted ({why}): connect by the name the certificate is "
                f"for, or name the CA that signed it with {CA_ENV}=path")
    reason = getattr(exc, "reason", None) or ""
    if reason in _NOT_TLS:
        return (f"TLS: {where} does not speak TLS (it answered in plain text): connect without TLS (no tls://, "
                f"{TLS_ENV} unset) or to the contest's TLS port")
    if exc is None or reason in _EOF or isinstance(exc, ssl.SSLEOFError | ssl.SSLZeroReturnError | ConnectionError):
        return (f"TLS: {where} closed the connection during the TLS handshake: is it the contest's TLS port, and "
                "does it accept TLS 1.2 or later?")
    return f"TLS: the handshake with {where} failed: {reason or exc}"


async def open_stream(host: str, port: int, *, tls: bool, ca: str | None = None,
                      timeout_s: float = CLIENT_HANDSHAKE_S) -> trio.abc.Stream:
    """A stream to ``host:port``: TCP, or with ``tls`` TLS over it, the certificate verified
    (:func:`client_context`) and the handshake done. Raises ``OSError`` when the TCP connection
    cannot be made, :class:`TLSFailure` (one line) when the handshake fails or takes more than
    ``timeout_s`` seconds, :class:`UserError` for an unreadable ``ca``.

    The stream treats the end of the TCP connection as the end of the data (``https_compatible``:
    the arena closes without a TLS ``close_notify``; the line framing shows a cut line)."""
    ctx = client_context(ca) if tls else None
    tcp = await trio.open_tcp_stream(host, port)
    if ctx is None:
        return tcp
    stream = trio.SSLStream(tcp, ctx, server_hostname=host.strip("[]"), https_compatible=True)
    try:
        with trio.fail_after(timeout_s):
            await stream.do_handshake()
    except trio.BrokenResourceError as exc:
        await tcp.aclose()
        raise TLSFailure(describe_failure(exc.__cause__, host, port)) from None
    except trio.TooSlowError:
        await tcp.aclose()
        raise TLSFailure(f"TLS: {host}:{port} did not complete the TLS handshake within {timeout_s:g} s: is it "
                         "the contest's TLS port?") from None
    return stream
