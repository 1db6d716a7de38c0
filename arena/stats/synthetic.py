"""Seeded synthetic fields for the ladder's fit: bots with known strengths and the units they
played, as :meth:`arena.store.sqlite.Store.ladder_units` returns them.

A field of ``n`` bots has true strengths drawn from a normal law (SD ``spread`` Elo, mean
:data:`arena.stats.rating.ANCHOR`). Each bot meets about ``opponents`` others, chosen either at
random (``graph="random"``: the information matrix is an expander, every bot is a few steps from
every other) or among its neighbours in strength (``graph="neighbours"``: bot of rank ``r`` meets
ranks ``r ± 1 .. r ± opponents/2``, what a ladder pairing by rating makes: a band, a long chain
from the weakest to the strongest), or half of each (``graph="mixed"``: a band with shortcuts).
``n * per_bot`` units are then dealt to these pairs at random (so each bot takes part in about
``2 * per_bot`` units, as in issue 21's table: 200 bots, 8,000 units). A unit is a duplicate
pair of 2 games with probability ``paired`` (the two games share the deal's luck, ``± luck``
natural-log units that change sides with the seat swap, so their scores are negatively
correlated), else one game. A game is drawn with probability ``draw`` (less in a lopsided game,
so that the expected score stays the logistic one) and otherwise won with the logistic
probability of the strength difference.

``python -m arena.stats.synthetic`` prints the fit's times (cold and warm start) on 200, 1,000
and 10,000 bots with 40 units per bot, next to the dense reference fit (tests/dense_fit.py) on
200 bots in the same run: see :func:`main`.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping

import msgspec
import numpy as np

from arena.stats.ladder import refit
from arena.stats.rating import ANCHOR

GRAPHS = ("random", "neighbours", "mixed")
"""Who meets whom: random opponents, rating neighbours, or half of each."""
Units = dict[tuple[str, str, float, int], int]
"""``{(a, b, points of a, games): count}``: the ladder's units, as the store keeps them."""


class Field(msgspec.Struct):
    """A synthetic field: ``names`` (sorted), their true Elo ratings ``elo`` (by name, mean
    :data:`ANCHOR`), the ``units`` they played and the parameters that made it."""

    names: list[str]
    elo: dict[str, float]
    units: Units
    graph: str
    opponents: int
    per_bot: int
    seed: int

    @property
    def games(self) -> int:
        """Games played in all (a duplicate pair counts 2)."""
        return sum(g * c for (_, _, _, g), c in self.units.items())


