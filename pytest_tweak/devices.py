"""Devices: which ones exist, whether torch can use them, and how to wait for them.

cuda and xpu share one code path: every accelerator call goes through
``torch.get_device_module(device)``, so what is proven on cuda holds for xpu.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions: the plugin reads DEVICES at start-up, and loading
# the plugin must not import torch.

__all__ = [
    "DEVICES",
    "Availability",
    "availability",
    "make_synchronizer",
    "release_memory",
    "to_device",
]

#: The device types pytest-tweak knows, in the order they are reported.
DEVICES: tuple[str, ...] = ("cpu", "cuda", "xpu")


@dataclass(frozen=True)
class Availability:
    """Whether torch can run on a device type, and what was checked to decide."""

    device: str
    available: bool
    reason: str


def availability(device: str) -> Availability:
    """Check that torch can use ``device`` (``cpu``, ``cuda`` or ``xpu``) in this process."""
    import torch

    if device == "cpu":
        return Availability("cpu", True, "cpu is always available")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; known: {', '.join(DEVICES)}")
    module = getattr(torch, device, None)
    is_available = getattr(module, "is_available", None)
    if module is None or is_available is None:
        return Availability(
            device, False, f"torch {torch.__version__} has no torch.{device} module"
        )
    try:
        ok = bool(is_available())
    except Exception as exc:  # a broken driver install raises here
        return Availability(
            device, False, f"torch.{device}.is_available() raised {type(exc).__name__}: {exc}"
        )
    if not ok:
        return Availability(
            device,
            False,
            f"torch.{device}.is_available() returned False (torch {torch.__version__})",
        )
    count = _device_count(module)
    return Availability(device, True, f"torch.{device}.is_available() is True, {count} device(s)")


def _device_count(module: Any) -> int:
    counter = getattr(module, "device_count", None)
    return int(counter()) if counter is not None else 1


def make_synchronizer(device: torch.device) -> Callable[[], None]:
    """A function that waits until all work queued on ``device`` has finished.

    On cpu the work is synchronous, so it does nothing; on cuda and xpu it calls the device
    module's ``synchronize`` for that device.
    """
    import torch

    if device.type == "cpu":
        return _no_sync
    module = torch.get_device_module(device.type)
    sync = module.synchronize

    def synchronize() -> None:
        sync(device)

    return synchronize


def _no_sync() -> None:
    return None


def release_memory(device: torch.device) -> None:
    """Collect garbage, then hand the device allocator's cached, unused blocks back (cuda and
    xpu, through ``torch.get_device_module``); on cpu, collecting is all there is to do."""
    import gc

    import torch

    gc.collect()
    if device.type != "cpu":
        torch.get_device_module(device.type).empty_cache()


def to_device(value: Any, device: torch.device) -> Any:
    """Move tensors (also inside lists, tuples and dicts) and modules to ``device``."""
    import torch

    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        moved = [to_device(v, device) for v in value]
        return type(value)(moved) if not hasattr(value, "_fields") else type(value)(*moved)
    return value
