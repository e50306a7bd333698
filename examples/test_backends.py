"""The seed's backend comparison as a suite: one MLP on every backend pytest-tweak knows.

Demonstrates: ``@pytest.mark.tweak_backends`` with per-backend configs from
``@pytest.mark.tweak_configs``; ``aot_eager`` beside ``inductor`` (what inductor's code
generation buys over tracing alone); TorchAO int8 quantization and OpenVINO, whose cases skip
with the reason where their packages are not installed (``pip install -e ".[backends]"``).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_tweak import TorchAOBackendConfig, TweakFixture

BATCH = 16
FEATURES = 256
HIDDEN = 1024


class MLP(nn.Module):
    """Linear layers wide enough for int8 weights to matter."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(FEATURES, HIDDEN),
            nn.GELU(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.GELU(),
            nn.Linear(HIDDEN, FEATURES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@pytest.mark.cpu
@pytest.mark.tweak_backends("eager", "aot_eager", "inductor", "torchao", "openvino")
@pytest.mark.tweak_configs(
    TorchAOBackendConfig("int8_weight_only"),
    TorchAOBackendConfig("int8_dynamic_activation_int8_weight"),
)
def test_mlp_on_each_backend(tweak: TweakFixture) -> None:
    """Every backend runs the MLP as one graph, close to the float model."""
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(BATCH, FEATURES)

    with torch.no_grad():
        expected = model(x)
        result = tweak.benchmark(model, x)

    assert result.graph_breaks == 0 and result.recompiles == 0
    # int8 weights (and OpenVINO's default precision) are close to the float model, not equal
    exact = tweak.backend_name in ("eager", "aot_eager", "inductor")
    tolerance = 1e-4 if exact else 0.05
    torch.testing.assert_close(result.output, expected, atol=tolerance, rtol=tolerance)
