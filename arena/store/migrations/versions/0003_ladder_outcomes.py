"""Each bot's wins, losses and draws on the ladder (issue 21): the leaderboard reads its page's rows only.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-27

Three counters on ``ladder`` (``wins``, ``losses``, ``draws``: finished, not aborted, matches by
outcome; points = wins + draws / 2), kept by each result from now on
(:meth:`arena.store.results.Results.record_result`), filled here for the existing rows from the
finished matches: one grouped pass over ``matches``, then one update of ``ladder``. A column
already there is left as it is (the legacy step of ``arena db upgrade`` makes the columns of
the current schema before the baseline is stamped); the fill runs anyway. Frozen: a later change
is a new revision.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
COLUMNS = ("wins", "losses", "draws")

_OUTCOMES = (
    "SELECT game, bot, SUM(w) AS w, SUM(l) AS l, SUM(d) AS d FROM ("
    "SELECT game, bot0 AS bot, CASE WHEN winner_seat=0 THEN 1 ELSE 0 END AS w, "
    "CASE WHEN winner_seat=1 THEN 1 ELSE 0 END AS l, "
    "CASE WHEN winner_seat=0 OR winner_seat=1 THEN 0 ELSE 1 END AS d FROM matches WHERE status='done' "
    "UNION ALL "
    "SELECT game, bot1, CASE WHEN winner_seat=1 THEN 1 ELSE 0 END, CASE WHEN winner_seat=0 THEN 1 ELSE 0 END, "
    "CASE WHEN winner_seat=0 OR winner_seat=1 THEN 0 ELSE 1 END FROM matches WHERE status='done'"
    ") AS o GROUP BY game, bot")
FILL = ("UPDATE ladder SET wins=t.w, losses=t.l, draws=t.d FROM (" + _OUTCOMES + ") AS t "
        "WHERE t.game=ladder.game AND t.bot=ladder.bot")
"""Standard enough SQL for both backends (``UPDATE ... FROM``: SQLite 3.33 and later, PostgreSQL)."""


def upgrade() -> None:
    have = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("ladder")}
    for name in COLUMNS:
        if name not in have:
            op.add_column("ladder", sa.Column(name, INT, nullable=False, server_default=sa.text("0")))
    op.execute(sa.text(FILL))


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("ladder", name)
