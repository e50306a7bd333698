"""From a test's markers and the run's options to its cases: one `TweakCase` per device and
(backend, config), each a parameter of the test's ``tweak`` fixture with its id
(``cpu-default``) and, where the device or backend cannot run here, a skip mark.

A bad marker, or a ``pytest_tweak_collect_configs`` implementation that leaves bad configs,
fails the collection of that test with a message naming what is wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .citizen import registered_markers
from .devices import DEVICES
from .hookspec import implementers
from .options import LIMIT_KEYS, TweakOptions
from .registry import DEFAULT_BACKEND, BackendRegistry
from .verdict import Limits

__all__ = [
    "NO_DEVICE",
    "CollectedTests",
    "TweakCase",
    "case_of",
    "keep_own_device_marks",
    "limits_for",
    "parametrize",
    "selects_tweak",
]


@dataclass(frozen=True)
class TweakCase:
    """One case of a test: the parameter its ``tweak`` fixture gets.

    Attributes:
        device: The device type.
        backend: The registered backend name.
        config: The backend's config.
        limits: Graph-break, recompile and CUDA-graph-skip limits (marker over options).
        unavailable: Why torch cannot use the device (the case is skipped), or None.
        id: Its id in the test id (``cpu-default``).
    """

    device: str
    backend: str
    config: Any
    limits: Limits
    unavailable: str | None = None
    id: str = ""


class _NoDevice:
    """The parameter of a test that no selected device supports (it is skipped)."""

    def __repr__(self) -> str:
        return "no-device"


NO_DEVICE = _NoDevice()


def selects_tweak(item: pytest.Item) -> bool:
    """Whether ``item`` is a test of pytest-tweak's: one of its cases, or a test that no
    selected device supports."""
    callspec = getattr(item, "callspec", None)
    value = callspec.params.get("tweak") if callspec is not None else None
    return value is NO_DEVICE or isinstance(value, TweakCase)


def keep_own_device_marks(item: pytest.Item) -> None:
    """A case of a test marked for several devices (``@pytest.mark.cpu @pytest.mark.xpu``)
    keeps only its own device's marker among the test's own, so that ``-m "not xpu"`` keeps
    the cpu case and ``-m cpu`` leaves out the xpu one. (A device marker of the test's class
    or module is that node's, and so every case's.)"""
    case = case_of(item)
    if case is not None:
        item.own_markers[:] = [
            mark
            for mark in item.own_markers
            if mark.name not in DEVICES or mark.name == case.device
        ]


def case_of(item: pytest.Item) -> TweakCase | None:
    """The pytest-tweak case ``item`` runs, if it is one."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("tweak") if callspec is not None else None
    return case if isinstance(case, TweakCase) else None


def parametrize(
    metafunc: pytest.Metafunc, registry: BackendRegistry, options: TweakOptions
) -> None:
    """Parametrize the test's ``tweak`` fixture with its cases."""
    from .devices import availability, device_count

    cases = _configs(metafunc, registry)
    limits = _limits(metafunc, options.limits)
    supported = [d for d in DEVICES if metafunc.definition.get_closest_marker(d)] or list(DEVICES)
    devices = [d for d in options.devices if d in supported]
    params = []
    for device in devices:
        found = availability(device)
        pool = options.device_pools.get(device, ())
        if found.available and pool and max(pool) >= device_count(device):
            pytest.fail(
                f"pytest-tweak: --tweak-device lists {device}:{max(pool)}, but torch sees "
                f"{device_count(device)} {device} device(s) (indices from 0)",
                pytrace=False,
            )
        for name, config in cases:
            reason = (
                f"device {device} is not available: {found.reason}"
                if not found.available
                else registry.spec(name).skip_reason(name, device)
            )
            case_id = f"{device}-{registry.case_id(name, config)}"
            params.append(
                pytest.param(
                    TweakCase(
                        device,
                        name,
                        config,
                        limits,
                        None if found.available else found.reason,
                        case_id,
                    ),
                    id=case_id,
                    # the case's device as its marker, so that `-m "not cuda"` leaves out
                    # the cuda cases of a test that names no device
                    marks=[getattr(pytest.mark, device)]
                    + ([] if reason is None else [pytest.mark.skip(reason=reason)]),
                )
            )
    if not params:
        reason = (
            f"supports {', '.join(supported)}; selected by --tweak-device: "
            f"{', '.join(options.devices)}"
        )
        params = [pytest.param(NO_DEVICE, id="no-device", marks=pytest.mark.skip(reason=reason))]
    metafunc.parametrize("tweak", params, indirect=True)


