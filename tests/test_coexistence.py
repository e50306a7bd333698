"""pytest-tweak as a good citizen: installed, it is loaded into every suite of the environment,
so a suite that never uses it must run exactly as it does with ``-p no:tweak``.

The suite below is a faithful slice of what other projects' suites do: a plugin tested with
pytester's ``getitem``/``getmodulecol`` (pytest-xdist's and pytest-benchmark's own suites do),
a ``tweak`` fixture of its own and ``@pytest.mark.parametrize("tweak", ...)``, its own
``cuda`` marker, a ``tweak-baselines.json`` of another tool in the rootdir, doctests, run
under ``--strict-markers -W error``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_tweak.citizen import uses_tweak

OTHER_CONFTEST = """
import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a GPU (this project's own marker)")


@pytest.fixture
def tweak():
    return {"knob": 3}
"""

OTHER_TESTS = '''
import sys

import pytest


def helper():
    """A doctest of the project.

    >>> helper()
    42
    """
    return 42


def test_own_tweak_fixture(tweak):
    assert tweak == {"knob": 3}


@pytest.mark.parametrize("tweak", [1, 2])
def test_tweak_parametrized_by_hand(tweak):
    assert tweak in (1, 2)


@pytest.mark.cuda
def test_own_cuda_marker():
    pass


def test_torch_is_not_imported():
    assert "torch" not in sys.modules


def test_plugin_helper_getitem(pytester):
    item = pytester.getitem("def test_func(): pass")
    assert item.name == "test_func"


def test_plugin_helper_getmodulecol(pytester):
    module = pytester.getmodulecol("def test_a(): pass\\ndef test_b(): pass")
    assert [i.name for i in module.collect()] == ["test_a", "test_b"]


def test_an_inner_run(pytester):
    pytester.makepyfile("def test_inner(): pass")
    pytester.runpytest().assert_outcomes(passed=1)
'''

#: pytest's strict checks, the way projects that care run them.
STRICT = ("--strict-markers", "-W", "error", "-p", "pytester", "-p", "no:cacheprovider")


def _normalized(text: str) -> list[str]:
    """A run's output without what differs between any two runs (times, plugin list)."""
    lines = []
    for line in text.splitlines():
        if line.startswith(("plugins:", "rootdir:", "platform ", "cachedir:")):
            continue
        lines.append(re.sub(r"\d+\.\d+s", "T", line).rstrip())
    return lines


def _other_project(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(OTHER_CONFTEST)
    pytester.makepyfile(test_other=OTHER_TESTS)
    # another tool's file that happens to carry pytest-tweak's default baseline name
    pytester.path.joinpath("tweak-baselines.json").write_text('{"tweaks": ["not ours"]}')


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("-v", "--doctest-modules"), id="run"),
        pytest.param(("--co", "-q"), id="collect-only"),
        pytest.param(("--import-mode=importlib", "-v"), id="importlib"),
        pytest.param(("-n", "2", "-q"), id="xdist"),
    ],
)
def test_another_projects_suite_runs_as_without_pytest_tweak(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    _other_project(pytester)
    # the file named: each run leaves its inner pytester runs' files below this folder
    without = pytester.runpytest_subprocess(*STRICT, "-p", "no:tweak", *args, "test_other.py")
    with_tweak = pytester.runpytest_subprocess(*STRICT, *args, "test_other.py")
    assert without.ret == pytest.ExitCode.OK, without.stdout.str()
    assert with_tweak.ret == without.ret
    if args[0] != "-n":  # xdist reports in the order the workers finish
        assert _normalized(with_tweak.stdout.str()) == _normalized(without.stdout.str())
    else:
        with_tweak.assert_outcomes(passed=8)
    assert with_tweak.stderr.str() == without.stderr.str()


def test_its_markers_are_listed_once_and_its_typos_stay_errors(pytester: pytest.Pytester) -> None:
    _other_project(pytester)
    markers = pytester.runpytest_subprocess("--markers")
    assert [line for line in markers.stdout.lines if line.startswith("@pytest.mark.cuda")] == [
        "@pytest.mark.cuda: needs a GPU (this project's own marker)"
    ]
    pytester.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.xpu   # never registered by this project
        def test_x(): pass
        """
    )
    without = pytester.runpytest_subprocess(*STRICT, "-p", "no:tweak", "test_typo.py")
    with_tweak = pytester.runpytest_subprocess(*STRICT, "test_typo.py")
    assert without.ret == with_tweak.ret == pytest.ExitCode.INTERRUPTED
    with_tweak.stdout.fnmatch_lines(["*'xpu' not found in `markers` configuration option*"])


def test_a_file_beside_one_that_uses_tweak_keeps_its_marker_rules(
    pytester: pytest.Pytester,
) -> None:
    """Run alone, a plain file's unregistered device marker stays an error under
    ``--strict-markers`` though the next file in its folder uses ``tweak`` (pytest 9 makes a
    node for each file of the folder, and collects only the one asked for)."""
    pytester.makepyfile(
        test_aa_perf="def test_perf(tweak): pass\n",
        test_zz_plain="import pytest\n\n@pytest.mark.cpu\ndef test_x(): pass\n",
    )
    without = pytester.runpytest_subprocess(*STRICT, "-p", "no:tweak", "test_zz_plain.py")
    with_tweak = pytester.runpytest_subprocess(*STRICT, "test_zz_plain.py")
    assert without.ret == with_tweak.ret == pytest.ExitCode.INTERRUPTED
    with_tweak.stdout.fnmatch_lines(["*'cpu' not found in `markers` configuration option*"])
    # collected, the file that uses tweak registers them for the whole session
    both = pytester.runpytest_subprocess(*STRICT, "--collect-only", "-q")
    assert both.ret == pytest.ExitCode.OK


@pytest.mark.parametrize(
    ("source", "uses"),
    [
        pytest.param("def test_x(tweak): pass", True, id="test-argument"),
        pytest.param("async def test_x(tweak): pass", True, id="async-test"),
        pytest.param("class TestA:\n    def test_x(self, tweak): pass", True, id="method"),
        pytest.param(
            "import pytest\n@pytest.fixture\ndef perf(tweak):\n    return tweak",
            True,
            id="fixture-handing-it-on",
        ),
        pytest.param(
            "import pytest\npytestmark = [pytest.mark.usefixtures('tweak')]", True, id="pytestmark"
        ),
        pytest.param(
            "import pytest\n@pytest.mark.usefixtures('tweak')\nclass TestA: pass",
            True,
            id="class-usefixtures",
        ),
        pytest.param(
            "def test_x(request):\n    request.getfixturevalue('tweak')", True, id="getfixturevalue"
        ),
        pytest.param("from pytest_tweak import tune", True, id="from-import"),
        pytest.param("import pytest_tweak.accuracy", True, id="import"),
        pytest.param("# -*- coding: latin-1 -*-\ndef test_x(tweak): pass", True, id="cookie"),
        pytest.param("# we tweak the tolerance\ndef test_x(): pass", False, id="comment"),
        pytest.param('"""Tests that tweak nothing."""', False, id="docstring"),
        pytest.param("def tweak(x):\n    return x", False, id="function-named-tweak"),
        pytest.param("def scale(x, tweak=1.0):\n    return x * tweak", False, id="helper-arg"),
        pytest.param(
            "import pytest\n@pytest.mark.parametrize(('a', 'tweak'), [(1, 2)])\n"
            "def test_x(a, tweak): pass",
            False,
            id="parametrized-tuple",
        ),
        pytest.param(
            "import pytest\n@pytest.mark.parametrize(argnames='tweak', argvalues=[1])\n"
            "def test_x(tweak): pass",
            False,
            id="parametrized-keyword",
        ),
        pytest.param(
            "import pytest\n@pytest.fixture\ndef tweak():\n    return 1\n\ndef test_x(tweak): pass",
            False,
            id="own-fixture",
        ),
        pytest.param(
            "import pytest\n@pytest.fixture(name='tweak')\ndef knob():\n    return 1\n\n"
            "def test_x(tweak): pass",
            False,
            id="own-fixture-by-name",
        ),
        pytest.param("def test_x(tweak) pass", False, id="syntax-error"),
        pytest.param("# tweak\nX = " + "+".join(["1"] * 200_000), False, id="too-deep-to-parse"),
    ],
)
def test_what_counts_as_a_use_of_tweak(tmp_path: Path, source: str, uses: bool) -> None:
    """`uses_tweak` reads a module's source (never imports it) to register the device markers
    before a module that uses ``tweak`` is imported (fourteenth session's review: the
    positive cases were untested, a helper's argument counted, a file too deep to parse
    stopped the run with an INTERNALERROR)."""
    path = tmp_path / "test_mod.py"
    path.write_text(source + "\n", encoding="latin-1")
    assert uses_tweak(path) is uses


def test_a_suite_that_names_its_tests_otherwise_is_read_by_its_own_python_functions(
    pytester: pytest.Pytester,
) -> None:
    source = "def check_speed(tweak): pass\n"
    path = pytester.makepyfile(check_mod=source)
    assert not uses_tweak(path)  # pytest's default: only test* functions are tests
    # the module's own rule, as pytest reads python_functions: a prefix, or a glob
    for functions in ("check", "*_speed"):
        module = pytester.getmodulecol(source, configargs=("-o", f"python_functions={functions}"))
        assert uses_tweak(path, module.funcnamefilter)


def test_the_word_tweak_in_a_suite_that_never_uses_it_registers_no_marker(
    pytester: pytest.Pytester,
) -> None:
    """Found in the fourteenth user trial: a file that merely contained the word (a comment,
    a docstring, a function of that name, a parametrized argument) registered the device
    markers for the session, so an unregistered ``@pytest.mark.cuda`` passed
    ``--strict-markers``. Each such file fails to collect as it does without pytest-tweak."""
    cuda = "import pytest\n\n@pytest.mark.cuda\ndef test_x(): pass\n"
    pytester.mkpydir("sub").joinpath("conftest.py").write_text("# helpers to tweak the env\n")
    pytester.path.joinpath("sub", "test_in_sub.py").write_text(cuda)
    pytester.makepyfile(
        test_comment=f"# we tweak the tolerance here\n{cuda}",
        test_docstring=f'"""Tests that tweak nothing."""\n{cuda}',
        test_named=f"def tweak(x):\n    return x\n\n\n{cuda}",
        test_param=cuda.replace(
            "def test_x(): pass",
            '@pytest.mark.parametrize("tweak", [1])\ndef test_x(tweak): pass',
        ),
    )
    without = pytester.runpytest_subprocess(*STRICT, "-p", "no:tweak", "--co", "-q")
    with_tweak = pytester.runpytest_subprocess(*STRICT, "--co", "-q")
    assert without.ret == with_tweak.ret == pytest.ExitCode.INTERRUPTED
    assert "5 errors" in without.stdout.lines[-1]
    assert _normalized(with_tweak.stdout.str()) == _normalized(without.stdout.str())


@pytest.mark.parametrize("where", ["conftest", "plugin"])
def test_tweak_through_the_suites_own_fixture_collects_under_strict_markers(
    pytester: pytest.Pytester, where: str
) -> None:
    """A test that gets ``tweak`` through a fixture of the suite's conftest (or of a plugin
    module) never names it, so the device markers were not registered, and each case's own
    ``cpu`` mark failed its collection under ``--strict-markers`` (eighth user trial). A
    conftest that names ``tweak`` registers them before its tests' modules are imported, so
    their own ``@pytest.mark.cpu`` is known too; a plugin module's fixture is seen only when
    a test is parametrized, after its module's marks were read (docs/guide.md says so)."""
    fixture = "import pytest\n\n@pytest.fixture\ndef perf(tweak):\n    return tweak\n"
    expected = ["test_perf_unmarked.py::test_y[[]cpu-default[]]"]
    pytester.makepyfile(test_perf_unmarked="def test_y(perf): pass\n")
    if where == "conftest":
        pytester.makeconftest(fixture)
        pytester.makepyfile(test_perf="import pytest\n\n@pytest.mark.cpu\ndef test_x(perf): pass\n")
        expected.insert(0, "test_perf.py::test_x[[]cpu-default[]]")
        args: tuple[str, ...] = ()
    else:
        pytester.makepyfile(perf_fixtures=fixture)
        pytester.syspathinsert()
        args = ("-p", "perf_fixtures")
    result = pytester.runpytest_subprocess(*STRICT, *args, "--co", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(expected)


def test_its_help_is_one_block_of_options_with_one_line_per_ini_twin(
    pytester: pytest.Pytester,
) -> None:
    """Every suite's ``pytest --help`` carries pytest-tweak's options: once, not twice."""
    without = pytester.runpytest_subprocess("--help", "-p", "no:tweak").stdout.lines
    with_tweak = pytester.runpytest_subprocess("--help").stdout.lines
    assert len(with_tweak) - len(without) < 180
    twins = [line for line in with_tweak if line.strip().startswith("tweak_")]
    assert len(twins) >= 25
    assert all(re.fullmatch(r"\s*tweak_\w+ \((string|bool)\):.*", line) for line in twins)
    assert any("--tweak-device as an ini key" in line for line in with_tweak)


def test_the_settings_line_comes_where_tweak_is_used_and_is_short(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_perf="def test_x(tweak): pass", test_plain="def test_y(): pass")
    result = pytester.runpytest_subprocess("--co", "-p", "no:cacheprovider", "test_perf.py")
    result.stdout.fnmatch_lines(
        ["collected 1 item", "tweak: devices=cpu, baseline=tweak-baselines.json"]
    )
    # no tweak option given, no tweak test collected: nothing of pytest-tweak's
    result = pytester.runpytest_subprocess("--co", "-p", "no:cacheprovider", "test_plain.py")
    assert not [line for line in result.stdout.lines if line.startswith("tweak")]
    # an option given: in the header, with what differs from the defaults only
    result = pytester.runpytest_subprocess(
        "--co", "-p", "no:cacheprovider", "--tweak-threshold=10", "test_plain.py"
    )
    result.stdout.fnmatch_lines(
        ["platform *", "tweak: devices=cpu, baseline=tweak-baselines.json, threshold=cpu=10%"]
    )


def test_a_run_without_pytest_benchmark_says_so_for_tweak_and_leaves_other_tests_be(
    pytester: pytest.Pytester,
) -> None:
    """``-p no:benchmark`` made each test using tweak fail with pytest's "fixture 'benchmark'
    not found", naming neither pytest-tweak's need nor the fix (tenth user trial)."""
    pytester.makepyfile(
        test_plain="def test_plain(): pass\n", test_perf="def test_x(tweak): pass\n"
    )
    args = ("-p", "no:benchmark", "-p", "no:cacheprovider", "--continue-on-collection-errors")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting test_perf.py*",
            "*pytest-tweak: `tweak` times its cases through pytest-benchmark, which is not "
            "loaded in this run (`-p no:benchmark`*drop `-p no:benchmark`, or add "
            "`-p pytest_benchmark.plugin`*",
        ]
    )
    assert "fixture 'benchmark' not found" not in result.stdout.str()
