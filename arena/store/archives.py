"""Bot archives: a bot's manifest and files as one bounded, safe ``.tar.gz`` kept in the database.

A submitted or uploaded bot is stored as an archive so that a worker on any host can unpack it
into a fresh directory and run it in its sandbox (docs/contests.md, "Running on several
machines"). An archive holds one directory: the manifest at its root as ``manifest.toml``, and
the bot's files (program, data) beside it, at most :attr:`ArchiveLimits.files` of them.

Archives come from strangers, so :func:`check` reads one member by member and refuses, each with
one line naming the member and the rule (:class:`ArchiveError`, with a ``code``):

* anything but a regular file or a directory (symbolic and hard links, devices, FIFOs) -
  a link could point out of the bot's directory;
* an absolute path, a ``..`` component, an empty or over-long path, a name with control
  characters, backslashes or outside printable ASCII, a path given twice;
* a compressed size over :attr:`ArchiveLimits.packed_bytes`, an unpacked size over
  :attr:`ArchiveLimits.unpacked_bytes` (counted from the headers and again while reading, so a
  lying header or a gzip bomb stops at the cap), more than :attr:`ArchiveLimits.files` members;
* no ``manifest.toml`` at the root.

:func:`unpack` writes only what :func:`check` accepted, below the destination, with modes
``0o755`` (executable) or ``0o644``; nothing is ever extracted by ``tarfile``'s own extractor.
:func:`pack` makes an archive from a manifest and its directory, byte for byte the same for the
same files (sorted members, zero times, no owners), so its SHA-256 names a version.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path, PurePosixPath

import msgspec

MANIFEST = "manifest.toml"
"""The manifest's name at an archive's root."""

SKIPPED = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "node_modules", ".DS_Store"})
"""Names :func:`pack` leaves out of a bot's directory (caches and version-control metadata)."""


class ArchiveLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Caps on one bot archive (defaults: 8 MiB packed, 32 MiB unpacked, 500 members, paths
    of at most 200 bytes)."""

    packed_bytes: int = 8 << 20
    """Largest archive as stored (gzip-compressed), bytes."""
    unpacked_bytes: int = 32 << 20
    """Largest total size of the files once unpacked, bytes."""
    files: int = 500
    """Most members (files and directories)."""
    path_bytes: int = 200
    """Longest member path, bytes."""


class ArchiveError(ValueError):
    """A refused archive: ``code`` (``archive_too_large``, ``archive_bad_member``,
    ``archive_no_manifest``, ``archive_corrupt``) and one line saying what to fix."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Member(msgspec.Struct, frozen=True):
    """One accepted member: its relative POSIX ``path``, ``size`` in bytes (0 for a
    directory), whether it is a ``directory`` and whether it is ``executable``."""

    path: str
    size: int
    directory: bool
    executable: bool


def sha256(data: bytes) -> str:
    """Hex SHA-256 of an archive: the name of its content."""
    return hashlib.sha256(data).hexdigest()


def _check_path(name: str, limits: ArchiveLimits) -> str:
    """The member path ``name`` normalised (no ``./``, no trailing ``/``), or :class:`ArchiveError`."""
    shown = name.encode("ascii", "backslashreplace").decode()[:80]
    if not name or len(name.encode("utf-8", "surrogateescape")) > limits.path_bytes:
        raise ArchiveError("archive_bad_member", f"member {shown!r}: a path must have 1 to {limits.path_bytes} bytes")
    if any(not (32 <= ord(c) < 127) for c in name) or "\\" in name:
        raise ArchiveError("archive_bad_member", f"member {shown!r}: use printable ASCII paths without backslashes")
    if name.startswith("/"):
        raise ArchiveError("archive_bad_member", f"member {shown!r}: absolute paths are refused; archive the bot's "
                           "directory with relative paths")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in name.split("/"):
        raise ArchiveError("archive_bad_member", f"member {shown!r}: '..' is refused; every file must lie inside "
                           "the bot's directory")
    if not parts:
        raise ArchiveError("archive_bad_member", f"member {shown!r}: an empty path")
    return "/".join(parts)


def _members(data: bytes, limits: ArchiveLimits) -> tuple[tarfile.TarFile, list[tuple[tarfile.TarInfo, Member]]]:
    if len(data) > limits.packed_bytes:
        raise ArchiveError("archive_too_large", f"the archive has {len(data):,} bytes, over the limit of "
                           f"{limits.packed_bytes:,}: leave out build products and data the bot does not need")
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError("archive_corrupt",
                           f"not a tar or .tar.gz archive ({exc}): make one with `tar czf`") from None
    accepted: list[tuple[tarfile.TarInfo, Member]] = []
    seen: set[str] = set()
    total = 0
    try:
        for info in tar:
            if len(accepted) >= limits.files:
                raise ArchiveError("archive_too_large", f"more than {limits.files} members: leave out files the "
                                   "bot does not need")
            path = _check_path(info.name, limits)
            if not (info.isfile() or info.isdir()):
                kind = "link" if info.issym() or info.islnk() else "special file"
                raise ArchiveError("archive_bad_member", f"member {path!r} is a {kind}: only regular files and "
                                   "directories are accepted")
            if path in seen:
                raise ArchiveError("archive_bad_member", f"member {path!r} appears twice")
            seen.add(path)
            total += info.size if info.isfile() else 0
            if total > limits.unpacked_bytes:
                raise ArchiveError("archive_too_large", f"the files unpack to more than {limits.unpacked_bytes:,} "
                                   "bytes: leave out data the bot does not need")
            accepted.append((info, Member(path=path, size=info.size if info.isfile() else 0,
                                          directory=info.isdir(), executable=bool(info.mode & 0o111))))
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError("archive_corrupt", f"the archive is damaged ({exc}): make it again with `tar czf`") from None
    files = {m.path for _, m in accepted if not m.directory}
    if MANIFEST not in files:
        raise ArchiveError("archive_no_manifest", f"no {MANIFEST} at the archive's root: put the bot's manifest "
                           f"there under that name")
    for path in files:  # a file may not also be a directory of another member
        for parent in PurePosixPath(path).parents:
            if str(parent) in files:
                raise ArchiveError("archive_bad_member", f"member {path!r} lies below the file {str(parent)!r}")
    return tar, accepted


