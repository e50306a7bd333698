"""The cuda path, for real: these run where torch sees a CUDA device (they were run on an
NVIDIA H200) and skip elsewhere. xpu shares this code path (`torch.get_device_module`)."""

from __future__ import annotations

import json

import pytest
import torch
from test_plugin import CHANGING_SUITE, SPEC_IDS, SPEC_SUITE

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason=f"needs cuda: torch.cuda.is_available() is False (torch {torch.__version__})",
)

SPEC_SUITE_WITH_CUDA = SPEC_SUITE.replace(
    "@pytest.mark.xpu\n", "@pytest.mark.xpu\n@pytest.mark.cuda\n"
)


def test_spec_suite_runs_on_cuda_and_cpu(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile(test_tinynet=SPEC_SUITE_WITH_CUDA)
    result = run_suite("--tweak-device=cuda,cpu", "--benchmark-json=bench.json")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*test_tinynet_speed*cuda*default*0*0*new"])
    benchmarks = json.loads((pytester.path / "bench.json").read_text())["benchmarks"]
    names = {b["name"] for b in benchmarks}
    assert names == set(SPEC_IDS) | {name.replace("[cpu-", "[cuda-") for name in SPEC_IDS}
    for bench in benchmarks:  # device time and host overhead beside the latency, on cuda only
        info = bench["extra_info"]["tweak"]
        if info["device"] == "cuda":
            assert info["device_time"]["median"] > 0 and info["host_overhead_s"] >= 0
        else:
            assert info["device_time"] is None and info["host_overhead_s"] is None


def test_cuda_median_is_latency_with_device_time_beside_it(
    pytester: pytest.Pytester, run_suite
) -> None:
    """On a compute-bound model the latency (the median) agrees with a synchronized wall clock
    around back-to-back calls, the device time with CUDA events, and the two agree with each
    other; on a launch-bound one the latency is well above the device time and the summary
    says so and names reduce-overhead."""
    pytester.makepyfile("""
        import time, torch

        class Heavy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList(torch.nn.Linear(4096, 4096) for _ in range(8))

            def forward(self, x):
                for layer in self.layers:
                    x = torch.relu(layer(x))
                return x

        def wall_and_events(compiled, x, calls=50):
            for _ in range(3):
                compiled(x)
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin = time.perf_counter()
            start.record()
            for _ in range(calls):
                compiled(x)
            end.record()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - begin) / calls
            return wall, start.elapsed_time(end) / 1000 / calls

        def test_heavy(tweak):
            model = Heavy().eval()
            x = torch.randn(4096, 4096)
            with torch.no_grad():
                result = tweak.benchmark(model, x)
                wall, _ = wall_and_events(tweak.compile(model), x.cuda())
            device = result.device_time.median
            print(f"heavy: latency {result.median_s:.6f} s, wall {wall:.6f} s, "
                  f"device {device:.6f} s")
            assert 0.9 < result.median_s / wall < 1.1
            assert 0.9 < result.median_s / device < 1.1
            assert result.host_weight == 0.0

        def test_launch_bound(tweak):
            layers = [torch.nn.TransformerEncoderLayer(256, 4, 512, batch_first=True)
                      for _ in range(4)]
            model = torch.nn.Sequential(*layers).eval()
            x = torch.randn(8, 64, 256)
            with torch.no_grad():
                result = tweak.benchmark(model, x)
                wall, _ = wall_and_events(tweak.compile(model), x.cuda(), calls=200)
            device = result.device_time.median
            print(f"launch: latency {result.median_s:.6f} s, wall {wall:.6f} s, "
                  f"device {device:.6f} s")
            # A VM's host speed swings up to 2x within one process (0.69 against 1.28 ms here
            # on an H100, 2026-12-07), so the wall clock taken after the case bounds the
            # latency only loosely (a busy host must not flip this test): the device-only
            # figure this guards against is ruled out by the device-time check below.
            assert 0.25 < result.median_s / wall < 4
            assert result.median_s > 1.3 * device
            assert result.host_overhead_s > 0 and result.host_weight > 0
    """)
    result = run_suite("--tweak-device=cuda", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*heavy: latency * s, wall * s, device * s*"])
    result.stdout.fnmatch_lines(["*launch: latency * s, wall * s, device * s*"])
    result.stdout.fnmatch_lines(["*reduce-overhead*"])


def test_every_compile_mode_runs_end_to_end_on_cuda(pytester: pytest.Pytester, run_suite) -> None:
    """Every mode inductor lists works, CUDA-graph modes included: their outputs live in a pool
    the next replay overwrites, so the NaN and accuracy checks read a copy."""
    pytester.makepyfile("""
        import pytest, torch
        from torch._inductor import list_mode_options
        from pytest_tweak import TorchInductorBackendConfig as C

        MODES = sorted(list_mode_options())

        @pytest.mark.tweak_configs(*(C(mode=m) for m in MODES))
        def test_modes(tweak):
            layers = [torch.nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)
                      for _ in range(2)]
            model = torch.nn.Sequential(*layers).eval()
            with torch.no_grad():
                result = tweak.benchmark(model, torch.randn(4, 16, 64))
            print(f"mode {tweak.config.mode}: latency {result.median_s:.6f} s, device "
                  f"{result.device_time.median:.6f} s, skips {list(result.cudagraph_skips)}, "
                  f"{result.accuracy.describe()}")
            assert result.accuracy.ok
    """)
    result = run_suite("--tweak-device=cuda", "-s")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("passed", 0) >= 4, outcomes
    result.stdout.fnmatch_lines(["*mode reduce-overhead: latency * s, device * s, skips []*"])


def test_a_cuda_graph_skip_is_reported_and_a_limit_forbids_it(
    pytester: pytest.Pytester, run_suite
) -> None:
    """An input mutation makes inductor skip CUDA graphs: the case names the reason, and
    tweak_limits(cudagraph_skips=0) fails exactly that test."""
    pytester.makepyfile("""
        import pytest, torch
        from pytest_tweak import TorchInductorBackendConfig as C

        class Mutates(torch.nn.Module):
            def forward(self, x):
                x.add_(1)
                return x * 2

        @pytest.mark.tweak_configs(C(mode="reduce-overhead"))
        @pytest.mark.tweak_limits(cudagraph_skips=0)
        def test_mutates(tweak):
            with torch.no_grad():
                tweak.benchmark(Mutates(), torch.randn(64))

        @pytest.mark.tweak_configs(C(mode="reduce-overhead"))
        def test_allowed(tweak):
            with torch.no_grad():
                result = tweak.benchmark(Mutates(), torch.randn(64))
            print(f"skips: {list(result.cudagraph_skips)}")
            assert result.cudagraph_skips
    """)
    result = run_suite("--tweak-device=cuda", "-s", "--tweak-accuracy=off")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*CUDA graphs skipped 1 time(s), over the limit 0*skipping cudagraphs*"]
    )


def test_save_then_compare_on_cuda_fails_exactly_the_regressed_test(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_changing=CHANGING_SUITE)
    run_suite("--tweak-device=cuda", "--tweak-save").assert_outcomes(passed=4)
    cases = json.loads((pytester.path / "tweak-baselines.json").read_text())["cases"]
    assert all(key.endswith("[cuda-default]") for key in cases)
    assert {case["device"] for case in cases.values()} == {"cuda"}
    monkeypatch.setenv("TWEAK_CHANGE", "break")
    # This test is about the graph break; tiny launch-bound models on a GPU, timed with the
    # fast test settings, moved by more than 100 % between processes on the H200.
    result = run_suite("--tweak-device=cuda", "--tweak-threshold=1000")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*graph breaks 1 vs baseline 0 (+1)"])


def test_instruments_lend_one_flush_buffer_and_reference_per_cuda_device() -> None:
    from pytest_tweak.measure import EventTimer, Instruments

    instruments = Instruments()
    device = torch.device("cuda")
    first, second = instruments.device_timer(device), instruments.device_timer(device)
    assert isinstance(first, EventTimer) and isinstance(second, EventTimer)
    assert instruments.host_reference(device) is instruments.host_reference(device)
    assert first is not second and first._flush.data_ptr() == second._flush.data_ptr()
    assert instruments.reference(device) is instruments.reference(device)
    assert first(lambda: torch.ones(8, device=device).sum(), 4) > 0


def test_a_real_cuda_oom_fails_its_test_releases_the_model_and_the_next_case_runs(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import gc, weakref
        import torch

        gc.disable()

        BEFORE = []
        WEIGHT = []
        WEIGHT_BYTES = 4096 * 4096 * 4

        class Oom(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(4096, 4096))  # 64 MiB on the device

            def forward(self, x):
                return x @ self.w, torch.empty(1 << 40, device=x.device)  # 4 TiB: OOM

        def oom():
            model = Oom()
            WEIGHT.append(weakref.ref(model.w))  # the same Parameter once moved to cuda
            return model

        def test_oom(tweak):
            BEFORE.append(torch.cuda.memory_allocated())
            tweak.benchmark(oom(), torch.randn(64, 4096))

        def test_after(tweak):
            # no gc.collect() here: pytest-tweak hands the failed case's memory back itself
            held = torch.cuda.memory_allocated() - BEFORE[0]
            # what may stay: cuBLAS's workspace, kept by torch for the handle's lifetime
            print(f"after the OOM: {held} bytes more allocated than before it")
            assert WEIGHT[0]() is None, "the failed case's model is still referenced"
            assert held < WEIGHT_BYTES, held
            result = tweak.benchmark(torch.nn.Linear(64, 64), torch.randn(8, 64))
            assert result.median_s > 0
    """)
    result = run_suite("--tweak-device=cuda", "-s")
    result.assert_outcomes(passed=1, failed=1)
    # -s output and the failure section interleave: two independent matches
    result.stdout.fnmatch_lines(["*pytest-tweak: inductor-default on cuda:* OutOfMemoryError*"])
    result.stdout.fnmatch_lines(["*after the OOM: * bytes more allocated than before it*"])


def test_cuda_peak_memory_accuracy_and_speedup_under_bf16_autocast(
    pytester: pytest.Pytester, run_suite
) -> None:
    """Peak memory comes from the device allocator of the case's device; the bf16 output is
    held to bf16's tolerance against eager; the speed-up is measured in the same run."""
    pytester.makepyfile("""
        import pytest, torch
        from pytest_tweak import TorchInductorBackendConfig as C

        @pytest.mark.tweak_configs(C(), C(autocast_enabled=True, autocast_dtype=torch.bfloat16))
        def test_mlp(tweak):
            torch.manual_seed(0)
            model = torch.nn.Sequential(
                torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)
            ).eval()
            x = torch.randn(256, 1024)
            with torch.no_grad():
                result = tweak.benchmark(model, x)
            itemsize = 2 if tweak.config.autocast_enabled else 4
            out_bytes = 256 * 1024 * itemsize
            print(
                f"{tweak.config.id}: peak {result.peak_memory_bytes} B, eager "
                f"{result.eager_peak_memory_bytes} B; {result.accuracy.describe()}; "
                f"speed-up {result.speedup.median:.2f}x"
            )
            assert result.output.dtype == (torch.bfloat16 if itemsize == 2 else torch.float32)
            assert result.peak_memory_bytes >= out_bytes
            assert result.eager_peak_memory_bytes >= out_bytes
            assert result.accuracy.checked and result.accuracy.ok
    """)
    result = run_suite("--tweak-device=cuda", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*default: peak * B, eager * B; matches eager: *; speed-up *x",
            "*autocast-bf16: peak * B, eager * B; matches eager under bfloat16 autocast: *",
        ]
    )
