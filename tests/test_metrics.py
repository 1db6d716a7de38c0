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
