"""The figures of ``make bench-season`` (:mod:`arena.tools.bench_season`): reading the
server's ``/metrics``, percentiles from its histograms, one run's figures, the targets of issue
21 and the table that shows a full store next to an empty one.

Percentiles of the server's histograms (:func:`histogram_quantile`) are interpolated linearly
within the bucket where the rank falls, as Prometheus' ``histogram_quantile`` does: they are as
fine as the buckets (``arena.metrics.STORE_BUCKETS``). Pages' percentiles are nearest-rank over
the requests made (:func:`arena.tools.bench_server.percentile`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

RATE_RATIO_TARGET = 0.9
"""Target: results per second on the full store, at least this fraction of the empty store's."""

PAIRING_P99_TARGET_S = 0.001
"""Target: p99 of one pairing decision (seconds)."""

FIT_TARGET_S = 2.0
"""Target: one full refit (ratings and intervals) of the full store's ladder, in seconds of CPU
(``arena_ladder_full_fit_cpu_seconds``: the computation's cost). Its wall time is shown beside it,
not judged: the fitter computes in a niced thread (:data:`arena.schedule.fitter.NICE`) and the bench
saturates the machine, so a fit's wall time is mostly its wait for a core. Beyond 2,000 bots the
fitter computes the intervals only every ``fit_intervals_s`` (the bench sets it short, so that
full refits happen during its run); the fits between refit the ratings alone, shown apart."""

PAGE_P99_TARGET_S = 0.1
"""Target: p99 of every web page measured (seconds)."""

WELCOME_TARGET_S = 5.0
"""Target: every bot welcomed within this long of the server's start (seconds)."""


NO_FIT_NOTE = "no ladder fit duration in /metrics (arena_ladder_fit_seconds absent or 0)"

FIT_NOTE = ("the ladder's fitter computes in a niced thread (nice 10) on a machine the bench saturates: a fit's "
            "wall time is mostly its wait for a core; the target is judged on the full refit's CPU time (the "
            "computation's cost), wall shown beside it; the fits seen until the server stopped, the window's and "
            "after")
"""The report's note on the fit's figures."""


# --------------------------------------------------------------------------- metrics


_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class Scrape:
    """One read of ``/metrics``: ``t`` (``time.perf_counter()`` when it answered), ``size``
    (bytes) and its samples ``name -> [(labels, value)]``."""

    t: float
    size: int
    samples: dict[str, list[tuple[dict[str, str], float]]]

    def value(self, name: str, **labels: str) -> float | None:
        """The sum of ``name``'s samples whose labels include ``labels``; None if it has none."""
        found = [v for lab, v in self.samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items())]
        return sum(found) if found else None

    def buckets(self, name: str) -> list[tuple[float, float]]:
        """Histogram ``name``'s cumulative buckets ``(upper bound (inf last), count)``, sorted."""
        return sorted((float(lab["le"]), v) for lab, v in self.samples.get(f"{name}_bucket", []) if "le" in lab)


