"""A pre-norm transformer block: attention through ``scaled_dot_product_attention`` + an MLP.

Demonstrates: benchmarking a model whose forward does reshapes and calls a fused attention
kernel, comparing a plain config against a static full-graph one and against inductor's
``freezing`` option (weights folded into constants, the usual choice for inference), and
reading the compile time that ``tweak.benchmark`` reports.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pytest_tweak import TorchInductorBackendConfig, TweakFixture

BATCH = 4
SEQ_LEN = 32
D_MODEL = 64
N_HEADS = 4
MLP_RATIO = 4

CONFIGS = [
    TorchInductorBackendConfig(),
    TorchInductorBackendConfig(fullgraph=True, dynamic=False),
    TorchInductorBackendConfig(options={"freezing": True}),
    TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16),
]


class TransformerBlock(nn.Module):
    """``x + attn(norm(x))`` then ``x + mlp(norm(x))``, with causal self-attention."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model),
            nn.GELU(),
            nn.Linear(mlp_ratio * d_model, d_model),
        )

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        head_dim = d_model // self.n_heads
        qkv = self.qkv(x).view(batch, seq, 3, self.n_heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(batch, seq, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


@pytest.mark.cpu
@pytest.mark.cuda
@pytest.mark.xpu
@pytest.mark.tweak_limits(graph_breaks=0, recompiles=0)
@pytest.mark.tweak_configs(*CONFIGS)
def test_transformer_block_inference(tweak: TweakFixture) -> None:
    """Time one block per config; no graph breaks, no recompiles (the limits), same output as
    eager (pytest-tweak's accuracy check)."""
    torch.manual_seed(0)
    model = TransformerBlock(D_MODEL, N_HEADS, MLP_RATIO).to(tweak.device).eval()
    x = torch.randn(BATCH, SEQ_LEN, D_MODEL, device=tweak.device)

    with torch.no_grad():
        result = tweak.benchmark(model, x)

    assert result.compile_time_s > 0
    assert result.output.shape == (BATCH, SEQ_LEN, D_MODEL)
    assert result.accuracy is not None and result.accuracy.ok
