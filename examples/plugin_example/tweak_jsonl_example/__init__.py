"""An example third-party plugin for pytest-tweak (see ``plugin.py``)."""

from __future__ import annotations

from .backend import InferenceModeBackend, InferenceModeConfig

__all__ = ["InferenceModeBackend", "InferenceModeConfig"]
