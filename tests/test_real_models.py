"""Real models as the source of truth: Hugging Face transformers models (tiny configs, random
weights, nothing downloaded) run through the plugin, compared site by site with what
``TORCH_LOGS=graph_breaks,recompiles`` logs for the same calls in a separate process.

One pytest process runs every model through the plugin, one plain Python process compiles the
same models with ``TORCH_LOGS`` set; both share the inductor cache.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from importlib import metadata

import pytest
import torch
from packaging.requirements import Requirement
from torch.torch_version import TorchVersion

pytest.importorskip("transformers")

# The models, their inputs and their calls: written to the pytester folder and imported by
# both processes, so both build exactly the same models (seeded) and make the same calls.
HF_MODELS = """\
import torch
import transformers as T

VOCAB = 128
LENGTHS = (8, 16, 24)


def ids(length=16):
    return torch.randint(1, VOCAB, (2, length), generator=torch.Generator().manual_seed(length))


def gpt2():
    config = T.GPT2Config(
        n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=64,
        bos_token_id=0, eos_token_id=0,
    )
    return T.GPT2LMHeadModel(config)


def ctrl():
    config = T.CTRLConfig(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, dff=64, n_positions=64)
    return T.CTRLLMHeadModel(config)


def big_bird():
    config = T.BigBirdConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )
    return T.BigBirdForMaskedLM(config)


def build(name):
    \"\"\"The model (eval mode, seeded weights), its positional and its keyword arguments.\"\"\"
    torch.manual_seed(0)
    x = ids()
    if name == "gpt2_labels":  # the loss: transformers' loss_function property
        return gpt2().eval(), (x,), {"labels": x}
    if name == "ctrl":
        return ctrl().eval(), (x,), {}
    if name == "big_bird":
        return big_bird().eval(), (x,), {}
    raise KeyError(name)


BREAKING = ("gpt2_labels", "ctrl", "big_bird")
"""

SUITE = """\
import pytest
from hf_models import BREAKING, LENGTHS, build, gpt2, ids
from pytest_tweak import TorchInductorBackendConfig


@pytest.mark.parametrize("name", BREAKING)
def test_breaks(tweak, name):
    model, args, kwargs = build(name)
    result = tweak.benchmark(model, *args, **kwargs)
    # the output is what the model returns: its ModelOutput class, attributes and items alike
    assert type(result.output) is type(model(*args, **kwargs))
    assert result.output.logits is result.output["logits"]


@pytest.mark.tweak_configs(TorchInductorBackendConfig(dynamic=False))
def test_lengths(tweak):
    tweak.benchmark_inputs(gpt2().eval(), [ids(n) for n in LENGTHS])
"""

# The same calls, compiled as a user would, in a plain process with TORCH_LOGS set. Each
# model is called twice (the plugin calls it many times: a break is logged by the first call
# only, which the test checks through the counts).
REFERENCE = """\
import sys
import torch
from hf_models import BREAKING, LENGTHS, build, gpt2, ids

for name in BREAKING:
    torch._dynamo.reset()
    model, args, kwargs = build(name)
    compiled = torch.compile(model)
    print(f"=== {name}", file=sys.stderr, flush=True)
    for _ in range(2):
        compiled(*args, **kwargs)
torch._dynamo.reset()
compiled = torch.compile(gpt2().eval(), dynamic=False)
print("=== lengths", file=sys.stderr, flush=True)
for n in LENGTHS:
    compiled(ids(n))
