"""Where the arena makes its bots' cgroups (arena/schedule/cgroups.py), on fake cgroup trees: the
v2 leaf and subtree controllers, delegation (systemd's mark, no systemd, the organiser's word),
v1's separate hierarchies, the limits each group gets, and the sweep of groups left behind.
The real host is exercised by tests/test_launcher.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.schedule import cgroups
from arena.schedule.cgroups import Host, Setup


def tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def v2_host(mount: Path, own: str, systemd: bool = False, pid: int = 4242) -> Host:
    return Host(f"30 23 0:26 / {mount} rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n", f"0::{own}\n", systemd, pid)


SERVICE = "system.slice/arena.service"


def v2_service(tmp_path: Path, controllers: str = "cpu io memory pids", procs: str = "4242\n77\n") -> Path:
    mount = tmp_path / "cg"
    tree(mount, {f"{SERVICE}/cgroup.controllers": controllers + "\n", f"{SERVICE}/cgroup.subtree_control": "\n",
                 f"{SERVICE}/cgroup.procs": procs, f"{SERVICE}/cgroup.type": "domain\n"})
    return mount


def test_v2_moves_the_arena_into_a_leaf_and_enables_memory_and_pids_for_its_children(tmp_path: Path) -> None:
    """A cgroup with processes cannot hand controllers to children: its processes move into
    ``arena-supervisor``, then ``+memory +pids`` are written to its ``cgroup.subtree_control``."""
    mount = v2_service(tmp_path)
    base = mount / SERVICE
    found = cgroups.detect(v2_host(mount, "/" + SERVICE))
    assert isinstance(found, Setup), found
    assert found.version == 2 and found.bases == {"memory": base, "pids": base}
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (base / cgroups.LEAF).is_dir()
    assert (base / cgroups.LEAF / "cgroup.procs").read_text() in ("4242", "77")  # each written in turn


def test_v2_started_in_the_leaf_uses_its_parent_and_writes_nothing(tmp_path: Path) -> None:
    """A worker started by an arena already in the leaf makes its groups beside it."""
    mount = v2_service(tmp_path)
    base = mount / SERVICE
    (base / "cgroup.subtree_control").write_text("memory pids\n")
    (base / cgroups.LEAF).mkdir()
    found = cgroups.detect(v2_host(mount, f"/{SERVICE}/{cgroups.LEAF}"))
    assert isinstance(found, Setup) and found.bases["memory"] == base
    assert (base / "cgroup.subtree_control").read_text() == "memory pids\n"
    assert not (base / cgroups.LEAF / "cgroup.procs").exists()


def test_v2_without_the_pids_controller_limits_memory_only(tmp_path: Path) -> None:
    mount = v2_service(tmp_path, controllers="cpu memory")
    found = cgroups.detect(v2_host(mount, "/" + SERVICE))
    assert isinstance(found, Setup) and set(found.bases) == {"memory"}
    assert (mount / SERVICE / "cgroup.subtree_control").read_text() == "+memory"


def test_v2_without_the_memory_controller_says_so(tmp_path: Path) -> None:
    mount = v2_service(tmp_path, controllers="cpu pids")
    found = cgroups.detect(v2_host(mount, "/" + SERVICE))
    assert found == f"cgroup v2: the memory controller is not offered to {mount / SERVICE}"
    assert (mount / SERVICE / "cgroup.subtree_control").read_text() == "\n"  # nothing touched


def test_under_systemd_a_cgroup_not_delegated_is_left_alone(tmp_path: Path) -> None:
    """systemd owns its units' cgroups: without Delegate=yes (its mark) the arena writes nothing
    there and says how to fix it; the organiser may vouch for the delegation (cgroup = "yes")."""
    mount = v2_service(tmp_path)
    h = v2_host(mount, "/" + SERVICE, systemd=True)
    found = cgroups.detect(h)
    assert isinstance(found, str)
    assert found.startswith(f"cgroup v2: {mount / SERVICE} is not delegated to the arena") and "Delegate=yes" in found
    assert not (mount / SERVICE / cgroups.LEAF).exists()
    assert isinstance(cgroups.detect(h, vouched=True), Setup)


def test_under_systemd_the_delegate_mark_is_enough(tmp_path: Path) -> None:
    mount = v2_service(tmp_path)
    try:
        os.setxattr(mount / SERVICE, "user.delegate", b"1")
    except OSError as exc:
        pytest.skip(f"this filesystem keeps no user extended attributes: {exc}")
    assert isinstance(cgroups.detect(v2_host(mount, "/" + SERVICE, systemd=True)), Setup)


def test_a_cgroup_the_arena_cannot_write_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = v2_service(tmp_path)
    monkeypatch.setattr(cgroups, "_writable", lambda path: False)  # root may write anything: pretend
    found = cgroups.detect(v2_host(mount, "/" + SERVICE))
    assert isinstance(found, str) and "is not writable by the arena" in found


def v1_host(tmp_path: Path, systemd: bool = False) -> tuple[Host, Path, Path]:
    mem, pids, sd = tmp_path / "memory", tmp_path / "pids", tmp_path / "systemd"
    tree(tmp_path, {"memory/api/x/cgroup.procs": "", "pids/cgroup.procs": "", "systemd/cgroup.procs": ""})
    mountinfo = (f"32 31 0:29 / {mem} rw,relatime - cgroup cgroup rw,memory\n"
                 f"33 31 0:30 / {pids} rw,relatime - cgroup cgroup rw,pids\n"
                 f"34 31 0:31 / {sd} rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
                 "35 23 0:32 / /proc rw - proc proc rw\n")
    cgroup = "9:name=systemd:/\n8:pids:/\n4:memory:/api/x\n1:cpu,cpuacct:/\n0::/\n"
    return Host(mountinfo, cgroup, systemd, 1), mem / "api" / "x", pids


def test_v1_makes_groups_in_the_memory_and_pids_hierarchies(tmp_path: Path) -> None:
    h, mem, pids = v1_host(tmp_path)
    found = cgroups.detect(h)
    assert isinstance(found, Setup) and found.version == 1 and found.bases == {"memory": mem, "pids": pids}
    assert "under systemd" not in found.describe() and found.describe().startswith("cgroup v1 (memory, pids) under ")
    h, _, _ = v1_host(tmp_path, systemd=True)
    assert "is not delegated" in str(cgroups.detect(h))


def test_v1_group_limits_memory_without_swap_and_tasks(tmp_path: Path) -> None:
    h, mem, pids = v1_host(tmp_path)
    setup = cgroups.detect(h)
    assert isinstance(setup, Setup)
    original_mkdir = Path.mkdir

    def mkdir_with_knobs(self: Path, *args, **kwargs) -> None:  # the kernel creates a group's files
        original_mkdir(self, *args, **kwargs)
        if self.parent == mem:
            (self / "memory.memsw.limit_in_bytes").write_text("9223372036854771712\n")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", mkdir_with_knobs)
        group = cgroups.BotGroup.create(setup, 300 * 2**20, 77)
    d = group.dirs["memory"]
    assert d.parent == mem and group.dirs["pids"].parent == pids and d.name.startswith(f"arena-bot-{os.getpid()}-")
    assert (d / "memory.limit_in_bytes").read_text() == str(300 * 2**20)
    assert (d / "memory.memsw.limit_in_bytes").read_text() == str(300 * 2**20)
    assert (group.dirs["pids"] / "pids.max").read_text() == "77"
    assert group.procs_files() == sorted([str(d / "cgroup.procs"), str(group.dirs["pids"] / "cgroup.procs")])
    (d / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (d / "memory.max_usage_in_bytes").write_text("123456\n")
    assert group.oom_kills() == 2 and group.peak_bytes() == 123456
    for directory in group.dirs.values():
        for f in directory.iterdir():
            f.unlink()
    assert group.remove() and not d.exists()


def test_v2_group_gets_memory_max_no_swap_and_group_oom(tmp_path: Path) -> None:
    mount = v2_service(tmp_path)
    setup = cgroups.detect(v2_host(mount, "/" + SERVICE))
    assert isinstance(setup, Setup)
    original_mkdir = Path.mkdir

    def mkdir_with_knobs(self: Path, *args, **kwargs) -> None:
        original_mkdir(self, *args, **kwargs)
        if self.name.startswith(cgroups.PREFIX):
            for knob in ("memory.swap.max", "memory.oom.group"):
                (self / knob).write_text("max\n")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", mkdir_with_knobs)
        group = cgroups.BotGroup.create(setup, 2**30, 256)
    d = group.dirs["memory"]
    assert group.dirs == {"memory": d, "pids": d} and d.parent == mount / SERVICE
    assert {f: (d / f).read_text() for f in ("memory.max", "memory.swap.max", "memory.oom.group", "pids.max")} == {
        "memory.max": str(2**30), "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "256"}
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
    assert group.oom_kills() == 1
    for f in d.iterdir():
        f.unlink()
    assert group.remove()


def test_sweep_removes_only_the_groups_of_arenas_that_are_gone(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    for name in (f"arena-bot-{dead_pid}-0", f"arena-bot-{dead_pid}-1", f"arena-bot-{os.getpid()}-0",
                 "arena-bot-1-0", "other", cgroups.LEAF):
        (tmp_path / name).mkdir()
    (tmp_path / f"arena-bot-{dead_pid}-1" / "busy").write_text("")  # rmdir refuses a group in use
    assert cgroups.sweep(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"arena-bot-{dead_pid}-1", f"arena-bot-{os.getpid()}-0", "arena-bot-1-0", "other", cgroups.LEAF])


def test_parsers_read_the_kernels_formats() -> None:
    mounts = cgroups.parse_mountinfo(
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "40 31 0:33 /a\\040b /sys/fs/my\\040cg rw - cgroup2 cgroup2 rw\n"
        "41 31 0:34 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n")
    assert [(m.root, m.point, m.fstype, m.controllers) for m in mounts] == [
        ("/a b", "/sys/fs/my cg", "cgroup2", frozenset()),
        ("/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup", frozenset({"rw", "cpu", "cpuacct"}))]
    assert cgroups.parse_proc_cgroup("4:memory:/x/y\n2:cpu,cpuacct:/\n1:name=systemd:/s\n0::/u\n") == {
        "memory": "/x/y", "cpu": "/", "cpuacct": "/", "name=systemd": "/s", "": "/u"}
    assert cgroups.human(2 * 2**30) == "2 GiB" and cgroups.human(2**31 + 2**28) == "2.25 GiB"
    assert cgroups.human(256 * 2**20) == "256 MiB" and cgroups.human(100) == "100 bytes"


def test_no_cgroup_filesystem_at_all() -> None:
    assert cgroups.detect(Host("35 23 0:32 / /proc rw - proc proc rw\n", "0::/\n", False, 1)) == (
        "no cgroup filesystem is mounted")
