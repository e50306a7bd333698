"""An MLP inference suite: the smallest realistic pytest-tweak performance test.

Demonstrates: several compile configs on one test with ``@pytest.mark.tweak_configs``,
asserting that the model compiles into a single graph with no recompiles, and checking the
compiled output against eager (looser tolerance under bfloat16 autocast).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_tweak import TorchInductorBackendConfig, TweakFixture

BATCH = 64
IN_FEATURES = 128
HIDDEN = 256
OUT_FEATURES = 64

CONFIGS = [
    # The baseline everybody starts from.
    TorchInductorBackendConfig(),
    # One graph, shapes specialized: a graph break would be an error, not a slow-down.
    TorchInductorBackendConfig(fullgraph=True, dynamic=False),
    # Mixed precision inference on the case's device.
    TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16),
]


class MLP(nn.Module):
    """Three Linear layers with LayerNorm and GELU between them."""

    def __init__(self, d_in: int, hidden: int, d_out: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.LayerNorm(hidden),
            nn.GELU(),
            nn.Linear(hidden, d_out),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@pytest.mark.cpu
@pytest.mark.cuda
@pytest.mark.xpu
@pytest.mark.tweak_configs(*CONFIGS)
def test_mlp_inference(tweak: TweakFixture) -> None:
    """Time the MLP on each config; it must stay one graph and match eager."""
    torch.manual_seed(0)
    model = MLP(IN_FEATURES, HIDDEN, OUT_FEATURES).to(tweak.device).eval()
    x = torch.randn(BATCH, IN_FEATURES, device=tweak.device)

    with torch.no_grad():
        expected = model(x)
        result = tweak.benchmark(model, x)

    assert result.graph_breaks == 0, result.break_reasons
    assert result.recompiles == 0
    assert result.graph_count == 1
    tolerance = 5e-2 if tweak.config.autocast_enabled else 1e-4
    torch.testing.assert_close(result.output.float(), expected, atol=tolerance, rtol=tolerance)