def _configs(metafunc: pytest.Metafunc, registry: BackendRegistry) -> list[tuple[str, Any]]:
    """The test's (backend name, config) pairs: from its markers, then from the
    ``pytest_tweak_collect_configs`` implementations."""
    where = metafunc.definition.nodeid
    configs = _marker_configs(metafunc, registry)
    hook = metafunc.config.hook.pytest_tweak_collect_configs
    before = list(configs)
    returned = [r for r in hook(metafunc=metafunc, configs=configs) if r is not None]
    if returned:
        pytest.fail(
            f"{where}: pytest_tweak_collect_configs returned {returned[0]!r}; change the "
            f"configs list in place and return None (implemented by: {implementers(hook)})",
            pytrace=False,
        )
    source = (
        "tweak_configs"
        if configs == before
        else f"pytest_tweak_collect_configs (implemented by: {implementers(hook)})"
    )
    if not isinstance(configs, list) or not configs:
        pytest.fail(f"{where}: {source} left no config to run", pytrace=False)
    return _checked(where, configs, registry, source)


def _checked(
    where: str, configs: list[Any], registry: BackendRegistry, source: str
) -> list[tuple[str, Any]]:
    """Each config with its backend; a config of no registered backend, or two configs of
    one backend with one id, fail the collection of the test."""
    cases: dict[tuple[str, str], tuple[str, Any]] = {}
    for config in configs:
        name = registry.name_of(config)
        if name is None:
            hint = (
                "; to select backends by name, use @pytest.mark.tweak_backends"
                if isinstance(config, str)
                else "; pass the configs themselves, not a list of them: "
                "@pytest.mark.tweak_configs(*CONFIGS)"
                if isinstance(config, (list, tuple)) and source == "tweak_configs"
                else ""
            )
            pytest.fail(
                f"{where}: {source} takes TorchInductorBackendConfig objects or configs of "
                f"other registered backends, got {config!r} ({type(config).__name__}); known "
                f"backends and their config types: {registry.config_types()}{hint}",
                pytrace=False,
            )
        key = (name, str(config.id))
        if key in cases:
            pytest.fail(
                f"{where}: {source} has two configs with the id {config.id!r} "
                f"(backend {name}): {cases[key][1]!r} and {config!r}; each config must differ",
                pytrace=False,
            )
        cases[key] = (name, config)
    return list(cases.values())


#: pytest-tweak's markers.
_MARKER_NAMES = ("tweak_configs", "tweak_backends", "tweak_limits")


def _check_marker_names(metafunc: pytest.Metafunc) -> None:
    """A marker named like one of pytest-tweak's but not registered (``tweak_config``) fails
    the test's collection with the name meant: unregistered, pytest only warns and the
    marker is ignored, so the test would run with the default config."""
    registered = registered_markers(metafunc.config)
    for marker in metafunc.definition.iter_markers():
        if marker.name in _MARKER_NAMES or marker.name in registered:
            continue
        close = difflib.get_close_matches(marker.name, _MARKER_NAMES, n=1, cutoff=0.8)
        if close:
            pytest.fail(
                f"{metafunc.definition.nodeid}: unknown marker {marker.name}: did you mean "
                f"{close[0]}? pytest-tweak's markers are {', '.join(_MARKER_NAMES)}",
                pytrace=False,
            )


def _marker_configs(metafunc: pytest.Metafunc, registry: BackendRegistry) -> list[Any]:
    """The configs the ``tweak_configs`` and ``tweak_backends`` markers ask for."""
    _check_marker_names(metafunc)
    where = metafunc.definition.nodeid
    for marker_name in ("tweak_configs", "tweak_backends"):
        # the closest marker decides (a test's own over its class's or module's), so two on
        # one node would silently lose one: an error naming the fix
        nodes = [node.nodeid for node, _ in metafunc.definition.iter_markers_with_node(marker_name)]
        twice = next((node for node in nodes if nodes.count(node) > 1), None)
        if twice is not None:
            pytest.fail(
                f"{where}: {marker_name} is given {nodes.count(twice)} times on {twice}; "
                f"only one would be used: list them all in one, {marker_name}(a, b)",
                pytrace=False,
            )
    configs_marker = metafunc.definition.get_closest_marker("tweak_configs")
    backends_marker = metafunc.definition.get_closest_marker("tweak_backends")
    for marker in (configs_marker, backends_marker):
        if marker is None:
            continue
        what = "config" if marker.name == "tweak_configs" else "backend name"
        if marker.kwargs:
            pytest.fail(
                f"{where}: {marker.name} takes {what}s as positional arguments, "
                f"got keyword(s) {', '.join(sorted(marker.kwargs))}",
                pytrace=False,
            )
        if not marker.args:
            pytest.fail(f"{where}: {marker.name}() needs at least one {what}", pytrace=False)
    given = list(configs_marker.args) if configs_marker is not None else []
    # only what the marker gave is checked here; the hook's changes are checked after it
    _checked(where, given, registry, "tweak_configs")
    if backends_marker is None:
        if configs_marker is None:
            return [registry.spec(DEFAULT_BACKEND).config_type()]
        return given
    names: list[str] = []
    for name in backends_marker.args:
        if name not in registry:
            close = difflib.get_close_matches(str(name), registry.names, n=1)
            pytest.fail(
                f"{where}: tweak_backends got unknown backend {name!r}; "
                + (f"did you mean {close[0]!r}? " if close else "")
                + f"known: {', '.join(registry.names)}",
                pytrace=False,
            )
        if name not in names:
            names.append(name)
    stray = [c for c in given if registry.name_of(c) not in names]
    if stray:
        name = registry.name_of(stray[0])
        pytest.fail(
            f"{where}: tweak_configs has {stray[0]!r} (backend {name}), but tweak_backends "
            f"does not name {name!r} (it names {', '.join(names)})",
            pytrace=False,
        )
    configs: list[Any] = []
    for name in names:
        own = [c for c in given if registry.name_of(c) == name]
        configs += own or [_default_config(registry, name, where)]
    return configs


