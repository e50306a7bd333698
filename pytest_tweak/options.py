"""pytest-tweak's options, free of pytest: the option table (name, value, help), the
`TweakOptions` they resolve to, and `resolve_options`, which turns the raw values (each with
where it came from) into them or raises `OptionError` naming the option, the value and what is
allowed.

The plugin only gathers raw values from the command line and the ini file and calls
`resolve_options`; the command line tool (``python -m pytest_tweak diff``) resolves its
judging flags through `resolve_judging`, so both judge with the same numbers and accept the
same spellings.
"""

from __future__ import annotations

import difflib
import math
import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .devices import DEVICES, parse_device
from .files import read_only_reason, same_file
from .fingerprint import POLICIES
from .measure import CaseChecks, MeasureSettings
from .verdict import (
    COMPILE_FLOOR_S,
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_CONFIDENCE,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    Judging,
    Limits,
)

if TYPE_CHECKING:
    import pytest

__all__ = [
    "DEFAULT_BASELINE",
    "DEFAULT_COMPILE_THRESHOLD_PCT",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_HOST_BOUND_RUN_NOISE_PCT",
    "DEFAULT_MEMORY_THRESHOLD_PCT",
    "DEFAULT_RUN_NOISE_PCT",
    "DEFAULT_THRESHOLD_PCT",
    "FINGERPRINT_POLICIES",
    "LIMIT_KEYS",
    "METRICS",
    "OPTIONS",
    "Option",
    "OptionError",
    "Raw",
    "TweakOptions",
    "benchmarks_disabled",
    "judging_per_device",
    "option_warnings",
    "parse_choice",
    "parse_number",
    "parse_per_device",
    "per_device_text",
    "resolve_judging",
    "resolve_options",
    "step_summary_problem",
    "unknown_ini_keys",
    "unknown_tweak_key",
]

#: Smallest slow-down that counts, in percent, per device type; measured in
#: docs/measurement.md (false alarms and detection power at these values).
DEFAULT_THRESHOLD_PCT: dict[str, float] = {"cpu": 5.0, "cuda": 1.0, "xpu": 1.0}
#: Run-to-run noise of a median (one standard deviation, percent) assumed when a baseline
#: holds one run, and the prior a measured spread is shrunk towards: above the spread
#: measured between fresh processes (docs/measurement.md: cpu 0.6 %; cuda, a compute-bound
#: model's normalized latency, primed samples, 0.17 % over 17 processes on an H100, where
#: 0.5 % let 47 % of resampled unchanged runs be called unchanged and 0.3 % 99.9 %).
DEFAULT_RUN_NOISE_PCT: dict[str, float] = {"cpu": 2.0, "cuda": 0.3, "xpu": 0.3}
#: The prior of a host-bound cuda/xpu case (`Judging.host_bound_run_noise_pct`), used while
#: ``run_noise`` is not set: a launch-bound model's normalized latency spread with sd 1.9 %
#: between processes on an H100 VM, where 2 % gave 0 false alarms in 28 runs against 3 with
#: the device prior (docs/measurement.md, W3).
DEFAULT_HOST_BOUND_RUN_NOISE_PCT: dict[str, float | None] = {"cpu": None, "cuda": 2.0, "xpu": 2.0}
METRICS = ("normalized", "absolute", "device")
#: What to do with a baseline recorded in another environment.
FINGERPRINT_POLICIES = POLICIES
#: Marker keywords of ``tweak_limits``; the first two also have options (--tweak-max-...).
LIMIT_KEYS = ("graph_breaks", "recompiles", "cudagraph_skips")


def per_device_text(values: Mapping[str, float]) -> str:
    """``{"cpu": 5.0, "cuda": 1.0}`` -> ``cpu 5, cuda 1`` (for help texts)."""
    return ", ".join(f"{device} {value:g}" for device, value in values.items())


