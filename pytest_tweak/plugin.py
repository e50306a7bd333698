"""The pytest11 entry point: options, ini keys, markers, parametrization, the ``tweak`` fixture
and the report hooks, and pytest-tweak's own hooks (`hookspec`) with its default
implementations of them. Wiring only; the work is done by the plain modules beside this one.

torch is not imported here at module level: a suite that never uses ``tweak`` pays nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import nullcontext as _nothing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import hookspec
from .baselines import BaselineEntry, BaselineError, RunRecord
from .citizen import is_own_tweak, mentions_tweak, register_device_markers, sees_own_tweak
from .devices import DEVICES, parse_device
from .fingerprint import check_fingerprint, differences, render_fingerprint
from .html_report import html_report
from .measure import CaseChecks, MeasureSettings
from .options import (
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    DEFAULT_RUN_NOISE_PCT,
    DEFAULT_THRESHOLD_PCT,
    FINGERPRINT_POLICIES,
    METRICS,
    judging_per_device,
    parse_choice,
    parse_number,
    parse_per_device,
    per_device_text,
)
from .registry import DEFAULT_BACKEND, BackendRegistry, BackendSpec, RegistryError
from .report import (
    append_text,
    dump_json,
    json_report,
    markdown_report,
    options_listing,
    summary_lines,
    tuning_lines,
    write_atomic,
)
from .results import REPORT_ATTRIBUTE, CaseResult, junit_properties, suite_tuning
from .session import LockUse, TweakOptions, TweakSession
from .verdict import COMPILE_FLOOR_S, Judging, Limits, Verdict

if TYPE_CHECKING:
    from pluggy import HookCaller

    from .case import BenchmarkResult
    from .fixture import TweakFixture

DEFAULT_BASELINE = "tweak-baselines.json"

DEVICE_HELP = (
    "devices to run tweak cases on, comma separated or repeated: "
    f"{', '.join(DEVICES)} (default: cpu); an index (cuda:0,cuda:1) lists the devices that "
    "pytest-xdist workers take in turn"
)
ALLOW_MISSING_DEVICE_HELP = (
    "let a device named by --tweak-device (or its ini twin) that torch cannot use skip its "
    "cases without failing the run (default: such a run fails, so a runner whose GPU is gone "
    "does not pass the gate)"
)
SAVE_HELP = "record the measured cases into the baseline file (keeps every other entry)"
APPEND_HELP = (
    "with --tweak-save, add this run to each entry's runs instead of replacing them "
    "(keeps the last 20): run it a few times to record a baseline whose spread between runs "
    "the verdict can use"
)
BASELINE_HELP = f"the baseline file (default: {DEFAULT_BASELINE} in the rootdir)"
THRESHOLD_HELP = (
    "smallest slow-down against the baseline that fails a test, in percent; one value, or "
    f"DEVICE=PCT pairs (default: {per_device_text(DEFAULT_THRESHOLD_PCT)})"
)
RUN_NOISE_HELP = (
    "run-to-run noise of a median in percent (one standard deviation), assumed when a "
    f"baseline holds a single run; one value or DEVICE=PCT pairs "
    f"(default: {per_device_text(DEFAULT_RUN_NOISE_PCT)})"
)
METRIC_HELP = (
    "what the verdict compares: 'normalized' (the case's latency over fixed reference "
    "workloads timed in turn with it, so a slower machine today is not a regression), "
    "'absolute' (latency, seconds per call) or 'device' (cuda/xpu: the kernels' time per "
    "call, launch overhead left out) (default: normalized)"
)
FAIL_INCONCLUSIVE_HELP = "fail a test whose comparison is too noisy to decide"
FAST_HELP = (
    "quick local measurement: short warm-up and sampling, no eager companion "
    "(explicit measurement options still win)"
)
# The measurement defaults live in MeasureSettings; the options only override them.
_DEFAULTS = MeasureSettings()
WARMUP_HELP = (
    "at most this many seconds of warm-up per case after the compiling call; warm-up stops "
    f"earlier once timings are stable (default: {_DEFAULTS.warmup_s:g})"
)
MAX_TIME_HELP = (
    "seconds of sampling per case, companions included; sampling stops earlier once the "
    f"median is precise (default: {_DEFAULTS.max_time_s:g})"
)
MIN_ROUNDS_HELP = f"fewest samples per case (default: {_DEFAULTS.min_rounds})"
PRECISION_HELP = (
    "stop sampling once the median's 95 percent confidence interval is within this many percent "
    f"(default: {_DEFAULTS.precision_pct:g})"
)
EAGER_HELP = (
    "time the model uncompiled too, in turn with the compiled one, for the speed-up: on or "
    "off (default: on)"
)
CPU_THREADS_HELP = (
    "torch intra-op threads for cpu cases, compile included; 0 keeps torch's own setting "
    f"(default: {_DEFAULTS.cpu_threads or 0})"
)

MAX_GRAPH_BREAKS_HELP = (
    "fail a case with more graph breaks than this, baseline or not; a test's "
    "@pytest.mark.tweak_limits overrides it (default: no limit)"
)
MAX_RECOMPILES_HELP = (
    "fail a case with more recompiles than this, baseline or not; a test's "
    "@pytest.mark.tweak_limits overrides it (default: no limit)"
)
COMPILE_THRESHOLD_HELP = (
    "smallest compile-time increase against the baseline that fails a test, in percent; also "
    f"at least {COMPILE_FLOOR_S:g} s, and only compared when the inductor cache was hit or "
    f"missed alike (default: {DEFAULT_COMPILE_THRESHOLD_PCT:g})"
)
MEMORY_THRESHOLD_HELP = (
    "smallest peak-memory increase against the baseline that fails a test, in percent "
    f"(default: {DEFAULT_MEMORY_THRESHOLD_PCT:g})"
)
COLD_COMPILE_HELP = (
    "compile every case against empty, temporary inductor caches, so compile time is a first "
    "compile's (slow: use it when compile time is what is tested)"
)
ACCURACY_HELP = (
    "compare each compiled output with the eager model's on the same inputs and fail when "
    "it differs: on or off (default: on)"
)
RTOL_HELP = "relative tolerance of the accuracy check (default: by dtype, looser under autocast)"
ATOL_HELP = "absolute tolerance of the accuracy check (default: by dtype, looser under autocast)"
LOGS_HELP = (
    "TORCH_LOGS artifacts to turn on during each case, comma separated (e.g. "
    "graph_breaks,recompiles); their output is attached to the test's report as "
    "'tweak logs' (default: none)"
)
LIST_OPTIONS_HELP = "print the inductor modes and options this torch knows, and exit"

FINGERPRINT_POLICY_HELP = (
    "when a case's baseline was recorded in another environment (its fingerprint: torch, "
    "python, cpu, threads, device name, ... differs): 'warn' compares and says so in the "
    "message and the summary, 'skip' does not compare, 'fail' fails the test (default: warn)"
)

PROGRESS_MODES = ("auto", "on", "off")
PROGRESS_HELP = (
    "show each case's phase (compiling, warming up, measuring, ...) and its elapsed time on "
    "the terminal while it runs, erased when the case ends: 'auto' does so on a terminal, "
    "not under -q and not when the CI environment variable is set (default: auto)"
)
JSON_HELP = (
    "write a JSON report of every case (metrics, baseline, verdict, environment) to this "
    "file; schema: pytest_tweak/report.schema.json (default: none)"
)
MARKDOWN_HELP = (
    "write a markdown summary (per test: configs by device, change, speed-up, verdict) to "
    "this file; it is also appended to $GITHUB_STEP_SUMMARY when that is set (default: none)"
)
HTML_HELP = (
    "write a self-contained HTML report with per-device charts of every test's configs "
    "to this file (default: none)"
)
#: The report options: name, what the file is, the file name an example suggests.
_REPORTS = (
    ("json", "JSON report", "tweak-report.json"),
    ("markdown", "markdown report", "tweak-report.md"),
    ("html", "HTML report", "tweak-report.html"),
)

_SESSION_KEY = pytest.StashKey["TweakSession"]()
_PROGRESS_KEY = pytest.StashKey["_ProgressLine | None"]()
#: Set once the settings line is in the report header.
_HEADER_KEY = pytest.StashKey[bool]()
#: Set once the device markers are registered for this session.
_MARKERS_KEY = pytest.StashKey[bool]()
#: A bad pytest_tweak_add_backends result, kept to report it for every test using ``tweak``.
_REGISTRY_ERROR_KEY = pytest.StashKey[RegistryError]()


# name (without the "tweak_" prefix), metavar (None: a flag), help; each has an ini twin.
_OPTIONS: tuple[tuple[str, str | None, str], ...] = (
    ("device", "DEV", DEVICE_HELP),
    ("allow_missing_device", None, ALLOW_MISSING_DEVICE_HELP),
    ("save", None, SAVE_HELP),
    ("append", None, APPEND_HELP),
    ("baseline", "PATH", BASELINE_HELP),
    ("threshold", "PCT", THRESHOLD_HELP),
    ("run_noise", "PCT", RUN_NOISE_HELP),
    ("metric", "NAME", METRIC_HELP),
    ("fail_inconclusive", None, FAIL_INCONCLUSIVE_HELP),
    ("fast", None, FAST_HELP),
    ("warmup", "SECONDS", WARMUP_HELP),
    ("max_time", "SECONDS", MAX_TIME_HELP),
    ("min_rounds", "N", MIN_ROUNDS_HELP),
    ("precision", "PCT", PRECISION_HELP),
    ("eager", "on|off", EAGER_HELP),
    ("cpu_threads", "N", CPU_THREADS_HELP),
    ("max_graph_breaks", "N", MAX_GRAPH_BREAKS_HELP),
    ("max_recompiles", "N", MAX_RECOMPILES_HELP),
    ("compile_threshold", "PCT", COMPILE_THRESHOLD_HELP),
    ("memory_threshold", "PCT", MEMORY_THRESHOLD_HELP),
    ("cold_compile", None, COLD_COMPILE_HELP),
    ("accuracy", "on|off", ACCURACY_HELP),
    ("rtol", "X", RTOL_HELP),
    ("atol", "X", ATOL_HELP),
    ("logs", "ARTIFACTS", LOGS_HELP),
    ("fingerprint_policy", "warn|skip|fail", FINGERPRINT_POLICY_HELP),
    ("progress", "auto|on|off", PROGRESS_HELP),
    ("json", "PATH", JSON_HELP),
    ("markdown", "PATH", MARKDOWN_HELP),
    ("html", "PATH", HTML_HELP),
)
#: Marker keywords of ``tweak_limits``; the first two also have options (--tweak-max-...).
_LIMIT_KEYS = ("graph_breaks", "recompiles", "cudagraph_skips")
_LIMIT_OPTIONS = _LIMIT_KEYS[:2]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tweak", "pytest-tweak: speed of torch.compile'd models")
    for name, metavar, help_text in _OPTIONS:
        dest = f"tweak_{name}"
        flag = "--" + dest.replace("_", "-")
        # the ini twin points at its flag: the full text twice would add ~200 lines to the
        # --help of every suite in the environment
        ini_help = f"{flag} as an ini key (see its help)"
        if metavar is None:
            group.addoption(flag, action="store_true", dest=dest, default=None, help=help_text)
            parser.addini(dest, ini_help, type="bool", default=False)
            continue
        # --tweak-device may be repeated; the others take one value
        action = "append" if name == "device" else "store"
        group.addoption(
            flag, action=action, dest=dest, metavar=metavar, default=None, help=help_text
        )
        parser.addini(dest, ini_help, type="string", default="")
    # an action like --markers, not a setting: no ini twin
    group.addoption(
        "--tweak-list-options",
        action="store_true",
        dest="tweak_list_options",
        default=False,
        help=LIST_OPTIONS_HELP,
    )


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("tweak_list_options"):
        return None
    import torch._inductor

    from .config import option_type, public_options

    options = {name: getattr(option_type(name), "__name__", "") for name in public_options()}
    print(options_listing(torch._inductor.list_mode_options(), options))
    return 0


def pytest_configure(config: pytest.Config) -> None:
    if config.option.markers:  # `pytest --markers` documents them; a session registers them
        register_device_markers(config)  # when it collects a file that uses tweak
    config.addinivalue_line(
        "markers",
        "tweak_configs(*configs): run the test's `tweak` cases once per config given: "
        "TorchInductorBackendConfig, or the config of another registered backend "
        "(AotEagerBackendConfig, TorchAOBackendConfig, OpenVINOBackendConfig, ...); without "
        "it, one case with TorchInductorBackendConfig() (pytest-tweak)",
    )
    config.addinivalue_line(
        "markers",
        "tweak_backends(*names): run the test's `tweak` cases once per backend named "
        "(inductor, eager, aot_eager, torchao, openvino, or one a plugin registers), each with "
        "its configs from tweak_configs or else its default config (pytest-tweak)",
    )
    config.addinivalue_line(
        "markers",
        "tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None): fail the "
        "test's `tweak` cases when they have more graph breaks, recompiles or graphs inductor "
        "ran without CUDA graphs than this, baseline or not; None: no limit; overrides "
        "--tweak-max-graph-breaks and --tweak-max-recompiles (pytest-tweak)",
    )
    session = TweakSession(_resolve_options(config))
    config.stash[_SESSION_KEY] = session
    config.pluginmanager.register(_RunHooks(session), "tweak-run")
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ControllerHooks(session), "tweak-xdist-controller")


class TweakWarning(pytest.PytestWarning):
    """A problem pytest-tweak reports without stopping the run."""


def pytest_report_header(config: pytest.Config) -> str | None:
    """The settings in force, when the run selects pytest-tweak options (else the line comes
    after collection, and only when a collected test uses ``tweak``)."""
    if not any(_raw(config, f"tweak_{name}")[1] != "default" for name, _, _ in _OPTIONS):
        return None
    config.stash[_HEADER_KEY] = True
    return config.stash[_SESSION_KEY].options.describe(config.rootpath)


def pytest_report_collectionfinish(
    config: pytest.Config, items: Sequence[pytest.Item]
) -> list[str]:
    if _HEADER_KEY in config.stash or not any(_case_of(item) for item in items):
        return []
    return [config.stash[_SESSION_KEY].options.describe(config.rootpath)]


# -- options ------------------------------------------------------------------------------


def _raw(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value of option ``name`` and where it came from: CLI, then ini, then unset."""
    value = config.getoption(name)
    if value is not None:
        return value, f"--{name.replace('_', '-')}"
    try:
        ini = config.getini(name)
    except (ValueError, pytest.UsageError) as exc:  # a bool ini key, not a truth value
        raise pytest.UsageError(
            f"ini option {name}: {exc}; expected true or false (or 1/0, yes/no, on/off)"
        ) from exc
    if ini not in ("", None, []) and ini is not False:  # a bool key's default is False
        return ini, f"ini option {name}"
    return None, "default"


