"""Writing files so that nothing is lost: a reader sees the old file or the new one, never half
of one, whatever happens mid-write. Used by the baseline file and the report files."""

from __future__ import annotations

import contextlib
import glob
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["append_text", "read_only_reason", "remove_stale_temps", "same_file", "write_atomic"]


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


def read_only_reason(path: Path) -> str | None:
    """Why the existing file ``path`` cannot be replaced, or ``None``: its file system is
    mounted read-only, or the file itself is read-only. `write_atomic` replaces a file by a
    rename, which the file's own mode does not stop, so that is checked here as ``open(path,
    "w")`` would (root passes ``os.access`` whatever the mode)."""
    if not path.exists():
        return None
    with contextlib.suppress(OSError, AttributeError):  # no statvfs on Windows
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "its file system is mounted read-only; name a file on a writable one"
    mode = path.stat().st_mode
    if not os.access(path, os.W_OK) or not mode & 0o222:
        return (
            f"the file is read-only (mode {mode & 0o777:04o}); make it writable "
            f"(chmod u+w {path}) or name another file"
        )
    return None


def remove_stale_temps(path: Path) -> None:
    """Remove the temporary files `write_atomic` left beside ``path`` when its process was
    killed mid-write (``SIGKILL`` runs no cleanup). Call it only while holding the lock that
    every writer of ``path`` holds: then no such file belongs to a write under way."""
    for temp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            temp.unlink()


def same_file(path: Path, other: str) -> bool:
    """Whether ``path`` and the path ``other`` name the same file (resolved: links, ``..``)."""
    try:
        return path.resolve() == Path(other).resolve()
    except OSError:  # a loop of links: not the same as far as this is concerned
        return False


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
