"""PostgreSQL beside SQLite: which ``--db`` values are URLs, showing them without a password, storage faults.

The store runs on PostgreSQL through SQLAlchemy and psycopg 3 (:mod:`arena.store.engine`), with the
schema of :mod:`arena.store.schema`: the same statements as on SQLite, no rewriting of SQL. This
module holds what the rest of the arena needs to know about a PostgreSQL target: :func:`is_url`,
:func:`redact` / :func:`shown` (never show a password), :class:`DatabaseLost` (a lost connection
or a stopped server: an ``OSError``, so a storage fault that pauses and retries,
:mod:`arena.store.health`), and two helpers of the season benchmark that work on whole schemas
(:func:`schema_bytes`, :func:`reset_schemas`).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from arena.errors import DatabaseError

SCHEMES = ("postgresql://", "postgres://")
"""The URL schemes that mean PostgreSQL; anything else given as ``--db`` is an SQLite file."""


def is_url(target: object) -> bool:
    """True if ``target`` (a ``--db`` value) names a PostgreSQL database rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def redact(url: str) -> str:
    """``url`` without its password (in the authority or as a ``password=`` parameter), to show."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        auth, host = netloc.rsplit("@", 1)
        netloc = f"{auth.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"], safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def password_of(url: str) -> str | None:
    """The password in ``url`` (authority or ``password=`` parameter), or None."""
    password = urlsplit(url).password
    for k, v in parse_qsl(urlsplit(url).query):
        if k.lower() == "password":
            password = v
    return password


def shown(target: object) -> str:
    """A ``--db`` value as it may be shown: a URL without its password, a file path as it is."""
    return redact(str(target)) if is_url(target) else str(target)


class DatabaseLost(ConnectionError):
    """PostgreSQL could not do a statement for a reason of the server or the network (connection
    lost or refused, server restarting, disk full, lock wait too long): a storage fault, retried."""


def schema_bytes(url: str) -> int:
    """Bytes the tables of ``url``'s current schema take, with their indexes and TOAST
    (``pg_total_relation_size``): what a store on PostgreSQL weighs (the season benchmark)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'").fetchone()[0])


def reset_schemas(url: str, schemas: list[str] | tuple[str, ...], make: bool = True) -> None:
    """Drop the ``schemas`` of ``url``'s database with all they hold and (``make``) create them
    empty again: the throwaway stores of the season benchmark. The names are ours, never a user's.
    :class:`arena.errors.DatabaseError` if the server cannot be reached or refuses."""
    import psycopg

    for schema in schemas:
        if not schema.replace("_", "").isalnum():
            raise ValueError(f"not a schema name: {schema!r}")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                if make:
                    conn.execute(f"CREATE SCHEMA {schema}")
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot reset the schemas of {redact(url)}: {' '.join(str(exc).split())}") from None
