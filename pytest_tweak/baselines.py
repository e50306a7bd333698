"""The baseline file: what was measured per case, meant to be committed and diffed.

Format (JSON, keys sorted, two-space indent, one trailing newline)::

    {
      "cases": {
        "tests/perf/test_net.py::test_speed[cpu-default]": {
          "compile_time_s": 3.1, "config": {...}, "device": "cpu",
          "graph_breaks": 0, "graph_count": 1, "median_s": 0.000123,
          "recompiles": 0, "stats": {...}, "torch": "2.13.0+cpu"
        }
      },
      "format": "pytest-tweak-baselines",
      "version": 1
    }

A broken file is never written over: loading raises `BaselineError`, and `save_baselines`
reads the file again right before writing, refuses if it is broken, and replaces it
atomically (a temporary file in the same folder, flushed to disk, then renamed), so a crash
mid-save leaves the old file whole.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

__all__ = [
    "FORMAT",
    "VERSION",
    "BaselineEntry",
    "BaselineError",
    "load_baselines",
    "save_baselines",
]

FORMAT = "pytest-tweak-baselines"
VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be read or used; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"baseline file {path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class BaselineEntry:
    """What was recorded for one case."""

    median_s: float
    graph_breaks: int
    recompiles: int
    graph_count: int = 0
    compile_time_s: float | None = None
    device: str | None = None
    stats: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    torch: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median_s,
            "graph_breaks": self.graph_breaks,
            "recompiles": self.recompiles,
            "graph_count": self.graph_count,
            "compile_time_s": self.compile_time_s,
            "device": self.device,
            "stats": dict(self.stats),
            "config": dict(self.config),
            "torch": self.torch,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> BaselineEntry:
        """Build from parsed JSON; `ValueError` names the field that is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        median = data.get("median_s")
        if not _is_number(median) or not math.isfinite(median) or median <= 0:
            raise ValueError(f"{where}: 'median_s' must be a positive number, got {median!r}")
        counts = {}
        for name in ("graph_breaks", "recompiles", "graph_count"):
            value = data.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: {name!r} must be an integer >= 0, got {value!r}")
            counts[name] = value
        compile_time = data.get("compile_time_s")
        if compile_time is not None and not _is_number(compile_time):
            raise ValueError(f"{where}: 'compile_time_s' must be a number, got {compile_time!r}")
        for name in ("stats", "config"):
            if not isinstance(data.get(name, {}), dict):
                raise ValueError(f"{where}: {name!r} must be an object")
        return cls(
            median_s=float(median),
            compile_time_s=None if compile_time is None else float(compile_time),
            device=_optional_str(data.get("device")),
            stats=dict(data.get("stats", {})),
            config=dict(data.get("config", {})),
            torch=_optional_str(data.get("torch")),
            **counts,
        )


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def load_baselines(path: Path) -> dict[str, BaselineEntry]:
    """Read the baseline file; a missing file holds no baselines.

    Raises:
        BaselineError: the file exists but cannot be read, is not valid JSON, is not a
            pytest-tweak baseline file, or has an invalid entry.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(path, f"cannot be read: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(path, f'is not a pytest-tweak baseline file (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise BaselineError(
            path, f"has version {data.get('version')!r}; this pytest-tweak reads version {VERSION}"
        )
    cases = data.get("cases")
    if not isinstance(cases, dict):
        raise BaselineError(path, "'cases' must be an object mapping test ids to entries")
    try:
        return {
            key: BaselineEntry.from_dict(value, f"case {key!r}") for key, value in cases.items()
        }
    except ValueError as exc:
        raise BaselineError(path, str(exc)) from exc


def render(entries: Mapping[str, BaselineEntry]) -> str:
    """The file's text: stable key order, so a re-save of unchanged data is a no-op diff."""
    data = {
        "format": FORMAT,
        "version": VERSION,
        "cases": {key: entries[key].as_dict() for key in sorted(entries)},
    }
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def save_baselines(path: Path, updates: Mapping[str, BaselineEntry]) -> dict[str, BaselineEntry]:
    """Merge ``updates`` into the file at ``path`` and replace it atomically.

    Entries of cases not in ``updates`` are kept as they are on disk now. Returns what was
    written.

    Raises:
        BaselineError: the existing file is broken (it is left untouched), or writing failed
            (the old file is left untouched).
    """
    merged = load_baselines(path)
    merged.update(updates)
    text = render(merged)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        if path.exists():
            os.chmod(tmp_name, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise BaselineError(path, f"could not be written: {exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return merged


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
