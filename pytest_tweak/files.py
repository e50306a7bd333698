"""Writing files so that nothing is lost: a reader sees the old file or the new one, never half
of one, whatever happens mid-write. Used by the baseline file and the report files."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["append_text", "write_atomic"]


def write_atomic(path: Path, text: str, *, keep_mode: bool = False) -> None:
    """Write ``text`` to ``path`` through a flushed temporary file in the same folder, renamed
    over it, and the rename made durable. Missing folders are created.

    The file gets the mode any new file gets under the umask (``mkstemp`` alone would leave it
    private); with ``keep_mode``, an existing file keeps its own. An `OSError` leaves ``path``
    as it was and no temporary file behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if keep_mode and path.exists():
            os.chmod(temp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, path)
        _sync_folder(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` (``$GITHUB_STEP_SUMMARY`` collects every step's)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; Windows has no folder handles to sync)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
