"""The tests' throwaway PostgreSQL cluster: :mod:`arena.tools.pg_cluster` (moved there so that
``make bench-season`` can start one too), re-exported under its old name."""

from arena.tools.pg_cluster import TEST_SETTINGS, Cluster, pg_bin_dir, start_cluster

__all__ = ["TEST_SETTINGS", "Cluster", "pg_bin_dir", "start_cluster"]
