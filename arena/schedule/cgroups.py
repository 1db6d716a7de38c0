"""A control group per launched bot copy: limit the memory a bot uses, not the address space it reserves.

Why not ``RLIMIT_AS``: the JVM reserves a gigabyte for its compressed class space and a heap of a
quarter of the host's RAM at start, Go and .NET reserve tens to hundreds of gigabytes, V8 its
cages: address space they map ``PROT_NONE`` and never touch. An address-space limit stops them at
start (``java -jar`` under 2 GiB: "Could not allocate compressed class space"). A memory cgroup
counts only the pages a copy touches (its RSS, the page cache and tmpfs pages it fills, every
process and thread of the copy together), and its pids controller the tasks (processes and
threads) it runs. A copy that goes over ``memory.max`` is stopped by the kernel's OOM killer
(SIGKILL), the match then ends as for any bot that dies (``forfeit_disconnect``).

Where the arena can make one (:func:`setup`, once per process):

* **cgroup v2** (the unified hierarchy, ``cgroup2`` in ``/proc/self/mountinfo``): the arena's own
  cgroup (``0::<path>`` in ``/proc/self/cgroup``) must offer the ``memory`` controller (``pids``
  too, else ``RLIMIT_NPROC`` stays), be writable by the arena, and be *delegated* to it: marked by
  systemd (``Delegate=yes`` sets the ``trusted.delegate`` or ``user.delegate`` attribute), or on a
  host where systemd is not the init (a container, a plain VM), or vouched for by the organiser
  (``[limits] cgroup = "yes"``). As a cgroup with processes cannot hand controllers to its
  children (the kernel's no-internal-process rule), the processes of the arena's cgroup move into
  a leaf, ``arena-supervisor``, then ``+memory +pids`` are enabled in its ``cgroup.subtree_control``
  and each copy gets a sibling ``arena-bot-<pid>-<n>`` with ``memory.max``, ``memory.swap.max = 0``,
  ``memory.oom.group = 1`` and ``pids.max``. A later arena process started in the leaf (a worker)
  uses the leaf's parent.
* **cgroup v1** (``memory`` and ``pids`` mounted as separate hierarchies): a child of the arena's
  own memory cgroup with ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` (no swap
  beyond the limit), and of its pids cgroup with ``pids.max``, under the same conditions
  (writable, delegated).

Otherwise :func:`setup` returns the one line that says why, and the launcher falls back to
``RLIMIT_DATA`` per process (:func:`data_limit`), which counts private writable mappings: what
a process has committed, not what it has only reserved ``PROT_NONE``.

A bot joins its group between ``fork`` and ``exec`` (:meth:`BotGroup.join`: ``0`` written to
``cgroup.procs``), before ``bwrap`` starts, so the sandbox and everything in it are inside. When
the copy is stopped every task left in the group is killed (``cgroup.kill``, or each pid) and
the group removed; groups left behind by an arena that died are removed by the next one
(:func:`sweep`). Nothing else of the host's cgroup tree is ever written.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

LEAF = "arena-supervisor"
"""cgroup v2: the leaf the arena's own processes move into, so that their cgroup can delegate."""
PREFIX = "arena-bot-"
"""Name of each copy's group: ``arena-bot-<arena pid>-<n>``."""
_GROUP_NAME = re.compile(rf"^{PREFIX}(\d+)-\d+$")

JVM_MAX_RAM = 128 * 2**30
"""HotSpot's default ``MaxRAM``: the JVM sizes its heap from at most this much of the host's RAM."""
JVM_MARGIN = 256 * 2**20
"""What a JVM commits at start besides its initial heap (code cache, metaspace, GC tables,
thread stacks; measured at about 130 MiB with OpenJDK 17), with room to spare (bytes)."""

MODES = ("auto", "yes", "no")
"""``[limits] cgroup``: ``auto`` a cgroup where the arena's own is delegated to it, else
``RLIMIT_DATA``; ``yes`` a cgroup or no bot at all (the organiser vouches for the delegation);
``no`` rlimits only."""


