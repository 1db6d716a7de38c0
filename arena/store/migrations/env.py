"""Alembic's environment for the arena's store: run from our code (:func:`arena.store.upgrade.upgrade`),
which hands it the open connection in ``config.attributes["connection"]`` inside its writer
transaction; there is no ``alembic.ini`` and no URL to configure here."""

from alembic import context

from arena.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