def parse_number(raw: Any, allowed: str, check: Callable[[float], bool]) -> float:
    """``raw`` as a finite number (a trailing ``%`` is allowed) that passes ``check``."""
    text = str(raw)
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        value = math.nan
    if math.isnan(value) or math.isinf(value) or not check(value):
        raise ValueError(f"invalid value {raw!r}; expected {allowed}")
    return value


def parse_per_device(
    raw: Any,
    defaults: Mapping[str, float],
    allowed: str,
    check: Callable[[float], bool],
) -> dict[str, float]:
    """One number for every device, or ``DEVICE=NUMBER`` pairs over ``defaults``."""
    values = dict(defaults)
    text = str(raw).strip()
    if "=" not in text:
        try:
            value = parse_number(text, allowed, check)
        except ValueError:
            raise ValueError(f"invalid value {raw!r}; expected {allowed}") from None
        return {device: value for device in values}
    seen: set[str] = set()
    for part in text.split(","):
        device, sep, number = part.partition("=")
        device = device.strip().lower()
        if not sep or device not in DEVICES:
            raise ValueError(
                f"invalid value {raw!r}; expected {allowed}, or DEVICE=PCT pairs "
                f"separated by commas with DEVICE one of {', '.join(DEVICES)}"
            )
        if device in seen:  # the last would win without a word
            raise ValueError(f"invalid value {raw!r}: {device} is given twice; give it once")
        seen.add(device)
        try:
            values[device] = parse_number(number, allowed, check)
        except ValueError:
            raise ValueError(f"invalid value {raw!r}; expected {allowed}") from None
    return values


def parse_choice(raw: Any, choices: tuple[str, ...]) -> str:
    """``raw``, lower-cased, when it is one of ``choices``."""
    value = str(raw).strip().lower()
    if value not in choices:
        raise ValueError(f"invalid value {raw!r}; expected one of: {', '.join(choices)}")
    return value


def judging_per_device(
    thresholds: Mapping[str, float],
    noises: Mapping[str, float],
    *,
    host_bound_noises: Mapping[str, float | None] | None = None,
    metric: str = METRICS[0],
    fail_inconclusive: bool = False,
    compile_threshold_pct: float = DEFAULT_COMPILE_THRESHOLD_PCT,
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Judging]:
    """One `Judging` per device type, from per-device thresholds and noises."""
    return {
        device: Judging(
            threshold_pct=thresholds[device],
            run_noise_pct=noises[device],
            host_bound_run_noise_pct=(host_bound_noises or {}).get(device),
            confidence=confidence,
            metric=metric,
            fail_inconclusive=fail_inconclusive,
            compile_threshold_pct=compile_threshold_pct,
            memory_threshold_pct=memory_threshold_pct,
        )
        for device in DEVICES
    }


# -- the option table ------------------------------------------------------------------

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
    f"(default: {per_device_text(DEFAULT_RUN_NOISE_PCT)}, rising to 2 for a host-bound "
    "cuda/xpu case; a value set here holds for every case)"
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

MIN_ROUNDS_HELP = (
    f"fewest samples per case, at most {_DEFAULTS.max_rounds} (default: {_DEFAULTS.min_rounds})"
)

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


@dataclass(frozen=True)
class Option:
    """One option: ``--tweak-NAME`` on the command line, ``tweak_NAME`` in the ini file.

    Attributes:
        name: The name without the ``tweak_`` prefix, underscores for dashes.
        metavar: What the value looks like; ``None``: a flag (a bool ini key).
        help: The help text.
        repeat: The command-line option may be repeated (its values add up).
    """

    name: str
    metavar: str | None
    help: str
    repeat: bool = False

    @property
    def dest(self) -> str:
        return f"tweak_{self.name}"

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")

    def ini_source(self, inipath: Path | None, invocation_dir: Path) -> str:
        """Where an ini value came from, for messages: the key and the file that holds it
        (a suite can have several candidate files: pytest.ini, pyproject.toml, tox.ini)."""
        if inipath is None:
            return f"ini option {self.dest}"
        return f"ini option {self.dest} in {os.path.relpath(inipath, invocation_dir)}"

    @property
    def ini_hint(self) -> str:
        """What an ini value pytest itself refused should look like."""
        if self.metavar is None:
            return "expected true or false (or 1/0, yes/no, on/off)"
        # pytest 9's [tool.pytest] table refuses a TOML number or list for a string key
        return f'pytest reads this key as a string: quote it ({self.dest} = "{self.metavar}")'