def _param_marks(metafunc: pytest.Metafunc) -> list[Any]:
    """The marks the test's ``pytest.param(..., marks=...)`` values carry, of every
    ``@pytest.mark.parametrize``: pytest puts them on the test's items, after pytest-tweak
    made its cases."""
    found = []
    for marker in metafunc.definition.iter_markers("parametrize"):
        values = marker.args[1] if len(marker.args) > 1 else marker.kwargs.get("argvalues", ())
        for value in values if isinstance(values, (list, tuple)) else ():
            marks = getattr(value, "marks", ()) if isinstance(value, tuple) else ()
            found += [getattr(mark, "mark", mark) for mark in marks]  # a MarkDecorator's Mark
    return found


def _check_param_marks(metafunc: pytest.Metafunc, defaults: Limits) -> None:
    """``tweak_configs`` or ``tweak_backends`` on a ``pytest.param`` is refused (they make
    the test's cases, for all of its parameters at once); a ``tweak_limits`` there is checked
    as one on the test would be, and applied to that parameter's cases (`limits_for`)."""
    where = metafunc.definition.nodeid
    for mark in _param_marks(metafunc):
        if mark.name in ("tweak_configs", "tweak_backends"):
            pytest.fail(
                f"{where}: {mark.name} on a pytest.param is not supported: it makes the "
                "test's cases for all of its parameters at once. Put it on the test (or its "
                "class or module), or write a test per set of configs",
                pytrace=False,
            )
        if mark.name == "tweak_limits":
            _limits_of([mark, *metafunc.definition.iter_markers("tweak_limits")], defaults, where)


def limits_for(item: pytest.Item, case: TweakCase, defaults: Limits) -> Limits:
    """The limits of ``case`` as ``item`` runs it: a ``tweak_limits`` on the item's
    ``pytest.param`` is the closest marker, over the test's own."""
    marks = getattr(getattr(item, "callspec", None), "marks", ())
    if not any(mark.name == "tweak_limits" for mark in marks):
        return case.limits
    return _limits_of(list(item.iter_markers("tweak_limits")), defaults, item.nodeid)


def _default_config(registry: BackendRegistry, name: str, where: str) -> Any:
    """The backend's default config, ``config_type()``; a type that needs arguments fails
    the test's collection naming the backend (its plugin must give every field a default)."""
    config_type = registry.spec(name).config_type
    try:
        return config_type()
    except TypeError as exc:
        pytest.fail(
            f"{where}: backend {name!r} has no default config: {config_type.__name__}() "
            f"failed ({exc}); its plugin must give every field of the config type a default, "
            f"or name a config with tweak_configs({config_type.__name__}(...))",
            pytrace=False,
        )


def _limits(metafunc: pytest.Metafunc, defaults: Limits) -> Limits:
    """The ``tweak_limits`` markers over the option defaults (`_limits_of`)."""
    _check_param_marks(metafunc, defaults)
    markers = list(metafunc.definition.iter_markers("tweak_limits"))
    return _limits_of(markers, defaults, metafunc.definition.nodeid)


