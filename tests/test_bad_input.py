"""Bad input across the plugin's whole surface: every option with a value and its ini twin,
the flags' ini twins, the baseline path, and the ways a test can misuse the ``tweak`` fixture.
Each gets a clear error that names what is wrong, before any test runs where pytest allows."""

from __future__ import annotations

import pytest

from pytest_tweak.options import OPTIONS

#: Options whose value is a file path (metavar PATH): any text is a valid name.
_VALUED = [o.name for o in OPTIONS if o.metavar not in (None, "PATH")]
_FLAGS = [o.name for o in OPTIONS if o.metavar is None]


@pytest.mark.parametrize("name", _VALUED)
@pytest.mark.parametrize("where", ["cli", "ini"])
def test_every_valued_option_refuses_garbage_naming_the_option_and_the_value(
    pytester: pytest.Pytester, name: str, where: str
) -> None:
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    flag = "--" + f"tweak_{name}".replace("_", "-")
    # checking TORCH_LOGS names imports torch, which cannot be imported twice in one process
    run = pytester.runpytest_subprocess if name == "logs" else pytester.runpytest
    if where == "cli":
        result = run(f"{flag}=@bad@")
        source = flag
    else:
        pytester.makeini(f"[pytest]\ntweak_{name} = @bad@\n")
        result = run()
        source = f"ini option tweak_{name} in tox.ini"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {source}: *'@bad@'*"])


@pytest.mark.parametrize("name", _FLAGS)
def test_every_flag_ini_twin_refuses_a_value_that_is_not_a_truth_value(
    pytester: pytest.Pytester, name: str
) -> None:
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    pytester.makeini(f"[pytest]\ntweak_{name} = maybe\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: ini option tweak_{name} in tox.ini: invalid truth value 'maybe'; "
            "expected true or false*"
        ]
    )


@pytest.mark.skipif(
    int(pytest.__version__.split(".")[0]) < 9, reason="the native [tool.pytest] table: pytest 9"
)
def test_a_toml_number_for_a_string_key_says_to_quote_it(pytester: pytest.Pytester) -> None:
    """pytest 9's [tool.pytest] refuses ``tweak_threshold = 7``; the hint appended to its error
    used to be the bool keys' ("expected true or false") for every key."""
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    pytester.makepyprojecttoml("[tool.pytest]\ntweak_threshold = 7\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini option tweak_threshold in pyproject.toml: *; "
            "pytest reads this key as a string: quote it "
            '(tweak_threshold = "PCT")'
        ]
    )
    result.stderr.no_fnmatch_line("*true or false*")
    pytester.makepyprojecttoml('[tool.pytest]\ntweak_threshold = "7"\ntweak_fast = true\n')
    pytester.makepyfile("def test_x(): pass")
    pytester.runpytest().assert_outcomes(passed=1)


def test_flag_ini_twins_accept_truth_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    pytester.makeini("[pytest]\ntweak_fast = yes\ntweak_fail_inconclusive = 0\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_save_to_a_path_that_cannot_be_written_fails_before_any_test_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    pytester.path.joinpath("notes.txt").write_text("a file, not a folder")
    result = pytester.runpytest("--tweak-save", "--tweak-baseline=notes.txt/base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --tweak-baseline: --tweak-save cannot write baseline file "
            "*notes.txt/base.json: *notes.txt is not a writable folder"
        ]
    )
    assert pytester.path.joinpath("notes.txt").read_text() == "a file, not a folder"


@pytest.mark.parametrize("save", [False, True])
def test_a_folder_as_the_baseline_file_is_refused_naming_it(
    pytester: pytest.Pytester, save: bool
) -> None:
    # a test that uses tweak: the baseline file is read only when one does
    pytester.makepyfile("def test_x(tweak): raise AssertionError('must not run')")
    pytester.mkdir("perf")
    result = pytester.runpytest("--tweak-baseline=perf", *(["--tweak-save"] if save else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = (
        "*baseline file *perf is a folder; name a file*" if save else "*perf: cannot be read*"
    )
    result.stderr.fnmatch_lines([expected])


def test_tweak_from_a_module_scoped_fixture_is_a_clear_error(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.fixture(scope="module")
        def shared(tweak):
            return tweak

        def test_x(shared):
            raise AssertionError("must not run")
    """)
    result = run_suite()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ScopeMismatch*function scoped fixture tweak*module*"])


def test_tweak_through_getfixturevalue_says_how_to_request_it(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        def test_x(request):
            request.getfixturevalue("tweak")
    """)
    result = run_suite()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the tweak fixture is parametrized by pytest-tweak: request it as an argument of "
            "the test function*"
        ]
    )


