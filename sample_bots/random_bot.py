#!/usr/bin/env python3
"""Random sample bot for the Écarté arena, Écarté and Piquet (Python standard library only).

Protocol handling
    Reads ARENA_HOST, ARENA_PORT, ARENA_NAME, ARENA_TOKEN and ARENA_BOT_SEED (default "0") from
    the environment, connects over TCP and sends a ``hello`` line. After that it reads
    newline-terminated JSON objects, buffering partial lines (TCP may split one line over several
    reads or put several lines into one read). Every ``request`` is answered with one ``action``
    line that repeats the request's ``id``. Other messages (``welcome``, ``match_start``,
    ``event``, ``match_end``, unknown types) are information; ``error`` is printed to stderr. The
    bot exits with status 0 on ``goodbye`` or when the server closes the connection. A line that
    is not valid JSON is reported on stderr and skipped.

Strategy
    Picks a uniformly random element of ``legal``, whatever the game and the decision kind
    (``look``, ``expose`` and the rest are words or cards). It asks for the compact legal form
    at ``hello`` (docs/protocol.md §8.13), so a discard comes as ``{"choose": {"from", "min",
    "max"}}``: it draws a size between ``min`` and ``max``, then that many cards of ``from``.
    The random generator of each match is seeded with "<ARENA_BOT_SEED>:<match_id>", so the
    choices depend only on the seed and the match, never on the order in which the server schedules matches.
"""

import json
import os
import random
import socket
import ssl
import sys
import time


class StdioSocket:
    """The protocol over stdin/stdout (``ARENA_TRANSPORT=stdio``, used when the arena runs the
    bot in a sandbox without network): the same lines, another pipe."""

    def sendall(self, data):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def recv(self, size):
        return os.read(sys.stdin.fileno(), size)

    def settimeout(self, timeout):
        pass


class TLSFailed(Exception):
    """The TLS connection could not be made; the message is the one line to print."""


def tls_address(host, port):
    """(host, port, tls) from ARENA_HOST and ARENA_PORT: TLS when ARENA_TLS is 1 (true, yes,
    on) or ARENA_HOST is written tls://host or tls://host:port (docs/protocol.md §2.1)."""
    tls = os.environ.get("ARENA_TLS", "").strip().lower() in ("1", "true", "yes", "on")
    if host.startswith("tls://"):
        tls, host = True, host[len("tls://"):].rstrip("/")
        if host.startswith("["):  # an IPv6 address: tls://[::1]:7000
            host, _, rest = host[1:].partition("]")
        elif host.count(":") == 1:
            host, _, rest = host.partition(":")
            rest = ":" + rest
        else:
            rest = ""
        if rest and not rest[1:].isdigit():
            raise TLSFailed("ARENA_HOST: the port after the host must be a number, as in tls://host:7000")
        port = int(rest[1:]) if rest else port
    return host, port, tls


def tls_wrap(sock, host, port):
    """``sock`` with TLS (1.2 or later) over it; the server's certificate is checked against
    the CA file ARENA_TLS_CA (default: the system's trust store) and must be for ``host``.
    Raises :class:`TLSFailed` with one line that says what to fix."""
    ca = os.environ.get("ARENA_TLS_CA") or None
    try:
        ctx = ssl.create_default_context(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise TLSFailed(f"ARENA_TLS_CA={ca}: cannot read it as PEM certificates ({exc})") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise TLSFailed(f"TLS: the certificate of {host}:{port} was not accepted ({exc.verify_message}): "
                        "set ARENA_TLS_CA to the CA file that signed it, or connect by the name it is for") from None
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        if getattr(exc, "reason", "") in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            raise TLSFailed(f"TLS: {host}:{port} does not speak TLS: unset ARENA_TLS and drop tls:// for a "
                            "plain port") from None
        raise TLSFailed(f"TLS: the handshake with {host}:{port} failed: {exc}") from None


def connect(host, port, tls=False, attempts=10):
    """Open the TCP connection (with ``tls``, TLS over it), retrying briefly in case the server
    is still starting; with ``ARENA_TRANSPORT=stdio`` speak over stdin/stdout instead."""
    if os.environ.get("ARENA_TRANSPORT") == "stdio":
        return StdioSocket()
    for attempt in range(attempts):
        try:
            sock = socket.create_connection((host, port), timeout=10)
        except OSError as exc:
            if attempt == attempts - 1:
                raise
            print(f"random_bot: connect failed ({exc}), retrying", file=sys.stderr)
            time.sleep(0.5)
            continue
        return tls_wrap(sock, host, port) if tls else sock


def send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode("utf-8"))


def messages(sock):
    """Yield every JSON object the server sends, until it closes the connection.

    Bytes are buffered until a whole newline-terminated line is there, so a line split over several
    TCP segments, or several lines in one segment, both work. Bad lines are skipped.
    """
    buf = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line.decode("utf-8")) if line.strip() else None
            except ValueError:
                print(f"random_bot: bad line skipped: {line[:200]!r}", file=sys.stderr)
                continue
            if isinstance(msg, dict):
                yield msg


def main():
    host = os.environ.get("ARENA_HOST", "127.0.0.1")
    port = int(os.environ.get("ARENA_PORT", "7000"))
    name = os.environ.get("ARENA_NAME", "random")
    token = os.environ.get("ARENA_TOKEN", "")
    seed = os.environ.get("ARENA_BOT_SEED", "0")
    rngs = {}  # match_id -> random.Random of that match

    try:
        host, port, tls = tls_address(host, port)
        sock = connect(host, port, tls)
    except TLSFailed as exc:
        print(f"random_bot: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"random_bot: cannot connect to {host}:{port}: {exc}", file=sys.stderr)
        return 1
    sock.settimeout(None)  # the server may stay silent for a long time between matches
    try:
        # "legal": "compact": a discard comes as a description, not as thousands of lists
        send(sock, {"type": "hello", "name": name, "token": token, "protocol": 1, "role": "bot",
                    "legal": "compact"})
        for msg in messages(sock):
            kind = msg.get("type")
            match_id = str(msg.get("match_id"))
            if kind == "match_start":
                rngs[match_id] = random.Random(f"{seed}:{match_id}")
            elif kind == "request":
                legal = msg.get("legal")
                rng = rngs.setdefault(match_id, random.Random(f"{seed}:{match_id}"))
                if isinstance(legal, dict) and isinstance(legal.get("choose"), dict):
                    # the compact form (docs/protocol.md §8.13): any min..max cards of "from"
                    c = legal["choose"]
                    action = rng.sample(c["from"], rng.randint(c["min"], c["max"]))
                elif isinstance(legal, list) and legal:
                    action = rng.choice(legal)
                else:
                    print(f"random_bot: no legal actions in {msg}", file=sys.stderr)
                    continue
                send(sock, {"type": "action", "id": msg.get("id"), "action": action})
            elif kind == "match_end":
                rngs.pop(match_id, None)
            elif kind == "error":
                print(f"random_bot: server error: {msg}", file=sys.stderr)
            elif kind == "goodbye":
                break
    except OSError as exc:
        print(f"random_bot: connection lost: {exc}", file=sys.stderr)
    return 0  # goodbye, or the server closed the connection


if __name__ == "__main__":
    sys.exit(main())
