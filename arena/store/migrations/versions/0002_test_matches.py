"""Test matches on demand (issue 22 item 6): table ``test_matches`` and its two indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-27

One row per unrated game an author asked for (:mod:`arena.store.test_matches`). Frozen: a later
change is a new revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
STR = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
REAL = sa.Double().with_variant(sa.REAL(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "test_matches",
        sa.Column("id", INT, sa.Identity(always=False), nullable=False),
        sa.Column("author_id", INT, nullable=False),
        sa.Column("bot", STR, nullable=False),
        sa.Column("opponent", STR, nullable=False),
        sa.Column("game", STR, nullable=False),
        sa.Column("seat", INT, nullable=False),
        sa.Column("seed", INT, nullable=False),
        sa.Column("status", STR, server_default=sa.text("'queued'"), nullable=False),
        sa.Column("winner_seat", INT),
        sa.Column("score0", INT),
        sa.Column("score1", INT),
        sa.Column("reason", STR),
        sa.Column("detail", STR),
        sa.Column("view", sa.LargeBinary()),
        sa.Column("created_at", REAL, nullable=False),
        sa.Column("started_at", REAL),
        sa.Column("finished_at", REAL),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("test_matches_by_author", "test_matches", ["author_id", "id"])
    op.create_index("test_matches_by_status", "test_matches", ["status", "id"])


def downgrade() -> None:
    op.drop_index("test_matches_by_status", table_name="test_matches")
    op.drop_index("test_matches_by_author", table_name="test_matches")
    op.drop_table("test_matches")
