"""The pytest11 entry point: wiring only. Each hook gathers what pytest knows and hands it to
the plain module that does the work: `options` (the option table and its resolution),
`collect` (a test's cases), `fixture` (running one), `runstate` (the run's state), `results`
(a finished case's plain form), `terminal` and `reports` (what is printed and written),
`xdist` (what crosses from a worker). It also holds pytest-tweak's default implementations of
its own hooks (`hookspec`).

torch is not imported here at module level: a suite that never uses ``tweak`` pays nothing.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from . import hookspec
from .baselines import BaselineEntry, BaselineError, RunRecord
from .citizen import (
    DeviceMarkers,
    benchmark_missing,
    ini_keys,
    is_own_tweak,
    register_tweak_markers,
)
from .collect import (
    TweakCase,
    case_of,
    keep_own_device_marks,
    limits_for,
    parametrize,
    selects_tweak,
)
from .fingerprint import as_stored, differences, render_fingerprint
from .hookspec import fingerprint_problem, implementers
from .options import (
    OPTIONS,
    OptionError,
    Raw,
    benchmarks_disabled,
    option_warnings,
    resolve_options,
    unknown_ini_keys,
    unknown_tweak_key,
)
from .registry import BackendRegistry, BackendSpec, RegistryError
from .reports import write_reports
from .results import REPORT_ATTRIBUTE, CaseResult, junit_properties, suite_tuning
from .runstate import RunState
from .terminal import (
    ProgressLine,
    baseline_file_lines,
    environment_line,
    lock_line,
    options_listing,
    progress_wanted,
    settings_line,
    summary_lines,
    tuning_lines,
)
from .verdict import Judging, Verdict
from .xdist import WORKER_OUTPUT_KEY, ControllerHooks, worker_output

if TYPE_CHECKING:
    from .case import BenchmarkResult
    from .fixture import TweakFixture

_STATE_KEY = pytest.StashKey[RunState]()
_PROGRESS_KEY = pytest.StashKey["ProgressLine | None"]()
#: Set once the settings line is in the report header.
_HEADER_KEY = pytest.StashKey[bool]()
#: Whether the run sets any pytest-tweak option (then the header shows the settings).
_GIVEN_KEY = pytest.StashKey[bool]()
#: The session's device markers, registered once it uses ``tweak``.
_MARKERS_KEY = pytest.StashKey[DeviceMarkers]()


class TweakWarning(pytest.PytestWarning):
    """A problem pytest-tweak reports without stopping the run."""


# -- options and configuration ------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tweak", "pytest-tweak: speed of torch.compile'd models")
    for option in OPTIONS:
        # the ini twin points at its flag: the full text twice would add ~200 lines to the
        # --help of every suite in the environment
        ini_help = f"{option.flag} as an ini key (see its help)"
        if option.metavar is None:
            group.addoption(
                option.flag, action="store_true", dest=option.dest, default=None, help=option.help
            )
            parser.addini(option.dest, ini_help, type="bool", default=False)
            continue
        group.addoption(
            option.flag,
            action="append" if option.repeat else "store",
            dest=option.dest,
            metavar=option.metavar,
            default=None,
            help=option.help,
        )
        parser.addini(option.dest, ini_help, type="string", default="")
    # an action like --markers, not a setting: no ini twin
    group.addoption(
        "--tweak-list-options",
        action="store_true",
        dest="tweak_list_options",
        default=False,
        help="print the inductor modes and options this torch knows, and exit",
    )


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("tweak_list_options"):
        return None
    import torch._inductor

    from .backend_configs import option_type, public_options

    options = {name: getattr(option_type(name), "__name__", "") for name in public_options()}
    print(options_listing(torch._inductor.list_mode_options(), options))
    return 0


def _raw(config: pytest.Config) -> Raw:
    """Every option's raw value and where it came from: the command line, then the ini file."""
    values: dict[str, tuple[Any, str]] = {}
    for option in OPTIONS:
        value = config.getoption(option.dest)
        if value is not None:
            values[option.name] = (value, option.flag)
            continue
        source = option.ini_source(config.inipath, config.invocation_params.dir)
        try:
            ini = config.getini(option.dest)
        except (ValueError, pytest.UsageError) as exc:  # not a truth value; a TOML number
            raise pytest.UsageError(f"{source}: {exc}; {option.ini_hint}") from exc
        values[option.name] = (ini, source)
    return Raw(
        values,
        invocation_dir=config.invocation_params.dir,
        ini_dir=config.inipath.parent if config.inipath else config.rootpath,
        rootdir=config.rootpath,
        measuring=not benchmarks_disabled(config),
    )