def _resolve_options(config: pytest.Config) -> TweakOptions:
    devices_raw, source = _raw(config, "tweak_device")
    devices_source = source
    items = devices_raw if isinstance(devices_raw, list) else [devices_raw or "cpu"]
    devices: list[str] = []
    pools: dict[str, list[int]] = {}
    for item in items:
        for text in str(item).split(","):
            try:
                name, index = parse_device(text)
            except ValueError as exc:
                raise pytest.UsageError(f"{source}: {exc}") from None
            if name not in devices:
                devices.append(name)
            if index is not None and index not in pools.setdefault(name, []):
                pools[name].append(index)

    save_raw, _ = _raw(config, "tweak_save")
    baseline_raw, source = _raw(config, "tweak_baseline")
    if baseline_raw is None:
        baseline = config.rootpath / DEFAULT_BASELINE
    elif source.startswith("--"):
        baseline = config.invocation_params.dir / str(baseline_raw)
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
        baseline = base / str(baseline_raw)

    metric = _choice(config, "tweak_metric", METRICS, "normalized")
    thresholds = _per_device(
        config, "tweak_threshold", DEFAULT_THRESHOLD_PCT, "a percentage > 0", lambda v: v > 0
    )
    noises = _per_device(
        config, "tweak_run_noise", DEFAULT_RUN_NOISE_PCT, "a percentage >= 0", lambda v: v >= 0
    )
    fail_inconclusive = bool(_raw(config, "tweak_fail_inconclusive")[0])
    compile_threshold = _number(
        config,
        "tweak_compile_threshold",
        DEFAULT_COMPILE_THRESHOLD_PCT,
        "a percentage > 0",
        lambda v: v > 0,
    )
    memory_threshold = _number(
        config,
        "tweak_memory_threshold",
        DEFAULT_MEMORY_THRESHOLD_PCT,
        "a percentage > 0",
        lambda v: v > 0,
    )
    judging = judging_per_device(
        thresholds,
        noises,
        metric=metric,
        fail_inconclusive=fail_inconclusive,
        compile_threshold_pct=compile_threshold,
        memory_threshold_pct=memory_threshold,
    )
    preset = MeasureSettings.fast() if _raw(config, "tweak_fast")[0] else _DEFAULTS
    settings = MeasureSettings(
        warmup_s=_number(config, "tweak_warmup", preset.warmup_s, "seconds >= 0", lambda v: v >= 0),
        max_time_s=_number(
            config, "tweak_max_time", preset.max_time_s, "seconds >= 0", lambda v: v >= 0
        ),
        min_rounds=int(
            _number(
                config,
                "tweak_min_rounds",
                preset.min_rounds,
                "an integer >= 1",
                lambda v: v >= 1 and v == int(v),
            )
        ),
        precision_pct=_number(
            config, "tweak_precision", preset.precision_pct, "a percentage >= 0", lambda v: v >= 0
        ),
        cpu_threads=int(
            _number(
                config,
                "tweak_cpu_threads",
                preset.cpu_threads or 0,
                "an integer >= 0",
                lambda v: v >= 0 and v == int(v),
            )
        )
        or None,
        eager=_choice(config, "tweak_eager", ("on", "off"), "on" if preset.eager else "off")
        == "on",
        reference=metric == "normalized",
        stable_pct=preset.stable_pct,
    )
    if save_raw:
        _check_writable(Path(baseline), source)
    checks = CaseChecks(
        accuracy=_choice(config, "tweak_accuracy", ("on", "off"), "on") == "on",
        rtol=_optional_number(config, "tweak_rtol", "a number >= 0", lambda v: v >= 0),
        atol=_optional_number(config, "tweak_atol", "a number >= 0", lambda v: v >= 0),
        cold=bool(_raw(config, "tweak_cold_compile")[0]),
    )
    return TweakOptions(
        devices=tuple(devices),
        device_pools={name: tuple(indices) for name, indices in pools.items()},
        baseline_path=Path(baseline),
        save=bool(save_raw),
        append=bool(_raw(config, "tweak_append")[0]),
        devices_source=devices_source,
        allow_missing_device=bool(_raw(config, "tweak_allow_missing_device")[0]),
        judging=judging,
        settings=settings,
        checks=checks,
        limits=_default_limits(config),
        logs=_log_artifacts(config),
        fingerprint_policy=_choice(
            config, "tweak_fingerprint_policy", FINGERPRINT_POLICIES, "warn"
        ),
        progress=_choice(config, "tweak_progress", PROGRESS_MODES, "auto"),
        **_report_paths(config),
    )


