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
