"""The persistent ladder: every finished match of a game in the database, rated by the
maximum-likelihood fit of :mod:`arena.stats.rating` over all of them.

Why not an incremental rating (Elo with a K-factor, Glicko-2, TrueSkill)? An incremental rating
depends on the order in which results arrive and, with a fixed K, never settles (its error
stays at the size of one step). The fit over all results is the best estimate the results
allow, the same whatever their order, and it carries an honest interval: a newcomer's interval
is wide and its rating moves a lot with each of its first results (it places quickly), an
established bot's is narrow. A rating whose interval is wider than
:data:`arena.stats.rating.PROVISIONAL_CI95` is provisional (:attr:`arena.stats.rating.Rating.provisional`).

Cost. The results are aggregated per unit and the fit's work grows with the distinct units and
the pairs of bots that met, not with the matches nor the cube of the field: the information
matrix is sparse (one entry per pair that met), Newton's method starts from the stored ratings
(a warm start: two or three steps), its steps are solved by a preconditioned conjugate gradient
beyond 400 bots, and the intervals are exact up to 2,000 bots and probed beyond
(:mod:`arena.stats.information`, where the accuracy of the probing is stated). Measured on the
2-core development machine, shared with other work (``python -m arena.stats.synthetic``): 10,000
bots with 40 units each (about 360,000 distinct units, 173,000 pairs) take 0.7-0.9 s of CPU for
a warm refit and 0.8-1.2 s for a cold fit, that is 0.9-1.4 s of wall time with a load of 2.7 on
the 2 cores and 2-3.7 s with a load of 4-7; 1,000 bots 0.1 s; the dense fit this replaced took
4-5 s of CPU at 200 bots in the same runs. The fit belongs off the result's write transaction:
the store records the result and its unit count, and a background fitter calls :func:`refit`.

Units (what varies together, the clusters of the robust interval, :func:`arena.stats.rating.fit_units`):
the two matches of a duplicate pair (same tournament, same ``pair_key``, both finished) form
one unit of two games; every other match is a unit of one game. Aborted matches do not count.

:func:`refit` takes the unit counts the store keeps (:meth:`arena.store.sqlite.Store.ladder_units`,
the same units :meth:`arena.store.sqlite.Store.ladder_unit_counts` counts in SQL);
:func:`ladder_units` turns match rows into units (tournaments use it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from arena.stats.rating import Fit, fit_units

Unit = tuple[str, str, float, int]
"""``(a, b, points of a, games)``: one match (1 game) or one duplicate pair (2 games)."""


def ladder_units(rows: Iterable[tuple[object, str, str, int | None, str | None]]) -> list[Unit]:
    """Units from finished matches ``(tournament_id, bot0, bot1, winner_seat, pair_key)`` in
    the order they were played: the two matches of a duplicate pair (same tournament and pair
    key) become one unit of 2 games scored from the first match's seat-0 bot; any other match
    (unpaired, or a pair whose other half is not finished) a unit of 1 game. ``winner_seat``
    ``None`` is a draw (½)."""
    singles: dict[tuple[object, str], Unit] = {}
    out: list[Unit | None] = []
    slot: dict[tuple[object, str], int] = {}
    for tid, b0, b1, w, pair in rows:
        s0 = 1.0 if w == 0 else 0.0 if w == 1 else 0.5
        if pair is None:
            out.append((b0, b1, s0, 1))
            continue
        key = (tid, pair)
        first = singles.pop(key, None)
        if first is None:
            singles[key] = (b0, b1, s0, 1)
            slot[key] = len(out)
            out.append(None)
        else:
            a, b, sa, _ = first
            out[slot.pop(key)] = (a, b, sa + (s0 if b0 == a else 1.0 - s0), 2)
    for key, unit in singles.items():  # a pair with one half finished: a lone match
        out[slot[key]] = unit
    return [u for u in out if u is not None]


def refit(units: Iterable[Unit] | Mapping[Unit, int], names: Iterable[str] = (),
          start: Mapping[str, float] | None = None) -> Fit:
    """The ladder's fit: :func:`arena.stats.rating.fit_units` with intervals clustered by unit,
    warm-started from ``start`` (Elo by bot, e.g. the stored ladder). ``units`` is a list of
    units or, what the store keeps, a mapping from each distinct unit to its count. Returns the
    :class:`arena.stats.rating.Fit` (ratings best first; :meth:`~arena.stats.rating.Fit.neighbour_sd`
    for the separation marks of a leaderboard). Raises ``ValueError`` for an invalid unit."""
    return fit_units(units, names, variance="robust", start=start)