OPTIONS: tuple[Option, ...] = (
    Option("device", "DEV", DEVICE_HELP, repeat=True),
    Option("allow_missing_device", None, ALLOW_MISSING_DEVICE_HELP),
    Option("save", None, SAVE_HELP),
    Option("append", None, APPEND_HELP),
    Option("baseline", "PATH", BASELINE_HELP),
    Option("threshold", "PCT", THRESHOLD_HELP),
    Option("run_noise", "PCT", RUN_NOISE_HELP),
    Option("metric", "NAME", METRIC_HELP),
    Option("fail_inconclusive", None, FAIL_INCONCLUSIVE_HELP),
    Option("fast", None, FAST_HELP),
    Option("warmup", "SECONDS", WARMUP_HELP),
    Option("max_time", "SECONDS", MAX_TIME_HELP),
    Option("min_rounds", "N", MIN_ROUNDS_HELP),
    Option("precision", "PCT", PRECISION_HELP),
    Option("eager", "on|off", EAGER_HELP),
    Option("cpu_threads", "N", CPU_THREADS_HELP),
    Option("max_graph_breaks", "N", MAX_GRAPH_BREAKS_HELP),
    Option("max_recompiles", "N", MAX_RECOMPILES_HELP),
    Option("compile_threshold", "PCT", COMPILE_THRESHOLD_HELP),
    Option("memory_threshold", "PCT", MEMORY_THRESHOLD_HELP),
    Option("cold_compile", None, COLD_COMPILE_HELP),
    Option("accuracy", "on|off", ACCURACY_HELP),
    Option("rtol", "X", RTOL_HELP),
    Option("atol", "X", ATOL_HELP),
    Option("logs", "ARTIFACTS", LOGS_HELP),
    Option("fingerprint_policy", "warn|skip|fail", FINGERPRINT_POLICY_HELP),
    Option("progress", "auto|on|off", PROGRESS_HELP),
    Option("json", "PATH", JSON_HELP),
    Option("markdown", "PATH", MARKDOWN_HELP),
    Option("html", "PATH", HTML_HELP),
)


# -- resolution ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TweakOptions:
    """The settings in force, resolved from the command line, the ini file and defaults."""

    devices: tuple[str, ...]
    baseline_path: Path
    save: bool
    judging: Mapping[str, Judging]  # per device type
    append: bool = False
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    checks: CaseChecks = field(default_factory=CaseChecks)
    limits: Limits = field(default_factory=Limits)  # the defaults; a marker overrides them
    logs: tuple[str, ...] = ()  # TORCH_LOGS artifacts captured per case
    #: A baseline recorded in another environment: "warn", "skip" or "fail".
    fingerprint_policy: str = "warn"
    #: Device indices listed per accelerator type (``cuda:0,cuda:1``), taken by xdist workers.
    device_pools: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: Show each case's phase on the terminal while it runs: "auto", "on" or "off".
    progress: str = "auto"
    #: The report files to write (``--tweak-json``, ``--tweak-markdown``, ``--tweak-html``).
    json_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None
    #: Where ``devices`` came from: ``--tweak-device``, its ini twin, or ``default``.
    devices_source: str = "default"
    #: A device asked for by name that torch cannot use skips its cases without failing.
    allow_missing_device: bool = False
    #: The rootdir as seen from the directory pytest was started in (``""`` where they are
    #: one): test ids are relative to the rootdir, the commands the plugin prints to run
    #: from where pytest was started.
    test_root: str = ""
    #: What a printed ``--tweak-save`` command must repeat so that it writes the same file:
    #: ``--tweak-baseline=PATH`` when the file was named on the command line (the ini's
    #: ``tweak_baseline`` applies by itself), else ``""``.
    resave_flags: str = ""


