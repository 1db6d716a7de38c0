#!/usr/bin/env python3
"""A bot that tries to cheat and sabotage, for the isolation tests (standard library only).

It connects like a sample bot (over stdin/stdout when ``ARENA_TRANSPORT=stdio``) and plays
``legal[0]`` to every request. At start, and again at its first request of each match (when
the match log is being written), it probes what a launched bot must never reach, and prints one
line ``PROBE {json}`` to stderr (the launcher keeps it in the bot's output log):

* ``tokens``: other bots' ``ARENA_TOKEN`` values read from ``/proc/<pid>/environ``;
* ``killed``: pids it managed to SIGKILL among ``ATTACK_PIDS`` (comma-separated, given by the
  test: it never signals a process it was not told to, since unsandboxed it could reach any);
* ``secret``: the first line of ``ATTACK_SECRET`` (a file in another bot's directory);
* ``logs``: cards found in match logs under ``ATTACK_LOGS`` (``deck`` events), ``log_files``
  how many files it listed there, after trying to unmount whatever covers that directory and
  the database (``unmounted``: the paths where ``umount2`` succeeded);
* ``db``: True if ``ATTACK_DB`` (or its ``-wal``) could be read and holds SQLite data;
* ``network``: True if a TCP connection to ``ATTACK_NET`` (``host:port``) opened.

The ``ATTACK_*`` settings come from the environment or from ``KEY=VALUE`` arguments (a
manifest has no environment); with ``ATTACK_ONLY=1`` it exits after the first probe. The test
only ever names pids and paths of its own processes and temporary files.
"""

import ctypes
import json
import os
import signal
import socket
import sys
import zlib


def other_tokens(mine):
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        for item in env:
            if item.startswith(b"ARENA_TOKEN=") and item[12:].decode(errors="replace") != mine:
                found[int(pid)] = item[12:].decode(errors="replace")
    return found


def probe():
    mine = os.environ.get("ARENA_TOKEN", "")
    report = {"tokens": [], "killed": [], "secret": None, "logs": [], "log_files": 0, "db": False,
              "network": False, "unmounted": []}
    libc = ctypes.CDLL(None, use_errno=True)
    for path in (os.environ.get("ATTACK_LOGS"), os.environ.get("ATTACK_DB")):
        if path and libc.umount2(path.encode(), 2) == 0:  # MNT_DETACH
            report["unmounted"].append(path)
    tokens = other_tokens(mine)
    report["tokens"] = sorted(set(tokens.values()))
    for pid in [int(p) for p in os.environ.get("ATTACK_PIDS", "").split(",") if p.strip()]:
        try:
            os.kill(pid, signal.SIGKILL)
            report["killed"].append(pid)
        except OSError:
            pass
    try:
        with open(os.environ.get("ATTACK_SECRET", "/nonexistent")) as fh:
            report["secret"] = fh.readline().strip()
    except OSError:
        pass
    for root, _dirs, files in os.walk(os.environ.get("ATTACK_LOGS", "/nonexistent")):
        for f in files:
            report["log_files"] += 1
            try:
                with open(os.path.join(root, f), "rb") as fh:
                    data = fh.read()
                if data[:2] == b"\x1f\x8b":  # a gzip log: whatever has been compressed so far
                    data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
                for line in data.decode("utf-8", "replace").splitlines():
                    if '"deck"' in line:
                        report["logs"].append(json.loads(line).get("cards", [])[:5])
            except (OSError, ValueError, zlib.error):
                pass
    db = os.environ.get("ATTACK_DB", "/nonexistent")
    for path in (db, db + "-wal"):
        try:
            with open(path, "rb") as fh:
                data = fh.read(1 << 20)
            if data:  # a hidden database reads as /dev/null (empty) or does not exist
                report["db"] = True
        except OSError:
            pass
    net = os.environ.get("ATTACK_NET")
    if net:
        host, port = net.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            report["network"] = True
        except OSError:
            pass
    print("PROBE " + json.dumps(report), file=sys.stderr, flush=True)


class Stdio:
    def sendall(self, data):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def recv(self, size):
        return os.read(sys.stdin.fileno(), size)


def main():
    os.environ.update(arg.split("=", 1) for arg in sys.argv[1:] if "=" in arg)
    probe()
    if os.environ.get("ATTACK_ONLY") == "1":
        return 0
    if os.environ.get("ARENA_TRANSPORT") == "stdio":
        sock = Stdio()
    else:
        sock = socket.create_connection((os.environ.get("ARENA_HOST", "127.0.0.1"), int(os.environ["ARENA_PORT"])))
    hello = {"type": "hello", "name": os.environ.get("ARENA_NAME", "attacker"),
             "token": os.environ.get("ARENA_TOKEN", ""), "protocol": 1, "role": "bot"}
    sock.sendall((json.dumps(hello) + "\n").encode())
    buf, probed = b"", set()
    while True:
        data = sock.recv(65536)
        if not data:
            return 0
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            msg = json.loads(line) if line.strip() else {}
            if msg.get("type") == "request":
                if msg.get("match_id") not in probed:
                    probed.add(msg.get("match_id"))
                    probe()
                answer = {"type": "action", "id": msg["id"], "action": msg["legal"][0]}
                sock.sendall((json.dumps(answer) + "\n").encode())
            elif msg.get("type") == "goodbye":
                return 0


if __name__ == "__main__":
    sys.exit(main())
