"""Launch local bot programs from their manifests, each in its own process group.

A manifest is a TOML file beside the bot::

    name = "greedy"
    language = "python"
    command = ["{python}", "greedy_bot.py"]
    description = "Proposes and discards by hand strength; plays to win tricks."

``{python}`` becomes the arena's own interpreter, ``{node}`` the ``node`` on PATH; the
command runs in the manifest's directory. The bot learns where to connect from the
environment: ``ARENA_HOST``, ``ARENA_PORT``, ``ARENA_NAME``, ``ARENA_TOKEN`` and
``ARENA_BOT_SEED`` (an integer for its own random choices).

Containment: a new session (so the whole process group can be signalled), resource limits
(:class:`Limits`), stdout and stderr relayed to a per-bot log file capped at
``Limits.log_bytes``, and :meth:`BotProcess.stop` kills the whole group (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import msgspec
import trio


class Manifest(msgspec.Struct):
    """A bot's manifest; ``directory`` is where the TOML file lives (the bot's cwd)."""

    name: str
    command: list[str]
    language: str = ""
    description: str = ""
    directory: str = "."


class Limits(msgspec.Struct):
    """Resource limits per bot process: CPU seconds, open files, largest file written (bytes),
    captured output kept (bytes)."""

    cpu_s: int = 3600
    open_files: int = 256
    file_bytes: int = 64 * 2**20
    log_bytes: int = 2**20


def load_manifest(path: str | Path) -> Manifest:
    """Read a manifest TOML file. Raises ``ValueError`` naming the file if it is invalid."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
        manifest = msgspec.convert(data, Manifest)
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"{path}: bad bot manifest: {exc}") from None
    if not manifest.command:
        raise ValueError(f"{path}: bad bot manifest: empty command")
    manifest.directory = str(path.resolve().parent)
    return manifest


def resolve_command(manifest: Manifest) -> list[str]:
    """The manifest's command with ``{python}`` and ``{node}`` replaced."""
    subs = {"{python}": sys.executable, "{node}": shutil.which("node") or "node"}
    return [subs.get(part, part) for part in manifest.command]


def _limit(limits: Limits):  # runs in the child between fork and exec
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))

    return apply


class BotProcess:
    """A running bot: its manifest, process and captured output file."""

    def __init__(self, manifest: Manifest, process: trio.Process, log_path: Path) -> None:
        self.manifest = manifest
        self.process = process
        self.log_path = log_path

    @property
    def running(self) -> bool:
        """True while the process has not exited."""
        return self.process.returncode is None

    def stop_now(self) -> None:
        """SIGKILL the bot's whole process group (safe to call more than once)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def stop(self, grace_s: float = 1.0) -> None:
        """SIGTERM the process group, wait up to ``grace_s``, then SIGKILL it."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        with trio.move_on_after(grace_s):
            await self.process.wait()
        self.stop_now()
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            await self.process.wait()


async def _relay(stream: trio.abc.ReceiveStream, path: Path, cap: int) -> None:
    """Copy ``stream`` into ``path``, keeping at most ``cap`` bytes, draining the rest."""
    written = 0
    with open(path, "ab") as fh:
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            if written < cap:
                keep = data[: cap - written]
                fh.write(keep)
                written += len(keep)
                if written >= cap:
                    fh.write(b"\n[output truncated at %d bytes]\n" % cap)
                fh.flush()


async def launch(
    nursery: trio.Nursery,
    manifest: Manifest,
    env: dict[str, str],
    log_path: Path,
    limits: Limits | None = None,
) -> BotProcess:
    """Start the bot of ``manifest`` with extra environment ``env``; its output goes to
    ``log_path`` (appended, capped). The relay task runs in ``nursery``. Raises ``OSError``
    if the command cannot be started."""
    limits = limits or Limits()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **env}
    process = await trio.lowlevel.open_process(
        resolve_command(manifest),
        cwd=manifest.directory,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_limit(limits),
    )
    assert process.stdout is not None
    nursery.start_soon(_relay, process.stdout, log_path, limits.log_bytes)
    return BotProcess(manifest, process, log_path)
