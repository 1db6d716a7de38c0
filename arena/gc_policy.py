"""The garbage collector of a long-running server process (``arena serve``, ``arena tournament``, ``arena worker``,
``arena bench``).

CPython's cyclic collector walks every tracked container of a generation each time that
generation is collected. A server that refers many matches makes a few short-lived containers
per decision and keeps a large, stable heap from start-up (modules, the rules engines' tables,
the configuration, the store): with the default thresholds (700 allocations) the young generation
is collected hundreds of times a second, and the full collections walk the whole stable heap.
:func:`tune_for_server` therefore

* moves everything alive at the end of start-up to the permanent generation (:func:`gc.freeze`),
  which collections never walk;
* collects the young generation every :data:`GEN0_THRESHOLD` net allocations instead of 700.

Reference cycles are still collected (trio's tasks and exceptions make some), only less often.
The messages of the protocol are not tracked at all (``gc=False``, :mod:`protocol.messages`).
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000
"""Net container allocations between two collections of the youngest generation (CPython's
default is 700)."""


def tune_for_server(gen0: int = GEN0_THRESHOLD) -> tuple[int, int, int]:
    """Collect once, freeze what is alive, and set the youngest generation's threshold to
    ``gen0`` (the older generations keep theirs). Call it once start-up is over, before the
    first match. Returns the thresholds in force before (for :func:`restore`)."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(gen0, before[1], before[2])
    return before


def restore(thresholds: tuple[int, int, int]) -> None:
    """Undo :func:`tune_for_server`: the thresholds ``thresholds`` again, and the frozen objects
    back in the oldest generation (for tests and benchmarks that tune only for a while)."""
    gc.unfreeze()
    gc.set_threshold(*thresholds)
