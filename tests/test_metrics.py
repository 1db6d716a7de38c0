"""The metrics registry stays the same size whatever the number of bots (arena/metrics.py)."""

from __future__ import annotations

import gc

import pytest
from prometheus_client import CollectorRegistry

from arena.metrics import METRICS, Metrics


def series(metrics: Metrics) -> int:
    """Samples the registry exposes."""
    return sum(len(family.samples) for family in metrics.registry.collect())


def test_decision_latency_is_one_series_for_any_number_of_bots() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.latency.observe(0.001)  # the referee's call, for any seat
    one_bot, tracked = series(metrics), len(gc.get_objects())
    for i in range(1, 2000):
        metrics.latency.observe(0.0002 * (i % 7))
    assert series(metrics) == one_bot  # 2,000 bots: not one more series
    assert len(gc.get_objects()) < tracked + 500  # nor 2,000 children of 15 buckets for the collector
    count = metrics.registry.get_sample_value("arena_decision_latency_seconds_count")
    assert count == 2000
    assert metrics.registry.get_sample_value("arena_decision_latency_seconds_bucket", {"le": "0.0005"}) == sum(
        1 for i in range(2000) if (0.001 if i == 0 else 0.0002 * (i % 7)) <= 0.0005)


def test_the_latency_histogram_has_no_label_and_observe_works_directly() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.latency.observe(0.02)
    [family] = [f for f in metrics.registry.collect() if f.name == "arena_decision_latency_seconds"]
    assert all(set(s.labels) <= {"le"} for s in family.samples)
    assert metrics.registry.get_sample_value("arena_decision_latency_seconds_sum") == 0.02
    with pytest.raises(ValueError):  # no label to make a per-bot child with
        METRICS.latency.labels("anyone")


def test_decision_latency_buckets_as_prometheus_does() -> None:
    from prometheus_client import Histogram

    from arena.metrics import LATENCY_BUCKETS

    ours = Metrics(CollectorRegistry())
    registry = CollectorRegistry()
    plain = Histogram("plain_seconds", "the library's own", buckets=LATENCY_BUCKETS, registry=registry)
    amounts = [0.0, 0.0005, 0.00051, 0.001, 0.003, 0.05, 0.0500001, 1.999, 2.0, 5.0, 7.5, -1.0, float("nan")]
    for x in amounts:
        ours.latency.observe(x)
        plain.observe(x)
    for bound in [*map(str, LATENCY_BUCKETS), "+Inf"]:
        got = ours.registry.get_sample_value("arena_decision_latency_seconds_bucket", {"le": bound})
        assert got == registry.get_sample_value("plain_seconds_bucket", {"le": bound}), bound
    assert ours.registry.get_sample_value("arena_decision_latency_seconds_count") == len(amounts) - 1  # NaN: no bucket


def test_the_referees_tally_adds_what_one_observe_per_decision_would(monkeypatch: pytest.MonkeyPatch) -> None:
    import arena.metrics
    from arena.metrics import LATENCY_BUCKETS, DecisionTally

    now = [100.0]
    monkeypatch.setattr(arena.metrics, "_monotonic", lambda: now[0])  # a clock that moves when told
    one_by_one = Metrics(CollectorRegistry())
    batched = Metrics(CollectorRegistry())
    tally = DecisionTally(batched.decisions.labels("ecarte"), batched.latency)
    amounts = [0.0, 0.0005, 0.00051, 0.001, 0.003, 0.05, 0.0500001, 1.999, 2.0, 5.0, 7.5] * 50  # 550: two batches
    for x in amounts:
        one_by_one.decisions.labels("ecarte").inc()
        one_by_one.latency.observe(x)
        tally.add(x)
    count = "arena_decision_latency_seconds_count"
    assert batched.registry.get_sample_value(count) == 2 * DecisionTally.FLUSH_EVERY  # the rest waits for flush
    tally.flush()
    tally.flush()  # nothing more to add
    for bound in [*map(str, LATENCY_BUCKETS), "+Inf"]:
        labels = {"le": bound}
        assert (batched.registry.get_sample_value("arena_decision_latency_seconds_bucket", labels)
                == one_by_one.registry.get_sample_value("arena_decision_latency_seconds_bucket", labels)), bound
    assert batched.registry.get_sample_value(count) == len(amounts)
    assert batched.registry.get_sample_value("arena_decisions_total", {"game": "ecarte"}) == len(amounts)
    assert batched.registry.get_sample_value("arena_decision_latency_seconds_sum") == pytest.approx(sum(amounts))
    # slow bots: a decision a second after the last batch is added at once, with those before it
    tally.add(0.3)
    now[0] += DecisionTally.FLUSH_S
    tally.add(0.4)
    assert batched.registry.get_sample_value(count) == len(amounts) + 2


# ------------------------------------------------------------------------------ per-bot series, bounded


def family_samples(metrics: Metrics, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for f in metrics.registry.collect() if f.name == name for s in f.samples]


