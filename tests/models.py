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
