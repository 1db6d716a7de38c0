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

Containment:

* a new session, so the whole process group can be signalled, and :meth:`BotProcess.stop`
  kills the whole group (SIGTERM, then SIGKILL); the bot also gets SIGKILL if the arena
  process dies (Linux ``PR_SET_PDEATHSIG``), so even a SIGKILLed arena leaves no bot behind.
  That signal fires when the *thread* that forked exits, so bots are forked from the main
  thread (trio's ``open_process`` forks from worker threads, which retire after 10 s idle);
* resource limits (:class:`Limits`): CPU seconds, address space, open files, processes,
  largest file written;
* the bot's output relayed to a per-bot log file capped at ``Limits.log_bytes``.

Sandbox (``sandbox=True``, needs ``bwrap`` from Debian's ``bubblewrap``): the bot runs with no
network, a read-only view of the whole filesystem, its own PID namespace (no
process it forks survives it) and dies with the arena. Without a network it speaks the very same
protocol over stdin/stdout (``ARENA_TRANSPORT=stdio``): the launcher opens the TCP connection to
the server on its behalf and relays bytes both ways, so the server cannot tell the transports
apart. Its stderr goes to the capped log.

A process that escapes its group on purpose (``setsid`` in a fork) is only contained by the
sandbox: without it, such a grandchild outlives the match. Use ``--sandbox`` for untrusted code.
"""

from __future__ import annotations

import ctypes
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
    """Resource limits per bot process (``setrlimit``): CPU seconds, address space (bytes),
    open files, processes (counted per user by the kernel, and not enforced for root), largest
    file written (bytes); and how much captured output is kept (bytes)."""

    cpu_s: int = 3600
    address_space: int = 2 * 2**30
    open_files: int = 256
    processes: int = 256
    file_bytes: int = 64 * 2**20
    log_bytes: int = 2**20


def sandbox_available() -> bool:
    """True if ``bwrap`` is on PATH (Debian package ``bubblewrap``)."""
    return shutil.which("bwrap") is not None


def sandbox_command(command: list[str], directory: str) -> list[str]:
    """Wrap ``command`` in bubblewrap: the whole filesystem read-only, a private /dev and /proc,
    no network, its own PID namespace, killed when the arena dies; run in ``directory``."""
    return [
        # the whole filesystem read-only, /tmp included: a private writable /tmp would hide a bot
        # or an interpreter (a venv) that lives under /tmp
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
        "--chdir", directory, "--", *command,
    ]  # fmt: skip


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


_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


def _limit(limits: Limits):  # runs in the child between fork and exec
    def apply() -> None:
        if _libc is not None:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        for what, value in (
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_AS, limits.address_space),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_NPROC, limits.processes),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
        ):
            resource.setrlimit(what, (value, value))

    return apply


class _Process:
    """A ``subprocess.Popen`` made usable from trio: ``pid``, ``returncode``, ``async wait()``,
    and its pipes as trio streams (``stdin``, ``stdout``, ``stderr``)."""

    def __init__(self, popen: subprocess.Popen) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdin = self._stream(popen.stdin)
        self.stdout = self._stream(popen.stdout)
        self.stderr = self._stream(popen.stderr)

    @staticmethod
    def _stream(pipe):
        if pipe is None:
            return None
        stream = trio.lowlevel.FdStream(os.dup(pipe.fileno()))
        pipe.close()
        return stream

    @property
    def returncode(self) -> int | None:
        """The exit status, or None while running."""
        return self.popen.poll()

    async def wait(self) -> int:
        """Wait for the process to exit (polled every 20 ms); return its status."""
        while (code := self.popen.poll()) is None:
            await trio.sleep(0.02)
        return code


class BotProcess:
    """A running bot: its manifest, process and captured output file."""

    def __init__(self, manifest: Manifest, process: _Process, log_path: Path) -> None:
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

    async def stop(self, grace_s: float = 1.0, exit_grace_s: float = 1.0) -> None:
        """Wait up to ``exit_grace_s`` for the bot to exit on its own (it has just been sent
        ``goodbye``, docs/protocol.md §5), then SIGTERM the process group, wait up to ``grace_s``,
        then SIGKILL it (seconds)."""
        with trio.move_on_after(exit_grace_s):
            await self.process.wait()
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


async def _pump(source: trio.abc.ReceiveStream, sink: trio.abc.SendStream) -> None:
    """Copy bytes from ``source`` to ``sink`` until either side closes, then close ``sink``."""
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        with trio.CancelScope(shield=True):
            try:
                await sink.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass


async def _relay_tcp(process: _Process, host: str, port: int) -> None:
    """Connect to the server for a sandboxed bot and relay its stdin/stdout both ways."""
    assert process.stdin is not None and process.stdout is not None
    try:
        tcp = await trio.open_tcp_stream(host, port)
    except OSError:
        await process.stdin.aclose()
        return
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, process.stdout, tcp)
        nursery.start_soon(_pump, tcp, process.stdin)


async def launch(
    nursery: trio.Nursery,
    manifest: Manifest,
    env: dict[str, str],
    log_path: Path,
    limits: Limits | None = None,
    sandbox: bool = False,
) -> BotProcess:
    """Start the bot of ``manifest`` with extra environment ``env`` (``ARENA_HOST`` and
    ``ARENA_PORT`` say where the server is); its output goes to ``log_path`` (appended,
    capped). Relay tasks run in ``nursery``. With ``sandbox`` the bot runs under bubblewrap
    and speaks over stdin/stdout (see the module docstring). Raises ``OSError`` if the command
    cannot be started, ``RuntimeError`` if ``sandbox`` is asked and ``bwrap`` is missing."""
    limits = limits or Limits()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.touch()
    full_env = {**os.environ, **env}
    command = resolve_command(manifest)
    if sandbox:
        if not sandbox_available():
            raise RuntimeError("--sandbox needs bwrap (Debian package bubblewrap)")
        command = sandbox_command(command, manifest.directory)
        full_env["ARENA_TRANSPORT"] = "stdio"
    # forked here, in the main thread, so that PR_SET_PDEATHSIG tracks the arena's lifetime
    popen = subprocess.Popen(
        command,
        cwd=manifest.directory,
        env=full_env,
        stdin=subprocess.PIPE if sandbox else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if sandbox else subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_limit(limits),
    )
    process = _Process(popen)
    await trio.lowlevel.checkpoint()
    if sandbox:
        assert process.stderr is not None
        nursery.start_soon(_relay, process.stderr, log_path, limits.log_bytes)
        nursery.start_soon(_relay_tcp, process, env["ARENA_HOST"], int(env["ARENA_PORT"]))
    else:
        assert process.stdout is not None
        nursery.start_soon(_relay, process.stdout, log_path, limits.log_bytes)
    return BotProcess(manifest, process, log_path)
