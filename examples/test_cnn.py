"""A tiny CNN on one 32x32 RGB image: the latency of a single-sample vision model.

Demonstrates: a test with the default config next to ``freezing``, which lets inductor fold
each BatchNorm into the Conv before it (only valid in eval mode, hence ``.eval()``), and
bfloat16 autocast.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_tweak import TorchInductorBackendConfig, TweakFixture

N_CLASSES = 10

CONFIGS = [
    TorchInductorBackendConfig(),
    TorchInductorBackendConfig(options={"freezing": True}),
    TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16),
]


def conv_bn_relu(c_in: int, c_out: int) -> nn.Sequential:
    """A 3x3 same-padding convolution, BatchNorm and ReLU."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    )


class TinyCNN(nn.Module):
    """conv-bn-relu x2, global average pooling, then a linear classifier."""

    def __init__(self, n_classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(conv_bn_relu(3, 16), nn.MaxPool2d(2), conv_bn_relu(16, 32))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(32, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.features(x)).flatten(1))


@pytest.mark.tweak_limits(graph_breaks=0, recompiles=0)
@pytest.mark.tweak_configs(*CONFIGS)
def test_tiny_cnn_latency(tweak: TweakFixture) -> None:
    """No device marker: the test supports every device ``--tweak-device`` selects."""
    torch.manual_seed(0)
    model = TinyCNN(N_CLASSES).to(tweak.device).eval()
    image = torch.randn(1, 3, 32, 32, device=tweak.device)

    with torch.no_grad():
        result = tweak.benchmark(model, image)

    assert result.accuracy is not None and result.accuracy.ok
