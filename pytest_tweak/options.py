"""The judging options' defaults and the parsing of their values, free of pytest.

Shared by the plugin (``--tweak-threshold`` and its ini twin, ...) and the command line
(``python -m pytest_tweak diff --threshold ...``), so that both judge with the same numbers and
accept the same spellings. A bad value is a `ValueError` saying what is wrong and what is
allowed; the caller adds where the value came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .devices import DEVICES
from .verdict import (
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_CONFIDENCE,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    Judging,
)

__all__ = [
    "DEFAULT_COMPILE_THRESHOLD_PCT",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MEMORY_THRESHOLD_PCT",
    "DEFAULT_RUN_NOISE_PCT",
    "DEFAULT_THRESHOLD_PCT",
    "FINGERPRINT_POLICIES",
    "METRICS",
    "judging_per_device",
    "parse_choice",
    "parse_number",
    "parse_per_device",
    "per_device_text",
]

#: Smallest slow-down that counts, in percent, per device type; measured in
#: docs/measurement.md (false alarms and detection power at these values).
DEFAULT_THRESHOLD_PCT: dict[str, float] = {"cpu": 5.0, "cuda": 1.0, "xpu": 1.0}
#: Run-to-run noise of a median (one standard deviation, percent) assumed when a baseline
#: holds one run; measured between fresh processes in docs/measurement.md.
DEFAULT_RUN_NOISE_PCT: dict[str, float] = {"cpu": 3.0, "cuda": 0.5, "xpu": 0.5}
METRICS = ("normalized", "absolute", "device")
#: What to do with a baseline recorded in another environment.
FINGERPRINT_POLICIES = ("warn", "skip", "fail")


def per_device_text(values: Mapping[str, float]) -> str:
    """``{"cpu": 5.0, "cuda": 1.0}`` -> ``cpu 5, cuda 1`` (for help texts)."""
    return ", ".join(f"{device} {value:g}" for device, value in values.items())


def parse_number(raw: Any, allowed: str, check: Callable[[float], bool]) -> float:
    """``raw`` as a finite number (a trailing ``%`` is allowed) that passes ``check``."""
    text = str(raw)
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = math.nan
    if math.isnan(value) or math.isinf(value) or not check(value):
        raise ValueError(f"invalid value {raw!r}; expected {allowed}")
    return value


def parse_per_device(
    raw: Any,
    defaults: Mapping[str, float],
    allowed: str,
    check: Callable[[float], bool],
) -> dict[str, float]:
    """One number for every device, or ``DEVICE=NUMBER`` pairs over ``defaults``."""
    values = dict(defaults)
    text = str(raw).strip()
    if "=" not in text:
        try:
            value = parse_number(text, allowed, check)
        except ValueError:
            raise ValueError(f"invalid value {raw!r}; expected {allowed}") from None
        return {device: value for device in values}
    for part in text.split(","):
        device, sep, number = part.partition("=")
        device = device.strip().lower()
        if not sep or device not in DEVICES:
            raise ValueError(
                f"invalid value {raw!r}; expected {allowed}, or DEVICE=PCT pairs "
                f"separated by commas with DEVICE one of {', '.join(DEVICES)}"
            )
        try:
            values[device] = parse_number(number, allowed, check)
        except ValueError:
            raise ValueError(f"invalid value {raw!r}; expected {allowed}") from None
    return values


def parse_choice(raw: Any, choices: tuple[str, ...]) -> str:
    """``raw``, lower-cased, when it is one of ``choices``."""
    value = str(raw).strip().lower()
    if value not in choices:
        raise ValueError(f"invalid value {raw!r}; expected one of: {', '.join(choices)}")
    return value


def judging_per_device(
    thresholds: Mapping[str, float],
    noises: Mapping[str, float],
    *,
    metric: str = METRICS[0],
    fail_inconclusive: bool = False,
    compile_threshold_pct: float = DEFAULT_COMPILE_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Judging]:
    """One `Judging` per device type, from per-device thresholds and noises."""
    return {
        device: Judging(
            threshold_pct=thresholds[device],
            run_noise_pct=noises[device],
            confidence=confidence,
            metric=metric,
            fail_inconclusive=fail_inconclusive,
            compile_threshold_pct=compile_threshold_pct,
            memory_threshold_pct=memory_threshold_pct,
        )
        for device in DEVICES
    }
