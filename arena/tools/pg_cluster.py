"""A throwaway PostgreSQL cluster, from Debian's ``postgresql`` package: for the tests
(tests/pg_cluster.py re-exports this module) and ``make bench-season`` (:mod:`arena.tools.bench_season`).

:func:`start_cluster` runs ``initdb`` into a fresh temporary directory, starts ``postgres``
there with ``pg_ctl`` on a free port, listening only on a unix socket in that directory (no
TCP), by default with ``fsync`` off (a throwaway cluster for tests needs no durability; the
bench passes its own ``settings``), and returns a :class:`Cluster`; :meth:`Cluster.destroy`
stops it and removes the directory.

``initdb`` refuses to run as root. Run as root (as here and in CI), every server command runs
as the ``postgres`` system user the Debian package creates (``runuser -u postgres --``), and the
temporary directory is given to it. The cluster uses the C locale, so text sorts by bytes as in
SQLite, and ``trust`` authentication on its private socket (nobody else can reach it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def pg_bin_dir() -> Path | None:
    """The directory of ``initdb``/``pg_ctl`` (newest ``/usr/lib/postgresql/*/bin``, else ``PATH``),
    or None when PostgreSQL is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A running throwaway cluster: ``url(db)`` is the connection URL of database ``db``."""

    def __init__(self, bin_dir: Path, root: Path, port: int, as_user: list[str]) -> None:
        self.bin_dir, self.root, self.port, self.as_user = bin_dir, root, port, as_user
        self.data = root / "data"
        self.user = pwd.getpwuid(os.stat(root).st_uid).pw_name

    def run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run ``tool`` of the PostgreSQL binaries as the cluster's owner; raises on failure."""
        return subprocess.run([*self.as_user, str(self.bin_dir / tool), *args], check=True, timeout=timeout,
                              capture_output=True, text=True, cwd=self.root)

    def url(self, db: str = "postgres") -> str:
        """``postgresql://`` URL of database ``db`` through the cluster's unix socket."""
        return f"postgresql://{self.user}@/{db}?host={self.root}&port={self.port}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        """Stop the server at once (``-m fast``: open sessions are cut, as by a crash or restart)."""
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def sql(self, statement: str, db: str = "postgres") -> None:
        """Run one SQL statement with autocommit (``CREATE DATABASE`` cannot run in a transaction)."""
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as conn:
            conn.execute(statement)

    def destroy(self) -> None:
        """Stop the server (if running) and remove its directory."""
        try:
            self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.root, ignore_errors=True)


TEST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "60",
                 "shared_buffers": "32MB"}
"""``postgresql.conf`` settings of a cluster for the tests: no durability, little memory."""


def start_cluster(settings: dict[str, str] | None = None) -> Cluster:
    """initdb + start a cluster in a fresh temporary directory (see the module docstring).
    ``settings``: ``postgresql.conf`` lines (name -> value as written in the file) in place of
    :data:`TEST_SETTINGS`; the port and the unix socket are always this module's. Raises
    ``RuntimeError`` when PostgreSQL is not installed or cannot be run."""
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="arena-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            raise RuntimeError("running as root but there is no 'postgres' user to run initdb as") from None
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    cluster = Cluster(bin_dir, root, _free_port(), as_user)
    try:
        cluster.run("initdb", "-D", str(cluster.data), "-U", cluster.user, "--auth=trust", "--locale=C",
                    "--encoding=UTF8", "--no-sync", timeout=120)
        with open(cluster.data / "postgresql.conf", "a") as conf:
            conf.write(f"\nport = {cluster.port}\nlisten_addresses = ''\nunix_socket_directories = '{root}'\n")
            for name, value in (TEST_SETTINGS if settings is None else settings).items():
                conf.write(f"{name} = {value}\n")
        cluster.start()
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        log = root / "log"
        if log.exists():
            detail += log.read_text(errors="replace")[-2000:]
        cluster.destroy()
        raise RuntimeError(f"cannot start a throwaway PostgreSQL cluster: {exc} {detail}".strip()) from None
    return cluster