def _path_option(config: pytest.Config, name: str) -> tuple[Path | None, str]:
    """A path option: relative to the current directory on the command line, to the ini
    file's folder in the ini file."""
    raw, source = _raw(config, name)
    if raw is None or not str(raw).strip():
        return None, source
    if source.startswith("--"):
        return config.invocation_params.dir / str(raw), source
    base = config.inipath.parent if config.inipath else config.rootpath
    return base / str(raw), source


def _report_paths(config: pytest.Config) -> dict[str, Path | None]:
    """The report files asked for, each checked now: a folder, or a place that cannot be
    written, stops the run before any case runs."""
    paths: dict[str, Path | None] = {}
    for name, what, example in _REPORTS:
        path, source = _path_option(config, f"tweak_{name}")
        if path is not None:
            problem = _unwritable(path, example)
            if problem is not None:
                raise pytest.UsageError(f"{source}: cannot write the {what} to {path}: {problem}")
        paths[f"{name}_path"] = path
    return paths


def _unwritable(path: Path, example: str) -> str | None:
    """Why ``path`` cannot be written as a file (missing folders are created), or ``None``."""
    if path.is_dir():
        return f"it is a folder; name a file, e.g. {path / example}"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not a writable folder"
    return None


def _check_writable(path: Path, source: str) -> None:
    """With --tweak-save, fail now, not after the whole run, if the file cannot be written."""
    where = "the default" if source == "default" else source
    if path.is_dir():
        raise pytest.UsageError(
            f"{where}: baseline file {path} is a folder; name a file, e.g. "
            f"{path / DEFAULT_BASELINE}"
        )
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the save creates the missing folders below this one
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise pytest.UsageError(
            f"{where}: --tweak-save cannot write baseline file {path}: {folder} is not a "
            "writable folder"
        )