"""

LOGGED_SITE = re.compile(r"Graph break(?: \([^)]*\))? in user code at (.+):(\d+)$")
LOGGED_GUARD = re.compile(r"^\s*- \d+/\d+: (.+)$")
#: What torch puts before each line it logs: "V1204 12:00:00.000000 42 file.py:1] [0/0] [__x] "
ARTIFACT_PREFIX = re.compile(r"^.*?\[__\w+\] ")


def _logged(stderr: list[str]) -> dict[str, dict[str, list[str]]]:
    """Per model: the break sites TORCH_LOGS wrote, and for each recompile the first guard
    that failed, in order."""
    found: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {"sites": [], "guards": []}
    first_guard = False
    for line in stderr:
        if line.startswith("=== "):
            current = found.setdefault(line[4:].strip(), {"sites": [], "guards": []})
            continue
        text = ARTIFACT_PREFIX.sub("", line)
        site = LOGGED_SITE.search(text)
        if site is not None:
            current["sites"].append(f"{site[1]}:{site[2]}")
        if "[__recompiles]" in line:
            if "Recompiling function" in text:
                first_guard = True
            guard = LOGGED_GUARD.match(text)
            if guard is not None and first_guard:
                current["guards"].append(guard[1].split("  #")[0].strip())
                first_guard = False
    return found


def test_transformers_in_the_test_extra_pulls_no_other_torch() -> None:
    """Every requirement of transformers and of what it requires, without extras: no torch
    (installing the test extra must not replace the torch build on the machine)."""
    seen: set[str] = set()
    todo = ["transformers"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # an optional one not installed here
            continue
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            todo.append(requirement.name.lower().replace("_", "-"))
    assert "transformers" in seen and len(seen) > 3
    assert not {"torch", "pytorch"} & seen


def test_breaks_and_recompiles_of_real_models_are_those_torch_logs(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the configs are here
    pytester.makepyfile(hf_models=HF_MODELS, test_real=SUITE, reference=REFERENCE)
    run_suite("--tweak-json=report.json").assert_outcomes(passed=4)
    report = json.loads((pytester.path / "report.json").read_text())
    cases = {case["nodeid"].split("::")[-1]: case for case in report["cases"]}

    monkeypatch.setenv("TORCH_LOGS", "graph_breaks,recompiles")
    reference = pytester.run(sys.executable, "reference.py", timeout=600)
    assert reference.ret == 0, "\n".join(reference.errlines[-30:])
    logged = _logged(reference.errlines)

    registry = TorchVersion(torch.__version__) >= (2, 13)
    for name in ("gpt2_labels", "ctrl", "big_bird"):
        case = cases[f"test_breaks[cpu-default-{name}]"]
        sites = Counter(logged[name]["sites"])
        # one break per distinct site TORCH_LOGS logs, met as often as it logs it
        assert case["graph_breaks"] == len(sites) > 0, name
        assert {f"{r['filename']}:{r['lineno']}": r["count"] for r in case["break_reasons"]} == (
            dict(sites)
        ), name
        if registry:  # each with torch's id and advice
            assert all(r["gb_id"] and r["hint"] and r["link"] for r in case["break_reasons"])

    # GPT-2's loss: one site, transformers' logger.warning_once, met from four frames (the
    # graph's own "step_unsupported" at the model's call line is that break, not another)
    (gpt2_site,) = cases["test_breaks[cpu-default-gpt2_labels]"]["break_reasons"]
    assert gpt2_site["filename"].endswith("modeling_utils.py")
    assert "warning_once" in gpt2_site["line"]
    if registry:
        assert gpt2_site["gb_id"] == "gb0291"

    # GPT-2 at three sequence lengths, static shapes: a recompile per new length, each with
    # the guard that failed, as TORCH_LOGS=recompiles words it
    lengths = cases["test_lengths[cpu-static]"]
    guards = [reason.split("): ", 1)[1] for reason in lengths["recompile_reasons"]]
    assert lengths["recompiles"] == len(guards) == 2
    assert guards == logged["lengths"]["guards"]
    assert "size mismatch at index 1. expected 8, actual 16" in guards[0]
    assert "size mismatch at index 1. expected 16, actual 24" in guards[1]
    assert lengths["graph_breaks"] == 0 and logged["lengths"]["sites"] == []