def test_a_season_of_10000_bots_timing_out_and_connected_scrapes_under_1_mb(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 launched bots, all connected, each timing out twice and answering illegally once:
    /metrics stays under 1 MB, no metric has more than MAX_BOT_SERIES bots of its own, and
    the sums over bots are the totals (nothing is lost in ``(other)``)."""
    import arena.metrics
    import arena.schedule.supervisor
    from arena.metrics import MAX_BOT_SERIES, OTHER_BOT
    from arena.schedule.supervisor import Supervisor, publish

    metrics = Metrics(CollectorRegistry())
    monkeypatch.setattr(arena.metrics, "METRICS", metrics)  # what the referee updates
    monkeypatch.setattr(arena.schedule.supervisor, "METRICS", metrics)  # the supervisor's own (module-level) name

    class Store:  # publish() also saves the view for `arena bots list`
        def save_bot_status(self, rows: list[tuple]) -> None:
            self.rows = rows

    names = [f"bot{i:05d}" for i in range(10_000)]
    sup = Supervisor(clock=lambda: 0.0)
    for i, name in enumerate(names):
        sup.launched(name)
        if i % 10 == 0:
            sup.failed(name, ["boom"])  # a tenth in back-off
    for name in names:
        metrics.timeouts.labels(name).inc()
        metrics.illegal.labels(name, "illegal_action").inc()
    for name in names:
        metrics.timeouts.labels(name).inc()
    store = Store()
    publish(store, sup, set(names))
    publish(store, sup, set(names))  # every second: the same values again
    body = metrics.exposition()
    assert len(body) < 1_000_000, f"/metrics is {len(body):,} bytes"
    assert len(body) < 100_000  # in fact far below
    for family in ("arena_timeouts", "arena_illegal_actions", "arena_bot_state", "arena_bot_failures",
                   "arena_bot_connected"):
        bots = {labels["bot"] for labels, _ in family_samples(metrics, family)}
        assert len(bots - {OTHER_BOT}) == MAX_BOT_SERIES and OTHER_BOT in bots, family
    total = metrics.registry.get_sample_value
    assert sum(v for _, v in family_samples(metrics, "arena_timeouts")) == 20_000
    assert sum(v for _, v in family_samples(metrics, "arena_illegal_actions")) == 10_000
    assert sum(v for _, v in family_samples(metrics, "arena_bot_connected")) == 10_000
    running = sum(v for labels, v in family_samples(metrics, "arena_bot_state") if labels["state"] == "running")
    backoff = sum(v for labels, v in family_samples(metrics, "arena_bot_state") if labels["state"] == "backoff")
    assert (running, backoff) == (9_000, 1_000)
    assert sum(v for _, v in family_samples(metrics, "arena_bot_failures")) == 1_000
    # the most recent offenders keep their own series, the others are in (other); a bot that had
    # given its place up starts a new series (its first timeout stays in (other))
    assert total("arena_timeouts_total", {"bot": names[-1]}) == 1
    assert total("arena_timeouts_total", {"bot": names[0]}) is None
    assert total("arena_timeouts_total", {"bot": OTHER_BOT}) == 20_000 - MAX_BOT_SERIES


def test_bounded_counters_fold_the_least_recent_offender_and_never_go_down() -> None:
    from arena.metrics import OTHER_BOT, BotSeries

    registry = CollectorRegistry()
    c = BotSeries("t_timeouts", "test", ["bot"], "counter", bound=2, registry=registry)
    value = registry.get_sample_value
    c.labels("a").inc(3)
    c.labels("b").inc()
    c.labels("a").inc()  # a is now the most recent
    c.labels("c").inc(2)  # b, the least recent, gives its place up
    assert c.shown() == ["a", "c"]
    assert (value("t_timeouts_total", {"bot": "a"}), value("t_timeouts_total", {"bot": OTHER_BOT})) == (4, 1)
    others = []
    for i in range(50):
        c.labels(f"x{i % 5}").inc()
        others.append(value("t_timeouts_total", {"bot": OTHER_BOT}) or 0)
    assert others == sorted(others)  # (other) only grows: a counter
    assert sum(s.value for f in registry.collect() for s in f.samples if s.name == "t_timeouts_total") == 57
    with pytest.raises(ValueError):
        c.labels("a").inc(-1)
    with pytest.raises(ValueError):
        c.labels("a", "extra")
    with pytest.raises(ValueError):
        c.labels("a").set(1)


def test_bounded_gauges_show_the_bots_that_changed_last_and_sum_the_rest() -> None:
    from arena.metrics import OTHER_BOT, BotSeries

    registry = CollectorRegistry()
    g = BotSeries("t_connected", "test", ["bot"], "gauge", bound=2, registry=registry)
    value = registry.get_sample_value
    for name in ("a", "b", "c", "d"):
        g.labels(name).set(1)
    assert g.shown() == ["c", "d"] and value("t_connected", {"bot": OTHER_BOT}) == 2
    for name in ("a", "b", "c", "d"):  # the same values again: nothing moves
        g.labels(name).set(1)
    assert g.shown() == ["c", "d"]
    g.labels("a").set(0)  # a disconnects: it gets its series back, d's place... c's (least recent)
    assert g.shown() == ["d", "a"]
    assert (value("t_connected", {"bot": "a"}), value("t_connected", {"bot": OTHER_BOT})) == (0, 2)  # b and c
    assert sum(s.value for f in registry.collect() for s in f.samples) == 3
    with pytest.raises(ValueError):
        g.labels("a").inc()