def _limits_of(markers: list[Any], defaults: Limits, where: str) -> Limits:
    """``markers`` (closest first) over the option defaults, key by key: a module's or
    class's marker, or a second one on the test, keeps the limits the closer marker does not
    set; a bad marker fails the test (its collection, where it is collected)."""
    if not markers:
        return defaults
    signature = "tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None)"
    given: dict[str, Any] = {}
    for marker in reversed(markers):  # closest last: it sets what it names
        if marker.args:
            pytest.fail(
                f"{where}: {signature} takes keyword arguments only, got {marker.args!r}",
                pytrace=False,
            )
        unknown = sorted(set(marker.kwargs) - set(LIMIT_KEYS))
        if unknown:
            pytest.fail(
                f"{where}: {signature} got unknown keyword(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(LIMIT_KEYS)}",
                pytrace=False,
            )
        given.update(marker.kwargs)
    values: dict[str, Any] = {}
    for key in LIMIT_KEYS:
        if key not in given:
            values[key] = getattr(defaults, key)
            values[f"{key}_source"] = getattr(defaults, f"{key}_source")
            continue
        value = given[key]
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            pytest.fail(
                f"{where}: tweak_limits {key} must be an integer >= 0 or None, got {value!r}",
                pytrace=False,
            )
        values[key] = value
        values[f"{key}_source"] = "@pytest.mark.tweak_limits"
    return Limits(**values)


@dataclass
class CollectedTests:
    """The files the run collected tests from, each with its imported module, to tell the
    baseline entries whose test is gone: renamed, its file deleted, or the parameter value or
    config its id names dropped.

    A test's presence is looked up in its module, not among the collected tests, which
    ``-k``, ``-m``, ``--lf`` or a plugin may have narrowed. A parametrized test's ids are
    looked up among the collected ones (recorded before ``-k``, ``-m`` and ``--deselect``
    narrow them), unless the run named ids on its command line (``test_x[cpu-default]``) or
    ran with ``--lf``: then it collected only some of them.

    Attributes:
        modules: Each collected file's part of the test id -> its module (None: not Python).
        ids: Each parametrized test (its id up to ``[``) -> its collected ids.
        devices: Each such test -> the device types of its collected cases.
        whole: Whether every parametrized test was collected with all of its ids.
    """

    modules: dict[str, Any] = field(default_factory=dict)
    ids: dict[str, set[str]] = field(default_factory=dict)
    devices: dict[str, set[str]] = field(default_factory=dict)
    whole: bool | None = None

    def note_item(self, item: pytest.Item) -> None:
        """Record one collected item (`note`), and whether the run collects whole tests."""
        if self.whole is None:
            config = item.config
            named = any("[" in str(arg) for arg in config.args)
            self.whole = not named and not config.getoption("lf", False)
        case = case_of(item)
        self.note(item.nodeid, getattr(item, "module", None), None if case is None else case.device)

    def note(self, nodeid: str, module: Any, device: str | None = None) -> None:
        """Record one collected item: its test id, its module and, for a case of
        pytest-tweak's, its device type."""
        self.modules.setdefault(nodeid.split("::", 1)[0], module)
        test, bracket, _ = nodeid.partition("[")
        if bracket:
            self.ids.setdefault(test, set()).add(nodeid)
            if device is not None:
                self.devices.setdefault(test, set()).add(device)

    def gone(
        self, keys: Iterable[str], rootdir: Path, devices: Mapping[str, str | None] | None = None
    ) -> list[str]:
        """The ``keys`` (baseline entries' test ids) whose test no longer exists: a collected
        file whose module has no test of that name (``a.py::test_x[cpu-default]``: no
        ``test_x``; ``a.py::TestK::test_x``: no ``TestK.test_x``), or a file that no longer
        exists under ``rootdir`` in a folder the run collected another file from. Nothing
        when no key's file was collected: the ids may be from another ``--rootdir``, and the
        run cannot tell (nor, in a file mixing ids of two rootdirs, of the other one's).

        With ``devices`` (each key's device, as its entry records it): also the ids a whole
        collection of their test no longer has, where the test's collected cases include
        the entry's device (a case of a device the run did not select is not gone)."""
        keys = list(keys)
        if not any(key.split("::", 1)[0] in self.modules for key in keys):
            return []
        folders = {file.rpartition("/")[0] for file in self.modules}
        gone = []
        for key in keys:
            test = key.split("[", 1)[0]
            file, _, name = test.partition("::")
            if file not in self.modules:
                if file.rpartition("/")[0] in folders and not (rootdir / file).exists():
                    gone.append(key)
                continue
            module = self.modules[file]
            missing = module is not None and _attribute(module, name.split("::")) is None
            if missing or self._dropped(key, test, (devices or {}).get(key)):
                gone.append(key)
        return sorted(gone)

    def _dropped(self, key: str, test: str, device: str | None) -> bool:
        """Whether ``key`` is an id its test, collected whole, no longer has, on a device
        its collected cases run on."""
        collected = self.ids.get(test)
        if not self.whole or device is None or collected is None or key in collected:
            return False
        return device.split(":")[0] in self.devices.get(test, set())


def _attribute(obj: Any, path: Sequence[str]) -> Any:
    """``obj.a.b`` for ``path`` ``["a", "b"]``; None where one is missing."""
    for part in path:
        obj = getattr(obj, part, None)
    return obj
