"""Devices: which ones exist, whether torch can use them, and how to wait for them.

cuda and xpu share one code path: every accelerator call goes through
``torch.get_device_module(device)``, so what is proven on cuda holds for xpu.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable, Mapping
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
    "device_count",
    "lock_name",
    "make_synchronizer",
    "parse_device",
    "rebuilt",
    "refuse_meta",
    "release_memory",
    "to_device",
    "worker_device",
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


def parse_device(text: str) -> tuple[str, int | None]:
    """``"cuda:1"`` -> ``("cuda", 1)``, ``"cpu"`` -> ``("cpu", None)``; `ValueError` names
    what is wrong."""
    name, sep, index = text.strip().lower().partition(":")
    if name not in DEVICES:
        raise ValueError(f"unknown device {text.strip()!r}; allowed: {', '.join(DEVICES)}")
    if not sep:
        return name, None
    if name == "cpu":
        raise ValueError(f"{text.strip()!r}: cpu takes no index")
    if not index.isdigit():
        raise ValueError(f"{text.strip()!r}: the index after ':' must be a number >= 0")
    return name, int(index)


def worker_device(
    device: str, *, pool: tuple[int, ...] = (), worker: str | None = None, count: int = 1
) -> str:
    """The device a process runs ``device`` cases on: ``cpu``, or an accelerator with index.

    Under pytest-xdist, ``worker`` is the worker id (``gw0``, ``gw1``, ...): worker ``n`` takes
    ``pool[n % len(pool)]`` when the devices were listed (``--tweak-device=cuda:0,cuda:1``),
    else device ``n % count`` of the ``count`` the machine has, so N workers on N GPUs measure
    one case per GPU at a time. Outside xdist: the first listed index, else ``device`` as it
    is (torch's current device of that type).
    """
    if device == "cpu" or (worker is None and not pool):
        return device
    n = 0
    if worker is not None:
        digits = worker[2:] if worker.startswith("gw") else worker
        n = int(digits) if digits.isdigit() else 0
    if pool:
        return f"{device}:{pool[n % len(pool)]}"
    return f"{device}:{n % max(count, 1)}"


def device_count(device: str) -> int:
    """How many devices of type ``device`` torch sees (1 for cpu)."""
    import torch

    if device == "cpu":
        return 1
    module = getattr(torch, device, None)
    return _device_count(module) if module is not None else 0


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


def lock_name(device: torch.device) -> str:
    """The name of the lock for ``device``: ``cpu``, or the type and the index it stands for
    (``cuda`` alone is torch's current device)."""
    import torch

    if device.type == "cpu" or device.index is not None:
        return str(device)
    return f"{device.type}:{torch.get_device_module(device.type).current_device()}"


def release_memory(device: torch.device) -> None:
    """Collect garbage, then hand the device allocator's cached, unused blocks back (cuda and
    xpu, through ``torch.get_device_module``); on cpu, collecting is all there is to do."""
    import gc

    import torch

    gc.collect()
    if device.type != "cpu":
        torch.get_device_module(device.type).empty_cache()


def to_device(value: Any, device: torch.device) -> Any:
    """Move tensors and modules to ``device``, also inside lists, tuples, mappings and
    dataclasses, each rebuilt as its own type (a Hugging Face ``ModelOutput`` or
    ``BatchEncoding`` stays one, with its attributes)."""
    import torch

    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        refuse_meta(value)
        return value.to(device)
    if isinstance(value, (Mapping, list, tuple)):
        return rebuilt(value, lambda item: to_device(item, device))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value) if f.init]
        changes = {name: to_device(getattr(value, name), device) for name in fields}
        if any(changes[name] is not getattr(value, name) for name in fields):
            return dataclasses.replace(value, **changes)
    return value


def refuse_meta(value: torch.Tensor | torch.nn.Module) -> None:
    """A clear error for a tensor, or a model's parameter or buffer, on the ``meta`` device:
    it has a shape and no data, so nothing can be moved, checked or timed."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_meta:
            raise ValueError(
                f"an input tensor of shape {tuple(value.shape)} is on the meta device, which "
                "holds no data: create the inputs on a real device (torch.randn(...), say) to "
                "time the model"
            )
        return
    tensors = itertools.chain(value.named_parameters(), value.named_buffers())
    name = next((name for name, tensor in tensors if tensor.is_meta), None)
    if name is not None:
        raise ValueError(
            f"the model's {name!r} is on the meta device (built under torch.device('meta') "
            "or with empty weights), which holds no data: materialize it before timing it, "
            "model.to_empty(device='cpu') then initialize or load its weights"
        )


def rebuilt(value: Any, convert: Callable[[Any], Any]) -> Any:
    """A list, tuple (named or not) or mapping rebuilt as its own type, ``convert`` applied
    to each item (a mapping's values); ``value`` itself where it is none of those."""
    if isinstance(value, Mapping):
        items = {k: convert(v) for k, v in value.items()}
        return items if type(value) is dict else _same_mapping(value, items)
    if isinstance(value, (list, tuple)):
        converted = [convert(v) for v in value]
        named = hasattr(value, "_fields")  # a named tuple takes its items as arguments
        return type(value)(*converted) if named else type(value)(converted)
    return value


def _same_mapping(value: Mapping[Any, Any], items: dict[Any, Any]) -> Any:
    """A mapping of ``value``'s own class (an ``OrderedDict``, a Hugging Face ``ModelOutput``,
    whose attributes follow its items) holding ``items``; a plain dict where it cannot be."""
    try:
        same = copy.copy(value)
        for key, item in items.items():
            same[key] = item  # type: ignore[index]
    except Exception:  # a read-only or unusual mapping: what it holds still counts
        return items
    return same
