"""Bot archives (arena/store/archives.py): packed reproducibly, unpacked only inside their
directory, every hostile member refused with one line, stored as versions in the database."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from arena.store.archives import MANIFEST, ArchiveError, ArchiveLimits, check, manifest_text, pack, unpack
from arena.store.sqlite import Store

SAMPLES = Path(__file__).resolve().parent.parent / "sample_bots"


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for info, body in members:
            if body is not None:
                info.size = len(body)
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    return buf.getvalue()


def file(name: str, body: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, body


def special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


MANIFEST_BODY = b'name = "mybot"\nlanguage = "python"\ncommand = ["{python}", "bot.py"]\n'


def test_pack_is_reproducible_and_round_trips(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    (bot / "data").mkdir(parents=True)
    (bot / "bot.toml").write_bytes(MANIFEST_BODY)
    (bot / "bot.py").write_text("print('hi')\n")
    (bot / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(bot / "run.sh", 0o755)
    (bot / "data" / "book.bin").write_bytes(bytes(range(256)))
    (bot / "__pycache__").mkdir()
    (bot / "__pycache__" / "bot.pyc").write_bytes(b"junk")
    data = pack(bot / "bot.toml")
    assert pack(bot / "bot.toml") == data  # same files, same bytes
    paths = {m.path: m for m in check(data)}
    assert set(paths) == {MANIFEST, "bot.py", "run.sh", "data/book.bin"}
    assert paths["run.sh"].executable and not paths["bot.py"].executable
    assert manifest_text(data) == MANIFEST_BODY.decode()
    manifest = unpack(data, tmp_path / "out")
    assert manifest.read_bytes() == MANIFEST_BODY
    assert (tmp_path / "out" / "data" / "book.bin").read_bytes() == bytes(range(256))
    assert os.stat(tmp_path / "out" / "run.sh").st_mode & 0o111


def test_pack_of_a_sample_bot_leaves_other_manifests_out() -> None:
    members = {m.path for m in check(pack(SAMPLES / "greedy.toml"))}
    assert MANIFEST in members and "greedy_bot.py" in members
    assert not any(p.endswith(".toml") and p != MANIFEST for p in members)


@pytest.mark.parametrize(("member", "code", "words"), [
    (file("/etc/passwd"), "archive_bad_member", "absolute"),
    (file("../evil.py"), "archive_bad_member", "'..'"),
    (file("a/../../evil.py"), "archive_bad_member", "'..'"),
    (special("link", tarfile.SYMTYPE, "/etc/passwd"), "archive_bad_member", "link"),
    (special("hard", tarfile.LNKTYPE, "manifest.toml"), "archive_bad_member", "link"),
    (special("fifo", tarfile.FIFOTYPE), "archive_bad_member", "special file"),
    (special("dev", tarfile.CHRTYPE), "archive_bad_member", "special file"),
    (file("we\x1bird"), "archive_bad_member", "printable ASCII"),
    (file("back\\slash"), "archive_bad_member", "backslash"),
    (file("x" * 300), "archive_bad_member", "bytes"),
])
def test_hostile_members_are_refused(tmp_path: Path, member, code: str, words: str) -> None:
    data = tar_of(file(MANIFEST, MANIFEST_BODY), member)
    with pytest.raises(ArchiveError) as err:
        unpack(data, tmp_path / "out")
    assert err.value.code == code and words in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert not (tmp_path / "evil.py").exists()


def test_limits_stop_bombs_and_floods(tmp_path: Path) -> None:
    limits = ArchiveLimits(packed_bytes=64 << 10, unpacked_bytes=1 << 20, files=5)
    bomb = tar_of(file(MANIFEST, MANIFEST_BODY), file("zeros", bytes(2 << 20)))
    assert len(bomb) < limits.packed_bytes  # small packed, large unpacked
    with pytest.raises(ArchiveError, match="unpack to more than") as err:
        check(bomb, limits)
    assert err.value.code == "archive_too_large"
    many = tar_of(file(MANIFEST, MANIFEST_BODY), *(file(f"f{i}") for i in range(10)))
    with pytest.raises(ArchiveError, match="more than 5 members"):
        check(many, limits)
    with pytest.raises(ArchiveError, match="over the limit"):
        check(os.urandom(70 << 10), limits)


def test_corrupt_missing_manifest_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError) as err:
        check(b"this is not an archive")
    assert err.value.code == "archive_corrupt"
    with pytest.raises(ArchiveError) as err:
        check(gzip.compress(b"\0" * 10) + b"trailing junk")
    assert err.value.code == "archive_corrupt"
    with pytest.raises(ArchiveError) as err:
        check(tar_of(file("bot.py")))
    assert err.value.code == "archive_no_manifest"
    with pytest.raises(ArchiveError, match="twice"):
        check(tar_of(file(MANIFEST, MANIFEST_BODY), file("a"), file("./a")))
    with pytest.raises(ArchiveError, match="below the file"):
        check(tar_of(file(MANIFEST, MANIFEST_BODY), file("a"), file("a/b")))
    plain = tar_of(file(MANIFEST, MANIFEST_BODY), gz=False)  # an uncompressed tar is accepted
    assert [m.path for m in check(plain)] == [MANIFEST]


def test_unpack_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bot.py").write_text("mine")
    with pytest.raises(ArchiveError, match="not empty"):
        unpack(tar_of(file(MANIFEST, MANIFEST_BODY), file("bot.py", b"theirs")), tmp_path / "out")
    assert (tmp_path / "out" / "bot.py").read_text() == "mine"


def test_pack_refuses_links(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.toml").write_bytes(MANIFEST_BODY)
    (bot / "secret").symlink_to("/etc/hostname")
    with pytest.raises(ArchiveError, match="link or special file"):
        pack(bot / "bot.toml")


def test_store_keeps_versions(tmp_path: Path, db_target: str) -> None:
    store = Store(db_target)
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.toml").write_bytes(MANIFEST_BODY)
    (bot / "bot.py").write_text("v1")
    v1 = pack(bot / "bot.toml")
    assert store.archive("mybot") is None
    assert store.put_archive("mybot", v1) == 1
    assert store.put_archive("mybot", v1) == 1  # the same bytes again: no new version
    (bot / "bot.py").write_text("v2")
    v2 = pack(bot / "bot.toml")
    assert store.put_archive("mybot", v2) == 2
    assert store.archive("mybot")[0] == 2 and store.archive("mybot")[2] == v2
    assert store.archive("mybot", 1)[2] == v1
    assert [v[0] for v in store.archive_versions("mybot")] == [1, 2]
    with pytest.raises(ArchiveError):
        store.put_archive("mybot", b"junk")
    assert [v[0] for v in store.archive_versions("mybot")] == [1, 2]
    store.close()
    assert Store(db_target).archive("mybot", 2)[2] == v2  # survives a reopen
