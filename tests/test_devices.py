"""Device availability and synchronization. No XPU exists here: the xpu tests use a stand-in
for ``torch.xpu`` (an honest fake: it only records what the shared accelerator path calls)."""

from __future__ import annotations

import pytest
import torch

from pytest_tweak.devices import DEVICES, availability, make_synchronizer, to_device


class FakeXpuModule:
    """Stands in for torch.xpu on a machine without an XPU."""

    def __init__(self, available: bool) -> None:
        self.available = available
        self.synced: list[torch.device] = []

    def is_available(self) -> bool:
        return self.available

    def device_count(self) -> int:
        return 1 if self.available else 0

    def synchronize(self, device: torch.device | None = None) -> None:
        self.synced.append(device)  # type: ignore[arg-type]


def test_cpu_is_always_available() -> None:
    assert availability("cpu").available


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-cuda message")
def test_missing_cuda_says_what_was_checked() -> None:
    found = availability("cuda")
    assert not found.available
    assert found.reason == f"torch.cuda.is_available() returned False (torch {torch.__version__})"


def test_xpu_unavailable_with_fake_xpu_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "xpu", FakeXpuModule(available=False))
    found = availability("xpu")
    assert not found.available and "torch.xpu.is_available() returned False" in found.reason


def test_xpu_available_with_fake_xpu_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "xpu", FakeXpuModule(available=True))
    found = availability("xpu")
    assert found.available and "1 device(s)" in found.reason


def test_torch_without_the_device_module_stand_in_xpu_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(torch, "xpu", raising=False)
    assert availability("xpu").reason == f"torch {torch.__version__} has no torch.xpu module"


def test_raising_is_available_of_a_fake_xpu_module_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeXpuModule(available=True)

    def broken() -> bool:
        raise RuntimeError("driver mismatch")

    fake.is_available = broken  # type: ignore[method-assign]
    monkeypatch.setattr(torch, "xpu", fake)
    assert "raised RuntimeError: driver mismatch" in availability("xpu").reason


def test_unknown_device_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        availability("tpu")
    assert DEVICES == ("cpu", "cuda", "xpu")


def test_xpu_sync_goes_through_the_device_module_with_fake_xpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeXpuModule(available=True)
    monkeypatch.setattr(torch, "xpu", fake)
    sync = make_synchronizer(torch.device("xpu", 0))
    sync()
    sync()
    assert fake.synced == [torch.device("xpu", 0)] * 2


def test_cpu_sync_does_nothing_even_with_a_broken_stand_in_device_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_call(*args: object) -> None:
        raise AssertionError("cpu sync called torch")

    monkeypatch.setattr(torch, "get_device_module", no_call)
    monkeypatch.setattr(torch.cpu, "synchronize", no_call)
    sync = make_synchronizer(torch.device("cpu"))
    assert sync() is None


def test_to_device_moves_nested_tensors_and_keeps_the_rest() -> None:
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    x = torch.ones(2)
    moved = to_device({"t": [x, (x, 3)], "p": Pair(x, "s")}, torch.device("meta"))
    assert moved["t"][0].device.type == "meta" and moved["t"][1][1] == 3
    assert isinstance(moved["p"], Pair) and moved["p"].a.device.type == "meta"
    assert moved["p"].b == "s"


def test_to_device_keeps_each_containers_type_and_moves_what_it_holds() -> None:
    # found in the tenth user trial: a dict subclass (a Hugging Face ModelOutput handed to a
    # head model) reached the model as a plain dict, and dataclasses were not looked into
    import collections
    import dataclasses

    class Output(collections.OrderedDict):  # as ModelOutput: attributes follow the items
        def __setitem__(self, key: str, value: object) -> None:
            super().__setitem__(key, value)
            setattr(self, key, value)

    @dataclasses.dataclass(frozen=True)
    class Batch:
        x: torch.Tensor
        label: str

    class Encoding(collections.UserDict):  # as BatchEncoding
        pass

    x = torch.ones(2)
    out = Output()
    out["hidden"] = x
    meta = torch.device("meta")
    moved_out = to_device(out, meta)
    assert type(moved_out) is Output and moved_out.hidden.device.type == "meta"
    assert out.hidden.device.type == "cpu"  # the caller's object is left as it was
    moved_batch = to_device(Batch(x, "a"), meta)
    assert type(moved_batch) is Batch and moved_batch.x.device.type == "meta"
    assert moved_batch.label == "a"
    moved_enc = to_device(Encoding(ids=x), meta)
    assert type(moved_enc) is Encoding and moved_enc["ids"].device.type == "meta"
    same = Batch(x, "b")  # nothing to move: the object itself
    assert to_device(same, torch.device("cpu")) is same


def test_xdist_workers_take_the_devices_in_turn() -> None:
    from pytest_tweak.devices import worker_device

    # no xdist, no list: the device as given (torch's current device of that type)
    assert worker_device("cuda", count=2) == "cuda"
    assert worker_device("cpu", worker="gw3", count=1) == "cpu"
    # N workers on N devices: one device each; more workers than devices: in turn
    assert [worker_device("cuda", worker=f"gw{n}", count=2) for n in range(4)] == [
        "cuda:0",
        "cuda:1",
        "cuda:0",
        "cuda:1",
    ]
    # an explicit list (--tweak-device=xpu:2,xpu:3) is the pool, also outside xdist
    assert worker_device("xpu", pool=(2, 3)) == "xpu:2"
    assert [worker_device("xpu", pool=(2, 3), worker=f"gw{n}") for n in range(3)] == [
        "xpu:2",
        "xpu:3",
        "xpu:2",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("gpu", "unknown device 'gpu'"),
        ("cpu:0", "cpu takes no index"),
        ("cuda:x", "must be a number"),
        ("cuda:-1", "must be a number"),
    ],
)
def test_a_bad_device_is_named(text: str, problem: str) -> None:
    from pytest_tweak.devices import parse_device

    with pytest.raises(ValueError, match=problem):
        parse_device(text)
    assert parse_device(" CUDA:1 ") == ("cuda", 1)


def test_the_device_lock_folder_is_named_by_the_numeric_user_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``pytest-tweak-<uid>``, as docs/guide.md says: every process of the user agrees on it,
    whatever ``$USER`` says in each."""
    import os
    import tempfile
    from pathlib import Path

    from pytest_tweak.locks import device_lock_dir

    monkeypatch.setenv("USER", "someone-else")
    assert device_lock_dir() == Path(tempfile.gettempdir()) / f"pytest-tweak-{os.getuid()}"
    monkeypatch.delenv("USER")
    assert device_lock_dir().name == f"pytest-tweak-{os.getuid()}"


def test_to_device_names_a_meta_tensor_or_parameter_instead_of_torchs_bare_error() -> None:
    cpu = torch.device("cpu")
    with pytest.raises(ValueError, match=r"input tensor of shape \(2, 4\) is on the meta device"):
        to_device([torch.ones(3), {"x": torch.ones(2, 4, device="meta")}], cpu)
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(ValueError, match=r"model's '0.weight' is on the meta device.*to_empty"):
        to_device(model, cpu)
    # a materialized model moves as any other
    assert to_device(model.to_empty(device="cpu"), cpu)[0].weight.device == cpu
