"""The pytest11 entry point: options, ini keys, markers, parametrization, the ``tweak`` fixture
and the report hooks. Wiring only; the work is done by the plain modules beside this one.

torch is not imported here at module level: a suite that never uses ``tweak`` pays nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .baselines import BaselineError
from .devices import DEVICES
from .measure import MeasureSettings
from .report import summary_lines
from .session import TweakOptions, TweakSession

if TYPE_CHECKING:
    from .config import TorchInductorBackendConfig
    from .fixture import TweakFixture

DEFAULT_BASELINE = "tweak-baselines.json"
#: Allowed median slow-down in percent. Chosen from repeated runs of unchanged code on a
#: 2-core CI machine (README.md, "Choosing the threshold").
DEFAULT_THRESHOLD_PCT = 50.0

DEVICE_HELP = (
    "devices to run tweak cases on, comma separated or repeated: "
    f"{', '.join(DEVICES)} (default: cpu)"
)
SAVE_HELP = "record the measured cases into the baseline file (keeps every other entry)"
BASELINE_HELP = f"the baseline file (default: {DEFAULT_BASELINE} in the rootdir)"
THRESHOLD_HELP = (
    "allowed slow-down of a case's median against its baseline, in percent "
    f"(default: {DEFAULT_THRESHOLD_PCT:g})"
)
# The measurement defaults live in MeasureSettings; the options only override them.
_DEFAULTS = MeasureSettings()
WARMUP_HELP = (
    f"seconds of warm-up calls per case after the compiling call (default: {_DEFAULTS.warmup_s:g})"
)
MAX_TIME_HELP = f"seconds of timed rounds per case (default: {_DEFAULTS.max_time_s:g})"
MIN_ROUNDS_HELP = f"fewest timed rounds per case (default: {_DEFAULTS.min_rounds})"
CPU_THREADS_HELP = (
    "torch intra-op threads for cpu cases, compile included; 0 keeps torch's own setting "
    f"(default: {_DEFAULTS.cpu_threads or 0})"
)

_SESSION_KEY = pytest.StashKey["TweakSession"]()


# name (without the "tweak_" prefix), metavar (None: a flag), help; each has an ini twin.
_OPTIONS: tuple[tuple[str, str | None, str], ...] = (
    ("device", "DEV", DEVICE_HELP),
    ("save", None, SAVE_HELP),
    ("baseline", "PATH", BASELINE_HELP),
    ("threshold", "PCT", THRESHOLD_HELP),
    ("warmup", "SECONDS", WARMUP_HELP),
    ("max_time", "SECONDS", MAX_TIME_HELP),
    ("min_rounds", "N", MIN_ROUNDS_HELP),
    ("cpu_threads", "N", CPU_THREADS_HELP),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tweak", "pytest-tweak: speed of torch.compile'd models")
    for name, metavar, help_text in _OPTIONS:
        dest = f"tweak_{name}"
        flag = "--" + dest.replace("_", "-")
        if metavar is None:
            group.addoption(flag, action="store_true", dest=dest, default=None, help=help_text)
            parser.addini(dest, help_text, type="bool", default=False)
            continue
        # --tweak-device may be repeated; the others take one value
        action = "append" if name == "device" else "store"
        group.addoption(
            flag, action=action, dest=dest, metavar=metavar, default=None, help=help_text
        )
        parser.addini(dest, help_text, type="string", default="")


def pytest_configure(config: pytest.Config) -> None:
    for device in DEVICES:
        config.addinivalue_line(
            "markers",
            f"{device}: the test supports the {device} device; tests with no device marker "
            "support every device (pytest-tweak)",
        )
    config.addinivalue_line(
        "markers",
        "tweak_configs(*configs): run the test's `tweak` cases once per "
        "TorchInductorBackendConfig given; without it, one case with the default config "
        "(pytest-tweak)",
    )
    session = TweakSession(_resolve_options(config))
    config.stash[_SESSION_KEY] = session
    config.pluginmanager.register(_RunHooks(session), "tweak-run")


def pytest_sessionstart(session: pytest.Session) -> None:
    tweak = session.config.stash[_SESSION_KEY]
    try:
        tweak.load()
    except BaselineError as exc:
        raise pytest.UsageError(
            f"pytest-tweak: {exc}. Fix or remove the file (it is left as it is)."
        ) from exc


def pytest_report_header(config: pytest.Config) -> str:
    options = config.stash[_SESSION_KEY].options
    settings = options.settings
    return (
        f"tweak: devices={','.join(options.devices)}, baseline={options.baseline_path}, "
        f"threshold={options.threshold_pct:g}%, save={'yes' if options.save else 'no'}, "
        f"warmup={settings.warmup_s:g}s, max-time={settings.max_time_s:g}s, "
        f"min-rounds={settings.min_rounds}, "
        f"cpu-threads={settings.cpu_threads or 'torch default'}"
    )


# -- options ------------------------------------------------------------------------------


def _raw(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value of option ``name`` and where it came from: CLI, then ini, then unset."""
    value = config.getoption(name)
    if value is not None:
        return value, f"--{name.replace('_', '-')}"
    ini = config.getini(name)
    if ini not in ("", None, []):
        return ini, f"ini option {name}"
    return None, "default"