def pytest_configure(config: pytest.Config) -> None:
    markers = config.stash[_MARKERS_KEY] = DeviceMarkers(config)
    if config.option.markers:  # `pytest --markers` documents them; a session registers them
        markers.register()  # when it collects a file that uses tweak
    register_tweak_markers(config)
    raw = _raw(config)
    for warning in unknown_ini_keys(ini_keys(config, unknown_tweak_key)) + option_warnings(raw):
        config.issue_config_time_warning(TweakWarning(warning), stacklevel=2)
    try:
        options = resolve_options(raw)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_GIVEN_KEY] = any(raw.given(option.name) for option in OPTIONS)
    state = RunState(options)
    config.stash[_STATE_KEY] = state
    config.pluginmanager.register(_RunHooks(state), "tweak-run")
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ControllerHooks(state), "tweak-xdist-controller")


def pytest_report_header(config: pytest.Config) -> str | None:
    """The settings in force, when the run selects pytest-tweak options (else the line comes
    after collection, and only when a collected test uses ``tweak``)."""
    if not config.stash[_GIVEN_KEY]:
        return None
    config.stash[_HEADER_KEY] = True
    return settings_line(config.stash[_STATE_KEY].options, config.rootpath)


def pytest_report_collectionfinish(
    config: pytest.Config, items: Sequence[pytest.Item]
) -> list[str]:
    if _HEADER_KEY in config.stash or not any(case_of(item) for item in items):
        return []
    return [settings_line(config.stash[_STATE_KEY].options, config.rootpath)]


# -- pytest-tweak's hooks: default implementations ----------------------------------------


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
    changed = differences(baseline.fingerprint, item.config.stash[_STATE_KEY].fingerprint)
    if not changed:
        return verdict
    note = "the baseline was recorded in another environment: " + "; ".join(changed)
    return replace(verdict, notes=(*verdict.notes, note))


def _registry(node: pytest.Item) -> BackendRegistry:
    """The backends ``node`` sees: every ``pytest_tweak_add_backends`` implementation of the
    run's plugins and of the ``conftest.py`` files that apply to it (a conftest's hooks are
    scoped to its folder, and load as collection reaches it), built once per such set.

    A bad contribution is a `RegistryError` naming the implementing plugins; it is kept and
    raised again for every later test of that set, so each test using ``tweak`` reports it.
    """
    registries = node.config.stash[_STATE_KEY].registries
    hook = node.ihook.pytest_tweak_add_backends
    key = tuple(impl.plugin_name for impl in hook.get_hookimpls())
    if key not in registries:
        try:
            registries[key] = BackendRegistry.from_contributions(hook(config=node.config))
        except RegistryError as exc:
            registries[key] = RegistryError(
                f"pytest_tweak_add_backends: {exc} (implemented by: {implementers(hook)})"
            )
    found = registries[key]
    if isinstance(found, RegistryError):
        raise found
    return found


# -- collection ---------------------------------------------------------------------------