class OptionError(ValueError):
    """A bad option value: the message names where it came from, the value and what is
    allowed (the plugin turns it into a `pytest.UsageError`)."""


@dataclass(frozen=True)
class Raw:
    """The raw option values, by name (``threshold``, not ``tweak_threshold``), each with where
    it came from (``--tweak-threshold``, ``ini option tweak_threshold``); an option not given
    is absent, or ``None``.

    Attributes:
        values: name -> (value, source).
        invocation_dir: Where a path given on the command line is relative to.
        ini_dir: Where a path given in the ini file is relative to.
        rootdir: Where the default baseline file lives.
        measuring: ``False`` under pytest-benchmark's ``--benchmark-disable``: nothing is
            timed, so nothing can be saved.
    """

    values: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    invocation_dir: Path = field(default_factory=Path.cwd)
    ini_dir: Path = field(default_factory=Path.cwd)
    rootdir: Path = field(default_factory=Path.cwd)
    measuring: bool = True

    def get(self, name: str) -> tuple[Any, str]:
        """The value of option ``name`` and its source; ``(None, "default")`` when not given.
        An empty value on the command line (``--tweak-max-graph-breaks=``, a CI variable that
        was not set) is an `OptionError`: taken as "not given", it would turn a gate off."""
        value, source = self.values.get(name, (None, "default"))
        if isinstance(value, str) and not value.strip() and source.startswith("--"):
            raise OptionError(
                f"{source}: empty value; give one, or leave the option out for its default"
            )
        if value is None or value == "" or value == [] or value is False:
            return None, "default"
        return value, source

    def given(self, name: str) -> bool:
        """Whether option ``name`` was set (a flag: turned on)."""
        return self.get(name)[0] is not None

    def path(self, name: str) -> tuple[Path | None, str]:
        """A path option: relative to the invocation folder on the command line, to the ini
        file's folder in the ini file."""
        raw, source = self.get(name)
        if raw is None or not str(raw).strip():
            return None, source
        if str(raw).endswith(("/", os.sep)):  # normpath would drop it, and write a file
            raise OptionError(
                f"{source}: {raw} ends with a slash, which names a folder; name a file in it"
            )
        base = self.invocation_dir if source.startswith("--") else self.ini_dir
        # "~/x" is the home folder's x, not a folder named "~" (an ini file, or --opt=~/x,
        # which the shell leaves as it is)
        # "ci/../perf/b.json" names perf/b.json: messages show it so
        return Path(os.path.normpath(base / Path(str(raw)).expanduser())), source

    def number(
        self, name: str, default: float, allowed: str, check: Callable[[float], bool]
    ) -> float:
        """Option ``name`` as a finite number passing ``check`` (``allowed`` says which, in
        the error), or ``default`` when not given."""
        raw, source = self.get(name)
        if raw is None:
            return default
        try:
            return parse_number(str(raw), allowed, check)
        except ValueError:
            raise OptionError(f"{source}: invalid value {raw!r}; expected {allowed}") from None

    def optional_number(
        self, name: str, allowed: str, check: Callable[[float], bool]
    ) -> float | None:
        """`number`, or ``None`` when not given."""
        return None if not self.given(name) else self.number(name, 0.0, allowed, check)

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        """Option ``name``, lower-cased, when it is one of ``choices``; ``default`` when not
        given."""
        raw, source = self.get(name)
        if raw is None:
            return default
        try:
            return parse_choice(raw, choices)
        except ValueError as exc:
            raise OptionError(f"{source}: {exc}") from None

    def per_device(
        self, name: str, defaults: Mapping[str, float], allowed: str, check: Callable[[float], bool]
    ) -> dict[str, float]:
        """One number for every device, or ``DEVICE=NUMBER`` pairs over the defaults."""
        raw, source = self.get(name)
        if raw is None:
            return dict(defaults)
        try:
            return parse_per_device(raw, defaults, allowed, check)
        except ValueError as exc:
            raise OptionError(f"{source}: {exc}") from None


