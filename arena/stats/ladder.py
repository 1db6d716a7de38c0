"""The persistent ladder: every finished match of a game in the database, rated by the
maximum-likelihood fit of :mod:`arena.stats.rating`, recomputed after every result.

Why not an incremental rating (Elo with a K-factor, Glicko-2, TrueSkill)? An incremental rating
depends on the order in which results arrive and, with a fixed K, never settles (its error
stays at the size of one step). The fit over all results is the best estimate the results
allow, the same whatever their order, and it carries an honest interval: a newcomer's interval
is wide and its rating moves a lot with each of its first results (it places quickly), an
established bot's is narrow. Recomputing is cheap: results are aggregated per unit, Newton's
method starts from the stored ratings (a warm start, usually one or two steps), and the
information matrix is only as large as the number of bots.

Units (what varies together, the clusters of the robust interval, :func:`arena.stats.rating.fit_units`):
the two matches of a duplicate pair (same tournament, same ``pair_key``, both finished) form
one unit of two games; every other match is a unit of one game. Aborted matches do not count.

:func:`refit` is what :meth:`arena.store.sqlite.Store.record_result` calls inside its transaction, on
the unit counts of :meth:`arena.store.sqlite.Store.ladder_unit_counts` (the same units, counted in
SQL); :func:`ladder_units` turns match rows into units (tournaments use it).
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


def refit(units: Iterable[Unit], names: Iterable[str] = (), start: Mapping[str, float] | None = None) -> Fit:
    """The ladder's fit: :func:`arena.stats.rating.fit_units` with intervals clustered by unit,
    warm-started from ``start`` (Elo by bot, e.g. the stored ladder)."""
    return fit_units(units, names, variance="robust", start=start)