def _optional_number(config: pytest.Config, name: str, allowed: str, check: Any) -> float | None:
    raw, source = _raw(config, name)
    if raw is None:
        return None
    return _parse_number(str(raw), raw, source, allowed, check)


def _default_limits(config: pytest.Config) -> Limits:
    values: dict[str, Any] = {}
    for key in _LIMIT_OPTIONS:
        name = f"tweak_max_{key}"
        raw, source = _raw(config, name)
        if raw is None:
            values[key] = None
            continue
        value = _parse_number(
            str(raw), raw, source, "an integer >= 0", lambda v: v >= 0 and v == int(v)
        )
        values[key] = int(value)
        values[f"{key}_source"] = source
    return Limits(**values)


def _log_artifacts(config: pytest.Config) -> tuple[str, ...]:
    raw, source = _raw(config, "tweak_logs")
    if raw is None:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in str(raw).split(",") if n.strip()))
    if not names:
        return ()
    # the user asked for torch's logs: importing torch here is what they pay for
    import difflib

    from .counters import known_log_artifacts

    known = known_log_artifacts()
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise pytest.UsageError(
                f"{source}: unknown TORCH_LOGS artifact {name!r}{hint} "
                f"(torch knows: {', '.join(known)})"
            )
    return names


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: str) -> str:
    raw, source = _raw(config, name)
    if raw is None:
        return default
    try:
        return parse_choice(raw, choices)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _per_device(
    config: pytest.Config, name: str, defaults: dict[str, float], allowed: str, check: Any
) -> dict[str, float]:
    """One number for every device, or ``DEVICE=NUMBER`` pairs over the defaults."""
    raw, source = _raw(config, name)
    if raw is None:
        return dict(defaults)
    try:
        return parse_per_device(raw, defaults, allowed, check)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