def pytest_collectstart(collector: pytest.Collector) -> None:
    markers = collector.config.stash.get(_MARKERS_KEY, None)
    if markers is not None and isinstance(collector, pytest.Module):
        markers.module_collected(collector)  # registered before a module using tweak imports


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not is_own_tweak(metafunc):  # the suite's own `tweak`, or none
        return
    problem, registry = benchmark_missing(metafunc.config), None
    try:
        registry = None if problem else _registry(metafunc.definition)
    except RegistryError as exc:
        problem = str(exc)  # failed outside the handler: no "During handling of ..." chain
    if registry is None:
        pytest.fail(f"pytest-tweak: {problem}", pytrace=False)
    metafunc.config.stash[_MARKERS_KEY].register()  # tweak reached through a plugin's fixture
    parametrize(metafunc, registry, metafunc.config.stash[_STATE_KEY].options)


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a collected test uses ``tweak``: read the baseline file, and take the environment
    fingerprint."""
    cases = [case_of(item) for item in session.items]
    if not any(selects_tweak(item) for item in session.items):
        return
    from .fingerprint import base_fingerprint

    config = session.config
    state = config.stash[_STATE_KEY]
    problem = None
    if not config.option.collectonly:  # read now, so a broken file stops the run before a case
        try:
            state.load()
        except BaselineError as exc:
            problem = f"{exc}. Fix or remove the file (it is left as it is)."
        state.note_missing_devices(cases)
        problem = problem or state.summary_problem(cases, os.getenv("GITHUB_STEP_SUMMARY", ""))
    fingerprint = base_fingerprint(state.options.devices, state.options.settings.cpu_threads)
    hook = config.hook.pytest_tweak_fingerprint
    problem = problem or fingerprint_problem(hook, config, fingerprint)
    if problem is not None:
        state.usage_error = f"pytest-tweak: {problem}"  # a worker sends it to the controller
        raise pytest.UsageError(state.usage_error)
    state.fingerprint = as_stored(fingerprint)


# -- the fixture --------------------------------------------------------------------------


@pytest.fixture
def tweak(request: pytest.FixtureRequest, benchmark: Any) -> Iterator[TweakFixture]:
    """One (device, backend, config) case: ``tweak.benchmark(model, *args)`` compiles, warms
    up, times and counts; ``tweak.device``, ``tweak.config``, ``tweak.backend``,
    ``tweak.compile(model)``. It times through pytest-benchmark's ``benchmark``, so that
    ``--benchmark-only`` and ``--benchmark-skip`` count its cases as benchmarks."""
    from .backends import Backend
    from .devices import device_count, worker_device
    from .fixture import TweakFixture

    case = getattr(request, "param", None)
    if not isinstance(case, TweakCase):
        pytest.fail(
            "the tweak fixture is parametrized by pytest-tweak: request it as an argument of "
            "the test function (not through request.getfixturevalue or another fixture), and "
            "do not parametrize it yourself",
            pytrace=False,
        )
    spec = _registry(request.node).spec(case.backend)
    backend = spec.factory(case.config)
    if not isinstance(backend, Backend):
        pytest.fail(
            f"pytest-tweak: the factory of backend {case.backend!r} ({spec.factory!r}) returned "
            f"{backend!r}, which has no `name` and `compile(model, device)`",
            pytrace=False,
        )
    state = request.config.stash[_STATE_KEY]
    device = worker_device(
        case.device,
        pool=state.options.device_pools.get(case.device, ()),
        worker=os.environ.get("PYTEST_XDIST_WORKER"),
        count=device_count(case.device),
    )
    progress = _progress_line(request.config)
    fixture = TweakFixture(
        request,
        state,
        device,
        case.config,
        backend,
        case.backend,
        limits_for(request.node, case, state.options.limits),
        status=None if progress is None else progress.show,
    )
    yield fixture
    fixture._teardown(benchmark)


def _progress_line(config: pytest.Config) -> ProgressLine | None:
    """The run's progress line; None when --tweak-progress (or auto) says no."""
    if _PROGRESS_KEY not in config.stash:
        wanted = progress_wanted(config, config.stash[_STATE_KEY].options.progress)
        config.stash[_PROGRESS_KEY] = ProgressLine(config) if wanted else None
    return config.stash[_PROGRESS_KEY]


# -- reports, the baseline file and the summary -------------------------------------------


