#!/usr/bin/env python3
"""A misbehaving bot for the arena's robustness tests (Python standard library only).

It connects like a sample bot (``ARENA_HOST``, ``ARENA_PORT``, ``ARENA_NAME``, ``ARENA_TOKEN``)
and plays ``legal[0]`` to every request, except that at the request chosen by ``--at`` (the
n-th request it receives in a match, default 3: in the middle of the first deal) it
misbehaves in the way chosen by ``--mode`` (or ``HOSTILE_MODE``), once in every match:

==============  ============================================================================
good            never misbehaves (a healthy bot with a transcript)
sleep           sleeps past the deadline and never answers that request
late            from the chosen request on, answers every request after its deadline
                (with ``legal[-1]``, so that a late answer wrongly applied would show)
crash           ``os._exit(3)`` in the middle of the deal
close           closes its socket in the middle of the match, the process lives on
nohello         connects and never sends ``hello``
bad_utf8        sends a line that is not UTF-8
bad_json        sends a line that is not JSON
deep_json       sends an ``action`` whose value is an array nested 30,000 deep (60 KB)
utf8_unknown    sends a correct ``action`` with an extra field holding bytes that are not UTF-8
array           sends a JSON array
no_type         sends an object without ``"type"``
unknown_type    sends an object with an unknown ``"type"``
bad_message     sends an ``action`` whose ``id`` is a string
huge            sends a 10 MB line with no newline
truncate        sends half a line, then shuts its side of the connection down
flood_actions   answers, then floods unsolicited ``action`` lines
flood_junk      floods junk lines instead of answering
flood_blank     floods blank and whitespace-only lines while playing normally
unknown_id      answers with an id that was never sent
twice           answers the same request twice
not_held        plays a card it does not hold (at its first ``play`` from ``--at`` on)
out_of_turn     answers, then sends an action while no request is pending for it
wrong_decision  answers a non-``play`` decision with a card from its hand
hello_twice     sends ``hello`` again in the middle of the match
fork            at start, forks a child and double-forks a grandchild (both stay in the
                process group and sleep forever; their pids go to ``--pidfile``)
==============  ============================================================================

Every line received is written to the transcript file (``--transcript`` or
``HOSTILE_TRANSCRIPT``) as ``< LINE``; every line sent as ``> LINE`` (floods and the huge line
are summarised as ``# ...`` notes). The file is flushed after every line, so a crash loses
nothing. The bot exits on ``goodbye`` or when the server closes the connection.
"""

import argparse
import json
import os
import socket
import sys
import threading
import time

MODES = (
    "good", "sleep", "late", "crash", "close", "nohello", "bad_utf8", "bad_json", "deep_json",
    "utf8_unknown", "array",
    "no_type", "unknown_type", "bad_message", "huge", "truncate", "flood_actions", "flood_junk",
    "flood_blank", "unknown_id", "twice", "not_held", "out_of_turn", "wrong_decision",
    "hello_twice", "fork",
)  # fmt: skip
PACK = [r + s for s in "cdhs" for r in "789TJQKA"]


class Transcript:
    """Append-only record of the conversation, flushed line by line."""

    def __init__(self, path):
        self.fh = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115
        self.lock = threading.Lock()

    def write(self, prefix, text):
        if self.fh is None:
            return
        with self.lock:
            self.fh.write(f"{prefix} {text}\n")
            self.fh.flush()