@dataclass(frozen=True)
class Mount:
    """One cgroup filesystem of ``/proc/self/mountinfo``: the path of the hierarchy mounted
    (``root``), where (``point``), ``cgroup2`` or ``cgroup``, and the v1 controllers it holds."""

    root: str
    point: str
    fstype: str
    controllers: frozenset[str]


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    """The cgroup mounts of a ``/proc/<pid>/mountinfo`` text (other lines are ignored)."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        options = frozenset(tail[2].split(",")) if tail[0] == "cgroup" else frozenset()
        mounts.append(Mount(_unescape(fields[3]), _unescape(fields[4]), tail[0], options))
    return mounts


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` as controller -> path: ``""`` for the v2 hierarchy, ``"memory"``,
    ``"pids"`` ... for v1 ones (a line naming several controllers gives each the path)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, names, path = parts
        if parts[0] == "0" and names == "":
            out[""] = path
        for name in names.split(","):
            if name:
                out[name] = path
    return out


def _locate(mount: Mount, path: str) -> Path | None:
    """The directory of cgroup ``path`` under ``mount``, or None if the mount does not show it."""
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/") and root != "":
        return None
    rel = path[len(root):].lstrip("/")
    return Path(mount.point, rel) if rel else Path(mount.point)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> None:
    """Write ``value`` to a cgroup file in one ``write`` (raises ``OSError``)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # O_CREAT: only test trees lack the file
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK) and os.access(path / "cgroup.procs", os.W_OK)


def _marked_delegated(path: Path) -> bool:
    for attribute in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(path, attribute).strip() == b"1":
                return True
        except OSError:
            pass
    return False


@dataclass
class Setup:
    """Where this process makes its bots' groups: the cgroup ``version`` (1 or 2) and, per
    controller (``memory``, and ``pids`` when available), the directory they are made in."""

    version: int
    bases: dict[str, Path]
    swept: set[Path] = field(default_factory=set)

    def describe(self) -> str:
        """``cgroup v2 (memory, pids) under /sys/fs/cgroup/...``."""
        where = sorted({str(p) for p in self.bases.values()})
        return f"cgroup v{self.version} ({', '.join(sorted(self.bases))}) under {', '.join(where)}"


@dataclass(frozen=True)
class Host:
    """What :func:`detect` reads of the host: the texts of ``/proc/self/mountinfo`` and
    ``/proc/self/cgroup``, whether systemd is the init (``/run/systemd/system`` exists), and
    this process's pid (moved into the v2 leaf). :func:`host` reads the real ones."""

    mountinfo: str
    cgroup: str
    systemd: bool
    pid: int


def host() -> Host:
    """The real host (:class:`Host`)."""
    return Host(_read(Path("/proc/self/mountinfo")), _read(Path("/proc/self/cgroup")),
                os.path.isdir("/run/systemd/system"), os.getpid())


def _delegation_problem(path: Path, h: Host, vouched: bool) -> str | None:
    if vouched or not h.systemd or _marked_delegated(path):
        return None
    return (f"{path} is not delegated to the arena (systemd manages it: run the arena in a unit with Delegate=yes, "
            "docs/bots.md §11.5)")


def _detect_v2(own: Path, h: Host, vouched: bool) -> Setup | str:
    base = own.parent if own.name == LEAF else own
    controllers = _read(base / "cgroup.controllers").split()
    if "memory" not in controllers:
        return f"cgroup v2: the memory controller is not offered to {base}"
    if not _writable(base):
        return f"cgroup v2: {base} is not writable by the arena (uid {os.geteuid()})"
    if (problem := _delegation_problem(base, h, vouched)) is not None:
        return f"cgroup v2: {problem}"
    wanted = ["memory"] + (["pids"] if "pids" in controllers else [])
    if not set(wanted) <= set(_read(base / "cgroup.subtree_control").split()):
        is_root = not (base / "cgroup.type").exists()  # the real root has none, and no internal-process rule
        try:
            if not is_root and (procs := _read(base / "cgroup.procs").split()):
                leaf = base / LEAF
                leaf.mkdir(exist_ok=True)
                for pid in procs:
                    try:
                        _write(leaf / "cgroup.procs", pid)
                    except ProcessLookupError:
                        pass
            _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
        except OSError as exc:
            return f"cgroup v2: cannot enable {' and '.join(wanted)} for the children of {base}: {exc.strerror}"
    return Setup(2, {c: base for c in wanted})


def _own_dirs(mounts: list[Mount], paths: dict[str, str], key: str) -> list[Path]:
    """The arena's own cgroup directory in each hierarchy ``key`` names: ``""`` the v2 one, else
    a v1 controller (``memory``, ``pids``, ``name=systemd``)."""
    out = []
    for m in mounts:
        holds = m.fstype == "cgroup2" if key == "" else (m.fstype == "cgroup" and key in m.controllers)
        if holds and key in paths and (own := _locate(m, paths[key])) is not None and own.is_dir():
            out.append(own)
    return out


