"""Peak memory of one call: the most bytes the call had allocated at once, beyond what was
allocated when it began (activations, temporaries, workspaces and the outputs; the weights and
inputs already resident are not counted).

- cuda and xpu (one code path, through ``torch.get_device_module``): the device caching
  allocator's own peak: ``reset_peak_memory_stats``, the call, ``synchronize``, then
  ``max_memory_allocated`` minus the ``memory_allocated`` before the call. Bytes handed out to
  tensors, not bytes the allocator reserved from the driver.
- cpu: the CPU allocator's allocation and free events recorded by ``torch.profiler`` with
  ``profile_memory=True`` during the call, summed in time order; the peak of that running sum.
  The same quantity as on the accelerators, from every tensor allocation torch makes on the
  cpu (memory a C library allocates behind torch's back, e.g. oneDNN scratch space, is not
  seen). A process's RSS is not used: it moves in pages, by the allocator's whims, and counts
  everything else the process does.

The profiler's raw event list (``prof.profiler.kineto_results.events()``, each with
``name()``, ``nbytes()``, ``start_ns()``, ``device_type()``) is semi-private:
``tests/test_memory.py`` fails loudly when a torch release moves it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = ["peak_memory"]


def peak_memory(call: Callable[[], Any], device: torch.device, module: Any = None) -> int | None:
    """Bytes of peak memory of one ``call()`` on ``device`` (see the module docstring).

    ``module`` is the device module to read (``torch.cuda``, ``torch.xpu``); by default
    ``torch.get_device_module(device.type)``. Returns ``None`` when the device cannot tell.
    """
    if device.type == "cpu":
        return _cpu_peak(call)
    if module is None:
        module = torch.get_device_module(device.type)
    needed = ("synchronize", "reset_peak_memory_stats", "memory_allocated", "max_memory_allocated")
    if not all(hasattr(module, name) for name in needed):
        return None
    module.synchronize(device)
    module.reset_peak_memory_stats(device)
    before = int(module.memory_allocated(device))
    result = call()
    module.synchronize(device)
    peak = int(module.max_memory_allocated(device))
    del result
    return max(peak - before, 0)


def _cpu_peak(call: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    # kineto prints a line to the process's stderr as it starts and stops; only those two
    # steps are silenced, never the call
    with _quiet_stderr():
        prof.start()
    try:
        result = call()
        del result
    finally:
        with _quiet_stderr():
            prof.stop()
    recorded: Any = prof.profiler  # the autograd profiler holding kineto's raw results
    events = recorded.kineto_results.events()
    cpu = torch._C._autograd.DeviceType.CPU
    changes = sorted(
        (event.start_ns(), int(event.nbytes()))
        for event in events
        if event.name() == "[memory]" and event.device_type() == cpu
    )
    running = peak = 0
    for _, nbytes in changes:
        running += nbytes
        peak = max(peak, running)
    return peak


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to the null device for the duration."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 (embedded interpreters)
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
