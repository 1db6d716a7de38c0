"""What the ladder's fit costs (issue 21 item 6): its CPU time, and the last full refit's.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27

Four nullable columns on ``ladder_state``, written by each fit from now on
(:meth:`arena.store.results.Results.save_ladder_fit`): ``fit_cpu_ms`` (the last fit's CPU time),
and the last full refit's (ratings and intervals) time ``full_fit_at`` (Unix seconds: equal to
``fitted_at`` when the last fit was a full one), wall ``full_fit_ms`` and CPU ``full_fit_cpu_ms``.
NULL for the fits made before: nothing is made up for them. A column already there is left as it
is (the legacy step of ``arena db upgrade`` makes the columns of the current schema before the
baseline is stamped). Frozen: a later change is a new revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
REAL = sa.Double().with_variant(sa.REAL(), "sqlite")
COLUMNS = (("fit_cpu_ms", INT), ("full_fit_at", REAL), ("full_fit_ms", INT), ("full_fit_cpu_ms", INT))


def upgrade() -> None:
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("ladder_state")}
    for name, kind in COLUMNS:
        if name not in have:
            op.add_column("ladder_state", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column("ladder_state", name)