def parse_metrics(text: str, t: float = 0.0) -> Scrape:
    """Parse Prometheus' text exposition format (the samples; comments skipped)."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or line.startswith("#"):
            continue
        labels = {k: v for k, v in _LABEL.findall(m.group(2) or "")}
        try:
            samples.setdefault(m.group(1), []).append((labels, float(m.group(3))))
        except ValueError:
            continue
    return Scrape(t=t, size=len(text.encode()), samples=samples)


def histogram_quantile(q: float, before: list[tuple[float, float]], after: list[tuple[float, float]]
                       ) -> tuple[float | None, int]:
    """The ``q`` quantile (0..1, seconds) of the observations a histogram got between two scrapes
    (cumulative buckets, :meth:`Scrape.buckets`), and how many there were: interpolated linearly
    inside the bucket where the rank falls (from the bucket below's bound, 0 for the first), as
    Prometheus' ``histogram_quantile``; in the ``+Inf`` bucket, the largest finite bound. None
    when there was no observation."""
    start = dict(before)
    counts = [(le, c - start.get(le, 0.0)) for le, c in after]
    total = counts[-1][1] if counts else 0.0
    if total <= 0:
        return None, 0
    rank = q * total
    lower, below = 0.0, 0.0
    for le, cum in counts:
        if cum >= rank and cum > below:
            if le == float("inf"):
                return lower, int(total)
            return lower + (le - lower) * (rank - below) / (cum - below), int(total)
        lower, below = le, cum
    return lower, int(total)


def fetch_metrics(client: Any) -> Scrape | None:
    """``GET /metrics`` with ``client`` (an ``httpx.Client`` on the contest's web port); None if
    it did not answer (in time, or at all)."""
    import httpx

    try:
        response = client.get("/metrics")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    return parse_metrics(response.text, time.perf_counter())


@dataclass
class PageFigures:
    """One page: ``path``, requests made, their p99 and p50 (seconds, nearest rank), answers
    that were not 200, and the status of the last one."""

    path: str
    requests: int = 0
    p99_s: float | None = None
    p50_s: float | None = None
    errors: int = 0
    status: int = 0


@dataclass
class RunFigures:
    """One ``arena serve`` run (see the module docstring); times in seconds, sizes in bytes;
    None where the figure could not be measured."""

    label: str
    bots: int
    startup_s: float | None = None
    welcomed: int = 0
    welcomed_in_target: int = 0
    welcome_s: float | None = None
    rate_limited: float = 0.0
    first_fit_s: float | None = None
    """From the server's start (its ports announced) until its ladder's fitter had stored a first
    fit (``arena_ladder_fit_cpu_seconds`` published): the window starts then. None: not seen."""
    window_s: float = 0.0
    results: float = 0.0
    results_per_s: float | None = None
    commit_p50_s: float | None = None
    commit_p99_s: float | None = None
    commits: int = 0
    pairing_p99_s: float | None = None
    pairings: int = 0
    fit_s: float | None = None
    """The longest last-fit duration seen (wall; full refit or ratings alone)."""
    ratings_fit_s: float | None = None
    ratings_fit_cpu_s: float | None = None
    """The longest wall and CPU times seen of a fit of the ratings alone (``arena_ladder_fit_full`` 0)."""
    full_fit_s: float | None = None
    full_fit_cpu_s: float | None = None
    """The longest wall and CPU times seen of a full refit (``arena_ladder_full_fit_*``): None if the
    server made none (a seeded store's prior fit has no such figure)."""
    fit_lag_results: float | None = None
    fit_age_s: float | None = None
    pages: dict[str, PageFigures] = field(default_factory=dict)
    """The pages once the bots have gone (the store's cost: the target applies to these)."""
    pages_busy: dict[str, PageFigures] = field(default_factory=dict)
    """The same pages while the contest plays with every bot (the loop's load too: shown only)."""
    rss: int | None = None
    rss_peak: int | None = None
    metrics_bytes: int | None = None
    recorded: int = 0
    db_bytes: int | None = None
    log_bytes: int | None = None
    notes: list[str] = field(default_factory=list)
    run_rates: list[float | None] = field(default_factory=list)
    """Results per second of each run these figures pool (:func:`pool_runs`), in the bench's order."""

    def per_match(self, size: int | None) -> float | None:
        """``size`` bytes per match recorded in the run."""
        return None if size is None or not self.recorded else size / self.recorded


def window_figures(fig: RunFigures, scrapes: list[Scrape], game: str) -> None:
    """Fill ``fig``'s figures of the window from its scrapes (the first and the last bound it):
    results per second (``arena_matches_finished_total``, not aborted), the result-commit and
    pairing-decision percentiles over the window, the largest fit duration, lag and age seen
    (gauges of ``game``), the size of the last ``/metrics``; a note for each figure the server
    did not publish."""
    first, last = scrapes[0], scrapes[-1]
    fig.window_s = last.t - first.t

    def finished(s: Scrape) -> float:
        return sum(v for lab, v in s.samples.get("arena_matches_finished_total", []) if lab.get("result") != "aborted")

    fig.results = finished(last) - finished(first)
    fig.results_per_s = fig.results / fig.window_s if fig.window_s > 0 else None
    commit = ("arena_result_commit_seconds", first.buckets("arena_result_commit_seconds"),
              last.buckets("arena_result_commit_seconds"))
    fig.commit_p50_s, fig.commits = histogram_quantile(0.5, commit[1], commit[2])
    fig.commit_p99_s, _ = histogram_quantile(0.99, commit[1], commit[2])
    fig.pairing_p99_s, fig.pairings = histogram_quantile(0.99, first.buckets("arena_pairing_decision_seconds"),
                                                         last.buckets("arena_pairing_decision_seconds"))
    for attr, name in (("fit_lag_results", "arena_ladder_fit_lag_results"),
                       ("fit_age_s", "arena_ladder_fit_age_seconds")):
        seen = [v for s in scrapes if (v := s.value(name, game=game)) is not None]
        setattr(fig, attr, max(seen) if seen else None)
    fit_figures(fig, scrapes, game)
    if not fig.commits:
        fig.notes.append("no result-commit observation in /metrics (arena_result_commit_seconds)")
    if not fig.pairings:
        fig.notes.append("no pairing-decision observation in /metrics (arena_pairing_decision_seconds)")
    if not fig.fit_s:
        fig.notes.append(NO_FIT_NOTE)
    fig.metrics_bytes = last.size


def _longest(values: list[float | None]) -> float | None:
    seen = [v for v in values if v is not None]
    return max(seen) if seen else None


def fit_figures(fig: RunFigures, scrapes: list[Scrape], game: str) -> None:
    """Fill ``fig``'s fit figures from ``scrapes`` (gauges of ``game``, the largest seen): the
    last fit's wall time (any kind); the fits of the ratings alone (wall and CPU, from the scrapes
    where ``arena_ladder_fit_full`` is 0: a fit with no CPU figure, an older arena's or a seed's,
    counts as neither kind); the full refits (``arena_ladder_full_fit_seconds`` and
    ``..._cpu_seconds``). Called again with later scrapes, it keeps the larger figures."""
    def value(s: Scrape, name: str) -> float | None:
        return s.value(name, game=game)

    fits = [v for s in scrapes if (v := value(s, "arena_ladder_fit_seconds"))]
    alone = [s for s in scrapes if value(s, "arena_ladder_fit_full") == 0 and value(s, "arena_ladder_fit_seconds")]
    fig.fit_s = _longest([fig.fit_s, *fits])
    fig.ratings_fit_s = _longest([fig.ratings_fit_s, *(value(s, "arena_ladder_fit_seconds") for s in alone)])
    fig.ratings_fit_cpu_s = _longest([fig.ratings_fit_cpu_s,
                                      *(value(s, "arena_ladder_fit_cpu_seconds") for s in alone)])
    fig.full_fit_s = _longest([fig.full_fit_s, *(value(s, "arena_ladder_full_fit_seconds") for s in scrapes)])
    fig.full_fit_cpu_s = _longest([fig.full_fit_cpu_s, *(value(s, "arena_ladder_full_fit_cpu_seconds")
                                                        for s in scrapes)])
    if fig.fit_s and NO_FIT_NOTE in fig.notes:  # a later scrape saw one
        fig.notes.remove(NO_FIT_NOTE)


def _worst_page(pages: list[PageFigures]) -> PageFigures:
    """The run's page that fares worst: one with errors or no p99, else the highest p99."""
    return max(pages, key=lambda p: (p.errors > 0 or p.p99_s is None, p.p99_s or 0.0))


def pool_runs(label: str, runs: list[RunFigures]) -> RunFigures:
    """One store's figures over its ``runs`` (the bench plays each store more than once, in a
    balanced order: :func:`arena.tools.bench_season.run_order`), labelled ``label``:

    * results and windows summed, so results per second is their ratio, a rate over every
      second the store was measured (each run's own rate in ``run_rates``);
    * every other figure a target judges, the worst run's: the longest welcome, fit and
      percentile, each page's highest p99 (or its errors), so that a target is met only if it is
      met in every run; the largest RSS and ``/metrics``;
    * matches, commits, pairings and bytes summed (bytes per match over every run);
    * the start-up and the fitter's first fit, the first run's; the notes of all, each with
      its run's label.

    Raises ``ValueError`` for no runs."""
    if not runs:
        raise ValueError("no runs to pool")
    first = runs[0]

    def total(attr: str) -> Any:
        values = [getattr(r, attr) for r in runs]
        return None if any(v is None for v in values) else sum(values)

    def worst(attr: str) -> Any:
        return _longest([getattr(r, attr) for r in runs])

    window = sum(r.window_s for r in runs)
    rated = all(r.results_per_s is not None for r in runs) and window > 0
    pages = {attr: {name: _worst_page([p for r in runs if (p := getattr(r, attr).get(name)) is not None])
                    for name in dict.fromkeys(n for r in runs for n in getattr(r, attr))}
             for attr in ("pages", "pages_busy")}
    welcomed = all(r.welcome_s is not None for r in runs)
    return RunFigures(
        label=label, bots=first.bots, startup_s=first.startup_s,
        welcomed=min(r.welcomed for r in runs), welcomed_in_target=min(r.welcomed_in_target for r in runs),
        welcome_s=worst("welcome_s") if welcomed else None, rate_limited=sum(r.rate_limited for r in runs),
        first_fit_s=first.first_fit_s, window_s=window, results=sum(r.results for r in runs),
        results_per_s=sum(r.results for r in runs) / window if rated else None,
        commit_p50_s=worst("commit_p50_s"), commit_p99_s=worst("commit_p99_s"), commits=sum(r.commits for r in runs),
        pairing_p99_s=worst("pairing_p99_s"), pairings=sum(r.pairings for r in runs),
        fit_s=worst("fit_s"), ratings_fit_s=worst("ratings_fit_s"), ratings_fit_cpu_s=worst("ratings_fit_cpu_s"),
        full_fit_s=worst("full_fit_s"), full_fit_cpu_s=worst("full_fit_cpu_s"),
        fit_lag_results=worst("fit_lag_results"), fit_age_s=worst("fit_age_s"),
        pages=pages["pages"], pages_busy=pages["pages_busy"],
        rss=worst("rss"), rss_peak=worst("rss_peak"), metrics_bytes=worst("metrics_bytes"),
        recorded=sum(r.recorded for r in runs), db_bytes=total("db_bytes"), log_bytes=total("log_bytes"),
        notes=[f"{r.label}: {n}" if len(runs) > 1 else n for r in runs for n in r.notes],
        run_rates=[r.results_per_s for r in runs])


# --------------------------------------------------------------------------- verdicts and report


def check_targets(full: RunFigures, empty: RunFigures, fitted_bots: int) -> list[str]:
    """The targets (module docstring, step 4) that the two runs missed, one line each (empty
    when all are met). A figure that could not be measured is a miss."""
    misses = []
    for fig in (full, empty):
        if fig.welcome_s is None or fig.welcome_s > WELCOME_TARGET_S:
            when = "never all" if fig.welcome_s is None else f"all after {fig.welcome_s:.1f} s"
            misses.append(f"{fig.label}: {fig.welcomed_in_target} of {fig.bots} bots welcomed within "
                          f"{WELCOME_TARGET_S:g} s ({when}; {fig.rate_limited:.0f} rate_limited)")
        if fig.pairing_p99_s is None:
            misses.append(f"{fig.label}: pairing decision p99 not measured (no observation in /metrics)")
        elif fig.pairing_p99_s >= PAIRING_P99_TARGET_S:
            misses.append(f"{fig.label}: pairing decision p99 {fig.pairing_p99_s * 1000:.2f} ms "
                          f"(target < {PAIRING_P99_TARGET_S * 1000:g} ms)")
        for name, page in fig.pages.items():
            if page.p99_s is None or page.errors:
                misses.append(f"{fig.label}: page {name} ({page.path}): {page.errors} of {page.requests} answers "
                              f"not 200 (last status {page.status})")
            elif page.p99_s >= PAGE_P99_TARGET_S:
                misses.append(f"{fig.label}: page {name} p99 {page.p99_s * 1000:.0f} ms "
                              f"(target < {PAGE_P99_TARGET_S * 1000:g} ms)")
    if not full.results_per_s or not empty.results_per_s:
        misses.append(f"results per second not measured (full {full.results:.0f}, empty {empty.results:.0f} results "
                      "in the window)")
    elif full.results_per_s < RATE_RATIO_TARGET * empty.results_per_s:
        misses.append(f"results per second: full store {full.results_per_s:.1f} = "
                      f"{full.results_per_s / empty.results_per_s:.2f}x the empty store's {empty.results_per_s:.1f} "
                      f"(target >= {RATE_RATIO_TARGET:g}x" + _each_run(full, empty) + ")")
    if full.full_fit_cpu_s is None:
        misses.append(f"{full.label}: full refit of {fitted_bots:,} bots not measured: "
                      "arena_ladder_full_fit_cpu_seconds absent (no full refit finished while the server ran; "
                      f"longest fit seen {_num(full.fit_s, '.2f')} s)")
    elif full.full_fit_cpu_s >= FIT_TARGET_S:
        misses.append(f"{full.label}: full refit of {fitted_bots:,} bots took {full.full_fit_cpu_s:.2f} s of CPU "
                      f"({_num(full.full_fit_s, '.2f')} s wall; target < {FIT_TARGET_S:g} s of CPU)")
    return misses


def _pooled(full: RunFigures, empty: RunFigures) -> bool:
    """Whether a store's figures pool more than one run (:func:`pool_runs`)."""
    return max(len(full.run_rates), len(empty.run_rates)) > 1


def _rates(fig: RunFigures) -> str:
    """Each run's results per second, in order: ``"a, b"``."""
    return ", ".join(_num(r, ".1f") for r in fig.run_rates)


def _each_run(full: RunFigures, empty: RunFigures) -> str:
    """``"; each run: full a, b; empty c, d"`` (results per second) when a store ran more than once."""
    return f"; each run: full {_rates(full)}; empty {_rates(empty)}" if _pooled(full, empty) else ""


def _ms(seconds: float | None, digits: int = 2) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.{digits}f}"


def _num(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _wall_cpu(wall: float | None, cpu: float | None) -> str:
    return f"{_num(wall, '.2f')} / {_num(cpu, '.2f')}"


def _welcomed(fig: RunFigures) -> str:
    if fig.welcome_s is not None:
        return f"all {fig.bots} in {fig.welcome_s:.2f} s"
    return (f"{fig.welcomed_in_target} in {WELCOME_TARGET_S:g} s, {fig.welcomed} at last"
            + (f", {fig.rate_limited:.0f} rate_limited" if fig.rate_limited else ""))


def report_rows(full: RunFigures, empty: RunFigures, fitted_bots: int) -> list[tuple[str, str, str, str]]:
    """The table's rows ``(figure, full store, empty store, target)``."""
    ratio = (f"{full.results_per_s / empty.results_per_s:.2f}x" if full.results_per_s is not None
             and empty.results_per_s else "-")
    mb = 1024 * 1024
    rows = [
        ("start-up to listening (s)", _num(full.startup_s, ".2f"), _num(empty.startup_s, ".2f"), ""),
        (f"bots welcomed (of {full.bots})", _welcomed(full), _welcomed(empty), f"all within {WELCOME_TARGET_S:g} s"),
        ("fitter's first fit, from the start (s)", _num(full.first_fit_s, ".1f"), _num(empty.first_fit_s, ".1f"), ""),
        ("results per second" + (", all runs" if _pooled(full, empty) else ""),
         _num(full.results_per_s, ".1f") + f" ({ratio})", _num(empty.results_per_s, ".1f"),
         f"full >= {RATE_RATIO_TARGET:g}x empty"),
    ]
    if _pooled(full, empty):
        rows.append(("results per second, each run in order", _rates(full), _rates(empty), ""))
    rows += [
        ("result commit p50 / p99 (ms)", f"{_ms(full.commit_p50_s)} / {_ms(full.commit_p99_s)} (n={full.commits})",
         f"{_ms(empty.commit_p50_s)} / {_ms(empty.commit_p99_s)} (n={empty.commits})", ""),
        ("pairing decision p99 (ms)", f"{_ms(full.pairing_p99_s, 3)} (n={full.pairings})",
         f"{_ms(empty.pairing_p99_s, 3)} (n={empty.pairings})", f"< {PAIRING_P99_TARGET_S * 1000:g} ms"),
        ("ladder fit, ratings alone: longest wall / CPU (s)", _wall_cpu(full.ratings_fit_s, full.ratings_fit_cpu_s),
         _wall_cpu(empty.ratings_fit_s, empty.ratings_fit_cpu_s), ""),
        ("ladder full refit: longest wall / CPU (s)", _wall_cpu(full.full_fit_s, full.full_fit_cpu_s),
         _wall_cpu(empty.full_fit_s, empty.full_fit_cpu_s), f"CPU < {FIT_TARGET_S:g} s ({fitted_bots:,} bots)"),
        ("rating lag, most seen (results / s)", f"{_num(full.fit_lag_results)} / {_num(full.fit_age_s, '.1f')}",
         f"{_num(empty.fit_lag_results)} / {_num(empty.fit_age_s, '.1f')}", ""),
    ]

    def cell(p: PageFigures | None) -> str:
        if p is None:
            return "-"
        bad = f", {p.errors} not 200" if p.errors else ""
        return f"{_ms(p.p99_s, 1)} (n={p.requests}{bad})"

    for attr, when, target in (("pages", "idle", f"< {PAGE_P99_TARGET_S * 1000:g} ms"), ("pages_busy", "playing", "")):
        mine, theirs = getattr(full, attr), getattr(empty, attr)
        for name in mine or theirs:
            rows.append((f"page p99, {when} (ms): {name}", cell(mine.get(name)), cell(theirs.get(name)), target))
    rows += [
        ("server RSS, end / peak (MB)", *(f"{_num(f.rss and f.rss / mb)} / {_num(f.rss_peak and f.rss_peak / mb)}"
                                          for f in (full, empty)), ""),
        ("database bytes per match", _num(full.per_match(full.db_bytes)), _num(empty.per_match(empty.db_bytes)), ""),
        ("log bytes per match", _num(full.per_match(full.log_bytes)), _num(empty.per_match(empty.log_bytes)), ""),
        ("matches recorded in the run", f"{full.recorded:,}", f"{empty.recorded:,}", ""),
        ("/metrics size (KB)", _num(full.metrics_bytes and full.metrics_bytes / 1024, ".1f"),
         _num(empty.metrics_bytes and empty.metrics_bytes / 1024, ".1f"), ""),
    ]
    return rows


def print_report(console: Any, title: str, seeding: str, full: RunFigures, empty: RunFigures, fitted_bots: int,
                 misses: list[str]) -> None:
    """Print one database's table (rich, titled ``title``), the ``seeding`` line, the runs' notes
    and the ``misses`` (:func:`check_targets`)."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAVY)
    table.add_column("figure", no_wrap=True)
    table.add_column("full store", justify="right")
    table.add_column("empty store", justify="right")
    table.add_column("target")
    for row in report_rows(full, empty, fitted_bots):
        table.add_row(*row)
    console.print(table)
    console.print(seeding, markup=False)
    console.print("percentiles of the server's histograms are interpolated linearly within their buckets "
                  "(as Prometheus' histogram_quantile); pages' percentiles are nearest-rank over the requests made, "
                  "'playing' while every bot plays, 'idle' once they have gone", markup=False)
    console.print(FIT_NOTE, markup=False)
    for fig in (full, empty):
        for note in fig.notes:
            console.print(f"note ({fig.label}): {note}", markup=False)
    for miss in misses:
        console.print(f"[red]missed[/red]: {miss}", highlight=False)