def resolve_judging(raw: Raw) -> dict[str, Judging]:
    """One `Judging` per device type from ``threshold``, ``run_noise``, ``metric``,
    ``fail_inconclusive``, ``compile_threshold``, ``memory_threshold`` and ``confidence``."""
    return judging_per_device(
        raw.per_device("threshold", DEFAULT_THRESHOLD_PCT, "a percentage > 0", lambda v: v > 0),
        raw.per_device("run_noise", DEFAULT_RUN_NOISE_PCT, "a percentage >= 0", lambda v: v >= 0),
        # a run noise the user set holds for every case, host-bound or not
        host_bound_noises=None if raw.given("run_noise") else DEFAULT_HOST_BOUND_RUN_NOISE_PCT,
        metric=raw.choice("metric", METRICS, METRICS[0]),
        fail_inconclusive=raw.given("fail_inconclusive"),
        compile_threshold_pct=raw.number(
            "compile_threshold", DEFAULT_COMPILE_THRESHOLD_PCT, "a percentage > 0", lambda v: v > 0
        ),
        memory_threshold_pct=raw.number(
            "memory_threshold", DEFAULT_MEMORY_THRESHOLD_PCT, "a percentage > 0", lambda v: v > 0
        ),
        confidence=raw.number(
            "confidence", DEFAULT_CONFIDENCE, "a number between 0.5 and 1", lambda v: 0.5 < v < 1
        ),
    )


def resolve_options(raw: Raw) -> TweakOptions:
    """The settings in force; `OptionError` for the first bad value."""
    devices, pools = _devices(raw)
    baseline, baseline_source = raw.path("baseline")
    save = raw.given("save")
    if save and not raw.measuring:
        raise OptionError(
            "--tweak-save records what the run measures, but --benchmark-disable turns "
            "measuring off, so nothing would be saved: drop --benchmark-disable (or add "
            "--benchmark-enable) to record baselines"
        )
    if baseline is None:
        baseline = raw.rootdir / DEFAULT_BASELINE
    judging = resolve_judging(raw)
    metric = raw.choice("metric", METRICS, METRICS[0])
    preset = MeasureSettings.fast() if raw.given("fast") else _DEFAULTS
    integer = "an integer >= 0"
    settings = MeasureSettings(
        warmup_s=raw.number("warmup", preset.warmup_s, "seconds >= 0", lambda v: v >= 0),
        max_time_s=raw.number("max_time", preset.max_time_s, "seconds >= 0", lambda v: v >= 0),
        min_rounds=int(
            raw.number(
                "min_rounds",
                preset.min_rounds,
                f"an integer from 1 to {preset.max_rounds} (the most samples a case takes)",
                lambda v: 1 <= v <= preset.max_rounds and v == int(v),
            )
        ),
        precision_pct=raw.number(
            "precision", preset.precision_pct, "a percentage >= 0", lambda v: v >= 0
        ),
        cpu_threads=int(raw.number("cpu_threads", preset.cpu_threads or 0, integer, _whole))
        or None,
        eager=raw.choice("eager", ("on", "off"), "on" if preset.eager else "off") == "on",
        reference=metric == "normalized",
        stable_pct=preset.stable_pct,
    )
    if save:
        _check_baseline_writable(baseline, baseline_source)
    checks = CaseChecks(
        accuracy=raw.choice("accuracy", ("on", "off"), "on") == "on",
        rtol=raw.optional_number("rtol", "a number >= 0", lambda v: v >= 0),
        atol=raw.optional_number("atol", "a number >= 0", lambda v: v >= 0),
        cold=raw.given("cold_compile"),
    )
    limits: dict[str, Any] = {}
    for key in LIMIT_KEYS[:2]:
        name = f"max_{key}"
        if raw.given(name):
            limits[key] = int(raw.number(name, 0, integer, _whole))
            limits[f"{key}_source"] = raw.get(name)[1]
    return TweakOptions(
        devices=devices,
        device_pools=pools,
        baseline_path=baseline,
        save=save,
        append=raw.given("append"),
        devices_source=raw.get("device")[1],
        allow_missing_device=raw.given("allow_missing_device"),
        judging=judging,
        settings=settings,
        checks=checks,
        limits=Limits(**limits),
        logs=_log_artifacts(raw),
        fingerprint_policy=raw.choice("fingerprint_policy", FINGERPRINT_POLICIES, "warn"),
        progress=raw.choice("progress", PROGRESS_MODES, "auto"),
        test_root=_test_root(raw.rootdir, raw.invocation_dir),
        resave_flags=(
            f"--tweak-baseline={shlex.quote(_from(raw.invocation_dir, baseline))}"
            if baseline_source.startswith("--")
            else ""
        ),
        **_report_paths(raw),
    )