def _number(config: pytest.Config, name: str, default: float, allowed: str, check: Any) -> float:
    raw, source = _raw(config, name)
    if raw is None:
        return default
    return _parse_number(str(raw), raw, source, allowed, check)


def _parse_number(text: str, raw: Any, source: str, allowed: str, check: Any) -> float:
    try:
        return parse_number(text, allowed, check)
    except ValueError:
        raise pytest.UsageError(f"{source}: invalid value {raw!r}; expected {allowed}") from None


# -- pytest-tweak's hooks: helpers and default implementations --------------------------


def implementers(hook: HookCaller) -> str:
    """The plugins implementing ``hook`` other than pytest-tweak itself, for messages."""
    own = sys.modules[__name__]
    names = [impl.plugin_name for impl in hook.get_hookimpls() if impl.plugin is not own]
    return ", ".join(reversed(names)) or "pytest-tweak only"


@pytest.hookimpl(tryfirst=True)
def pytest_tweak_add_backends(config: pytest.Config) -> Mapping[str, BackendSpec]:
    """pytest-tweak's own backends, registered first: a plugin's backend with one of their
    names is reported as the duplicate."""
    from .registry import builtin_backends

    return builtin_backends()


@pytest.hookimpl(trylast=True)
def pytest_tweak_verdict(
    item: pytest.Item,
    baseline: BaselineEntry | None,
    run: RunRecord,
    result: BenchmarkResult,
    judging: Judging,
) -> Verdict:
    """pytest-tweak's own rule (`pytest_tweak.verdict.judge`), with a note when the baseline
    was recorded in a different environment."""
    from .verdict import judge

    verdict = judge(
        baseline,
        run,
        graph_breaks=result.graph_breaks,
        recompiles=result.recompiles,
        judging=judging,
        compile_time_s=result.compile_time_s,
        compile_cache=result.compile_cache.state,
        peak_memory_bytes=result.peak_memory_bytes,
    )
    if baseline is None or not baseline.fingerprint:
        return verdict
    changed = differences(baseline.fingerprint, item.config.stash[_SESSION_KEY].fingerprint)
    if not changed:
        return verdict
    note = "the baseline was recorded in another environment: " + "; ".join(changed)
    return replace(verdict, notes=(*verdict.notes, note))


