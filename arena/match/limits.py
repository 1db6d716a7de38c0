"""Every limit of a match and of a bot's connection, in one struct.

:class:`Limits` is the one place the numbers live: units in the names (``_ms`` milliseconds,
``_bytes`` bytes, plain names are counts), ``msgspec.Meta`` constraints that refuse nonsense
when a struct is decoded, and a docstring per field citing the rule it implements. The other
config structs point here rather than repeat a number: :class:`arena.match.referee.MatchConfig`
(fault policy), :class:`arena.net.server.ServerConfig` (handshake and send time-outs),
:class:`arena.match.core.ConnectionCore` (the error budget), the scheduler's admission control
(:mod:`arena.schedule.admission`). Their keys in contest files and on the wire are unchanged.

The time control's three numbers are the wire's: ``protocol.messages.TimeControl`` carries them in
``match_start`` (docs/protocol.md §10.4), and its defaults are read from here's fields' defaults
(the ``protocol`` package never imports ``arena``, so the wire struct states them and this struct
reads them back: one number each, still).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from protocol.framing import DEFAULT_MAX_LINE
from protocol.messages import TimeControl

_WIRE_TIME = TimeControl()


class Limits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The limits of one match and its connections (defaults: :data:`LIMITS`)."""

    move_ms: Annotated[int, Meta(gt=0)] = _WIRE_TIME.move_ms
    """Time a decision may take for free (ecarte.md §E8.1; docs/protocol.md §10.4). Default 2,000."""
    bank_ms: Annotated[int, Meta(ge=0)] = _WIRE_TIME.bank_ms
    """A bank for the whole match, drawn on beyond ``move_ms`` (§10.4). Default 0 (no bank)."""
    grace_ms: Annotated[int, Meta(ge=0)] = _WIRE_TIME.grace_ms
    """Transport allowance after ``move_ms + bank``, never announced as usable time (§10.4). Default 50."""

    on_timeout: Literal["forfeit", "auto"] = "forfeit"
    """ecarte.md §E8.1: a timeout forfeits, or (``auto``) the referee plays the first legal action
    and counts a strike (docs/protocol.md §10.5). Default ``forfeit``."""
    max_strikes: Annotated[int, Meta(ge=0)] = 3
    """§E8.1: strikes (timeouts played by the referee under ``auto``) before a timeout forfeits. Default 3."""
    max_illegal: Annotated[int, Meta(ge=0)] = 0
    """Illegal actions a seat may make in a match, each answered with an error and asked again;
    one more forfeits (§E8.1 "exceeds the illegal-action allowance"; docs/protocol.md §10.6). Default 0."""

    max_line_bytes: Annotated[int, Meta(ge=1024)] = DEFAULT_MAX_LINE
    """Longest line a client may send, newline excluded (docs/protocol.md §2). Default 65,536."""
    max_errors: Annotated[int, Meta(ge=1)] = 100
    """Protocol faults a connection may commit in its life before it is closed with
    ``too_many_errors`` (docs/protocol.md §11): a flood of garbage costs bounded work. Default 100."""
    long_line_bytes: Annotated[int, Meta(ge=1)] = 16 * 1024
    """A request line at least this long is named in its timeout's message: a bot with a small read
    buffer never sees it (docs/protocol.md §2, §8.13). Default 16,384."""
    send_timeout_ms: Annotated[int, Meta(gt=0)] = 10_000
    """A write to a bot that cannot finish in this time means the bot is gone: ``forfeit_disconnect``
    (docs/protocol.md §10.3, §12). Default 10,000."""
    close_linger_ms: Annotated[int, Meta(ge=0)] = 1_000
    """When the server closes a connection for a fatal error (``too_many_errors``,
    ``line_too_long``), it first stops writing and reads on, discarding, for up to this long
    (and ``max_line_bytes`` at most):
    closing with unread bytes would reset the connection and the client could lose its last
    error messages. Default 1,000."""
    handshake_timeout_ms: Annotated[int, Meta(gt=0)] = 5_000
    """A client's first line (``hello``) must arrive within this time (``handshake_timeout``,
    docs/protocol.md §11). Default 5,000."""

    admission_lag_ms: Annotated[float, Meta(gt=0)] = 20.0
    """Admission control (docs/protocol.md §10.4, "What is charged"): no new match starts while the
    server's event loop takes longer than this to go round (smoothed), so the server stays below
    saturation and a bot's answer never waits long in its queue. Default 20."""
    admission_poll_ms: Annotated[int, Meta(gt=0)] = 5
    """How often a held match start looks at the loop's lag again. Default 5."""

    def time_control(self) -> TimeControl:
        """The wire's ``match_start.time`` for these limits."""
        return TimeControl(move_ms=self.move_ms, bank_ms=self.bank_ms, grace_ms=self.grace_ms)


