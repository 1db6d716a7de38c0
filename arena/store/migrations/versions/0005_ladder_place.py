"""Each bot's place in the ladder fit's layout (issue 21): what a fitter started afresh orders the
field by.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27

One nullable column on ``ladder``, ``place``: the bot's place in the one-dimensional layout the
last fit worked in (:class:`arena.stats.layout.Layout`, written by
:meth:`arena.store.results.Results.save_ladder_fit`), NULL for a bot no fit placed (a small
field's fits need no layout) and for the fits made before. A fitter that starts reads it back and
tries that order first (:func:`arena.stats.rating.layout_hint`): a field whose history holds
random pairs across the ladder otherwise gets a scrambled fresh order and loses its exact
intervals. A column already there is left as it is. Frozen: a later change is a new revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    if "place" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("ladder")}:
        op.add_column("ladder", sa.Column("place", INT, nullable=True))


def downgrade() -> None:
    op.drop_column("ladder", "place")
