"""Baseline: schema 9 of the hand-written migrations (arena before Alembic), every table and index.

Revision ID: 0001
Revises:
Create Date: 2026-11-27

Written from :mod:`arena.store.schema` as it was at this revision (Alembic's autogenerate, then
the three things it does not render added by hand: the expression index ``ladder_by_name``, the
``CHECK`` of ``wager_ledger`` and the identity ``rowid`` of ``bots`` on PostgreSQL). Frozen: a later
change of the schema is a new revision, never an edit of this one.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

INT = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
STR = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
REAL = sa.Double().with_variant(sa.REAL(), "sqlite")


def _where(condition: str) -> dict:
    """A partial index's condition, on both backends."""
    return {"sqlite_where": sa.text(condition), "postgresql_where": sa.text(condition)}


def upgrade() -> None:
    """Every table and index of schema 9, in an order that keeps foreign keys valid."""
    _bots_and_authors()
    _ladder_and_spectators()
    _tournaments_uploads_wagers()
    _matches_and_queue()


def _bots_and_authors() -> None:
    """Bots, their owners, archives and status; authors and invitations."""
    op.create_table('authors',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('name', STR, nullable=False),
    sa.Column('salt', sa.LargeBinary(), nullable=False),
    sa.Column('token_hash', sa.LargeBinary(), nullable=False),
    sa.Column('status', STR, server_default=sa.text("'active'"), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('hash_scheme', STR, server_default=sa.text("'scrypt'"), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('bot_archives',
    sa.Column('bot', STR, nullable=False),
    sa.Column('version', INT, nullable=False),
    sa.Column('sha256', STR, nullable=False),
    sa.Column('size', INT, nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.PrimaryKeyConstraint('bot', 'version')
    )
    op.create_table('bot_owners',
    sa.Column('bot', STR, nullable=False),
    sa.Column('author_id', INT, nullable=False),
    sa.Column('kind', STR, nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.PrimaryKeyConstraint('bot')
    )
    op.create_table('bot_status',
    sa.Column('name', STR, nullable=False),
    sa.Column('state', STR, nullable=False),
    sa.Column('failures', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('next_launch', REAL, nullable=True),
    sa.Column('last_output', STR, server_default=sa.text("''"), nullable=False),
    sa.Column('connected', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('updated_at', REAL, nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('bots',
    sa.Column('name', STR, nullable=False),
    sa.Column('salt', sa.LargeBinary(), nullable=False),
    sa.Column('token_hash', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('hash_scheme', STR, server_default=sa.text("'scrypt'"), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    if op.get_context().dialect.name == 'postgresql':  # SQLite's implicit row id, as the last column
        op.execute('ALTER TABLE bots ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY')
    op.create_table('invitations',
    sa.Column('code_hash', STR, nullable=False),
    sa.Column('note', STR, server_default=sa.text("''"), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('used_by', INT, nullable=True),
    sa.Column('used_at', REAL, nullable=True),
    sa.PrimaryKeyConstraint('code_hash')
    )


def _ladder_and_spectators() -> None:
    """The ladder, its units and pair counts, live events, spectators."""
    op.create_table('ladder',
    sa.Column('game', STR, nullable=False),
    sa.Column('bot', STR, nullable=False),
    sa.Column('elo', REAL, nullable=False),
    sa.Column('games', INT, nullable=False),
    sa.Column('updated_at', REAL, nullable=False),
    sa.Column('ci95', REAL, nullable=True),
    sa.PrimaryKeyConstraint('game', 'bot')
    )
    op.create_index('ladder_by_elo', 'ladder', ['game', sa.literal_column('elo DESC'), 'bot'], unique=False)
    op.create_index('ladder_by_name', 'ladder', ['game', sa.text('lower(bot)'), 'bot'], unique=False)
    op.create_table('ladder_state',
    sa.Column('game', STR, nullable=False),
    sa.Column('results', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('fitted_results', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('fitted_at', REAL, nullable=True),
    sa.Column('fit_ms', INT, nullable=True),
    sa.PrimaryKeyConstraint('game')
    )
    op.create_table('ladder_units',
    sa.Column('game', STR, nullable=False),
    sa.Column('a', STR, nullable=False),
    sa.Column('b', STR, nullable=False),
    sa.Column('points', REAL, nullable=False),
    sa.Column('games', INT, nullable=False),
    sa.Column('n', INT, nullable=False),
    sa.PrimaryKeyConstraint('game', 'a', 'b', 'points', 'games')
    )
    op.create_index('ladder_units_by_a', 'ladder_units', ['game', 'a', 'points', 'games', 'n'], unique=False)
    op.create_index('ladder_units_by_b', 'ladder_units', ['game', 'b', 'points', 'games', 'n'], unique=False)
    op.create_table('match_events',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('match_key', STR, nullable=False),
    sa.Column('body', STR, nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('match_events_by_time', 'match_events', ['created_at'], unique=False)
    op.create_table('pair_counts',
    sa.Column('game', STR, nullable=False),
    sa.Column('a', STR, nullable=False),
    sa.Column('b', STR, nullable=False),
    sa.Column('n', INT, nullable=False),
    sa.PrimaryKeyConstraint('game', 'a', 'b')
    )
    op.create_table('spectators',
    sa.Column('name', STR, nullable=False),
    sa.Column('salt', sa.LargeBinary(), nullable=False),
    sa.Column('token_hash', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('hash_scheme', STR, server_default=sa.text("'scrypt'"), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def _tournaments_uploads_wagers() -> None:
    """Tournaments, uploads, the wager tables, auctions."""
    op.create_table('tournaments',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('game', STR, nullable=False),
    sa.Column('format', STR, nullable=False),
    sa.Column('seed', INT, nullable=False),
    sa.Column('config', STR, nullable=False),
    sa.Column('bots', STR, nullable=False),
    sa.Column('status', STR, server_default=sa.text("'running'"), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('finished_at', REAL, nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('uploads',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('bot', STR, nullable=False),
    sa.Column('author_id', INT, nullable=False),
    sa.Column('status', STR, nullable=False),
    sa.Column('sha256', STR, nullable=False),
    sa.Column('size', INT, nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=True),
    sa.Column('version', INT, nullable=True),
    sa.Column('report', STR, nullable=True),
    sa.Column('created_at', REAL, nullable=False),
    sa.Column('finished_at', REAL, nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('uploads_by_author', 'uploads', ['author_id', 'id'], unique=False)
    op.create_index('uploads_by_bot', 'uploads', ['bot', 'id'], unique=False)
    op.create_index('uploads_failed_by_time', 'uploads', ['finished_at'], unique=False, **_where("status = 'failed'"))
    op.create_table('wager_bets',
    sa.Column('match_key', STR, nullable=False),
    sa.Column('seq', INT, nullable=False),
    sa.Column('bettor', STR, nullable=False),
    sa.Column('seat', INT, nullable=False),
    sa.Column('stake', INT, nullable=False),
    sa.Column('matched', INT, nullable=False),
    sa.Column('returned', INT, nullable=False),
    sa.Column('payout', INT, nullable=False),
    sa.Column('levy', INT, nullable=False),
    sa.Column('status', STR, nullable=False),
    sa.Column('reason', STR, nullable=False),
    sa.PrimaryKeyConstraint('match_key', 'seq')
    )
    op.create_table('wager_ledger',
    sa.Column('id', INT, autoincrement=False, nullable=False),
    sa.Column('snapshot', STR, nullable=False),
    sa.Column('settled_levies', INT, nullable=False),
    sa.CheckConstraint('id = 1'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('auctions',
    sa.Column('tournament_id', INT, nullable=False),
    sa.Column('idx', INT, nullable=False),
    sa.Column('bids', STR, nullable=False),
    sa.Column('winner', STR, nullable=False),
    sa.Column('price', INT, nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.ForeignKeyConstraint(['tournament_id'], ['tournaments.id'], ),
    sa.PrimaryKeyConstraint('tournament_id', 'idx')
    )


def _matches_and_queue() -> None:
    """Matches and their indexes, submissions, log copies, the match queue."""
    op.create_table('matches',
    sa.Column('id', INT, sa.Identity(always=False), nullable=False),
    sa.Column('tournament_id', INT, nullable=False),
    sa.Column('idx', INT, nullable=False),
    sa.Column('match_key', STR, nullable=False),
    sa.Column('game', STR, nullable=False),
    sa.Column('bot0', STR, nullable=False),
    sa.Column('bot1', STR, nullable=False),
    sa.Column('seed', INT, nullable=False),
    sa.Column('status', STR, server_default=sa.text("'pending'"), nullable=False),
    sa.Column('winner_seat', INT, nullable=True),
    sa.Column('winner', STR, nullable=True),
    sa.Column('score0', INT, nullable=True),
    sa.Column('score1', INT, nullable=True),
    sa.Column('manches0', INT, nullable=True),
    sa.Column('manches1', INT, nullable=True),
    sa.Column('reason', STR, nullable=True),
    sa.Column('detail', STR, nullable=True),
    sa.Column('faulty_seat', INT, nullable=True),
    sa.Column('decisions', INT, nullable=True),
    sa.Column('deals', INT, nullable=True),
    sa.Column('duration_ms', INT, nullable=True),
    sa.Column('margin', INT, nullable=True),
    sa.Column('log_hash', STR, nullable=True),
    sa.Column('log_path', STR, nullable=True),
    sa.Column('finished_at', REAL, nullable=True),
    sa.Column('pair_key', STR, nullable=True),
    sa.ForeignKeyConstraint(['tournament_id'], ['tournaments.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('match_key'),
    sa.UniqueConstraint('tournament_id', 'idx')
    )
    op.create_index('matches_bot0_done', 'matches', ['game', 'bot0', 'id'], unique=False,
                    **_where("status != 'pending'"))
    op.create_index('matches_bot1_done', 'matches', ['game', 'bot1', 'id'], unique=False,
                    **_where("status != 'pending'"))
    op.create_index('matches_by_finished_at', 'matches', ['finished_at'], unique=False)
    op.create_index('matches_by_game', 'matches', ['game', 'status'], unique=False)
    op.create_index('matches_by_pair', 'matches', ['tournament_id', 'pair_key'], unique=False)
    op.create_index('matches_by_status', 'matches', ['tournament_id', 'status'], unique=False)
    op.create_index('matches_done', 'matches', ['game', 'id'], unique=False,
                    **_where("status != 'pending'"))
    op.create_index('matches_faults0', 'matches', ['bot0', 'id'], unique=False, **_where('faulty_seat = 0'))
    op.create_index('matches_faults1', 'matches', ['bot1', 'id'], unique=False, **_where('faulty_seat = 1'))
    op.create_table('submissions',
    sa.Column('name', STR, nullable=False),
    sa.Column('manifest', STR, nullable=False),
    sa.Column('sandbox', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('created_at', REAL, nullable=False),
    sa.ForeignKeyConstraint(['name'], ['bots.name'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('match_logs',
    sa.Column('match_key', STR, nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['match_key'], ['matches.match_key'], ),
    sa.PrimaryKeyConstraint('match_key')
    )
    op.create_table('match_queue',
    sa.Column('match_key', STR, nullable=False),
    sa.Column('tournament_id', INT, nullable=False),
    sa.Column('idx', INT, nullable=False),
    sa.Column('half', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('state', STR, server_default=sa.text("'queued'"), nullable=False),
    sa.Column('worker', STR, nullable=True),
    sa.Column('lease', STR, nullable=True),
    sa.Column('lease_until', sa.BigInteger(), nullable=True),
    sa.Column('attempts', INT, server_default=sa.text('0'), nullable=False),
    sa.Column('queued_at', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['match_key'], ['matches.match_key'], ),
    sa.PrimaryKeyConstraint('match_key')
    )
    op.create_index('match_queue_claim', 'match_queue', ['state', 'tournament_id', 'idx'], unique=False)
    # ### end Alembic commands ###


def downgrade() -> None:
    op.drop_table('match_queue')
    op.drop_table('match_logs')
    op.drop_table('submissions')
    op.drop_table('matches')
    op.drop_table('auctions')
    op.drop_table('wager_ledger')
    op.drop_table('wager_bets')
    op.drop_table('uploads')
    op.drop_table('tournaments')
    op.drop_table('spectators')
    op.drop_table('pair_counts')
    op.drop_table('match_events')
    op.drop_table('ladder_units')
    op.drop_table('ladder_state')
    op.drop_table('ladder')
    op.drop_table('invitations')
    op.drop_table('bots')
    op.drop_table('bot_status')
    op.drop_table('bot_owners')
    op.drop_table('bot_archives')
    op.drop_table('authors')