def _registry(config: pytest.Config) -> BackendRegistry:
    """The run's backends, from every ``pytest_tweak_add_backends`` implementation (once).

    A bad contribution is a `RegistryError` naming the implementing plugins; it is kept and
    raised again for every later test, so each test using ``tweak`` reports it.
    """
    session = config.stash[_SESSION_KEY]
    if session.registry is not None:
        return session.registry
    error = config.stash.get(_REGISTRY_ERROR_KEY, None)
    if error is not None:
        raise error
    hook = config.hook.pytest_tweak_add_backends
    try:
        session.registry = BackendRegistry.from_contributions(hook(config=config))
        return session.registry
    except RegistryError as exc:
        problem = str(exc)
    error = RegistryError(
        f"pytest_tweak_add_backends: {problem} (implemented by: {implementers(hook)})"
    )
    config.stash[_REGISTRY_ERROR_KEY] = error
    raise error


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a collected test uses ``tweak``: read the baseline file, and take the environment
    fingerprint."""
    if not any(_case_of(item) is not None for item in session.items):
        return
    from .fingerprint import base_fingerprint

    config = session.config
    tweak = config.stash[_SESSION_KEY]
    if not config.option.collectonly:  # read now, so a broken file stops the run before a case
        try:
            tweak.load()
        except BaselineError as exc:
            raise pytest.UsageError(
                f"pytest-tweak: {exc}. Fix or remove the file (it is left as it is)."
            ) from exc
        tweak.note_missing_devices([_case_of(item) for item in session.items])
    options = tweak.options
    fingerprint = base_fingerprint(options.devices, options.settings.cpu_threads)
    hook = config.hook.pytest_tweak_fingerprint
    returned = [r for r in hook(config=config, fingerprint=fingerprint) if r is not None]
    problem = check_fingerprint(fingerprint)
    if returned:
        problem = f"returned {returned[0]!r}; change the fingerprint dict in place and return None"
    if problem is not None:
        raise pytest.UsageError(
            f"pytest-tweak: pytest_tweak_fingerprint: {problem} "
            f"(implemented by: {implementers(hook)})"
        )
    tweak.fingerprint = fingerprint


# -- collection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    device: str
    backend: str
    config: Any
    limits: Limits
    #: Why torch cannot use the device (the case is skipped), or None.
    unavailable: str | None = None


def _case_of(item: pytest.Item) -> _Case | None:
    """The pytest-tweak case ``item`` runs, if it is one."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("tweak") if callspec is not None else None
    return case if isinstance(case, _Case) else None


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> None:
    """Register the device markers before the first test module that uses pytest-tweak's
    ``tweak`` is imported (a suite that never does keeps its own marker rules)."""
    config = parent.config
    if _MARKERS_KEY not in config.stash and mentions_tweak(module_path) and sees_own_tweak(parent):
        register_device_markers(config)
        config.stash[_MARKERS_KEY] = True


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not is_own_tweak(metafunc):  # the suite's own `tweak`, or none
        return
    from .devices import availability, device_count

    try:
        registry = _registry(metafunc.config)
    except RegistryError as exc:
        problem = str(exc)
        registry = None
    if registry is None:
        pytest.fail(f"pytest-tweak: {problem}", pytrace=False)
    options = metafunc.config.stash[_SESSION_KEY].options
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
            params.append(
                pytest.param(
                    _Case(
                        device,
                        name,
                        config,
                        limits,
                        None if found.available else found.reason,
                    ),
                    id=f"{device}-{registry.case_id(name, config)}",
                    marks=[] if reason is None else [pytest.mark.skip(reason=reason)],
                )
            )
    if not params:
        reason = (
            f"supports {', '.join(supported)}; selected by --tweak-device: "
            f"{', '.join(options.devices)}"
        )
        params = [pytest.param(None, id="no-device", marks=pytest.mark.skip(reason=reason))]
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


