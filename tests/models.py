"""Tiny models shared by the unit tests: each shows one thing dynamo does."""

from __future__ import annotations

import torch
from torch import nn


class TinyMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class ItemBreak(nn.Module):
    """`.item()` breaks the graph (without capture_scalar_outputs)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        scale = y.sum().item()
        return y * scale


class DataDependentIf(nn.Module):
    """A branch on a tensor's value: recorded only under counters["unimplemented"]."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        if y.sum() > 0:
            return y * 2
        return y - 1


class PrintBreak(nn.Module):
    """`print` cannot be traced."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        print("", end="")
        return torch.relu(y)


class TwoBreaks(nn.Module):
    """Two different breaks in one forward."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        print("", end="")
        y = torch.relu(y)
        scale = y.mean().item()
        return y * scale


class ChangingAttribute(nn.Module):
    """A Python int attribute that changes every call: dynamo guards on it and recompiles."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.a(x) * self.calls


def _printing_helper(y: torch.Tensor) -> torch.Tensor:
    print("", end="")
    return y + 1


class BreakInHelper(nn.Module):
    """One break site, in a helper called twice: dynamo meets it from three frames (the
    forward, the frame resumed after the first call, and the helper's own)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = _printing_helper(self.a(x))
        return _printing_helper(y * 2)


class ItemThenPrint(nn.Module):
    """A `print` right after an `.item()` break: the frame resumed after `.item()` breaks
    before any op, so it compiles no graph (explain's count misses that break)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        scale = y.sum().item()
        print("", end="")
        return y * scale
