"""Scoring duplicate deals: twin deals compared point by point, and the ratings fitted on them.

In a duplicate-deals tournament (:mod:`arena.schedule.formats.duplicate_deals`) the two matches of a
pair play the same deals with the seats swapped. For deal ``k`` let ``net_A`` be what bot ``a``
scored minus what ``b`` scored in that deal of the first match, and ``net_B`` the same in deal
``k`` of the second match, where ``a`` held the other seat's cards. The *twin-deal score* of
``a`` is 1 if ``net_A + net_B > 0`` (over the same two hands ``a`` made more points than
``b``), ½ if it is 0, 0 otherwise. Whatever luck the deal holds, both bots had both hands, so
it cancels: two bots that play alike draw every twin pair, however lopsided the cards.

A pair of matches of ``N`` deals is one unit of ``N`` games for :func:`arena.stats.rating.fit_units`,
scored by the sum of its twin-deal scores, with robust intervals clustered by pair. The Elo
scale is then that of a twin deal (an advantage of ``d`` means an expected twin-deal score of
``1 / (1 + 10**(-d/400))``), not that of a match; within one tournament the ratings compare as
usual.

Faults: the deals of a half that ended early (a forfeit) are missing from that half; each twin
pair that lacks a half goes to the bot that won the forfeited half (½ if the two halves were
forfeited by different bots). A pair with an aborted or unfinished half does not count.

Per-deal points come from the ``deal_end`` events of the two match logs, whose hash chains are
checked against the last hash recorded in the database (:func:`arena.match.log.verify_chain`),
so a log altered after the fact is refused rather than scored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from arena.match.log import read_bytes, verify_chain
from arena.stats.rating import Fit, fit_units

Half = tuple[str, str, list[list[int]], str | None, bool]
"""One match of a pair: ``(bot0, bot1, points per deal [[seat 0, seat 1], ...], winner name or
None, played out)``; ``played out`` is False for a forfeit."""


def deal_points(log: str | Path | bytes, expected_last: str | None = None) -> list[list[int]]:
    """The points each seat scored in each deal of a match, ``[[seat 0, seat 1], ...]`` in deal
    order, from the ``deal_end`` events of its log (a path, or the log's uncompressed bytes).
    Raises :class:`arena.match.log.ChainError` if the log's hash chain is broken or does not end
    on ``expected_last``, ``OSError`` if it cannot be read."""
    raw = log if isinstance(log, bytes) else read_bytes(log)  # plain or gzip
    verify_chain(raw, expected_last)
    out: list[list[int]] = []
    for line in raw.splitlines():
        if b'"deal_end"' not in line:
            continue
        obj = msgspec.json.decode(line)
        ev = obj.get("event") or {}
        if obj.get("type") == "event" and ev.get("kind") == "deal_end":
            out.append([int(p) for p in ev["points"]])
    return out


def twin_score(a: str, b: str, first: Half, second: Half, deals: int) -> tuple[float, int, int, int]:
    """``a``'s twin-deal score over a pair of ``deals``-deal matches (0 to ``deals``) and its
    ``(wins, losses, draws)`` of twin pairs (see the module docstring). ``first`` and ``second``
    are the two halves, ``a`` and ``b`` their bots (in either seat). ``ValueError`` if a half
    is not between ``a`` and ``b``."""
    halves = []
    for bot0, bot1, points, winner, played in (first, second):
        if {bot0, bot1} != {a, b}:
            raise ValueError(f"half {bot0} vs {bot1} is not a match of {a} and {b}")
        seat_a = 0 if bot0 == a else 1
        halves.append((seat_a, points, winner, played))
    score, wins, losses, draws = 0.0, 0, 0, 0
    for k in range(deals):
        net = 0
        forfeits: set[str | None] = set()
        for seat_a, points, winner, played in halves:
            if k < len(points):
                net += points[k][seat_a] - points[k][1 - seat_a]
            else:
                forfeits.add(winner if not played else None)
        if forfeits:
            s = 1.0 if forfeits == {a} else 0.0 if forfeits == {b} else 0.5
        else:
            s = 1.0 if net > 0 else 0.0 if net < 0 else 0.5
        score += s
        wins += s == 1.0
        losses += s == 0.0
        draws += s == 0.5
    return score, wins, losses, draws


def fit_twin_deals(matches: Iterable[Mapping[str, Any]], deals: int, names: Iterable[str] = (),
                   read: Callable[[Mapping[str, Any]], bytes | None] | None = None) -> Fit:
    """The ratings of a duplicate-deals tournament from its match rows (dicts with ``bot0``,
    ``bot1``, ``status``, ``winner``, ``reason``, ``pair_key``, ``log_path``, ``log_hash``, in
    schedule order), each pair of ``deals``-deal matches one unit (module docstring), robust
    intervals clustered by pair; ``games``/``wins``/... of the ratings count twin pairs.
    ``read(row)`` gives a match's uncompressed log (e.g. the copy a worker on another host
    committed to the database, None if there is none); without it the file at ``log_path`` is
    read. Raises :class:`arena.match.log.ChainError` for a log whose hash chain is broken, and
    ``OSError`` (``FileNotFoundError``) for a played match whose log cannot be found."""
    halves: dict[str, list[Mapping[str, Any]]] = {}
    for m in matches:
        if m["pair_key"] is not None:
            halves.setdefault(m["pair_key"], []).append(m)
    units, tallies = [], []
    for rows in halves.values():
        if len(rows) != 2 or any(r["status"] != "done" for r in rows):
            continue
        got = []
        for r in rows:
            played = not str(r["reason"]).startswith("forfeit")
            points = []
            if r["log_path"]:
                log = read(r) if read is not None else r["log_path"]
                if log is None:
                    raise FileNotFoundError(f"match {r.get('match_key', '?')}: its log is neither at {r['log_path']} "
                                            "nor in the database")
                points = deal_points(log, r["log_hash"])
            got.append((r["bot0"], r["bot1"], points, r["winner"], played))
        a, b = rows[0]["bot0"], rows[0]["bot1"]
        score, w, lo, d = twin_score(a, b, got[0], got[1], deals)
        units.append((a, b, score, deals))
        tallies.append((a, b, w, lo, d))
    return fit_units(units, names, variance="robust", tallies=tallies)
