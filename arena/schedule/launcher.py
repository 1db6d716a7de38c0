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
* resource limits (:class:`Limits`): the memory the bot uses (not the address space it
  reserves, which the JVM, Go, .NET and V8 make far larger than what they touch) and its tasks,
  through a cgroup of its own where the arena can make one (:mod:`arena.schedule.cgroups`:
  ``memory.max``, ``pids.max``, the whole copy together), else ``RLIMIT_DATA`` per process and
  ``RLIMIT_NPROC`` per user (:func:`limits_line` says which applies); CPU seconds, open files
  and the largest file written (``setrlimit``); an address-space limit only if asked;
* the bot's output relayed to a per-bot log file capped at ``Limits.log_bytes``.

Sandbox (``sandbox=True``, the default of every command that launches bots; needs ``bwrap``
from Debian's ``bubblewrap``): the bot sees only what it needs (:func:`sandbox_command`): the
system directories (``/usr``, ``/bin``, ``/lib*``), the few files of ``/etc`` an interpreter
reads, the interpreter prefixes it runs with (``sys.prefix``, ``sys.base_prefix``, node's
prefix), its own directory read-only, a private ``/tmp`` (a tmpfs of ``Limits.tmp_bytes``, gone when it exits), a fresh
``/proc`` and ``/dev``; its own PID, IPC, UTS and network namespaces (no network at all, no view
of any other process), without any capability, and it dies with the arena. Nothing it can write survives it or is seen
by another process. Our logs directory, our database and other bots' directories are not
visible at all: where one lies inside a directory the bot needs, it is covered (a tmpfs over a
directory, ``/dev/null`` over a file); a bot directory inside one of them is refused
(:class:`SandboxError`). Its environment holds only ``PATH``, ``HOME=/tmp``, ``LANG`` and the
``ARENA_*`` variables. Without a network it speaks the very same protocol over stdin/stdout
(``ARENA_TRANSPORT=stdio``): the launcher opens a loopback TCP connection to the server on its
behalf and makes the far end the bot's stdin and stdout (:func:`loopback_pair`), so the server
cannot tell the transports apart and no relay copies the bytes (without an ``attach`` the
launcher relays them over a TCP connection of its own). Its stderr goes to the capped log.

Without the sandbox (the organiser's explicit ``--trust-bots``, unsafe) a bot runs as an
ordinary process of the arena's user: it can read other bots' tokens in ``/proc``, signal them,
read our files. A process that escapes its group on purpose (``setsid`` in a fork) is then not
contained either.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio

from arena.errors import UserError
from arena.match.limits import FLEET
from arena.names import BadName, check_name
from arena.schedule import cgroups
from arena.schedule.botlog import rotate
from arena.strict import convert_strict, read_toml

log = logging.getLogger(__name__)


class Manifest(msgspec.Struct, forbid_unknown_fields=True):
    """A bot's manifest; ``directory`` is where the TOML file lives (the bot's cwd)."""

    name: str
    command: list[str]
    language: str = ""
    description: str = ""
    directory: str = "."


class Limits(msgspec.Struct, forbid_unknown_fields=True):
    """Resource limits per bot copy: the memory it uses and its processes (a cgroup, or
    rlimits: see :func:`limits_line`), CPU seconds, open files, largest file written (bytes),
    an optional address-space limit; how much captured output is kept (bytes); the size of a
    sandboxed bot's ``/tmp`` (bytes)."""

    cpu_s: int = 3600
    memory_bytes: int = 2 * 2**30
    """Memory a bot copy may use: its cgroup's ``memory.max`` (every process of the copy, RSS,
    page cache and tmpfs together, no swap beyond), or without a cgroup ``RLIMIT_DATA`` per
    process (private writable memory, raised to what a JVM commits at start on a host with more
    than about 112 GiB of RAM: :func:`arena.schedule.cgroups.data_limit`)."""
    cgroup: str = "auto"
    """``auto``: a cgroup per copy where the arena's own cgroup is delegated to it, else rlimits;
    ``yes``: a cgroup or no bot (:class:`SandboxError` saying why); ``no``: rlimits only."""
    address_space: int = 0
    """``RLIMIT_AS`` (bytes); 0, the default, sets none: runtimes reserve far more address space
    than they use, and the JVM cannot start under 2 GiB."""
    open_files: int = 256
    processes: int = 256
    """Processes and threads of a copy: its cgroup's ``pids.max``, or without one
    ``RLIMIT_NPROC``, which the kernel counts per user (every process of the arena's user) and
    does not enforce for root."""
    file_bytes: int = 64 * 2**20
    log_bytes: int = 2**20
    log_keep: int = 2
    """Rotated output logs kept per bot (``<name>.log.1`` ...; :mod:`arena.schedule.botlog`)."""
    tmp_bytes: int = 64 * 2**20
    """Size of the sandbox's private ``/tmp`` and of its ``/dev/shm`` (each a tmpfs)."""


NO_SANDBOX = ("bwrap (Debian bubblewrap) is not installed: bots cannot be sandboxed; install it, or pass "
              "--trust-bots (unsafe: trusted code only)")
"""The one line shown when isolation is asked for (the default) and ``bwrap`` is missing."""
BROKEN_SANDBOX = ("bwrap cannot sandbox here (user namespaces disabled?): fix the host, or pass --trust-bots "
                  "(unsafe: trusted code only)")
"""The one line shown when ``bwrap`` is there but cannot create its namespaces."""


class SandboxError(ValueError):
    """A bot cannot be sandboxed as asked: ``bwrap`` is missing, or the bot's directory lies
    inside a path that bots must not read (our logs, our database)."""


@functools.cache
def sandbox_problem() -> str | None:
    """None if bubblewrap can sandbox a bot on this host (``bwrap`` on PATH, and a trial sandbox
    with every namespace starts); otherwise the one line that says why not and how to fix it
    (:data:`NO_SANDBOX` or :data:`BROKEN_SANDBOX`). Checked once per process."""
    if shutil.which("bwrap") is None:
        return NO_SANDBOX
    try:
        trial = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--cap-drop", "ALL", "true"],
                               capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return BROKEN_SANDBOX
    return None if trial.returncode == 0 else BROKEN_SANDBOX


def sandbox_available() -> bool:
    """True if bots can be sandboxed here (:func:`sandbox_problem`)."""
    return sandbox_problem() is None


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Bound read-only (or re-created as the same symlinks, on a merged-/usr system)."""

ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group",
               "hosts", "alternatives", "ssl", "ca-certificates", "os-release")
"""The parts of /etc an interpreter may read (the dynamic loader, time zone, user names)."""
ETC_PATTERNS = ("java-*", "java", "mono", "dotnet")
"""And the runtimes' configuration, where installed: Debian's OpenJDK keeps ``jvm.cfg`` and its
security settings in ``/etc/java-<version>-openjdk`` (``lib/jvm.cfg`` is a link there)."""


def etc_entries() -> list[str]:
    """The entries of ``/etc`` bound into the sandbox (:data:`ETC_ENTRIES`, then those matching
    :data:`ETC_PATTERNS`), existing ones only."""
    found = [f"/etc/{e}" for e in ETC_ENTRIES if os.path.lexists(f"/etc/{e}")]
    for pattern in ETC_PATTERNS:
        found += [str(p) for p in sorted(Path("/etc").glob(pattern)) if str(p) not in found]
    return found


def interpreter_prefixes() -> list[str]:
    """Directories holding the interpreters bots run with: ``sys.prefix``, ``sys.base_prefix``
    (and the exec prefixes) of the arena's Python, and the prefix of the ``node`` on PATH
    (``<prefix>/bin/node``). Real paths, existing ones only, without repeats."""
    out: list[str] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    node = shutil.which("node")
    if node:
        candidates.append(str(Path(node).resolve().parent.parent))
    for c in candidates:
        real = os.path.realpath(c)
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return out


@functools.cache
def _bwrap_sizes() -> bool:
    """True if this ``bwrap`` knows ``--size`` (0.5 and later)."""
    try:
        return "--size" in subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def sandbox_command(command: list[str], directory: str, hide: Sequence[str | Path] = (),
                    others: Sequence[str | Path] = (), tmp_bytes: int | None = None) -> list[str]:
    """Wrap ``command`` in bubblewrap, to run in ``directory`` (see the module docstring for
    what the bot sees). ``hide`` lists paths no bot may read (our logs directory, our database),
    ``others`` the other bots' directories: one lying inside a directory the bot needs is
    covered (a tmpfs over a directory, ``/dev/null`` over a file and over an SQLite database's
    ``-wal``, ``-shm`` and ``-journal`` files). Another bot's directory that holds this bot's
    (the same directory, or a parent) is left alone: only this bot's part of it is bound. Raises
    :class:`SandboxError` if ``directory`` lies inside a ``hide`` path (the bot could not run
    without seeing it). ``tmp_bytes`` caps the private ``/tmp`` and ``/dev/shm`` (where
    ``bwrap`` supports ``--size``); the rest of ``/dev`` and every cover are read-only."""
    directory = os.path.realpath(directory)
    size = ["--size", str(tmp_bytes)] if tmp_bytes and _bwrap_sizes() else []
    args = ["bwrap", *size, "--tmpfs", "/tmp"]
    bound: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            bound.append(d)
    for path in etc_entries():
        args += ["--ro-bind", path, path]
        bound.append(path)
    binds = [p for p in interpreter_prefixes() if not any(_inside(p, b) for b in bound)] + [directory]
    for p in sorted(set(binds), key=len):  # parents before children
        args += ["--ro-bind", p, p]
        bound.append(p)
    for h, other in [*((h, False) for h in hide), *((o, True) for o in others)]:
        secret = os.path.realpath(h)
        if _inside(directory, secret):
            if other:
                continue
            raise SandboxError(f"the bot directory {directory} lies inside {secret}, which bots must not read: "
                               "move the bot, or the logs and database, elsewhere")
        if not any(_inside(secret, b) for b in bound):
            continue
        if os.path.isdir(secret):
            args += ["--tmpfs", secret, "--remount-ro", secret]
        elif not os.path.exists(secret):  # it could appear later, visible: create it first
            raise SandboxError(f"{secret} does not exist yet, so it cannot be hidden from the bot in {directory}")
        else:
            for f in (secret, secret + "-wal", secret + "-shm", secret + "-journal"):
                if os.path.exists(f):
                    args += ["--ro-bind", "/dev/null", f]
    return [
        *args, "--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
        # no capability even inside its namespaces (bwrap keeps them when the arena runs as root):
        # with CAP_SYS_ADMIN a bot could unmount what covers our logs and remount its binds
        "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--chdir", directory,
        "--", *command,
    ]  # fmt: skip


def sandbox_env(env: dict[str, str]) -> dict[str, str]:
    """The whole environment of a sandboxed bot: ``PATH``, ``HOME=/tmp``, ``LANG``, then
    ``env`` (the ``ARENA_*`` variables) and ``ARENA_TRANSPORT=stdio``; nothing else of ours."""
    base = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8"}
    return {**base, **env, "ARENA_TRANSPORT": "stdio"}


def load_manifest(path: str | Path) -> Manifest:
    """Read a manifest TOML file. Raises :class:`arena.errors.UserError` (a ``ValueError``)
    naming the file if it is missing or invalid, or has a key a manifest does not have (with
    the closest known key), or a ``name`` outside the rule of :mod:`arena.names`."""
    path = Path(path)
    data = read_toml(path, "no such bot manifest", "bad bot manifest: ")
    manifest = convert_strict(data, Manifest, f"{path}: bad bot manifest")
    if not manifest.command:
        raise UserError(f"{path}: bad bot manifest: empty command")
    try:
        check_name(manifest.name)
    except BadName as exc:
        raise UserError(f"{path}: bad bot manifest: {exc}") from None
    manifest.directory = str(path.resolve().parent)
    return manifest


def _check_program(program: str, directory: str) -> None:
    """Raise ``FileNotFoundError`` or ``PermissionError`` (as ``Popen`` would) if ``program``
    (a path, relative to the bot's ``directory``, or a name looked up on PATH) cannot be run."""
    path = Path(directory, program) if os.sep in program else shutil.which(program)
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


_FILE_SUFFIXES = (".py", ".js", ".mjs", ".jar", ".class", ".rb", ".pl", ".sh", ".exe", ".dll", ".lua", ".php")
"""Arguments with these endings, after the program, name files the bot needs in its folder."""


def command_problem(manifest: Manifest) -> str | None:
    """Why the manifest's ``command`` cannot run from the bot's folder, or None: its program
    (a path relative to the folder, or a name on ``PATH`` such as ``java``; ``{python}`` and
    ``{node}`` are ours) must exist and be executable, a program given by an absolute path
    must lie inside the folder (a sandboxed bot sees nothing else), and a script or archive
    named after it (``bot.py``, ``bot.jar``: an argument with a file ending, or a relative path)
    must exist in the folder. What ``arena bots submit`` and ``arena bots upload`` check first."""
    program = manifest.command[0]
    root = Path(manifest.directory)
    if os.path.isabs(program) and not Path(program).is_relative_to(root):
        return (f"its program {program} lies outside the bot's folder {root}, which is all a sandboxed bot sees: "
                "copy it into the folder and name it by a relative path (./bot)")
    try:
        _check_program(resolve_command(manifest)[0], str(root))
    except OSError as exc:
        return f"its program {program!r} {'is not executable' if isinstance(exc, PermissionError) else 'is missing'}" \
               f" (looked for {'in ' + str(root) if os.sep in program else 'on PATH'})"
    for arg in manifest.command[1:]:
        if arg.startswith("-") or os.path.isabs(arg):
            continue
        if (arg.endswith(_FILE_SUFFIXES) or os.sep in arg) and not (root / arg).exists():
            return f"it names {arg!r}, which is not in the bot's folder {root}"
    return None


def resolve_command(manifest: Manifest) -> list[str]:
    """The manifest's command with ``{python}`` and ``{node}`` replaced."""
    subs = {"{python}": sys.executable, "{node}": shutil.which("node") or "node"}
    return [subs.get(part, part) for part in manifest.command]


_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


def memory_setup(limits: Limits) -> cgroups.Setup | str:
    """Where bot copies get their cgroup (:func:`arena.schedule.cgroups.setup` for
    ``limits.cgroup``), or the one line that says why they get rlimits instead."""
    if limits.cgroup not in cgroups.MODES:
        return f"unknown [limits] cgroup {limits.cgroup!r}: auto, yes or no"
    return cgroups.setup(limits.cgroup)


def limits_line(limits: Limits, detail: bool = True) -> str:
    """One line saying how a bot copy's memory and processes are limited here, e.g.
    ``memory: 2 GiB per bot copy, all its processes together (cgroup v1 (memory, pids) under
    ...); 256 processes and threads per copy (pids.max)``, or the ``RLIMIT_DATA`` fallback with
    the reason no cgroup applies. ``detail=False`` leaves out the host's paths and the reason
    (for a report an author sees)."""
    s = memory_setup(limits)
    mem = cgroups.human(limits.memory_bytes)
    if isinstance(s, cgroups.Setup):
        tasks = (f"{limits.processes} processes and threads per copy (pids.max)" if "pids" in s.bases
                 else f"{limits.processes} processes per user (RLIMIT_NPROC)")
        where = s.describe() if detail else f"cgroup v{s.version}"
        return f"memory: {mem} per bot copy, all its processes together ({where}); {tasks}"
    data = cgroups.data_limit(limits.memory_bytes)
    raised = f", raised from {mem} for the JVM's start on this host" if data > limits.memory_bytes else ""
    why = f"no cgroup: {s}" if detail else "no cgroup here"
    return (f"memory: {cgroups.human(data)} of private writable memory per process (RLIMIT_DATA{raised}; {why}); "
            f"{limits.processes} processes per user (RLIMIT_NPROC)")


def _limit(limits: Limits, procs_files: list[str] | None, tasks_in_group: bool):
    """The function run in the child between fork and exec: die with the arena, join the
    copy's cgroup (``procs_files``), set the rlimits. Should joining fail, ``RLIMIT_DATA`` and
    ``RLIMIT_NPROC`` apply instead, so the bot is never without a memory limit."""
    data = cgroups.data_limit(limits.memory_bytes)

    def apply() -> None:
        if _libc is not None:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        joined = False
        if procs_files:
            try:
                cgroups.BotGroup.join(procs_files)
                joined = True
            except OSError:
                pass
        rlimits = [(resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_NOFILE, limits.open_files),
                   (resource.RLIMIT_FSIZE, limits.file_bytes)]
        if limits.address_space:
            rlimits.append((resource.RLIMIT_AS, limits.address_space))
        if not joined:
            rlimits.append((resource.RLIMIT_DATA, data))
        if not (joined and tasks_in_group):
            rlimits.append((resource.RLIMIT_NPROC, limits.processes))
        for what, value in rlimits:
            resource.setrlimit(what, (value, value))

    return apply


class _Process:
    """A ``subprocess.Popen`` made usable from trio: ``pid``, ``returncode``, ``async wait()``,
    and its pipes as trio streams (``stdin``, ``stdout``, ``stderr``). ``on_exit`` is called
    once, when the exit is first seen."""

    def __init__(self, popen: subprocess.Popen, on_exit: Callable[[], None] | None = None) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdin = self._stream(popen.stdin)
        self.stdout = self._stream(popen.stdout)
        self.stderr = self._stream(popen.stderr)
        self.on_exit = on_exit

    def _exited(self, code: int | None) -> int | None:
        if code is not None and self.on_exit is not None:
            on_exit, self.on_exit = self.on_exit, None
            on_exit()
        return code

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
        return self._exited(self.popen.poll())

    async def wait(self) -> int:
        """Wait for the process to exit (polled every ``FLEET.exit_poll_ms``); return its status."""
        while (code := self.popen.poll()) is None:
            await trio.sleep(FLEET.exit_poll_ms / 1000)
        self._exited(code)
        return code


class BotProcess:
    """A running bot: its manifest, process and captured output file, and its cgroup (None
    where rlimits limit it instead)."""

    def __init__(self, manifest: Manifest, process: _Process, log_path: Path,
                 group: cgroups.BotGroup | None = None) -> None:
        self.manifest = manifest
        self.process = process
        self.log_path = log_path
        self.group = group
        self.memory_peak: int | None = None
        """The most memory its cgroup was charged (bytes), read when it exits; None without one."""
        self.oom_killed = False
        """True if the kernel killed a process of its cgroup for going over the memory limit."""

    def _exited(self) -> None:
        """The bot's process has exited: note its cgroup's peak and any OOM kill (in its log,
        so its author reads why it stopped), then kill what is left of it and remove the group."""
        group = self.group
        if group is None:
            return
        self.memory_peak = group.peak_bytes()
        if group.oom_kills():
            self.oom_killed = True
            limit = cgroups.human(group.memory_limit)
            try:
                with open(self.log_path, "ab") as fh:
                    fh.write(f"\n[arena: the bot was killed for going over its memory limit ({limit}, "
                             f"cgroup v{group.version})]\n".encode())
            except OSError:
                pass
        group.remove()

    @property
    def running(self) -> bool:
        """True while the process has not exited."""
        return self.process.returncode is None

    def stop_now(self) -> None:
        """SIGKILL the bot's whole process group, and every process of its cgroup (even one
        that left the group with ``setsid``); safe to call more than once."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.group is not None:
            self.group.kill()
            if self.process.returncode is not None:
                self.group.remove()

    async def stop(self, grace_s: float = 1.0, exit_grace_s: float = 1.0, reap_s: float = 2.0) -> None:
        """Wait up to ``exit_grace_s`` for the bot to exit on its own (it has just been sent
        ``goodbye``, docs/protocol.md §5), then SIGTERM the process group, wait up to ``grace_s``,
        then SIGKILL it and wait up to ``reap_s`` for it to be gone (seconds; the fleet passes
        :class:`arena.match.limits.FleetLimits`)."""
        with trio.move_on_after(exit_grace_s):
            await self.process.wait()
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        with trio.move_on_after(grace_s):
            await self.process.wait()
        self.stop_now()
        with trio.CancelScope(shield=True), trio.move_on_after(reap_s):
            await self.process.wait()


async def _relay(stream: trio.abc.ReceiveStream, path: Path, cap: int) -> None:
    """Copy ``stream`` into ``path``, keeping at most ``cap`` bytes, draining the rest."""
    written = 0
    with open(path, "ab", buffering=0) as fh:  # unbuffered: a failed write leaves nothing to flush at close
        while True:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            if written < cap:
                keep = data[: cap - written]
                written += len(keep)
                try:  # a full disk or read-only path costs the log, never the server
                    fh.write(keep)
                    if written >= cap:
                        fh.write(b"\n[output truncated at %d bytes]\n" % cap)
                    fh.flush()
                except OSError:
                    written = cap


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


def loopback_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of TCP sockets on 127.0.0.1: ``(the arena's end, the bot's end)``. A
    sandboxed bot (no network of its own) gets its end as stdin and stdout; TCP rather than a
    Unix socket pair, because the kernel stamps TCP arrivals for the fair clock
    (:mod:`arena.match.fairclock`) and a TCP peer cannot pass file descriptors.

    Any local process may connect to the short-lived listener too (an unsandboxed bot, say):
    a connection that is not the arena's own is closed and never becomes a bot's stream, which
    would hand it that bot's cards. Raises ``OSError`` if the pair cannot be made."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        theirs = socket.create_connection(listener.getsockname())
        try:
            mine = theirs.getsockname()
            for _ in range(64):  # the intruders queued before our own connection, at most
                ours, peer = listener.accept()
                if peer == mine:
                    break
                ours.close()  # someone else's connection
            else:
                raise OSError("loopback pair: the listener was flooded by other connections")
        except BaseException:
            theirs.close()
            raise
    for sock in (ours, theirs):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    theirs.setblocking(True)
    return ours, theirs


async def _relay_tcp(process: _Process, host: str, port: int, connect=None) -> None:
    """Connect to the server for a sandboxed bot and relay its stdin/stdout both ways.
    ``connect`` (an async callable returning a stream, e.g. ``ArenaServer.attach_local``)
    replaces the TCP connection to ``host:port``: the bot then never goes through the
    server's listener and its caps."""
    assert process.stdin is not None and process.stdout is not None
    try:
        tcp = await connect() if connect is not None else await trio.open_tcp_stream(host, port)
    except (OSError, RuntimeError):
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
    hide: Sequence[str | Path] = (),
    others: Sequence[str | Path] = (),
    connect=None,
    attach: Callable[[socket.socket], None] | None = None,
) -> BotProcess:
    """Start the bot of ``manifest`` with extra environment ``env`` (``ARENA_HOST`` and
    ``ARENA_PORT`` say where the server is); its output goes to ``log_path`` (appended,
    capped, rotated: :mod:`arena.schedule.botlog`). Relay tasks run in ``nursery``. With ``sandbox`` the
    bot runs under bubblewrap, ``hide`` and ``others`` out of its sight
    (:func:`sandbox_command`), and speaks over stdin/stdout (see the module docstring);
    ``attach`` (e.g. :meth:`arena.net.server.ArenaServer.attach_socket`), if given, is handed
    the arena's end of a loopback TCP pair whose other end is the sandboxed bot's stdin and
    stdout: no relay in between, and the kernel stamps its answers as a TCP bot's; else
    ``connect`` is how the stdio relay reaches the server (see :func:`_relay_tcp`). Raises
    ``OSError`` if the command cannot be started, :class:`SandboxError` if ``sandbox`` is asked
    and ``bwrap`` is missing or a hidden path cannot be hidden, or if ``limits.cgroup`` is
    ``"yes"`` and no cgroup can be made. A cgroup of its own limits the bot where one can be
    made, rlimits otherwise (:func:`limits_line`); it is removed once the bot's exit is seen."""
    limits = limits or Limits()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    rotate(log_path, limits.log_bytes, limits.log_keep)  # retention: arena.schedule.botlog
    command = resolve_command(manifest)
    if sandbox:
        if (problem := sandbox_problem()) is not None:
            raise SandboxError(problem)
        _check_program(command[0], manifest.directory)  # bwrap itself would start, and the bot never come
        command = sandbox_command(command, manifest.directory, hide, others, limits.tmp_bytes)
        full_env = sandbox_env(env)
    else:
        full_env = {**os.environ, **env}
    log_path.touch()
    group = _make_group(limits)
    ours = theirs = None
    stdio: Any = subprocess.PIPE if sandbox else subprocess.DEVNULL
    try:
        if sandbox and attach is not None:
            ours, theirs = loopback_pair()
        # forked here, in the main thread, so that PR_SET_PDEATHSIG tracks the arena's lifetime
        popen = subprocess.Popen(
            command,
            cwd=manifest.directory,
            env=full_env,
            stdin=theirs.fileno() if theirs is not None else stdio,
            stdout=theirs.fileno() if theirs is not None else subprocess.PIPE,
            stderr=subprocess.PIPE if sandbox else subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_limit(limits, group.procs_files() if group else None, bool(group and group.limits_tasks)),
        )
    except BaseException:
        for sock in (ours, theirs):
            if sock is not None:
                sock.close()
        if group is not None:
            group.remove()
        raise
    if theirs is not None:
        theirs.close()  # the bot holds it now: its exit is the connection's end
    process = _Process(popen)
    bot = BotProcess(manifest, process, log_path, group)
    process.on_exit = bot._exited
    await trio.lowlevel.cancel_shielded_checkpoint()  # never cancelled here: the caller must get the process to stop it
    if sandbox:
        assert process.stderr is not None
        nursery.start_soon(_relay, process.stderr, log_path, limits.log_bytes)
        if ours is not None and attach is not None:
            attach(ours)
        else:
            nursery.start_soon(_relay_tcp, process, env["ARENA_HOST"], int(env["ARENA_PORT"]), connect)
    else:
        assert process.stdout is not None
        nursery.start_soon(_relay, process.stdout, log_path, limits.log_bytes)
    return bot


def _make_group(limits: Limits) -> cgroups.BotGroup | None:
    """A cgroup for one bot copy, or None where rlimits apply; raises :class:`SandboxError` if
    ``limits.cgroup`` is ``"yes"`` (or unknown) and none can be made."""
    s = memory_setup(limits)
    if isinstance(s, cgroups.Setup):
        try:
            return cgroups.BotGroup.create(s, limits.memory_bytes, limits.processes)
        except OSError as exc:
            s = f"cannot make a cgroup for the bot: {exc}"
            if limits.cgroup == "auto":
                log.warning("%s; RLIMIT_DATA limits this bot's memory instead", s)
    if limits.cgroup in ("auto", "no"):
        return None
    raise SandboxError(f'[limits] cgroup = "yes" but {s}' if limits.cgroup == "yes" else s)
