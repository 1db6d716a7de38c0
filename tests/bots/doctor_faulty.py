#!/usr/bin/env python3
"""A deliberately broken bot for tests/test_doctor.py (standard library only).

It plays correctly (first legal action, always exchanging) except for the one fault named by its
first argument:

* ``good``: no fault at all.
* ``badplay``: on its 3rd ``play`` request, plays a card that is not in its hand.
* ``noking``: never answers a ``king`` request.
* ``badtoken``: says hello with a wrong token.
* ``noconnect``: prints a message and exits with status 3 without connecting.
* ``double``: answers its 4th request twice.
* ``wrongid``: answers its 5th request with the wrong id.
* ``unknowncrash``: crashes on a message type it does not know.
* ``linger``: ignores goodbye and the end of the connection, and sleeps.
* ``fixedbuf``: reads into a fixed 32 KiB buffer, as a C bot with ``char buf[32768]`` would: a
  longer line is dropped whole (it never sees that message). Asks for the compact legal form, so
  that every line the arena itself sends fits.
"""

import json
import os
import socket
import sys
import time

PACK = [r + s for s in "cdhs" for r in "789TAJQK"]


def send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode("utf-8"))


FIXED_BUFFER = 32 * 1024


def lines(sock, fixed=False):
    buf = b""
    dropping = False  # fixedbuf: inside a line longer than the buffer, until its newline
    while True:
        data = sock.recv(65536)
        if not data:
            return
        *complete, buf = (buf + data).split(b"\n")
        for line in complete:
            if dropping:
                dropping = False
                continue
            if line.strip() and not (fixed and len(line) > FIXED_BUFFER):
                yield json.loads(line)
        if fixed and len(buf) > FIXED_BUFFER:
            buf, dropping = b"", True


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    if mode == "noconnect":
        print("doctor_faulty: giving up before connecting", flush=True)
        return 3
    sock = socket.create_connection((os.environ["ARENA_HOST"], int(os.environ["ARENA_PORT"])))
    token = os.environ["ARENA_TOKEN"] + ("-wrong" if mode == "badtoken" else "")
    hello = {"type": "hello", "name": os.environ["ARENA_NAME"], "token": token, "protocol": 1}
    if mode == "fixedbuf":
        hello["legal"] = "compact"
    send(sock, hello)
    requests = plays = 0
    for msg in lines(sock, fixed=mode == "fixedbuf"):
        kind = msg["type"]
        if kind == "goodbye" and mode != "linger":
            return 0
        if kind not in ("welcome", "match_start", "event", "request", "match_end", "error", "goodbye"):
            if mode == "unknowncrash":
                raise ValueError(f"unknown message type {kind!r}")
            continue
        if kind == "error":
            print(f"doctor_faulty: server error {msg}", file=sys.stderr, flush=True)
        if kind != "request":
            continue
        requests += 1
        legal, decision = msg["legal"], msg["decision"]
        if isinstance(legal, dict):  # the compact form: the first min cards of the hand
            action = legal["choose"]["from"][: legal["choose"]["min"]]
        else:
            action = legal[0]
        if decision == "play":
            plays += 1
            if mode == "badplay" and plays == 3:
                hand = msg["state"]["hand"]
                table = [t["card"] for t in msg["state"]["trick"]]
                action = next(c for c in PACK if c not in hand and c not in table)
        if decision == "king" and mode == "noking":
            continue
        rid = msg["id"] + (1000 if mode == "wrongid" and requests == 5 else 0)
        send(sock, {"type": "action", "id": rid, "action": action})
        if mode == "double" and requests == 4:
            send(sock, {"type": "action", "id": rid, "action": action})
    if mode == "linger":
        time.sleep(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
