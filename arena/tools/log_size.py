"""Bytes and write CPU per match log: ``python -m arena.tools.log_size [--game G] [--policy P] [--matches N]``.

Plays seeded matches on the match core (:class:`arena.match.core.MatchCore`: the referee's
decisions, no sockets, no clock) and writes each log as tournaments and contests do (a
``.jsonl.gz`` through :class:`arena.match.log.MatchLog`, one :meth:`~arena.match.log.MatchLog.write_all`
per output of the core), then verifies it (:func:`arena.match.replay.verify_file`). Policies:

* ``instant``: what ``sample_bots/bench/instant`` answers: the first legal action, the compact form
  (a compact discard: the first ``min`` cards). Écarté's longest matches: both bots propose and
  accept until the stock runs out, about 470 decisions a match;
* ``random``: a legal action at random (seeded), the full form.

It prints, per policy, the mean and largest compressed bytes per match, the mean uncompressed
bytes, and the CPU time (``time.process_time``, milliseconds a match) spent in the log's writes,
its compression and its close: a CPU figure, not a wall-clock one, but still noisy on a busy
machine. The log format is whatever :mod:`arena.match.log` writes (docs/contests.md, "Disk per
match", has the figures of each version).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.match.core import MatchConfig, MatchCore, result_line
from arena.match.log import MatchLog, read_bytes
from arena.match.replay import verify_file

POLICIES = ("instant", "random")


def _answer(core: MatchCore, seat: int, policy: str, rng: random.Random) -> Any:
    """The action ``policy`` plays for ``seat``'s pending decision."""
    engine = core.engine
    if policy == "instant":
        choice = engine.choice() if core.compact[seat] else None
        return list(choice.from_[: choice.min]) if choice is not None else engine.legal_actions()[0]
    return rng.choice(engine.legal_actions())


def play_logged(path: str | Path, game: str = "ecarte", seed: int = 1, policy: str = "instant") -> float:
    """Play one seeded match of ``game`` between two bots of ``policy`` (see the module docstring)
    into a log at ``path``; returns the CPU seconds spent writing the log (its lines, compression
    and close). ``ValueError`` for an unknown game or policy."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    compact = policy == "instant"
    core = MatchCore(f"t1-m{seed:04d}", seed, MatchConfig(game=game), (f"{policy}-0", f"{policy}-1"),
                     (compact, compact))
    rng = random.Random(seed)
    clock = time.process_time
    spent = 0.0
    log = MatchLog(path)
    t = clock()
    log.write_all(core.start().log)
    out = core.begin()
    log.write_all(out.log)
    spent += clock() - t
    while core.result is None:
        assert out.asked is not None
        seat, rid = out.asked
        core.sent(seat, 0)
        out = core.answer(seat, rid, _answer(core, seat, policy, rng), 1_000_000)
        t = clock()
        log.write_all(out.log)
        spent += clock() - t
    t = clock()
    log.write(result_line(core.result))
    log.close()
    spent += clock() - t
    if log.error is not None:
        raise log.error
    return spent


def measure(game: str, policy: str, matches: int) -> dict[str, float]:
    """Play ``matches`` seeded matches (seeds 1 to ``matches``) and return ``{"mean", "max"}``
    (compressed bytes per match), ``"raw"`` (uncompressed bytes, the mean) and ``"cpu_ms"`` (CPU
    milliseconds writing a log, the mean). Every log is verified (:class:`arena.match.log.ChainError`
    or :class:`arena.match.replay.ReplayError` if one does not)."""
    sizes, raws, cpu = [], [], 0.0
    with tempfile.TemporaryDirectory(prefix="arena-log-size-") as tmp:
        for seed in range(1, matches + 1):
            path = Path(tmp) / f"{seed}.jsonl.gz"
            cpu += play_logged(path, game, seed, policy)
            verify_file(path)
            sizes.append(os.path.getsize(path))
            raws.append(len(read_bytes(path)))
    return {"mean": sum(sizes) / matches, "max": max(sizes), "raw": sum(raws) / matches,
            "cpu_ms": 1000 * cpu / matches}


def main(argv: list[str] | None = None) -> int:
    """Print the figures of :func:`measure` for each game and policy asked."""
    ap = argparse.ArgumentParser(prog="python -m arena.tools.log_size", description=__doc__.splitlines()[0])
    ap.add_argument("--game", choices=("ecarte", "piquet"), action="append", help="default: both")
    ap.add_argument("--policy", choices=POLICIES, action="append", help="default: both")
    ap.add_argument("--matches", type=int, default=20, help="seeded matches per game and policy (default 20)")
    args = ap.parse_args(argv)
    if args.matches < 1:
        ap.error("--matches must be at least 1")
    for game in args.game or ("ecarte", "piquet"):
        for policy in args.policy or POLICIES:
            m = measure(game, policy, args.matches)
            print(f"{game:7s} {policy:8s} {args.matches} matches: {m['mean']:,.0f} bytes a match (largest "
                  f"{m['max']:,.0f}), {m['raw']:,.0f} uncompressed; writing {m['cpu_ms']:.2f} ms CPU a match")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
