"""The contest server's WAL checkpoints run in a thread of their own (arena/store/checkpoint.py),
never inside the server's commits. No timing: WAL pages counted, the mock clock for the interval."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from arena.store.checkpoint import AUTO_PAGES, for_store
from arena.store.sqlite import Store


@pytest.fixture
def autojump_clock():
    return trio.testing.MockClock(autojump_threshold=0)


def _commits(store: Store, n: int) -> None:
    """``n`` commits of a 4 KiB row each (a WAL page at least each)."""
    store.db.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    for _ in range(n):
        with store.transaction():
            store.db.execute("INSERT INTO filler VALUES (zeroblob(4096))")


def _wal_pages(path) -> int:
    """Pages the WAL file has room for (it is reused from its start after a complete checkpoint)."""
    page = 4096 + 24  # a frame: the page and its header
    return os.path.getsize(f"{path}-wal") // page


async def test_the_servers_commits_leave_checkpoints_to_the_thread(tmp_path, autojump_clock):
    path = tmp_path / "x.db"
    store = Store(path)
    checkpoints = for_store(store)
    assert checkpoints is not None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(checkpoints.run)
        await trio.testing.wait_all_tasks_blocked()
        _commits(store, 2 * AUTO_PAGES)
        # past SQLite's threshold twice over and no commit checkpointed: the WAL was never reused
        assert checkpoints.runs == 0 and _wal_pages(path) >= 2 * AUTO_PAGES
        while checkpoints.runs == 0:  # the next interval: the thread copies every page back
            await trio.sleep(0.1)
        busy, pages, done = checkpoints.last
        assert busy == 0 and pages >= 2 * AUTO_PAGES and done == pages
        nursery.cancel_scope.cancel()
    # once it has stopped, the server's connection checkpoints by itself again (SQLite's default)
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == AUTO_PAGES


def test_with_its_own_checkpoints_the_wal_is_reused(tmp_path):
    path = tmp_path / "x.db"
    store = Store(path)
    _commits(store, 2 * AUTO_PAGES)  # what the test above would see without the checkpointer
    assert _wal_pages(path) < 2 * AUTO_PAGES


def test_nothing_to_checkpoint_in_memory():
    assert for_store(Store(":memory:")) is None