def _resolve_options(config: pytest.Config) -> TweakOptions:
    devices_raw, source = _raw(config, "tweak_device")
    items = devices_raw if isinstance(devices_raw, list) else [devices_raw or "cpu"]
    devices: list[str] = []
    for item in items:
        for name in str(item).split(","):
            name = name.strip().lower()
            if name not in DEVICES:
                raise pytest.UsageError(
                    f"{source}: unknown device {name!r}; allowed: {', '.join(DEVICES)}"
                )
            if name not in devices:
                devices.append(name)

    save_raw, _ = _raw(config, "tweak_save")
    baseline_raw, source = _raw(config, "tweak_baseline")
    if baseline_raw is None:
        baseline = config.rootpath / DEFAULT_BASELINE
    elif source.startswith("--"):
        baseline = config.invocation_params.dir / str(baseline_raw)
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
        baseline = base / str(baseline_raw)

    threshold = _number(
        config,
        "tweak_threshold",
        DEFAULT_THRESHOLD_PCT,
        "a percentage > 0",
        lambda v: v > 0,
        strip="%",
    )
    settings = MeasureSettings(
        warmup_s=_number(
            config, "tweak_warmup", _DEFAULTS.warmup_s, "seconds >= 0", lambda v: v >= 0
        ),
        max_time_s=_number(
            config, "tweak_max_time", _DEFAULTS.max_time_s, "seconds >= 0", lambda v: v >= 0
        ),
        min_rounds=int(
            _number(
                config,
                "tweak_min_rounds",
                _DEFAULTS.min_rounds,
                "an integer >= 1",
                lambda v: v >= 1 and v == int(v),
            )
        ),
        cpu_threads=int(
            _number(
                config,
                "tweak_cpu_threads",
                _DEFAULTS.cpu_threads or 0,
                "an integer >= 0",
                lambda v: v >= 0 and v == int(v),
            )
        )
        or None,
    )
    return TweakOptions(
        devices=tuple(devices),
        baseline_path=Path(baseline),
        threshold_pct=threshold,
        save=bool(save_raw),
        settings=settings,
    )


def _number(
    config: pytest.Config, name: str, default: float, allowed: str, check: Any, strip: str = ""
) -> float:
    raw, source = _raw(config, name)
    if raw is None:
        return default
    text = str(raw).strip().removesuffix(strip) if strip else str(raw).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or math.isinf(value) or not check(value):
        raise pytest.UsageError(f"{source}: invalid value {raw!r}; expected {allowed}")
    return value


