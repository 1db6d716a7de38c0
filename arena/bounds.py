"""Bounds of every number a user gives the arena on the command line or in a contest file.

A number outside its bounds is refused with one line naming the option (or key), the bounds and
the value given, never a traceback and never silently (an integer too large for SQLite's 64-bit
columns used to end the run with ``OverflowError``; a negative deposit with ``BadAmount``).
The bounds are documented in docs/contests.md ("Names and inputs").
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_SEED = 2**63 - 1
"""Seeds (and ids) are stored in SQLite's signed 64-bit integers."""
MAX_MOVE_MS = 3_600_000
"""The longest time per decision: one hour."""
MAX_BANK_MS = 86_400_000
"""The largest time bank (and grace): one day."""
MAX_COUNT = 1_000_000
"""The largest count (matches per pair, pairs, strikes, concurrent matches...)."""

INT_BOUNDS: dict[str, tuple[int, int]] = {
    "seed": (0, MAX_SEED),
    "resume": (0, MAX_SEED),
    "tournament": (1, MAX_SEED),
    "workers": (0, 1024),
    "slots": (1, 64),
    "games": (1, MAX_COUNT),
    "concurrency": (1, 1024),
    "move_ms": (1, MAX_MOVE_MS),
    "bank_ms": (0, MAX_BANK_MS),
    "grace_ms": (0, MAX_BANK_MS),
    "max_strikes": (0, MAX_COUNT),
    "max_illegal": (0, MAX_COUNT),
    "max_pairs": (1, MAX_COUNT),
    "max_matches": (0, MAX_SEED),
    "port": (0, 65535),
    "http_port": (0, 65535),
    "deals": (1, 10 * MAX_COUNT),
    "decisions": (1, 10 * MAX_COUNT),
}
"""Inclusive bounds of the integer options and contest keys, by name."""

SECONDS_BOUNDS = (0.0, 86_400.0)
"""Durations in seconds given in a contest file (``betting_s``, ``reveal_delay_s``,
``shutdown_grace_s``): finite, 0 to one day."""


def check_int(name: str, value: int, lo: int, hi: int) -> int:
    """``value`` if ``lo <= value <= hi``, else ``ValueError`` with one line naming ``name``."""
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be from {lo:,} to {hi:,}, not {value:,}")
    return value


def check_seconds(name: str, value: float) -> float:
    """A finite duration within :data:`SECONDS_BOUNDS`, else ``ValueError`` (one line)."""
    lo, hi = SECONDS_BOUNDS
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{name} must be a number of seconds from {lo:g} to {hi:g}, not {value!r}")
    return value


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An ``argparse`` type: an integer from ``lo`` to ``hi`` inclusive (argparse prints the
    option's name with the message)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        try:
            return check_int("the value", value, lo, hi)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "integer"
    return parse


def option_int(name: str) -> Callable[[str], int]:
    """The ``argparse`` type of the integer option ``name`` (a key of :data:`INT_BOUNDS`)."""
    return int_in(*INT_BOUNDS[name])


def check_contest_numbers(cfg) -> None:  # noqa: ANN001 - an arena.schedule.contest.ContestConfig (no import cycle)
    """``ValueError`` (one line naming the key) for the first number of a contest
    configuration outside its bounds: seeds and counts fit SQLite's integers, ports are ports,
    times are positive where they must be, durations finite."""
    ints = [("seed", cfg.seed, "seed"), ("max_matches", cfg.max_matches, "max_matches"),
            ("concurrency", cfg.concurrency, "concurrency"), ("http_port", cfg.http_port, "http_port"),
            ("max_strikes", cfg.max_strikes, "max_strikes"), ("max_illegal", cfg.max_illegal, "max_illegal"),
            ("[server] port", cfg.server.port, "port"), ("[time] move_ms", cfg.time.move_ms, "move_ms"),
            ("[time] bank_ms", cfg.time.bank_ms, "bank_ms"), ("[time] grace_ms", cfg.time.grace_ms, "grace_ms")]
    for key, value, bounds in ints:
        if value is not None:
            check_int(key, value, *INT_BOUNDS[bounds])
    check_int("[server] max_line", cfg.server.max_line, 1, 2**30)
    check_int("[server] max_conns_per_addr", cfg.server.max_conns_per_addr, 1, MAX_COUNT)
    for key in ("cpu_s", "memory_bytes", "open_files", "processes", "file_bytes", "log_bytes"):
        check_int(f"[limits] {key}", getattr(cfg.limits, key), 1, 2**62)
    check_int("[limits] address_space", cfg.limits.address_space, 0, 2**62)  # 0: no RLIMIT_AS
    if cfg.limits.cgroup not in ("auto", "yes", "no"):
        raise ValueError(f'[limits] cgroup must be "auto", "yes" or "no", not {cfg.limits.cgroup!r}')
    for key, value in (("betting_s", cfg.betting_s), ("reveal_delay_s", cfg.reveal_delay_s),
                       ("shutdown_grace_s", cfg.shutdown_grace_s),
                       ("[server] handshake_timeout_s", cfg.server.handshake_timeout_s),
                       ("[server] send_timeout_s", cfg.server.send_timeout_s)):
        check_seconds(key, value)


MAX_ELO = 2000.0
"""The largest Elo difference an SPRT hypothesis may name (``--elo0``, ``--elo1``)."""


def float_in(lo: float, hi: float) -> Callable[[str], float]:
    """An ``argparse`` type: a finite number from ``lo`` to ``hi`` inclusive (``nan`` and
    ``inf`` refused)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"the value must be a number from {lo:g} to {hi:g}, not {text}")
        return value

    parse.__name__ = "number"
    return parse