class _RunHooks:
    """Hooks that need the run's `RunState`; registered once per run as ``tweak-run``."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.save_error: str | None = None
        #: What writing the report files did: (ok, message) per file.
        self.report_lines: list[tuple[bool, str]] = []
        #: Ctrl-C, or ``pytest.exit()`` (whatever its ``returncode``), cut the run short.
        self.interrupted = False

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # a stop asked for (--sw) arrives here too, as Session.Interrupted: it ends whole tests
        if not isinstance(excinfo.value, pytest.Session.Interrupted):
            self.interrupted = True

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        self.state.collected.note_item(item)
        keep_own_device_marks(item)  # before -m and -k read them

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Where the case ran: put its plain form on the call report (pytest serializes a
        report's attributes for pytest-xdist), and its figures into the test's properties
        (``--junitxml`` writes them)."""
        report: pytest.TestReport = yield
        finished = self.state.finished.get(item.nodeid)
        if report.when == "call" and finished is not None:
            case = replace(finished, outcome=report.outcome)
            setattr(report, REPORT_ATTRIBUTE, case.to_dict())
            properties = junit_properties(case)
            item.user_properties.extend(properties)  # the teardown report's, for junitxml
            report.user_properties.extend(properties)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and report.failed:  # an error after the call passed
            self.state.test_failed_after_call(report.nodeid)
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if not isinstance(data, dict):
            return
        try:
            self.state.cases[report.nodeid] = CaseResult.from_dict(data)
        except ValueError as exc:
            self.report_lines.append((False, f"case {report.nodeid} left out of reports: {exc}"))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # the hook's argument, not session.exitstatus: Pytester.getnode() calls this hook on
        # a session that never ran, and never set it
        state = self.state
        state.instruments.release()
        config = session.config
        worker_out = getattr(config, "workeroutput", None)
        if worker_out is not None:  # a pytest-xdist worker: the controller saves and reports
            worker = str(getattr(config, "workerinput", {}).get("workerid", "?"))
            worker_out[WORKER_OUTPUT_KEY] = worker_output(state, worker, config.rootpath)
            return
        cases = state.ordered_cases()
        env = state.fingerprint or (cases[0].environment if cases else {})
        # a stop asked for (--sw, xdist's -x) ends whole tests; Ctrl-C or pytest.exit() cuts
        # one short
        interrupted = self.interrupted or (
            exitstatus == pytest.ExitCode.INTERRUPTED and not session.shouldstop
        )
        if state.reports_due(collect_only=config.option.collectonly, interrupted=interrupted):
            self.report_lines += write_reports(cases, env, state.options, keys=state.baselines)
        missing = state.missing_device_failure()
        if missing is not None:
            self.report_lines.append((False, missing))
        if exitstatus == pytest.ExitCode.OK and not all(ok for ok, _ in self.report_lines):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if not state.options.save or config.option.collectonly:
            return
        try:
            state.save(interrupted=interrupted)
        except BaselineError as exc:
            self.save_error = str(exc)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if hasattr(terminalreporter.config, "workerinput"):
            return
        cases = state.ordered_cases()
        lines = summary_lines(cases)
        if lines:
            terminalreporter.write_sep("-", "tweak summary")
            for line in lines:
                terminalreporter.write_line(line)
            terminalreporter.write_line(f"fingerprint: {render_fingerprint(state.fingerprint)}")
        locks = lock_line(state.lock_uses, state.workers)
        if locks:
            terminalreporter.write_line(locks)
        tuning = tuning_lines(suite_tuning(cases))
        if tuning:
            terminalreporter.write_sep("-", "tweak tuning")
            for line in tuning:
                terminalreporter.write_line(line)
        for ok, line in self.report_lines:
            terminalreporter.write_line(
                f"pytest-tweak: {'' if ok else 'ERROR: '}{line}", red=not ok
            )
        if state.environment_changed:
            terminalreporter.write_line(
                environment_line(state.environment_changed, state.options.fingerprint_policy),
                yellow=True,
            )
        gone = state.gone_entries(terminalreporter.config.rootpath)
        for line, colour in baseline_file_lines(
            state.options, state.skipped, state.saved, self.save_error, cases, gone, state.baselines
        ):
            terminalreporter.write_line(line, **({colour: True} if colour else {}))
