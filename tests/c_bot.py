"""Build the C sample bot for the tests that run it (``make`` builds it too)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "sample_bots" / "c_bot.c"
BINARY = ROOT / "sample_bots" / "c_bot"


def ensure_c_bot() -> Path | None:
    """``sample_bots/c_bot``, compiled with the Makefile's command if it is missing or older than
    its source; None when gcc is not installed (the tests that need it then skip)."""
    if BINARY.exists() and BINARY.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BINARY
    if shutil.which("gcc") is None:
        return None
    subprocess.run(["make", "-s", "-C", str(ROOT), "sample_bots/c_bot"], check=True, timeout=120)
    return BINARY