def check(data: bytes, limits: ArchiveLimits = ArchiveLimits()) -> list[Member]:
    """The members of the archive ``data`` (bytes of a tar, optionally gzip-compressed) if it
    is acceptable; :class:`ArchiveError` otherwise (see the module docstring for the rules)."""
    tar, accepted = _members(data, limits)
    tar.close()
    return [m for _, m in accepted]


def manifest_text(data: bytes, limits: ArchiveLimits = ArchiveLimits()) -> str:
    """The text of the archive's ``manifest.toml`` (checked like :func:`check`; an
    :class:`ArchiveError` if it is not UTF-8)."""
    tar, accepted = _members(data, limits)
    with tar:
        info = next(i for i, m in accepted if m.path == MANIFEST)
        raw = tar.extractfile(info).read(limits.unpacked_bytes + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError("archive_bad_member", f"{MANIFEST} is not UTF-8 text") from None


def unpack(data: bytes, dest: str | Path, limits: ArchiveLimits = ArchiveLimits()) -> Path:
    """Check ``data`` (:func:`check`) and write its members below ``dest`` (created; it must
    be empty or missing). Returns the path of the unpacked manifest. The bytes written are
    counted again, so a member longer than its header says stops at the cap
    (:class:`ArchiveError`)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ArchiveError("archive_bad_member", f"{dest} is not empty")
    tar, accepted = _members(data, limits)
    root = dest.resolve()
    written = 0
    with tar:
        for info, member in accepted:
            target = root.joinpath(*member.path.split("/"))
            if root not in target.parents:
                raise ArchiveError("archive_bad_member", f"member {member.path!r} lies outside the bot's directory")
            if member.directory:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(info)
            # O_EXCL + O_NOFOLLOW: never write through something already there
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if member.executable else 0o644)
            with os.fdopen(fd, "wb") as out:
                while chunk := src.read(1 << 16):
                    written += len(chunk)
                    if written > limits.unpacked_bytes:
                        raise ArchiveError("archive_too_large", f"the files unpack to more than "
                                           f"{limits.unpacked_bytes:,} bytes")
                    out.write(chunk)
    return root / MANIFEST


def _holds_a_bot(folder: Path) -> bool:
    """Whether ``folder`` holds another bot: a ``*.toml`` with a ``command`` (a manifest) at its top."""
    try:
        return any(b"command" in p.read_bytes()[:4096] for p in folder.glob("*.toml") if p.is_file())
    except OSError:
        return False


def pack(manifest: str | Path, limits: ArchiveLimits = ArchiveLimits()) -> bytes:
    """The archive of the bot whose manifest is ``manifest``: the manifest as
    ``manifest.toml``, and every regular file below its directory (except :data:`SKIPPED`
    names, other bots' ``*.toml`` manifests when the directory holds several, and the folders
    of other bots below it: a folder with a manifest of its own), with
    relative paths, sorted, zero times and no owners: the same files give the same bytes.
    Raises :class:`ArchiveError` for a link or special file in the directory, or when the
    result breaks ``limits``; ``OSError`` if a file cannot be read."""
    manifest = Path(manifest)
    root = manifest.parent
    paths: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED and not _holds_a_bot(Path(dirpath) / d))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if name in SKIPPED or p == manifest or rel == MANIFEST or (p.parent == root and name.endswith(".toml")):
                continue
            mode = os.lstat(p).st_mode
            if not stat.S_ISREG(mode):
                raise ArchiveError("archive_bad_member", f"{rel} is a link or special file: bots are packed "
                                   "from regular files only")
            paths.append(p)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w",
                                                                          format=tarfile.PAX_FORMAT) as tar:
        def add(arcname: str, body: bytes, executable: bool) -> None:
            info = tarfile.TarInfo(arcname)
            info.size, info.mtime, info.mode = len(body), 0, 0o755 if executable else 0o644
            tar.addfile(info, io.BytesIO(body))

        add(MANIFEST, manifest.read_bytes(), False)
        for p in sorted(paths, key=lambda q: q.relative_to(root).as_posix()):
            add(p.relative_to(root).as_posix(), p.read_bytes(), bool(os.stat(p).st_mode & 0o111))
    data = buf.getvalue()
    check(data, limits)
    return data
