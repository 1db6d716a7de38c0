"""Match pairs against deal pairs on the sample bots, at equal numbers of deals.

    python tools/duplicate_deals_study.py [--games 200] [--deals 6] [--seed 1] [--out DIR]

Plays, over real TCP with the four quick sample bots (random, greedy, highcard, cautious):

1. today's duplicate pairs: a round-robin of ``--games`` matches per pair of bots, each match
   to the target (5 points), rated on the match;
2. duplicate deals: a round-robin of pairs of ``--deals``-deal matches with as many deals in
   all as (1) played, rated on twin deals (arena/stats/deal_pairs.py).

The two fits are on different Elo scales (a match against a twin deal), so an interval's width
alone does not compare them. The script prints, for each: the mean ±95% half-width, that width
scaled to one match (``width * sqrt(matches)``), and the scale-free figure that decides how
many games it takes to tell bots apart: the mean over pairs of bots of ``z^2 = (difference /
its standard deviation)^2``, per 1000 deals. The ratio of the two ``z^2`` per deal is how many
times fewer deals the better format needs for the same separation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.match.referee import MatchConfig  # noqa: E402
from arena.schedule.launcher import load_manifest  # noqa: E402
from arena.schedule.tournament import TournamentConfig, run_tournament  # noqa: E402
from arena.store.sqlite import Store  # noqa: E402
from protocol.messages import Rules  # noqa: E402

QUICK = ("random", "greedy", "highcard", "cautious")


def summarise(label: str, report, deals: int) -> dict[str, float]:
    fit = report.fit
    names = fit.names
    z2 = [((fit[a].elo - fit[b].elo) / fit.sd_diff(a, b)) ** 2 for i, a in enumerate(names) for b in names[i + 1 :]]
    width = statistics.fmean(r.ci95 for r in fit.ratings)
    row = {"matches": report.matches, "deals": deals, "width": width,
           "width_per_match": width * report.matches ** 0.5, "z2_per_1000_deals": 1000 * statistics.fmean(z2) / deals}
    print(f"{label}: {report.matches} matches, {deals} deals; mean ±95% {width:.1f} Elo "
          f"({row['width_per_match']:.0f} Elo for one match's worth); mean z^2 {statistics.fmean(z2):.1f} "
          f"= {row['z2_per_1000_deals']:.2f} per 1000 deals")
    for r in fit.ratings:
        print(f"    {r.name:9} {r.elo:6.0f} ± {r.ci95:4.0f}")
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            z = (fit[x].elo - fit[y].elo) / fit.sd_diff(x, y)
            row[f"{x}-{y}"] = 1000 * z * z / deals
            print(f"    {x} - {y}: z {z:+.2f}, z^2 per 1000 deals {row[f'{x}-{y}']:.2f}")
    return row


async def main(games: int, deals: int, seed: int, out: Path) -> None:
    manifests = [load_manifest(ROOT / "sample_bots" / f"{n}.toml") for n in QUICK]
    store = Store(out / "study.db")
    match_cfg = TournamentConfig(games=games, seed=seed, logs_dir=str(out / "logs"), concurrency=2)
    match_report = await run_tournament(store, manifests, match_cfg)
    played = sum(m["deals"] or 0 for m in store.matches(match_report.tournament_id))
    a = summarise("match pairs (to 5 points)", match_report, played)
    pairs_per_matchup = max(1, round(played / deals / 6 / 2))
    deal_cfg = TournamentConfig(format="duplicate-deals", games=2 * pairs_per_matchup, seed=seed,
                                logs_dir=str(out / "logs"), concurrency=2,
                                match=MatchConfig(rules=Rules(deals=deals)))
    deal_report = await run_tournament(store, manifests, deal_cfg)
    b = summarise(f"deal pairs ({deals} deals a match)", deal_report, deal_report.matches * deals)
    print(f"deal pairs need {b['z2_per_1000_deals'] / a['z2_per_1000_deals']:.2f}x fewer deals than match pairs "
          "for the same separation (mean z^2 over pairs of bots)")
    for key in sorted(k for k in a if "-" in k):
        print(f"    {key}: {b[key] / a[key]:.2f}x")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=200, help="matches per pair of bots in the match-pair run")
    p.add_argument("--deals", type=int, default=6, help="deals per match in the deal-pair run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="where the database and logs go (default: a temp dir)")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="dd-study-"))
    out.mkdir(parents=True, exist_ok=True)
    trio.run(main, args.games, args.deals, args.seed, out)