LIMITS = Limits()
"""The defaults, for structs that point at a number rather than repeat it."""


class FleetLimits(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The time-outs of a fleet of launched bots (:mod:`arena.schedule.fleet`): launching,
    connecting, saying goodbye and stopping, for the tournament, the worker and the contest
    alike (defaults: :data:`FLEET`). Milliseconds, like :class:`Limits`."""

    connect_ms: Annotated[int, Meta(gt=0)] = 20_000
    """A launched copy must say ``hello`` within this time, else it did not start. Default 20,000
    (a tournament's ``connect_timeout_s`` and a worker's setup override it)."""
    hello_poll_ms: Annotated[int, Meta(gt=0)] = 100
    """While waiting for a launched copy's ``hello``: how often to look whether its process exited. Default 100."""
    goodbye_ms: Annotated[int, Meta(gt=0)] = 1_000
    """Time the ``goodbye`` line to one bot may take (docs/protocol.md §6.2); a bot that does not
    read it is closed anyway. Default 1,000."""
    stop_ms: Annotated[int, Meta(gt=0)] = 3_000
    """After goodbye, the time all the fleet's processes get to exit (then SIGKILL). Default 3,000."""
    exit_grace_ms: Annotated[int, Meta(ge=0)] = 1_000
    """One process: time to exit on its own after goodbye before SIGTERM (docs/protocol.md §5). Default 1,000."""
    term_grace_ms: Annotated[int, Meta(ge=0)] = 1_000
    """One process: time to exit after SIGTERM before SIGKILL. Default 1,000."""
    reap_ms: Annotated[int, Meta(ge=0)] = 2_000
    """One process: time to wait for it to be gone after SIGKILL. Default 2,000."""
    worker_stop_ms: Annotated[int, Meta(gt=0)] = 5_000
    """A local worker process (``arena worker``) told to stop (SIGTERM: it releases its match and
    stops its bots) gets this long before SIGKILL. Default 5,000."""
    process_poll_ms: Annotated[int, Meta(gt=0)] = 50
    """How often a child process (a local worker) is looked at while it runs or stops. Default 50."""
    respawn_ms: Annotated[int, Meta(ge=0)] = 1_000
    """A contest's local worker that exited is started again after this long. Default 1,000."""
    watch_ms: Annotated[int, Meta(gt=0)] = 1_000
    """How often a contest looks at its launched bots (a dead copy relaunched, the states
    published for ``arena bots list``). Default 1,000."""
    flush_ms: Annotated[int, Meta(ge=0)] = 50
    """At shutdown, time the spectators' writers get to send their ``goodbye`` before the bots
    are told. Default 50."""
    exit_poll_ms: Annotated[int, Meta(gt=0)] = 20
    """How often a launched bot's process is looked at while waiting for it to exit."""
    rescan_ms: Annotated[int, Meta(gt=0)] = 500
    """The contest's scheduler looks at the ready bots again at least this often when nothing
    told it of a change (bots come and go)."""
    refusal_send_ms: Annotated[int, Meta(gt=0)] = 1_000
    """Longest wait to send a refusal (``server_full``, ``rate_limited``...) before closing."""


FLEET = FleetLimits()
"""The fleet's defaults."""


__all__ = ["FLEET", "LIMITS", "FleetLimits", "Limits"]
