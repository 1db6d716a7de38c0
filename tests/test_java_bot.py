"""The Java sample bot (sample_bots/java): started as ``java -jar bot.jar``, with no JVM flag, it
passes ``arena doctor`` in both games in the sandbox, under the bot's cgroup and under the
``RLIMIT_DATA`` fallback, and plays a sandboxed tournament against the C bot.

Skipped, with the reason, where there is no JDK (``javac``, ``jar`` and ``java`` on PATH; .ci/run
installs Debian's ``default-jdk-headless``). ``make`` builds the jar; so does :func:`ensure_java_bot`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from arena.match.core import MatchConfig
from arena.schedule.launcher import Limits, load_manifest
from arena.schedule.tournament import TournamentConfig, run_tournament
from arena.store.sqlite import Store
from arena.tools import doctor
from arena.tools.doctor import run_doctor
from tests.conftest import needs_bwrap

ROOT = Path(__file__).resolve().parent.parent
JAVA_DIR = ROOT / "sample_bots" / "java"
MANIFEST = JAVA_DIR / "java_bot.toml"
NO_JDK = next((tool for tool in ("javac", "jar", "java") if shutil.which(tool) is None), None)

try:
    from c_bot import ensure_c_bot
except ImportError:  # tests/ imported as a package
    from tests.c_bot import ensure_c_bot

pytestmark = [
    pytest.mark.skipif(NO_JDK is not None, reason=f"no JDK here ({NO_JDK} not on PATH): the Java sample bot's tests "
                       "are skipped; install default-jdk-headless"),
    needs_bwrap,
]


def ensure_java_bot() -> Path:
    """``sample_bots/java/bot.jar``, built with the Makefile's rule if missing or older than its source."""
    jar, source = JAVA_DIR / "bot.jar", JAVA_DIR / "Bot.java"
    if not jar.exists() or jar.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["make", "-s", "-C", str(ROOT), "sample_bots/java/bot.jar"], check=True, timeout=300)
    return jar


@pytest.fixture(scope="module")
def java_bot() -> Path:
    ensure_java_bot()
    return MANIFEST


def table(report: doctor.Report) -> str:
    return "\n".join(f"{c.title}: {c.status}: {c.details}" for c in report.checks) + f"\nlimits: {report.limits}"


@pytest.mark.parametrize("game", ["ecarte", "piquet"])
async def test_java_bot_passes_the_doctor_sandboxed_in_both_games(java_bot: Path, game: str) -> None:
    report = await run_doctor(java_bot, keep_logs=False, sandbox=True, game=game)
    assert report.ok, table(report)
    situations = doctor.SITUATIONS if game == "ecarte" else doctor.PIQUET_SITUATIONS
    assert {c.key: c.status for c in report.checks} == {c.key: "PASS" for c in report.checks}, table(report)
    assert len(report.checks) == 2 + len(situations) + len(doctor.GLOBAL_CHECKS)
    assert "over stdin/stdout" in report.check("connects").details
    assert report.limits.startswith("memory: 2 GiB")
    if game == "piquet":
        assert "compact form" in report.check("pq_discard_elder").details


async def test_java_bot_passes_the_doctor_under_the_rlimit_data_fallback(java_bot: Path) -> None:
    """Where no cgroup can be made: RLIMIT_DATA, which the JVM's reservations do not count against."""
    report = await run_doctor(java_bot, keep_logs=False, sandbox=True, limits=Limits(cgroup="no"))
    assert report.ok, table(report)
    assert "RLIMIT_DATA" in report.limits and "no cgroup" in report.limits


@pytest.mark.parametrize("game, natural", [("ecarte", {"target"}), ("piquet", {"rubicon", "cent", "draw", "deals"})])
async def test_java_bot_plays_a_sandboxed_tournament_against_the_c_bot(java_bot: Path, tmp_path: Path, game: str,
                                                                       natural: set[str]) -> None:
    if ensure_c_bot() is None:
        pytest.skip("gcc not on PATH: the C bot cannot be built")
    bots = [load_manifest(java_bot), load_manifest(ROOT / "sample_bots" / "c_bot.toml")]
    store = Store(tmp_path / "a.db")
    cfg = TournamentConfig(games=2, seed=11, logs_dir=str(tmp_path / "logs"), trust_bots=False,
                           match=MatchConfig(game=game))
    report = await run_tournament(store, bots, cfg)
    assert report.matches == 2 and set(report.reasons) <= natural, report.reasons  # no forfeit, nothing aborted
    assert {r.name for r in report.ratings} == {"java_bot", "c_bot"}
    logs = "".join(p.read_text() for p in (tmp_path / "logs").rglob("*.log"))
    assert "java_bot: server error" not in logs
