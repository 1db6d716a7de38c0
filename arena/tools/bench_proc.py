"""What ``arena bench``'s phases share: the time caps, the loopback host, newline framing for
the bench's own endpoints, and the ``--role`` subprocesses (``python -m arena.tools.bench
--role ...``) that play the bots, the ping-pong client and the flooders."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from typing import Any

import msgspec
import trio

DEFAULT_MAX_SECONDS = 25.0
"""Time cap of one phase in seconds: a phase stops early (and reports what it did) after it,
so a whole run stays near a minute even on a slow or busy machine."""

STARTUP_TIMEOUT_S = 30.0
"""Seconds allowed for a subprocess to start, connect and (bots) be authenticated."""

HOST = "127.0.0.1"

encode_json = msgspec.json.Encoder().encode


class Lines:
    """Newline framing for the bench's own endpoints (bots, ping-pong client and server).

    :meth:`next` returns the next line without its ``\\n``, or None at end of stream (or when
    the peer reset the connection).
    """

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self._tail = b""
        self._ready: deque[bytes] = deque()

    async def next(self) -> bytes | None:
        """The next complete line, or None at end of stream."""
        while not self._ready:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                return None
            *lines, self._tail = (self._tail + data).split(b"\n")
            self._ready.extend(lines)
        return self._ready.popleft()


def role_command(*args: str) -> list[str]:
    """The command line running this module in ``--role ...`` mode with this Python."""
    return [sys.executable, "-m", "arena.tools.bench", *args]


class Child:
    """A ``--role`` subprocess run to its end by :meth:`run` (start it in a nursery).

    Its last stdout line is a JSON report, returned by :meth:`report`. Cancelling :meth:`run`
    kills the process.
    """

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.done = trio.Event()
        self.result: subprocess.CompletedProcess[bytes] | None = None

    async def run(self) -> None:
        """Run the process until it exits."""
        try:
            self.result = await trio.run_process(
                self.command, capture_stdout=True, capture_stderr=True, check=False
            )
        finally:
            self.done.set()

    def failure(self) -> str:
        """A description of how the process ended (for error messages)."""
        if self.result is None:
            return "still running"
        err = self.result.stderr.decode(errors="replace").strip()
        return f"exit status {self.result.returncode}: {err[-2000:]}"

    async def report(self, timeout_s: float) -> dict[str, Any]:
        """Wait up to ``timeout_s`` seconds for the exit; return the parsed JSON report."""
        with trio.move_on_after(timeout_s):
            await self.done.wait()
        if self.result is None or self.result.returncode != 0:
            raise RuntimeError(f"bench subprocess {self.command[3:5]} failed: {self.failure()}")
        lines = self.result.stdout.splitlines()
        if not lines:
            raise RuntimeError(f"bench subprocess {self.command[3:5]} printed no report: {self.failure()}")
        return json.loads(lines[-1])