def _detect_v1(mounts: list[Mount], paths: dict[str, str], h: Host, vouched: bool) -> Setup | str:
    memory, pids = _own_dirs(mounts, paths, "memory"), _own_dirs(mounts, paths, "pids")
    if not memory:
        return "no cgroup hierarchy with the memory controller is mounted where the arena can see it"
    bases = {"memory": memory[0]}
    if not _writable(bases["memory"]):
        return f"cgroup v1: {bases['memory']} is not writable by the arena (uid {os.geteuid()})"
    # systemd marks a delegated unit's cgroup in the hierarchies it owns (name=systemd, the unified one)
    marked = [bases["memory"], *_own_dirs(mounts, paths, "name=systemd"), *_own_dirs(mounts, paths, "")]
    if not vouched and h.systemd and not any(_marked_delegated(p) for p in marked):
        return f"cgroup v1: {_delegation_problem(bases['memory'], h, False)}"
    if pids and _writable(pids[0]):
        bases["pids"] = pids[0]
    return Setup(1, bases)


def detect(h: Host, vouched: bool = False) -> Setup | str:
    """Where this process can make its bots' groups (:class:`Setup`), preparing the v2 hierarchy
    if need be (the leaf, the subtree controllers), or the one line that says why it cannot.
    ``vouched``: the organiser says the arena's cgroup is delegated (``[limits] cgroup = "yes"``),
    even without systemd's mark. Tries the v2 hierarchy first, then v1's memory and pids."""
    mounts = parse_mountinfo(h.mountinfo)
    paths = parse_proc_cgroup(h.cgroup)
    if not mounts:
        return "no cgroup filesystem is mounted"
    v2_reason = ""
    if v2 := [m for m in mounts if m.fstype == "cgroup2"]:
        own = _locate(v2[0], paths.get("", "")) if "" in paths else None
        if own is None or not own.is_dir():
            v2_reason = "cgroup v2: the arena's own cgroup is not visible under the mount"
        elif isinstance(found := _detect_v2(own, h, vouched), Setup):
            return found
        else:
            v2_reason = found
    v1 = _detect_v1(mounts, paths, h, vouched)
    if isinstance(v1, Setup) or not v2_reason or v1.startswith("cgroup v1"):
        return v1
    return v2_reason


@functools.cache
def setup(mode: str = "auto") -> Setup | str:
    """:func:`detect` on the real host, once per process and mode; ``"no"``: the reason is the mode."""
    if mode == "no":
        return 'rlimits only ([limits] cgroup = "no")'
    try:
        return detect(host(), vouched=(mode == "yes"))
    except OSError as exc:  # an unreadable /proc, a vanished directory: never fatal
        return f"cgroups cannot be read: {exc}"


def sweep(base: Path) -> int:
    """Remove the bot groups under ``base`` left by arena processes that no longer exist (empty
    ones only: ``rmdir`` refuses the others); return how many were removed."""
    removed = 0
    try:
        entries = list(base.iterdir())
    except OSError:
        return 0
    for entry in entries:
        m = _GROUP_NAME.match(entry.name)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        try:
            entry.rmdir()
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_numbers = itertools.count()
_live: dict[str, BotGroup] = {}
"""The groups this process has made and not yet removed (killed and removed at exit)."""
_retry: set[str] = set()
"""Groups whose removal was refused (still busy): tried again at the next group made."""


