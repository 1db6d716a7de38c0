"""The store's bots and tokens, on SQLite and PostgreSQL."""

from __future__ import annotations


def test_a_launched_bot_is_registered_with_no_token_that_works(any_store):
    """A bot the arena launches is registered without hashing a token (each copy gets one in
    memory at launch): no token logs in as it, and a token it had before no longer does."""
    assert any_store.add_launched_bot("launched") is None
    assert not any_store.check_token("launched", "")
    token = any_store.add_bot("remote")
    assert any_store.check_token("remote", token)
    any_store.add_launched_bot("remote")
    assert not any_store.check_token("remote", token)
    assert any_store.bot_id("launched") > 0


def test_every_sqlite_connection_has_the_larger_page_cache(tmp_path):
    """A season's store keeps its B-trees' interior pages cached (arena.store.engine.SQLITE_CACHE_KIB):
    every connection the store opens, the first and the later ones of its pool, WAL as before."""
    from sqlalchemy import text

    from arena.store.engine import SQLITE_CACHE_KIB
    from arena.store.sqlite import Store

    store = Store(str(tmp_path / "arena.db"))
    try:
        with store.connection.engine.connect() as a, store.connection.engine.connect() as b:
            for conn in (a, b):
                assert conn.execute(text("PRAGMA cache_size")).scalar() == -SQLITE_CACHE_KIB
                assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    finally:
        store.close()