def _test_root(rootdir: Path, invocation_dir: Path) -> str:
    """``rootdir`` relative to ``invocation_dir``, ``""`` where they are one (see
    `TweakOptions.test_root`); absolute where no relative path leads there."""
    if rootdir.resolve() == invocation_dir.resolve():
        return ""
    return _from(invocation_dir, rootdir)


def _from(invocation_dir: Path, path: Path) -> str:
    """``path`` as a command run in ``invocation_dir`` names it: relative, or absolute
    where no relative path leads there."""
    try:
        return os.path.relpath(path, invocation_dir)
    except ValueError:  # another drive, on Windows
        return str(path)


def _whole(value: float) -> bool:
    return value >= 0 and value == int(value)


def _devices(raw: Raw) -> tuple[tuple[str, ...], dict[str, tuple[int, ...]]]:
    """The device types asked for, in order, and the indices listed per type."""
    value, source = raw.get("device")
    items = value if isinstance(value, (list, tuple)) else [value or "cpu"]
    devices: list[str] = []
    pools: dict[str, list[int]] = {}
    for item in items:
        for text in str(item).split(","):
            try:
                name, index = parse_device(text)
            except ValueError as exc:
                raise OptionError(f"{source}: {exc}") from None
            if name not in devices:
                devices.append(name)
            if index is not None and index not in pools.setdefault(name, []):
                pools[name].append(index)
    return tuple(devices), {name: tuple(indices) for name, indices in pools.items()}


def _report_paths(raw: Raw) -> dict[str, Path | None]:
    """The report files asked for, each checked now: a folder, or a place that cannot be
    written, stops the run before any case runs."""
    paths: dict[str, Path | None] = {}
    for name, what, example in _REPORTS:
        path, source = raw.path(name)
        if path is not None:
            problem = _unwritable(path, example)
            if problem is not None:
                raise OptionError(f"{source}: cannot write the {what} to {path}: {problem}")
        paths[f"{name}_path"] = path
    return paths


def _check_baseline_writable(path: Path, source: str) -> None:
    """With --tweak-save, fail now, not after the whole run, if the file cannot be written."""
    where = "the default" if source == "default" else source
    problem = _unwritable(path, DEFAULT_BASELINE)
    if problem is None:
        return
    if path.is_dir():
        raise OptionError(f"{where}: baseline file {path} {problem.removeprefix('it ')}")
    raise OptionError(f"{where}: --tweak-save cannot write baseline file {path}: {problem}")