def synthetic_field(
    n: int,
    per_bot: int = 40,
    opponents: int = 40,
    graph: str = "random",
    *,
    paired: float = 0.5,
    draw: float = 0.1,
    luck: float = 1.0,
    spread: float = 250.0,
    seed: int = 0,
) -> Field:
    """A seeded field of ``n`` bots (``n >= 2``) that played ``n * per_bot`` units, each bot
    meeting about ``opponents`` others (``graph`` ``"random"`` or ``"neighbours"``, see the module
    docstring). ``paired`` is the share of units that are duplicate pairs of 2 games, ``draw``
    the probability of a draw in an even game, ``luck`` the deal's advantage (natural-log units)
    shared by the two games of a pair, ``spread`` the SD of the true ratings (Elo). The same
    arguments give the same field. Raises ``ValueError`` for an unknown ``graph`` or ``n < 2``."""
    if n < 2:
        raise ValueError(f"a field needs at least 2 bots, not {n}")
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {', '.join(GRAPHS)}, not {graph!r}")
    rng = np.random.default_rng(seed)
    width = len(str(n - 1))
    names = [f"bot{i:0{width}d}" for i in range(n)]
    elo = rng.normal(0.0, spread, n)
    elo += ANCHOR - elo.mean()
    half = max(1, min(opponents // 2, n - 1))
    near = {"random": 0, "neighbours": half, "mixed": half // 2}[graph]
    a_rand = np.repeat(np.arange(n), half - near)
    b_rand = (a_rand + rng.integers(1, n, a_rand.size)) % n  # never a bot against itself
    order = np.argsort(elo, kind="stable")
    rank = np.repeat(np.arange(n), near)
    far = rank + np.tile(np.arange(1, near + 1), n)
    keep = far < n
    a = np.concatenate([a_rand, order[rank[keep]]])
    b = np.concatenate([b_rand, order[far[keep]]])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    edges = np.unique(lo * n + hi)
    total = n * per_bot
    e = edges[rng.integers(0, edges.size, total)]
    first, second = e // n, e % n
    swap = rng.random(total) < 0.5  # who is listed first
    first, second = np.where(swap, second, first), np.where(swap, first, second)
    games = np.where(rng.random(total) < paired, 2, 1)
    theta = (elo[first] - elo[second]) * (math.log(10.0) / 400.0)
    side = np.where(rng.random(total) < 0.5, 1.0, -1.0) * luck
    score = _game(rng, theta + side, draw)
    score = score + np.where(games == 2, _game(rng, theta - side, draw), 0.0)
    key = np.stack([first, second, (2 * score).astype(np.int64), games], axis=1)
    distinct, counts = np.unique(key, axis=0, return_counts=True)
    units: Units = {}
    for (i, j, s2, g), c in zip(distinct.tolist(), counts.tolist()):
        units[(names[i], names[j], s2 / 2.0, g)] = c
    return Field(names=names, elo=dict(zip(names, elo.tolist())), units=units, graph=graph,
                 opponents=opponents, per_bot=per_bot, seed=seed)


def _game(rng: np.random.Generator, theta: np.ndarray, draw: float) -> np.ndarray:
    """One game's score (1, ½ or 0) for each strength difference ``theta`` (natural-log units)."""
    expect = 1.0 / (1.0 + np.exp(-theta))
    d = np.minimum(draw, 1.8 * np.minimum(expect, 1.0 - expect))
    u = rng.random(theta.size)
    return np.where(u < expect - d / 2, 1.0, np.where(u < expect + d / 2, 0.5, 0.0))


def perturb(field: Field, seed: int, results: int = 1) -> Units:
    """The units of ``field`` after ``results`` more one-game results between random pairs that
    already met (what a warm refit sees: the previous fit is the start)."""
    rng = np.random.default_rng(seed)
    units = dict(field.units)
    keys = list(units)
    for k in rng.integers(0, len(keys), results).tolist():
        a, b, _, _ = keys[k]
        unit = (a, b, float(rng.integers(0, 3)) / 2.0, 1)
        units[unit] = units.get(unit, 0) + 1
    return units


def _timed(fn, *args, **kwargs):
    """``(result, wall seconds, CPU seconds of this process)``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    """Print the fit's times on synthetic fields of 200, 1,000 and 10,000 bots with 40 units per
    bot (about 80 per bot, 40 opponents each), for each graph: a cold fit (every bot starting at
    the anchor) and a warm refit after one more result (started from the cold fit's ratings,
    what the background fitter does), wall and CPU seconds (the machine may be shared: the CPU
    time is this process's), how the intervals were computed and the probing's own check; then
    the dense reference (tests/dense_fit.py, when it is importable: run from the repository
    root) on 200 bots in the same run, the baseline of this machine today. Arguments: sizes to
    run instead of the default ones."""
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [200, 1000, 10000]
    print("bots   graph       units    pairs   cold wall/cpu s   warm wall/cpu s   intervals  check")
    for n in sizes:
        for graph in GRAPHS:
            f = synthetic_field(n, 40, 40, graph, seed=n)
            cold, w_cold, c_cold = _timed(refit, f.units, f.names)
            start: Mapping[str, float] = {r.name: r.elo for r in cold.ratings}
            warm, w_warm, c_warm = _timed(refit, perturb(f, 1), f.names, start)
            pairs = len({(min(a, b), max(a, b)) for a, b, _, _ in f.units})
            print(f"{n:>6} {graph:<10} {len(f.units):>7} {pairs:>8}   {w_cold:6.2f} {c_cold:6.2f}     "
                  f"{w_warm:6.2f} {c_warm:6.2f}     {warm.method:<9} {100 * warm.check:4.1f}%", flush=True)
    try:
        sys.path.insert(0, ".")
        from tests.dense_fit import dense_fit_units
    except ImportError:
        print("dense reference: tests/dense_fit.py not found (run from the repository root)")
        return 0
    f = synthetic_field(200, 40, 40, "random", seed=200)
    cold, w_cold, c_cold = _timed(dense_fit_units, f.units, f.names, "robust")
    start = {r.name: r.elo for r in cold.ratings}
    _, w_warm, c_warm = _timed(dense_fit_units, perturb(f, 1), f.names, "robust", start)
    print(f"dense reference, 200 bots, random: cold {w_cold:.2f} s wall / {c_cold:.2f} s CPU, "
          f"warm {w_warm:.2f} s wall / {c_warm:.2f} s CPU")
    return 0


if __name__ == "__main__":  # pragma: no cover - the printed benchmark
    raise SystemExit(main())
