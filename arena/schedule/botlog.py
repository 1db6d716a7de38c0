"""The launched bots' output logs (``<logs>/bots/<name>.log``): retention and the last lines.

A bot's stdout/stderr is appended to its log at each launch, at most ``Limits.log_bytes`` per
launch (:func:`arena.schedule.launcher.launch`). A bot that crashes and is relaunched again and again
would still fill the disk, so before each launch :func:`rotate` moves a log that has reached
``log_bytes`` to ``<name>.log.1`` (the older ``.1`` to ``.2``, ...) and deletes the oldest beyond
``log_keep``: a bot's output never takes more than ``(log_keep + 2) * log_bytes`` bytes.
"""

from __future__ import annotations

from pathlib import Path


def rotate(path: Path, max_bytes: int, keep: int) -> bool:
    """Rotate ``path`` if it holds ``max_bytes`` or more: ``path`` -> ``path.1`` -> ... ->
    ``path.<keep>``, the oldest deleted (``keep`` 0: the log is simply deleted). Returns True if
    it rotated."""
    try:
        if path.stat().st_size < max_bytes:
            return False
    except FileNotFoundError:
        return False
    old = [path.with_name(f"{path.name}.{i}") for i in range(1, keep + 1)]
    if old:
        old[-1].unlink(missing_ok=True)
        for newer, older in zip(reversed(old[:-1]), reversed(old[1:]), strict=True):
            if newer.exists():
                newer.rename(older)
        path.rename(old[0])
    else:
        path.unlink()
    return True


def tail(path: Path, lines: int = 5, max_bytes: int = 4096, start: int = 0) -> list[str]:
    """The last ``lines`` non-empty lines of ``path`` written at or after byte ``start`` (where
    the last launch began appending; ignored if the file is now shorter), at most ``max_bytes``
    read from its end, each line cut to 200 characters, decoded leniently; ``[]`` if it does
    not exist."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes, start if start <= size else 0))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", "replace").splitlines()
    return [line[:200] for line in text if line.strip()][-lines:]