def _unwritable(path: Path, example: str) -> str | None:
    """Why ``path`` cannot be written as a file (missing folders are created), or ``None``."""
    if path.is_dir():
        return f"it is a folder; name a file, e.g. {path / example}"
    read_only = read_only_reason(path)
    if read_only is not None:
        return read_only
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the write creates the missing folders below this one
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not a writable folder"
    return None


def step_summary_problem(value: str, markdown_path: Path | None = None) -> str | None:
    """Why ``$GITHUB_STEP_SUMMARY`` (``value``; empty when unset) cannot take the markdown
    report, or ``None``: checked when a run selects a case, not after its last one. None too
    when ``--tweak-markdown`` (``markdown_path``) names that file: the report is written there,
    its folders created, and not appended."""
    if not value or (markdown_path is not None and same_file(markdown_path, value)):
        return None
    path = Path(value)
    problem = _unwritable(path, "summary.md")
    if problem is None and not path.parent.is_dir():
        problem = f"its folder {path.parent} does not exist"
    if problem is None:
        return None
    return (
        f"$GITHUB_STEP_SUMMARY={value}: the markdown report cannot be appended there: "
        f"{problem}; point it at a writable file, or unset it"
    )


def _log_artifacts(raw: Raw) -> tuple[str, ...]:
    value, source = raw.get("logs")
    if value is None:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in str(value).split(",") if n.strip()))
    if not names:
        return ()
    # the user asked for torch's logs: importing torch here is what they pay for
    from .counters import known_log_artifacts

    known = known_log_artifacts()
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise OptionError(
                f"{source}: unknown TORCH_LOGS artifact {name!r}{hint} "
                f"(torch knows: {', '.join(known)})"
            )
    return names


def benchmarks_disabled(config: pytest.Config) -> bool:
    """Benchmarks turned off on purpose (pytest-benchmark's ``--benchmark-disable``, not
    overridden by ``--benchmark-enable``), not by pytest-benchmark itself because xdist is
    active: pytest-tweak then runs each case once, untimed, and can save nothing."""
    return bool(config.getoption("benchmark_disable", False)) and not config.getoption(
        "benchmark_enable", False
    )


def option_warnings(raw: Raw) -> list[str]:
    """Warnings for options that run, but not as a person likely meant them to."""
    warnings = []
    if raw.given("save") and raw.given("fast"):
        warnings.append(
            "pytest-tweak: --tweak-save with --tweak-fast records a quick look as the baseline: "
            "short sampling (0.3 s, precision 3%) and no eager companion, so the entries carry "
            "no speed-up over eager and later runs are judged against a noisier baseline. "
            "Drop --tweak-fast (or tweak_fast in the ini file) to record a baseline."
        )
    # an ini tweak_append = true is a team's way of saving; on the command line, a slip
    if raw.get("append")[1].startswith("--") and not raw.given("save"):
        warnings.append(
            "pytest-tweak: --tweak-append without --tweak-save does nothing: this run judges "
            "against the baseline and writes nothing; add --tweak-save to add a run to it."
        )
    return warnings


def unknown_tweak_key(key: str) -> bool:
    """Whether ``key`` is a ``tweak_*`` ini key that is no option's ini twin."""
    return key.startswith("tweak_") and key not in {option.dest for option in OPTIONS}


def unknown_ini_keys(keys: Iterable[str]) -> list[str]:
    """A warning for each ``tweak_*`` key in ``keys`` (the ini file's) that is no option's
    ini twin, naming the key it resembles: such a key is not applied, and pytest's own
    warning names the key alone."""
    known = [option.dest for option in OPTIONS]
    warnings = []
    for key in sorted(keys):
        if unknown_tweak_key(key):
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            warnings.append(
                f"pytest-tweak: unknown ini key {key}: {hint}It is not applied "
                "(`pytest --help` lists the tweak_* keys)."
            )
    return warnings
