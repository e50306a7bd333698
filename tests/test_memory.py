"""Peak memory of one call: the cpu profiler reader, and the cuda/xpu allocator reader."""

from __future__ import annotations

from typing import Any

import torch

from pytest_tweak.memory import peak_memory

CPU = torch.device("cpu")


def test_cpu_peak_counts_the_bytes_a_call_holds_at_once() -> None:
    def call() -> torch.Tensor:
        a = torch.empty(1024, dtype=torch.float32)  # 4 KiB
        b = torch.empty(2048, dtype=torch.float32)  # 8 KiB, both alive: 12 KiB
        del a
        c = torch.empty(512, dtype=torch.float32)  # 8 + 2 KiB
        del c
        return b

    assert peak_memory(call, CPU) == 12 * 1024


def test_cpu_peak_does_not_count_what_was_allocated_before() -> None:
    resident = torch.empty(1 << 20)
    assert peak_memory(resident.clone, CPU) == resident.numel() * 4
    assert peak_memory(lambda: None, CPU) == 0


def test_the_profiler_event_api_this_reader_relies_on_still_exists() -> None:
    """Fails loudly when a torch release moves what memory.py reads."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.empty(256)
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    assert events
    assert all(isinstance(e.nbytes(), int) and isinstance(e.start_ns(), int) for e in events)
    assert events[0].device_type() == torch._C._autograd.DeviceType.CPU


class StandInDeviceModule:
    """What ``torch.cuda`` / ``torch.xpu`` offer for memory, over a simulated allocator: the
    call allocates through ``allocate``/``free``; every method takes the device like theirs."""

    def __init__(self, resident: int) -> None:
        self.allocated = resident
        self.peak = resident
        self.calls: list[tuple[str, Any]] = []

    def allocate(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n

    def synchronize(self, device: Any = None) -> None:
        self.calls.append(("synchronize", device))

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        self.calls.append(("reset_peak_memory_stats", device))
        self.peak = self.allocated

    def memory_allocated(self, device: Any = None) -> int:
        self.calls.append(("memory_allocated", device))
        return self.allocated

    def max_memory_allocated(self, device: Any = None) -> int:
        self.calls.append(("max_memory_allocated", device))
        return self.peak


def test_accelerator_peak_with_a_stand_in_for_torch_cuda() -> None:
    device = torch.device("cuda", 1)
    module = StandInDeviceModule(resident=10_000)
    # a peak from before the call must not count: reset_peak_memory_stats clears it
    module.peak = 99_999

    def call() -> None:
        module.allocate(300)
        module.allocate(500)
        module.free(300)

    assert peak_memory(call, device, module) == 800
    names = [name for name, _ in module.calls]
    assert names == [
        "synchronize",
        "reset_peak_memory_stats",
        "memory_allocated",
        "synchronize",
        "max_memory_allocated",
    ]
    assert all(d == device for _, d in module.calls)  # the case's device, not the current one


def test_accelerator_peak_with_a_stand_in_for_torch_xpu_missing_memory_stats() -> None:
    class NoStats:
        def synchronize(self, device: Any = None) -> None:
            return None

    assert peak_memory(lambda: None, torch.device("xpu"), NoStats()) is None


def test_accelerator_reader_uses_a_stand_in_get_device_module(monkeypatch: Any) -> None:
    module = StandInDeviceModule(resident=0)
    seen: list[str] = []

    def get_device_module(name: str) -> StandInDeviceModule:
        seen.append(name)
        return module

    monkeypatch.setattr(torch, "get_device_module", get_device_module)
    assert peak_memory(lambda: module.allocate(64), torch.device("xpu")) == 64
    assert seen == ["xpu"]
