"""Exclusive locks across processes: one per baseline file while it is saved, one per device
while a case runs on it.

A device lock is what makes parallel runs correct: two pytest-xdist workers (or two pytest runs
on one machine) that time cases on the same device at once disturb each other's samples, so a
case holds its device's lock from moving its model there to its last sample. Different devices
(``cuda:0`` and ``cuda:1``) have different locks and run side by side.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LockTimeout", "device_lock", "device_lock_dir", "exclusive"]

_POLL_S = 0.01


class LockTimeout(Exception):
    """Another process held the lock for longer than the caller would wait."""


@contextlib.contextmanager
def exclusive(lock_path: Path, timeout_s: float | None = None) -> Iterator[float]:
    """Hold an exclusive lock on ``lock_path`` (created if missing); yields the seconds spent
    waiting for it. ``timeout_s=None`` waits as long as it takes.

    Raises:
        OSError: the lock file cannot be created or opened.
        LockTimeout: ``timeout_s`` passed before the lock was free.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        started = time.monotonic()
        while not _try_lock(fd):
            if timeout_s is not None and time.monotonic() - started >= timeout_s:
                raise LockTimeout(
                    f"{lock_path} was held by another process for over {timeout_s:g} s"
                )
            time.sleep(_POLL_S)
        try:
            yield time.monotonic() - started
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def device_lock_dir() -> Path:
    """Where device locks live: one folder per user in the temporary directory, shared by
    every pytest process of that user on this machine: ``pytest-tweak-<uid>``, the numeric
    user id (``id -u``), which, unlike ``$USER``, every process of the user agrees on (a CI
    container or ``sudo -E`` may leave ``$USER`` unset or another user's)."""
    getuid = getattr(os, "getuid", None)
    user = str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"pytest-tweak-{re.sub(r'[^A-Za-z0-9_.-]', '_', user)}"


def device_lock(
    device: str, lock_dir: Path | None = None
) -> contextlib.AbstractContextManager[float]:
    """The lock of one device (``cpu``, ``cuda:1``); yields the seconds spent waiting."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", device)
    return exclusive((lock_dir or device_lock_dir()) / f"{name}.lock")


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
