"""How pytest-tweak shares a pytest session with suites that never use it.

A plugin is loaded into every suite of its environment, so its names must not capture suites
that have their own: the ``tweak`` name is pytest-tweak's only where the ``tweak`` fixture a
test sees is pytest-tweak's, and the generic device markers (``cpu``, ``cuda``, ``xpu``) are
registered only in sessions that use pytest-tweak and only when the suite has not registered
them itself.

pytest has no public API for "which fixture of this name does this node see"; the two private
reads it takes (`Metafunc._arg2fixturedefs`, `FixtureManager.getfixturedefs`) are here, and
nowhere else, with a test (``tests/test_coexistence.py``) that fails when pytest changes them.
Nor, since pytest 9 deprecated ``Config.inicfg``, for "which keys does the ini file set"
(`ini_keys`, tested by ``tests/test_bad_input.py``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "DEVICE_MARKERS",
    "DeviceMarkers",
    "benchmark_missing",
    "conftest_uses_tweak",
    "is_own_tweak",
    "register_device_markers",
    "register_tweak_markers",
    "registered_markers",
    "sees_own_tweak",
    "uses_tweak",
]

#: The device markers of the SPEC: ``@pytest.mark.cpu`` etc. say which devices a test supports.
DEVICE_MARKERS = ("cpu", "cuda", "xpu")


def _is_ours(fixturedef: Any) -> bool:
    func = getattr(fixturedef, "func", None)
    return (
        getattr(func, "__module__", None) == "pytest_tweak.plugin"
        and getattr(func, "__name__", None) == "tweak"
    )


def is_own_tweak(metafunc: pytest.Metafunc) -> bool:
    """Whether the ``tweak`` the test requests is pytest-tweak's fixture: not the suite's own
    ``tweak`` fixture, and not a ``@pytest.mark.parametrize("tweak", ...)`` argument."""
    if "tweak" not in metafunc.fixturenames:
        return False
    # the closest definition wins; a directly parametrized name has none (or pytest's own)
    fixturedefs = metafunc._arg2fixturedefs.get("tweak") or ()
    return bool(fixturedefs) and _is_ours(fixturedefs[-1])


def sees_own_tweak(node: pytest.Collector) -> bool:
    """Whether the ``tweak`` fixture visible at ``node`` is pytest-tweak's (and not one the
    suite defines in a conftest or plugin)."""
    manager: Any = node.session._fixturemanager
    try:
        fixturedefs = manager.getfixturedefs("tweak", node)
    except (TypeError, AttributeError):  # pytest 8.0 takes the node id
        fixturedefs = manager.getfixturedefs("tweak", node.nodeid)
    return bool(fixturedefs) and _is_ours(fixturedefs[-1])


def _test_prefix(name: str) -> bool:
    """pytest's default ``python_functions``: ``test`` as a prefix."""
    return name.startswith("test")


def uses_tweak(path: Path, is_test: Callable[[str], bool] = _test_prefix) -> bool:
    """Whether the Python file at ``path`` may use pytest-tweak: a test (a function whose
    name ``is_test`` accepts: pytest's own ``funcnamefilter`` of the module) or a fixture
    (one handing ``tweak`` on) takes a ``tweak`` argument it does not parametrize itself, a
    call names it (``usefixtures("tweak")``, ``getfixturevalue("tweak")``), or it imports
    ``pytest_tweak``; and it defines no ``tweak`` fixture of its own. Read and parsed, never
    imported: a word in a comment or docstring, a helper's ``tweak=1.0`` argument or another
    function named ``tweak`` is not a use. A file that cannot be read or parsed is left to
    pytest to report."""
    try:
        source = path.read_bytes()
        if _WORD.search(source) is None:  # most files of most suites: no parse
            return False
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if any(_defines_tweak(node) for node in tree.body):
        return False
    return any(_is_use(node, is_test) for node in ast.walk(tree))