# -- collection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    device: str
    config: TorchInductorBackendConfig


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tweak" not in metafunc.fixturenames:
        return
    from .config import TorchInductorBackendConfig
    from .devices import availability

    options = metafunc.config.stash[_SESSION_KEY].options
    configs = _configs(metafunc, TorchInductorBackendConfig)
    supported = [d for d in DEVICES if metafunc.definition.get_closest_marker(d)] or list(DEVICES)
    devices = [d for d in options.devices if d in supported]
    params = []
    for device in devices:
        found = availability(device)
        marks = (
            []
            if found.available
            else [pytest.mark.skip(reason=f"device {device} is not available: {found.reason}")]
        )
        params += [
            pytest.param(_Case(device, config), id=f"{device}-{config.id}", marks=marks)
            for config in configs
        ]
    if not params:
        reason = (
            f"supports {', '.join(supported)}; selected by --tweak-device: "
            f"{', '.join(options.devices)}"
        )
        params = [pytest.param(None, id="no-device", marks=pytest.mark.skip(reason=reason))]
    metafunc.parametrize("tweak", params, indirect=True)


def _configs(
    metafunc: pytest.Metafunc, config_type: type[TorchInductorBackendConfig]
) -> list[TorchInductorBackendConfig]:
    marker = metafunc.definition.get_closest_marker("tweak_configs")
    where = metafunc.definition.nodeid
    if marker is None:
        return [config_type()]
    if marker.kwargs:
        pytest.fail(
            f"{where}: tweak_configs takes configs as positional arguments, "
            f"got keyword(s) {', '.join(sorted(marker.kwargs))}",
            pytrace=False,
        )
    if not marker.args:
        pytest.fail(f"{where}: tweak_configs() needs at least one config", pytrace=False)
    by_id: dict[str, TorchInductorBackendConfig] = {}
    for config in marker.args:
        if not isinstance(config, config_type):
            pytest.fail(
                f"{where}: tweak_configs takes TorchInductorBackendConfig objects, "
                f"got {config!r} ({type(config).__name__})",
                pytrace=False,
            )
        if config.id in by_id:
            pytest.fail(
                f"{where}: tweak_configs has two configs with the id {config.id!r}: "
                f"{by_id[config.id]!r} and {config!r}; each config must differ",
                pytrace=False,
            )
        by_id[config.id] = config
    return list(by_id.values())


# -- the fixture and the report -----------------------------------------------------------


@pytest.fixture
def tweak(request: pytest.FixtureRequest) -> Iterator[TweakFixture]:
    """One (device, config) case: ``tweak.benchmark(model, *args)`` compiles, warms up,
    times and counts; ``tweak.device``, ``tweak.config``, ``tweak.backend``,
    ``tweak.compile(model)``."""
    from .fixture import TweakFixture

    case = getattr(request, "param", None)
    if not isinstance(case, _Case):
        pytest.fail(
            "the tweak fixture is parametrized by pytest-tweak; do not parametrize it",
            pytrace=False,
        )
    yield TweakFixture(request, request.config.stash[_SESSION_KEY], case.device, case.config)


class _RunHooks:
    """Hooks that need the run's `TweakSession`; registered once per run as ``tweak-run``."""

    def __init__(self, session: TweakSession) -> None:
        self.session = session
        self.save_error: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = self.session.records.get(report.nodeid)
        if record is not None and report.when == "call":
            record.test_passed = report.passed

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        tweak = self.session
        if not tweak.options.save or not tweak.records:
            return
        try:
            tweak.save()
        except BaselineError as exc:
            self.save_error = str(exc)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tweak = self.session
        lines = summary_lines(tweak.records.values())
        if lines:
            terminalreporter.write_sep("-", "tweak summary")
            for line in lines:
                terminalreporter.write_line(line)
        path = tweak.options.baseline_path
        if self.save_error is not None:
            terminalreporter.write_line(
                f"pytest-tweak: ERROR: nothing saved: {self.save_error}", red=True
            )
        elif tweak.saved is not None:
            kept = len(set(tweak.baselines) - set(tweak.saved))
            terminalreporter.write_line(
                f"pytest-tweak: saved {len(tweak.saved)} case(s) to {path}"
                f" (kept {kept} other entr{'y' if kept == 1 else 'ies'})"
            )
