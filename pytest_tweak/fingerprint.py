"""The environment fingerprint: what a timing depends on besides the code.

A baseline timed on one machine, torch release or thread count says little about another.
`base_fingerprint` records the usual suspects; plugins add their own fields through the
``pytest_tweak_fingerprint`` hook. The result is stored with each saved baseline entry, put
into pytest-benchmark's JSON (``extra_info["tweak"]["fingerprint"]``) and printed under the
tweak summary; `differences` names what changed since a baseline was recorded.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "POLICIES",
    "PolicyOutcome",
    "apply_policy",
    "as_stored",
    "base_fingerprint",
    "check_fingerprint",
    "differences",
    "render_fingerprint",
]

#: What to do with a baseline recorded in another environment.
POLICIES = ("warn", "skip", "fail")


def _cpu_name() -> str:
    """The cpu model (``model name`` in /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def base_fingerprint(devices: Sequence[str], cpu_threads: int | None) -> dict[str, Any]:
    """The environment of this run.

    Args:
        devices: The selected device types; an available accelerator adds its device name.
        cpu_threads: The intra-op threads cpu cases use (``None``: torch's own setting).

    Returns:
        ``python``, ``torch``, ``platform``, ``cpu``, ``cpu_count``, ``threads``, and
        ``cuda``/``xpu`` device names for the selected accelerators that are available.
    """
    import torch

    from .devices import availability

    fingerprint: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": str(torch.__version__),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "threads": cpu_threads or torch.get_num_threads(),
    }
    for device in devices:
        if device == "cpu" or not availability(device).available:
            continue
        module = torch.get_device_module(device)
        fingerprint[device] = str(module.get_device_name(0))
    return fingerprint


def check_fingerprint(fingerprint: object) -> str | None:
    """What is wrong with a (plugin-extended) fingerprint, or ``None`` when it is usable:
    a dict with string keys and JSON values."""
    if not isinstance(fingerprint, dict):
        return f"the fingerprint must stay a dict, got {type(fingerprint).__name__}"
    for key, value in fingerprint.items():
        if not isinstance(key, str):
            return f"fingerprint key {key!r} is not a string"
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return f"fingerprint field {key!r} = {value!r} is not JSON data ({exc})"
    return None


def as_stored(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """``fingerprint`` as a baseline file stores it (a tuple a plugin put in becomes a list),
    so that it compares equal to the one read back from the file (`check_fingerprint` first)."""
    stored: dict[str, Any] = json.loads(json.dumps(fingerprint))
    return stored


def differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``key: old -> new`` for each field both have and that differs (a field only one side
    has, e.g. one a plugin added since, is not a difference: there is nothing to compare)."""
    return [
        f"{key}: {baseline[key]!r} -> {current[key]!r}"
        for key in sorted(baseline.keys() & current.keys())
        if baseline[key] != current[key]
    ]


def render_fingerprint(fingerprint: Mapping[str, Any]) -> str:
    """One line: ``key=value`` pairs in the fingerprint's order."""
    return ", ".join(f"{key}={value}" for key, value in fingerprint.items())


@dataclass(frozen=True)
class PolicyOutcome:
    """What the fingerprint policy makes of a baseline recorded in another environment.

    Attributes:
        compare: Whether the case is judged against it at all.
        failure: Why the case fails (``fail``), or ``None``.
        note: What the verdict notes (``warn``: the differences; ``skip``: not compared).
    """

    compare: bool
    failure: str | None = None
    note: str | None = None


def apply_policy(policy: str, where: str, flag: str, fail_hint: str = "") -> PolicyOutcome:
    """The policy (`POLICIES`) applied to a baseline from another environment; ``where`` says
    what differs, ``flag`` is the option that set the policy, ``fail_hint`` what to do about a
    failure."""
    if policy == "skip":
        return PolicyOutcome(compare=False, note=f"not compared ({flag}=skip): {where}")
    if policy == "fail":
        return PolicyOutcome(compare=True, failure=f"{where} ({flag}=fail{fail_hint})")
    return PolicyOutcome(compare=True, note=where)