#: Where the file has neither word, it cannot use pytest-tweak.
_WORD = re.compile(rb"\btweak\b|\bpytest_tweak\b")


def _is_use(node: ast.AST, is_test: Callable[[str], bool]) -> bool:
    if isinstance(node, ast.Import):
        return any(_is_package(alias.name) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and _is_package(node.module or "")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if not is_test(node.name) and not any(map(_is_fixture, node.decorator_list)):
            return False  # a helper's argument of that name is no fixture request
        args = node.args
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        return "tweak" in names and not any(_parametrizes_tweak(d) for d in node.decorator_list)
    if isinstance(node, ast.Call) and _called(node) in ("usefixtures", "getfixturevalue"):
        return any(isinstance(a, ast.Constant) and a.value == "tweak" for a in node.args)
    return False


def _is_fixture(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture(...)``, ``@fixture`` (and other packages'
    ``fixture``, pytest-asyncio's say)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _name(target) == "fixture"


def _defines_tweak(node: ast.stmt) -> bool:
    """A module-level fixture named ``tweak`` (or ``@pytest.fixture(name="tweak")``): the
    module's tests get that one, not pytest-tweak's."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        if not _is_fixture(decorator):
            continue
        named = [
            k.value.value
            for k in getattr(decorator, "keywords", ())
            if k.arg == "name" and isinstance(k.value, ast.Constant)
        ]
        if (named[0] if named else node.name) == "tweak":
            return True
    return False


def _is_package(module: str) -> bool:
    return module == "pytest_tweak" or module.startswith("pytest_tweak.")


def _called(call: ast.Call) -> str | None:
    return _name(call.func)


def _name(expr: ast.expr) -> str | None:
    """``fixture`` of ``pytest.fixture`` or of ``fixture``."""
    return expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", None)


def _parametrizes_tweak(decorator: ast.AST) -> bool:
    """``@pytest.mark.parametrize("tweak", ...)`` (or with ``tweak`` among its names): the
    test's ``tweak`` is its own values, as without pytest-tweak."""
    if not isinstance(decorator, ast.Call) or _called(decorator) != "parametrize":
        return False
    given = [k.value for k in decorator.keywords if k.arg == "argnames"]
    first = decorator.args[0] if decorator.args else (given[0] if given else None)
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        names = [name.strip() for name in first.value.split(",")]
    elif isinstance(first, (ast.List, ast.Tuple)):
        names = [str(e.value) for e in first.elts if isinstance(e, ast.Constant)]
    else:
        return False
    return "tweak" in names


def conftest_uses_tweak(
    module: Path,
    root: Path,
    seen: dict[Path, bool],
    is_test: Callable[[str], bool] = _test_prefix,
) -> bool:
    """Whether a ``conftest.py`` that applies to the test ``module`` (in its folder or one
    above, up to ``root``) uses ``tweak`` (`uses_tweak`): a suite that hands tests the
    ``tweak`` fixture through its own fixture. ``seen`` caches the answer per ``conftest.py``."""
    folder = module.parent
    while True:
        conftest = folder / "conftest.py"
        if conftest not in seen:
            seen[conftest] = conftest.is_file() and uses_tweak(conftest, is_test)
        if seen[conftest]:
            return True
        if folder == root or folder.parent == folder or root not in folder.parents:
            return False
        folder = folder.parent


def benchmark_missing(config: pytest.Config) -> str | None:
    """pytest-tweak times its cases through pytest-benchmark's ``benchmark`` fixture: why
    that plugin is not loaded in this run, or ``None``."""
    names = {getattr(plugin, "__name__", None) for plugin in config.pluginmanager.get_plugins()}
    if "pytest_benchmark.plugin" in names:
        return None
    return (
        "`tweak` times its cases through pytest-benchmark, which is not loaded in this run "
        "(`-p no:benchmark`, or PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 without `-p benchmark`): "
        "drop `-p no:benchmark`, or add `-p pytest_benchmark.plugin`"
    )


def registered_markers(config: pytest.Config) -> set[str]:
    """The names of the markers registered so far (ini ``markers`` lines and plugins')."""
    lines: list[str] = config.getini("markers")
    return {line.split(":")[0].split("(")[0].strip() for line in lines}


#: pytest-tweak's own markers, registered in every session (``--strict-markers`` knows them).
_TWEAK_MARKERS = (
    "tweak_configs(*configs): run the test's `tweak` cases once per config given: "
    "TorchInductorBackendConfig, or the config of another registered backend "
    "(AotEagerBackendConfig, TorchAOBackendConfig, OpenVINOBackendConfig, ...); without "
    "it, one case with TorchInductorBackendConfig() (pytest-tweak)",
    "tweak_backends(*names): run the test's `tweak` cases once per backend named "
    "(inductor, eager, aot_eager, torchao, openvino, or one a plugin registers), each with "
    "its configs from tweak_configs or else its default config (pytest-tweak)",
    "tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None): fail the "
    "test's `tweak` cases when they have more graph breaks, recompiles or graphs inductor "
    "ran without CUDA graphs than this, baseline or not; None: no limit; overrides "
    "--tweak-max-graph-breaks and --tweak-max-recompiles (pytest-tweak)",
)


def register_tweak_markers(config: pytest.Config) -> None:
    """Register ``tweak_configs``, ``tweak_backends`` and ``tweak_limits``."""
    for line in _TWEAK_MARKERS:
        config.addinivalue_line("markers", line)


def register_device_markers(config: pytest.Config) -> None:
    """Register the device markers the suite has not registered itself (so ``--markers``
    lists each once, with the suite's own text where it has one)."""
    known = registered_markers(config)
    for device in DEVICE_MARKERS:
        if device not in known:
            config.addinivalue_line(
                "markers",
                f"{device}: the test supports the {device} device; tests with no device marker "
                "support every device (pytest-tweak; registered in sessions that use the "
                "tweak fixture)",
            )


class DeviceMarkers:
    """The device markers of one session: registered once, when the session first shows it
    uses pytest-tweak's ``tweak`` (`register_device_markers`)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self.registered = False
        #: Whether each ``conftest.py`` seen so far names ``tweak``.
        self._conftests: dict[Path, bool] = {}

    def register(self) -> None:
        if not self.registered:
            register_device_markers(self._config)
            self.registered = True

    def module_collected(self, module: pytest.Module) -> None:
        """Register them before a test module that uses ``tweak`` (itself, or through a
        conftest's fixture) is imported, so that its own ``@pytest.mark.cpu`` is known."""
        if self.registered:
            return
        path, root = module.path, self._config.rootpath
        is_test = module.funcnamefilter  # pytest's own python_functions rule
        if (
            uses_tweak(path, is_test) or conftest_uses_tweak(path, root, self._conftests, is_test)
        ) and sees_own_tweak(module):
            self.register()


def ini_keys(config: pytest.Config, unknown: Callable[[str], bool]) -> list[str]:
    """The keys the ini file sets that ``unknown`` picks (pytest-tweak's test: a ``tweak_*``
    key that is none of its options) and that no plugin or conftest registered: a suite's own
    ``tweak_*`` key is its business. pytest 9 deprecated ``Config.inicfg`` (it warns, which is
    an error under ``-W error``) and offers no public way to list the keys; pytest 8 has no
    ``_inicfg``."""
    found = getattr(config, "_inicfg", None)
    if found is None:
        found = config.inicfg
    return [key for key in found if unknown(key) and not _registered(config, key)]


def _registered(config: pytest.Config, key: str) -> bool:
    """Whether a plugin or conftest registered ``key`` (``config.getini`` knows it)."""
    try:
        config.getini(key)
    except ValueError:  # "unknown configuration value"
        return False
    except pytest.UsageError:  # registered, with a value its type refuses: the suite's to say
        pass
    return True