class BotGroup:
    """The cgroup of one bot copy: one directory per hierarchy (v2: one; v1: memory and pids)."""

    def __init__(self, version: int, dirs: dict[str, Path], memory_limit: int = 0) -> None:
        self.version = version
        self.dirs = dirs
        self.memory_limit = memory_limit
        """``memory.max`` (bytes)."""
        self.removed = False

    @classmethod
    def create(cls, s: Setup, memory_bytes: int, tasks: int) -> BotGroup:
        """A new group under ``s`` limited to ``memory_bytes`` of memory (RAM, no swap beyond)
        and ``tasks`` processes and threads (when the pids controller is there). Raises
        ``OSError`` if it cannot be made or limited (nothing is left behind then)."""
        for base in set(s.bases.values()) - s.swept:
            sweep(base)
            s.swept.add(base)
        for stale in list(_retry):
            if stale not in _live or _live[stale].remove():
                _retry.discard(stale)
        name = f"{PREFIX}{os.getpid()}-{next(_numbers)}"
        dirs = {c: base / name for c, base in s.bases.items()}
        group = cls(s.version, dirs, memory_bytes)
        try:
            for d in set(dirs.values()):
                d.mkdir()
            group._limit(memory_bytes, tasks)
        except OSError:
            group.remove()
            raise
        _live[name] = group
        return group

    def _limit(self, memory_bytes: int, tasks: int) -> None:
        mem = self.dirs["memory"]
        if self.version == 2:
            _write(mem / "memory.max", str(memory_bytes))
            for knob, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (mem / knob).exists():
                    _write(mem / knob, value)
        else:
            _write(mem / "memory.limit_in_bytes", str(memory_bytes))
            if (mem / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swap beyond the limit
                _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
        if "pids" in self.dirs:
            _write(self.dirs["pids"] / "pids.max", str(tasks))

    @property
    def name(self) -> str:
        """``arena-bot-<pid>-<n>``."""
        return self.dirs["memory"].name

    @property
    def limits_tasks(self) -> bool:
        """True if the group caps its tasks (the pids controller)."""
        return "pids" in self.dirs

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes ``0`` into to join (one per hierarchy)."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    @staticmethod
    def join(procs_files: list[str]) -> None:
        """Move the calling process into the group (between fork and exec; raises ``OSError``)."""
        for path in procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def pids(self) -> list[int]:
        """The processes in the group now."""
        found: set[int] = set()
        for d in set(self.dirs.values()):
            found.update(int(p) for p in _read(d / "cgroup.procs").split())
        return sorted(found)

    def memory_bytes(self) -> int | None:
        """Memory charged to the group now (bytes), or None if unknown."""
        mem = self.dirs["memory"]
        text = _read(mem / ("memory.current" if self.version == 2 else "memory.usage_in_bytes")).strip()
        return int(text) if text.isdigit() else None

    def peak_bytes(self) -> int | None:
        """The most memory charged to the group so far (bytes; v2 needs Linux 5.19), or None."""
        mem = self.dirs["memory"]
        text = _read(mem / ("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes")).strip()
        return int(text) if text.isdigit() else None

    def oom_kills(self) -> int:
        """Processes of the group killed for going over its memory limit."""
        mem = self.dirs["memory"]
        text = _read(mem / ("memory.events" if self.version == 2 else "memory.oom_control"))
        m = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        return int(m.group(1)) if m else 0

    def kill(self) -> None:
        """SIGKILL every process in the group (``cgroup.kill`` where the kernel has it)."""
        for d in set(self.dirs.values()):
            if self.version == 2 and (d / "cgroup.kill").exists():
                try:
                    _write(d / "cgroup.kill", "1")
                    return
                except OSError:
                    pass
        for _ in range(8):  # a process may fork while we kill: look again, a few times
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def remove(self) -> bool:
        """Kill what is left in the group and remove it; True once it is gone (an exiting
        process can keep it busy a moment: call again later, :func:`cleanup` does at exit)."""
        if self.removed:
            return True
        if self.pids():
            self.kill()
        gone = True
        for d in set(self.dirs.values()):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                gone = False
        if gone:
            self.removed = True
            _live.pop(self.name, None)
            _retry.discard(self.name)
        else:
            _retry.add(self.name)
        return gone


def cleanup() -> None:
    """Kill and remove every group this process made (registered with ``atexit``; a forked
    child that exits without ``exec`` leaves its parent's groups alone)."""
    for name, group in list(_live.items()):
        if name.startswith(f"{PREFIX}{os.getpid()}-"):
            group.remove()


atexit.register(cleanup)


def data_limit(memory_bytes: int) -> int:
    """``RLIMIT_DATA`` for ``memory_bytes`` (bytes): at least what a JVM commits at start with
    its default sizing (its initial heap, a 64th of the host's RAM up to ``MaxRAM``, plus
    :data:`JVM_MARGIN`), so that ``java -jar`` starts on any host; ``memory_bytes`` on a host
    with under about 112 GiB of RAM (2 GiB)."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        ram = JVM_MAX_RAM
    return max(memory_bytes, min(ram, JVM_MAX_RAM) // 64 + JVM_MARGIN)


def human(n: int) -> str:
    """``2 GiB``, ``1.5 GiB``, ``512 MiB``, ``12345 bytes`` (three significant digits)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"