def test_a_tweak_parametrized_by_hand_is_the_tests_own(
    pytester: pytest.Pytester, run_suite
) -> None:
    """``tweak`` is pytest-tweak's only where the test sees pytest-tweak's fixture: a test that
    parametrizes the name itself gets its own values, as without pytest-tweak."""
    pytester.makepyfile("""
        import sys, pytest

        @pytest.mark.parametrize("tweak", [1, 2])
        def test_x(tweak):
            assert tweak in (1, 2)
            assert "torch" not in sys.modules
    """)
    result = run_suite("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_x[[]1[]] PASSED*", "*test_x[[]2[]] PASSED*"])


@pytest.mark.parametrize(
    ("key", "meant"), [("tweak_treshold", "tweak_threshold"), ("tweak_devices", "tweak_device")]
)
def test_a_misspelled_ini_key_is_named_with_the_key_it_resembles(
    pytester: pytest.Pytester, key: str, meant: str
) -> None:
    pytester.makeini(f"[pytest]\n{key} = 5\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"*pytest-tweak: unknown ini key {key}: did you mean {meant}? It is not applied*"]
    )


def test_a_tweak_ini_key_the_suite_registers_itself_is_left_alone(
    pytester: pytest.Pytester,
) -> None:
    # found in the fourteenth user trial: a conftest's own `tweak_factor` was called unknown
    # and "not applied", and under filterwarnings=error the run stopped with an INTERNALERROR
    pytester.makeconftest("""
        def pytest_addoption(parser):
            parser.addini("tweak_factor", "the suite's own knob")
    """)
    pytester.makeini("[pytest]\ntweak_factor = 2.0\nfilterwarnings = error\n")
    pytester.makepyfile("""
        def test_x(pytestconfig):
            assert pytestconfig.getini("tweak_factor") == "2.0"
    """)
    result = pytester.runpytest("--strict-config")
    result.assert_outcomes(passed=1)
    assert "tweak_factor" not in result.stdout.str() + result.stderr.str()


def test_an_ini_value_pytest_tweak_does_not_read_stops_nothing_it_would_not(
    pytester: pytest.Pytester,
) -> None:
    # review of the fix above: reading every key to tell the suite's own stopped a run on a
    # bad value of a key pytest reads only later (or never), without naming it
    pytester.makeconftest("""
        def pytest_addoption(parser):
            parser.addini("tweak_count", "the suite's own number", type="int")
    """)
    pytester.makeini("[pytest]\nxfail_strict = maybe\ntweak_count = many\n")
    pytester.makepyfile("def test_x(): pass")
    with_tweak = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:tweak")
    assert with_tweak.ret == without.ret == pytest.ExitCode.OK
    with_tweak.assert_outcomes(passed=1)


def test_save_with_fast_warns_that_the_baseline_is_a_quick_look(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("def test_x(): pass")
    warned = run_suite("--tweak-save", "--tweak-fast")
    warned.assert_outcomes(passed=1)
    warned.stdout.fnmatch_lines(
        ["*pytest-tweak: --tweak-save with --tweak-fast records a quick look as the baseline*"]
    )
    for args in (("--tweak-fast",), ("--tweak-save",)):  # either alone is what it says
        quiet = run_suite(*args)
        quiet.assert_outcomes(passed=1)
        assert "quick look" not in quiet.stdout.str()


def test_append_without_save_on_the_command_line_warns_that_it_does_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x(): pass")
    warned = pytester.runpytest("--tweak-append")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(
        ["*TweakWarning: pytest-tweak: --tweak-append without --tweak-save does nothing*"]
    )
    # the documented category is the one raised: it can be silenced (or made an error)
    quiet = pytester.runpytest("--tweak-append", "-W", "ignore::pytest_tweak.TweakWarning")
    quiet.assert_outcomes(passed=1)
    assert "does nothing" not in quiet.stdout.str()
    pytester.runpytest("--tweak-append", "--tweak-save").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\ntweak_append = true\n")  # a team's way of saving: no word
    pytester.runpytest().assert_outcomes(passed=1)


def test_save_with_benchmarks_disabled_is_refused_before_any_test_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x(tweak): raise AssertionError('must not run')")
    result = pytester.runpytest("--tweak-save", "--benchmark-disable")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --tweak-save records what the run measures, but --benchmark-disable *"]
    )
    assert not (pytester.path / "tweak-baselines.json").exists()
    # --benchmark-enable overrides the disable: the save may go on
    enabled = pytester.runpytest(
        "--tweak-save", "--benchmark-disable", "--benchmark-enable", "--co"
    )
    assert enabled.ret == pytest.ExitCode.OK
