"""``python -m pytest_tweak``: the baseline tools of `pytest_tweak.cli`."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
