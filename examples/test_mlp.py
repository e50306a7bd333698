"""An MLP inference suite: the smallest realistic pytest-tweak performance test.

Demonstrates: several compile configs on one test with ``@pytest.mark.tweak_configs``;
demanding one graph with no graph breaks and no recompiles from the first run with
``@pytest.mark.tweak_limits``; pytest-tweak's own check of the compiled output against eager
(looser tolerances under bfloat16 autocast); and ``tweak.benchmark_inputs`` over several batch
sizes to see what ``dynamic`` does.
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
@pytest.mark.tweak_limits(graph_breaks=0, recompiles=0)
@pytest.mark.tweak_configs(*CONFIGS)
def test_mlp_inference(tweak: TweakFixture) -> None:
    """Time the MLP on each config; it must stay one graph and match eager (both checked by
    pytest-tweak: the limits above, and the accuracy check against the eager model)."""
    torch.manual_seed(0)
    model = MLP(IN_FEATURES, HIDDEN, OUT_FEATURES).to(tweak.device).eval()
    x = torch.randn(BATCH, IN_FEATURES, device=tweak.device)

    with torch.no_grad():
        result = tweak.benchmark(model, x)

    assert result.graph_count == 1
    assert result.accuracy is not None and result.accuracy.ok


BATCH_SIZES = (8, 16, 64)


@pytest.mark.cpu
@pytest.mark.cuda
@pytest.mark.xpu
@pytest.mark.tweak_limits(recompiles=1)
@pytest.mark.tweak_configs(TorchInductorBackendConfig(), TorchInductorBackendConfig(dynamic=True))
def test_mlp_batch_sizes(tweak: TweakFixture) -> None:
    """Several batch sizes in one case: automatic dynamic shapes recompile once (at the first
    new size), ``dynamic=True`` never; ``dynamic=False`` would recompile for every size and
    fail the limit."""
    torch.manual_seed(0)
    model = MLP(IN_FEATURES, HIDDEN, OUT_FEATURES).to(tweak.device).eval()
    inputs = [torch.randn(b, IN_FEATURES, device=tweak.device) for b in BATCH_SIZES]

    with torch.no_grad():
        result = tweak.benchmark_inputs(model, inputs)

    assert result.recompiles == (0 if tweak.config.dynamic else 1)