def _marker_configs(metafunc: pytest.Metafunc, registry: BackendRegistry) -> list[Any]:
    """The configs the ``tweak_configs`` and ``tweak_backends`` markers ask for."""
    where = metafunc.definition.nodeid
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
            pytest.fail(
                f"{where}: tweak_backends got unknown backend {name!r}; known: "
                f"{', '.join(registry.names)}",
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
        configs += own or [registry.spec(name).config_type()]
    return configs


def _limits(metafunc: pytest.Metafunc, defaults: Limits) -> Limits:
    """The ``tweak_limits`` marker over the option defaults; a bad marker fails collection."""
    marker = metafunc.definition.get_closest_marker("tweak_limits")
    if marker is None:
        return defaults
    where = metafunc.definition.nodeid
    signature = "tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None)"
    if marker.args:
        pytest.fail(
            f"{where}: {signature} takes keyword arguments only, got {marker.args!r}",
            pytrace=False,
        )
    unknown = sorted(set(marker.kwargs) - set(_LIMIT_KEYS))
    if unknown:
        pytest.fail(
            f"{where}: {signature} got unknown keyword(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(_LIMIT_KEYS)}",
            pytrace=False,
        )
    values: dict[str, Any] = {}
    for key in _LIMIT_KEYS:
        if key not in marker.kwargs:
            values[key] = getattr(defaults, key)
            values[f"{key}_source"] = getattr(defaults, f"{key}_source")
            continue
        value = marker.kwargs[key]
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


# -- the fixture and the report -----------------------------------------------------------


@pytest.fixture
def tweak(request: pytest.FixtureRequest) -> Iterator[TweakFixture]:
    """One (device, backend, config) case: ``tweak.benchmark(model, *args)`` compiles, warms
    up, times and counts; ``tweak.device``, ``tweak.config``, ``tweak.backend``,
    ``tweak.compile(model)``."""
    from .backends import Backend
    from .devices import device_count, worker_device
    from .fixture import TweakFixture

    case = getattr(request, "param", None)
    if not isinstance(case, _Case):
        pytest.fail(
            "the tweak fixture is parametrized by pytest-tweak: request it as an argument of "
            "the test function (not through request.getfixturevalue or another fixture), and "
            "do not parametrize it yourself",
            pytrace=False,
        )
    spec = _registry(request.config).spec(case.backend)
    backend = spec.factory(case.config)
    if not isinstance(backend, Backend):
        pytest.fail(
            f"pytest-tweak: the factory of backend {case.backend!r} ({spec.factory!r}) returned "
            f"{backend!r}, which has no `name` and `compile(model, device)`",
            pytrace=False,
        )
    session = request.config.stash[_SESSION_KEY]
    device = worker_device(
        case.device,
        pool=session.options.device_pools.get(case.device, ()),
        worker=os.environ.get("PYTEST_XDIST_WORKER"),
        count=device_count(case.device),
    )
    progress = _progress_line(request.config)
    fixture = TweakFixture(
        request,
        session,
        device,
        case.config,
        backend,
        case.backend,
        case.limits,
        status=None if progress is None else progress.show,
    )
    yield fixture
    fixture._teardown()


def _progress_line(config: pytest.Config) -> _ProgressLine | None:
    """The run's progress line; None when --tweak-progress (or auto) says no."""
    if _PROGRESS_KEY in config.stash:
        return config.stash[_PROGRESS_KEY]
    mode = config.stash[_SESSION_KEY].options.progress
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    quiet_here = (
        not bool(getattr(reporter, "isatty", False))
        or config.get_verbosity() < 0
        or bool(os.environ.get("CI"))
    )
    worker = hasattr(config, "workerinput")  # an xdist worker: its output is not a terminal
    wanted = (
        reporter is not None
        and not worker
        and (mode == "on" or (mode == "auto" and not quiet_here))
    )
    line = _ProgressLine(config) if wanted else None
    config.stash[_PROGRESS_KEY] = line
    return line


class _ProgressLine:
    """A transient status written after pytest's own output on the current terminal line,
    and erased (backspaces, blanks, backspaces) before the next one or when the case ends.

    It is written around pytest's output capture, and past pytest's terminal writer, so the
    writer's idea of the line (its progress column) is what it was.
    """

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._shown = 0

    def show(self, text: str | None) -> None:
        """Show ``text`` in place of the last one; ``None`` erases it."""
        capture = self._config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else _nothing():
            out = sys.stdout
            if self._shown:
                out.write("\b" * self._shown + " " * self._shown + "\b" * self._shown)
                self._shown = 0
            if text is not None:
                writer = self._config.get_terminal_writer()
                room = writer.fullwidth - writer.width_of_current_line - 2
                if room >= 20:
                    shown = " " + (text if len(text) <= room else text[: room - 3] + "...")
                    out.write(shown)
                    self._shown = len(shown)
            out.flush()


def _environment_line(changed: Mapping[str, Sequence[str]], policy: str) -> str:
    """The summary's word on cases whose baseline was recorded in another environment."""
    fields = sorted(
        {difference.split(":", 1)[0] for found in changed.values() for difference in found}
    )
    what = (
        f"{len(changed)} case(s) had a baseline recorded in another environment "
        f"(differs: {', '.join(fields)})"
    )
    outcome = {
        "warn": "compared anyway (--tweak-fingerprint-policy=warn); record baselines here with "
        "--tweak-save, or choose skip or fail",
        "skip": "not compared (--tweak-fingerprint-policy=skip)",
        "fail": "failed (--tweak-fingerprint-policy=fail)",
    }[policy]
    return f"pytest-tweak: {what}: {outcome}"


_WORKER_OUTPUT_KEY = "pytest_tweak"
#: Waiting this long in all for another process's device lock is worth a line in the summary.
_WAIT_WORTH_SAYING_S = 0.5


def _lock_line(uses: Sequence[LockUse], workers: Sequence[str]) -> str | None:
    """The summary's word on device locks: under xdist, that the workers measured one case
    at a time per device; otherwise, only when this run waited for another process."""
    if not uses:
        return None
    per_lock: dict[str, list[LockUse]] = {}
    for use in uses:
        per_lock.setdefault(use.lock, []).append(use)
    parts = [
        f"{lock}: {len(held)} case(s), waited {sum(u.waited_s for u in held):.1f} s"
        for lock, held in sorted(per_lock.items())
    ]
    if len(workers) > 1:
        return (
            f"pytest-tweak: {len(workers)} xdist workers measured one case at a time per device "
            f"(device locks; {'; '.join(parts)})"
        )
    if sum(use.waited_s for use in uses) >= _WAIT_WORTH_SAYING_S:
        return (
            "pytest-tweak: waited for another process measuring on the same device "
            f"({'; '.join(parts)})"
        )
    return None


class _ControllerHooks:
    """On the pytest-xdist controller: takes in what each worker sent when it finished."""

    def __init__(self, session: TweakSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT_KEY)
        if output is not None:
            self.session.absorb(output)


def _report_settings(options: TweakOptions) -> dict[str, Any]:
    """The settings a JSON report records."""
    return {
        "devices": list(options.devices),
        "baseline": str(options.baseline_path),
        "save": options.save,
        "metric": options.judging[options.devices[0]].metric if options.devices else None,
        "threshold_pct": {d: options.judging[d].threshold_pct for d in options.devices},
        "run_noise_pct": {d: options.judging[d].run_noise_pct for d in options.devices},
    }


class _RunHooks:
    """Hooks that need the run's `TweakSession`; registered once per run as ``tweak-run``."""

    def __init__(self, session: TweakSession) -> None:
        self.session = session
        self.save_error: str | None = None
        #: What writing the report files did: (ok, message) per file.
        self.report_lines: list[tuple[bool, str]] = []
        self._results: list[CaseResult] | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Where the case ran: put its plain data on the call report (pytest serializes
        a report's attributes for pytest-xdist), and its figures into the test's properties
        (``--junitxml`` writes them)."""
        report: pytest.TestReport = yield
        record = self.session.records.get(item.nodeid)
        if report.when == "call" and record is not None:
            case = CaseResult.from_record(record, outcome=report.outcome)
            setattr(report, REPORT_ATTRIBUTE, case.to_dict())
            properties = junit_properties(case)
            item.user_properties.extend(properties)  # the teardown report's, for junitxml
            report.user_properties.extend(properties)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = self.session.records.get(report.nodeid)
        if record is not None and report.when == "call":
            record.test_passed = report.passed
        case = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(case, dict):
            self.session.cases[report.nodeid] = case

    def _case_results(self) -> list[CaseResult]:
        """The cases read back from the reports' data (once: every test has reported)."""
        if self._results is not None:
            return self._results
        cases = []
        for nodeid, data in self.session.cases.items():
            try:
                cases.append(CaseResult.from_dict(data))
            except ValueError as exc:
                self.report_lines.append((False, f"case {nodeid} left out of the reports: {exc}"))
        self._results = cases
        return cases

    def _write_reports(self, config: pytest.Config) -> None:
        """The report files asked for, from the cases' plain data: by the one process, or
        the pytest-xdist controller, never a worker. ``$GITHUB_STEP_SUMMARY`` gets the
        markdown when a case ran."""
        if hasattr(config, "workerinput"):
            return
        options = self.session.options
        cases = self._case_results()
        tuning = suite_tuning(cases)
        environment = self.session.fingerprint or (cases[0].environment if cases else {})
        renderers: dict[str, Callable[[], str]] = {
            "JSON report": lambda: dump_json(
                json_report(cases, environment, _report_settings(options), tuning)
            ),
            "markdown report": lambda: markdown_report(cases, tuning),
            "HTML report": lambda: html_report(cases, environment, tuning),
        }
        paths = (options.json_path, options.markdown_path, options.html_path)
        for (what, render), path in zip(renderers.items(), paths, strict=True):
            if path is None:
                continue
            try:
                write_atomic(path, render())
            except OSError as exc:
                self.report_lines.append((False, f"{what} not written to {path}: {exc}"))
            else:
                self.report_lines.append((True, f"{what} written to {path}"))
        summary_file = os.environ.get("GITHUB_STEP_SUMMARY", "")
        if summary_file and cases:
            try:
                append_text(Path(summary_file), markdown_report(cases, tuning))
            except OSError as exc:
                self.report_lines.append(
                    (False, f"markdown not appended to $GITHUB_STEP_SUMMARY {summary_file}: {exc}")
                )

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # the hook's argument, not session.exitstatus: Pytester.getnode() calls this hook on
        # a session that never ran, and never set it
        tweak = self.session
        tweak.instruments.release()
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:  # a pytest-xdist worker: the controller saves and reports
            worker = str(getattr(session.config, "workerinput", {}).get("workerid", "?"))
            worker_output[_WORKER_OUTPUT_KEY] = tweak.worker_output(worker)
            return
        self._write_reports(session.config)
        missing = tweak.missing_device_failure()
        if missing is not None:
            self.report_lines.append((False, missing))
        if exitstatus == pytest.ExitCode.OK and not all(ok for ok, _ in self.report_lines):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not tweak.options.save or not (tweak.records or tweak.remote_entries):
            return
        try:
            tweak.save()
        except BaselineError as exc:
            self.save_error = str(exc)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tweak = self.session
        if hasattr(terminalreporter.config, "workerinput"):
            return
        lines = summary_lines(tweak.summary_items())
        if lines:
            terminalreporter.write_sep("-", "tweak summary")
            for line in lines:
                terminalreporter.write_line(line)
            terminalreporter.write_line(f"fingerprint: {render_fingerprint(tweak.fingerprint)}")
        lock_line = _lock_line(tweak.lock_uses, tweak.workers)
        if lock_line:
            terminalreporter.write_line(lock_line)
        tuning = tuning_lines(suite_tuning(self._case_results())) if tweak.cases else []
        if tuning:
            terminalreporter.write_sep("-", "tweak tuning")
            for line in tuning:
                terminalreporter.write_line(line)
        for ok, line in self.report_lines:
            terminalreporter.write_line(
                f"pytest-tweak: {'' if ok else 'ERROR: '}{line}", red=not ok
            )
        if tweak.environment_changed:
            terminalreporter.write_line(
                _environment_line(tweak.environment_changed, tweak.options.fingerprint_policy),
                yellow=True,
            )
        path = tweak.options.baseline_path
        if tweak.skipped:
            terminalreporter.write_line(
                f"pytest-tweak: {len(tweak.skipped)} unreadable entr"
                f"{'y' if len(tweak.skipped) == 1 else 'ies'} in {path} skipped: "
                + ", ".join(sorted(tweak.skipped)),
                yellow=True,
            )
        if self.save_error is not None:
            terminalreporter.write_line(
                f"pytest-tweak: ERROR: nothing saved: {self.save_error}", red=True
            )
        elif tweak.saved is not None:
            kept = tweak.kept
            terminalreporter.write_line(
                f"pytest-tweak: saved {len(tweak.saved)} case(s) to {path}"
                f" (kept {kept} other entr{'y' if kept == 1 else 'ies'})"
            )