class Bot:
    def __init__(self, args):
        self.args = args
        self.mode = args.mode
        self.log = Transcript(args.transcript)
        self.sock = None
        self.send_lock = threading.Lock()
        self.requests = 0  # requests received in the current match
        self.done = False  # misbehaviour already performed
        self.flooding = None
        self.deadline_s = 2.5  # of the current match: move_ms + bank_ms + grace_ms

    # ------------------------------------------------------------------ I/O

    def connect(self):
        host = os.environ.get("ARENA_HOST", "127.0.0.1")
        port = int(os.environ.get("ARENA_PORT", "7000"))
        for attempt in range(20):
            try:
                self.sock = socket.create_connection((host, port), timeout=10)
                break
            except OSError:
                if attempt == 19:
                    raise
                time.sleep(0.25)
        self.sock.settimeout(None)

    def send_raw(self, data, note=None):
        """Send bytes (under a lock, so that two threads never interleave inside a line)."""
        with self.send_lock:
            self.sock.sendall(data)
        if note is None:
            for line in data.split(b"\n")[:-1]:
                self.log.write(">", line.decode("utf-8", "backslashreplace"))
        else:
            self.log.write("#", note)

    def send(self, *objs):
        """Send one or more messages in a single write."""
        self.send_raw(b"".join(json.dumps(o).encode() + b"\n" for o in objs))

    def lines(self):
        buf = b""
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError as exc:
                self.log.write("#", f"recv failed: {exc!r}")
                return
            if not data:
                self.log.write("#", "eof")
                return
            *lines, buf = (buf + data).split(b"\n")
            for line in lines:
                self.log.write("<", line.decode("utf-8", "backslashreplace"))
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict):
                    yield msg

    def hello(self):
        name = os.environ.get("ARENA_NAME", "hostile")
        token = os.environ.get("ARENA_TOKEN", "")
        return {"type": "hello", "name": name, "token": token, "protocol": 1, "role": "bot"}

    # ------------------------------------------------------------------ floods

    def flood(self, make_line, rate, seconds):
        """Send ``rate`` lines per second for ``seconds`` (in batches every 20 ms), from a
        thread, until a send fails."""

        def run():
            sent = 0
            batch = max(1, rate // 50)
            start = time.monotonic()
            try:
                while time.monotonic() - start < seconds:
                    data = b"".join(make_line(sent + i) for i in range(batch))
                    with self.send_lock:
                        self.sock.sendall(data)
                    sent += batch
                    time.sleep(max(0.0, start + sent / rate - time.monotonic()))
            except OSError as exc:
                self.log.write("#", f"flood stopped by {exc!r}")
            self.log.write("#", f"flood sent {sent} lines in {time.monotonic() - start:.2f} s")

        self.flooding = threading.Thread(target=run, daemon=True)
        self.flooding.start()

    # ------------------------------------------------------------------ behaviour

    def fork(self):
        """A plain fork and a double fork; both descendants stay in our process group."""
        pids = []
        child = os.fork()
        if child == 0:
            self._linger()
        pids.append(child)
        r, w = os.pipe()
        middle = os.fork()
        if middle == 0:
            grandchild = os.fork()
            if grandchild == 0:
                os.close(r)
                os.close(w)
                self._linger()
            os.write(w, str(grandchild).encode())
            os._exit(0)
        os.close(w)
        pids.append(int(os.read(r, 64).decode()))
        os.close(r)
        os.waitpid(middle, 0)
        if self.args.pidfile:
            with open(self.args.pidfile, "w") as fh:
                fh.write(" ".join(map(str, pids)))
        self.log.write("#", f"forked {pids}")

    @staticmethod
    def _linger():
        try:
            while True:
                time.sleep(3600)
        finally:
            os._exit(0)

    def on_request(self, req):
        rid = req.get("id")
        legal = req.get("legal") or []
        state = req.get("state") or {}
        answer = {"type": "action", "id": rid, "action": legal[0] if legal else None}
        mode = self.mode
        self.requests += 1
        due = self.requests >= self.args.at and not self.done
        if mode == "wrong_decision":
            due = not self.done and req.get("decision") != "play"
        elif mode == "not_held":
            due = due and req.get("decision") == "play"
        elif mode == "late":
            due = self.requests >= self.args.at  # every request from then on
        if not due:
            self.send(answer)
            return
        self.done = True
        self.log.write("#", f"misbehaving ({mode}) at request {rid}")
        if mode == "sleep":
            time.sleep(self.deadline_s + 0.3)  # and never answer this request
        elif mode == "late":
            time.sleep(self.deadline_s + 0.15)
            self.send({"type": "action", "id": rid, "action": legal[-1]})
        elif mode == "crash":
            os._exit(3)
        elif mode == "close":
            self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.log.write("#", "socket closed")
            time.sleep(3600)  # the process lives on until the arena kills its group
        elif mode == "bad_utf8":
            self.send_raw(b'{"type":"action","id":%d,"action":"\xff\xfe"}\n' % rid)
        elif mode == "bad_json":
            self.send_raw(b'{"type":"action","id":%d,"action":\n' % rid)
        elif mode == "deep_json":
            self.send_raw(b'{"type":"action","id":%d,"action":%s%s}\n' % (rid, b"[" * 30000, b"]" * 30000),
                          note="an action nested 30000 deep")
        elif mode == "utf8_unknown":
            self.send_raw(b'{"type":"action","id":%d,"action":%s,"note":"\xff\xfe"}\n'
                          % (rid, json.dumps(legal[0]).encode()))
        elif mode == "array":
            self.send_raw(b'["action",%d]\n' % rid)
        elif mode == "no_type":
            self.send({"id": rid, "action": legal[0]})
        elif mode == "unknown_type":
            self.send({"type": "chat", "id": rid, "text": "hello there"})
        elif mode == "bad_message":
            self.send({"type": "action", "id": str(rid), "action": legal[0]})
        elif mode == "huge":
            self.send_huge(rid)
        elif mode == "truncate":
            self.send_raw(b'{"type":"action","id":%d,"act' % rid, note="half a line, then SHUT_WR")
            self.sock.shutdown(socket.SHUT_WR)
        elif mode == "flood_actions":
            self.send(answer, {"type": "action", "id": rid + 1000, "action": legal[0]})
            base = rid + 2000
            self.flood(
                lambda i: b'{"type":"action","id":%d,"action":"7c"}\n' % (base + i),
                self.args.flood_rate, self.args.flood_seconds,
            )
        elif mode == "flood_junk":
            self.flood(lambda i: b"junk %d ~~~\n" % i, self.args.flood_rate, self.args.flood_seconds)
        elif mode == "flood_blank":
            self.send(answer)
            self.flood(
                lambda i: (b"\n", b"   \n", b"\t\r\n", b"\r\n")[i % 4],
                self.args.flood_rate, self.args.flood_seconds,
            )
        elif mode == "unknown_id":
            self.send({"type": "action", "id": rid + 1000, "action": legal[0]})
        elif mode == "twice":
            self.send(answer, answer)
        elif mode == "not_held":
            hand = set(state.get("hand") or [])
            self.send({"type": "action", "id": rid, "action": next(c for c in PACK if c not in hand)})
        elif mode == "out_of_turn":
            self.send(answer, {"type": "action", "id": rid + 1000, "action": legal[0]})
        elif mode == "wrong_decision":
            self.send({"type": "action", "id": rid, "action": (state.get("hand") or ["Ks"])[0]})
        elif mode == "hello_twice":
            self.send(self.hello())
        else:
            self.send(answer)

    def send_huge(self, rid):
        """10 MB without a newline, from a thread, while this thread goes on reading."""

        def run():
            head = b'{"type":"action","id":%d,"action":"' % rid
            try:
                with self.send_lock:
                    self.sock.sendall(head + b"x" * (10 * 2**20 - len(head)))
                self.log.write("#", "10 MB sent")
            except OSError as exc:
                self.log.write("#", f"10 MB line cut off by {exc!r}")

        self.log.write("#", "sending a 10 MB line with no newline")
        self.flooding = threading.Thread(target=run, daemon=True)
        self.flooding.start()

    def run(self):
        self.connect()
        if self.mode == "nohello":
            for _ in self.lines():  # never say hello; just record the error and the close
                pass
            return 0
        if self.mode == "fork":
            self.fork()
        self.send(self.hello())
        for msg in self.lines():
            kind = msg.get("type")
            if kind == "match_start":  # misbehave again in every match
                self.requests, self.done = 0, False
                t = msg.get("time") or {}
                self.deadline_s = (t.get("move_ms", 2000) + t.get("bank_ms", 0) + t.get("grace_ms", 50)) / 1000
            elif kind == "request":
                try:
                    self.on_request(msg)
                except OSError as exc:
                    self.log.write("#", f"send failed: {exc!r}")
            elif kind == "goodbye":
                break
        if self.flooding is not None:
            self.flooding.join(5)
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", default=os.environ.get("HOSTILE_MODE", "good"), choices=MODES)
    parser.add_argument("--at", type=int, default=int(os.environ.get("HOSTILE_AT", "3")))
    parser.add_argument("--transcript", default=os.environ.get("HOSTILE_TRANSCRIPT", ""))
    parser.add_argument("--pidfile", default=os.environ.get("HOSTILE_PIDFILE", ""))
    parser.add_argument("--flood-rate", type=int, default=int(os.environ.get("HOSTILE_FLOOD_RATE", "20000")))
    parser.add_argument("--flood-seconds", type=float, default=float(os.environ.get("HOSTILE_FLOOD_SECONDS", "1.0")))
    args = parser.parse_args()
    return Bot(args).run()


if __name__ == "__main__":
    sys.exit(main())
