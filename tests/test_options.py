"""Option resolution as plain code: `resolve_options` from raw values, no pytest run. A few
end-to-end runs in test_bad_input.py and test_plugin.py check that the plugin feeds it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_tweak.measure import MeasureSettings
from pytest_tweak.options import (
    DEFAULT_BASELINE,
    DEFAULT_HOST_BOUND_RUN_NOISE_PCT,
    DEFAULT_RUN_NOISE_PCT,
    DEFAULT_THRESHOLD_PCT,
    OPTIONS,
    OptionError,
    Raw,
    resolve_judging,
    resolve_options,
    step_summary_problem,
)
from pytest_tweak.terminal import settings_line


def _raw(tmp_path: Path, **values: Any) -> Raw:
    """Options given on the command line (``--tweak-NAME``), folders under ``tmp_path``."""
    given = {name: (value, "--tweak-" + name.replace("_", "-")) for name, value in values.items()}
    return Raw(
        given,
        invocation_dir=tmp_path / "here",
        ini_dir=tmp_path / "ini",
        rootdir=tmp_path / "root",
    )


def test_nothing_given_is_the_documented_defaults(tmp_path: Path) -> None:
    options = resolve_options(_raw(tmp_path))
    assert options.devices == ("cpu",)
    assert options.devices_source == "default"
    assert options.baseline_path == tmp_path / "root" / DEFAULT_BASELINE
    assert not options.save
    assert options.settings == MeasureSettings()
    assert {d: j.threshold_pct for d, j in options.judging.items()} == DEFAULT_THRESHOLD_PCT
    assert {d: j.run_noise_pct for d, j in options.judging.items()} == DEFAULT_RUN_NOISE_PCT
    assert options.limits.graph_breaks is None
    assert (options.json_path, options.markdown_path, options.html_path) == (None, None, None)


def test_a_threshold_for_one_device_keeps_the_others_defaults(tmp_path: Path) -> None:
    judging = resolve_options(_raw(tmp_path, threshold="cuda=2")).judging
    assert judging["cuda"].threshold_pct == 2.0
    assert judging["cpu"].threshold_pct == DEFAULT_THRESHOLD_PCT["cpu"]
    assert resolve_options(_raw(tmp_path, threshold="3%")).judging["xpu"].threshold_pct == 3.0


def test_host_bound_accelerator_cases_get_their_prior_until_a_run_noise_is_set(
    tmp_path: Path,
) -> None:
    judging = resolve_options(_raw(tmp_path)).judging
    host_bound = {d: j.host_bound_run_noise_pct for d, j in judging.items()}
    assert host_bound == DEFAULT_HOST_BOUND_RUN_NOISE_PCT == {"cpu": None, "cuda": 2.0, "xpu": 2.0}
    # a run noise the user set, even for another device, holds for every case
    judging = resolve_options(_raw(tmp_path, run_noise="cpu=3")).judging
    assert judging["cuda"].run_noise_pct == DEFAULT_RUN_NOISE_PCT["cuda"]
    assert {j.host_bound_run_noise_pct for j in judging.values()} == {None}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("threshold", "0", "--tweak-threshold: invalid value '0'; expected a percentage > 0"),
        ("threshold", "gpu=2", "--tweak-threshold: invalid value 'gpu=2'; expected a percentage"),
        ("run_noise", "-1", "--tweak-run-noise: invalid value '-1'; expected a percentage >= 0"),
        ("metric", "fastest", "--tweak-metric: invalid value 'fastest'; expected one of: "),
        (
            "min_rounds",
            "2.5",
            "--tweak-min-rounds: invalid value '2.5'; expected an integer from 1 to 1000",
        ),
        # it was an INTERNALERROR (MeasureSettings' own check; eleventh trial)
        (
            "min_rounds",
            "2000",
            "--tweak-min-rounds: invalid value '2000'; expected an integer from",
        ),
        ("warmup", "nan", "--tweak-warmup: invalid value 'nan'; expected seconds >= 0"),
        ("max_graph_breaks", "-1", "--tweak-max-graph-breaks: invalid value '-1'"),
        ("device", "tpu", "--tweak-device: "),
        ("fingerprint_policy", "ignore", "--tweak-fingerprint-policy: invalid value 'ignore'"),
    ],
)
def test_a_bad_value_names_the_option_the_value_and_what_is_allowed(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, **{name: value}))
    assert str(caught.value).startswith(message)


def test_where_a_value_came_from_is_named_in_its_error(tmp_path: Path) -> None:
    raw = Raw({"threshold": ("x", "ini option tweak_threshold")})
    with pytest.raises(OptionError, match=r"^ini option tweak_threshold: invalid value 'x'"):
        resolve_options(raw)


def test_devices_with_indices_make_the_pools_xdist_workers_take(tmp_path: Path) -> None:
    options = resolve_options(_raw(tmp_path, device=["cuda:0,cuda:1", "cpu", "cuda:1"]))
    assert options.devices == ("cuda", "cpu")
    assert options.device_pools == {"cuda": (0, 1)}
    assert options.devices_source == "--tweak-device"


def test_the_settings_line_names_device_indices_and_allow_missing_device(tmp_path: Path) -> None:
    options = resolve_options(
        _raw(tmp_path, device=["cuda:1,cpu", "cuda:0"], allow_missing_device=True)
    )
    assert settings_line(options, tmp_path / "root") == (
        "tweak: devices=cuda:1,cuda:0,cpu, baseline=tweak-baselines.json, allow-missing-device"
    )
    assert settings_line(resolve_options(_raw(tmp_path)), tmp_path / "root") == (
        "tweak: devices=cpu, baseline=tweak-baselines.json"
    )


def test_paths_are_relative_to_the_command_line_or_to_the_ini_file(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "ini").mkdir()
    options = resolve_options(_raw(tmp_path, baseline="b.json", json="out/r.json"))
    assert options.baseline_path == tmp_path / "here" / "b.json"
    assert options.json_path == tmp_path / "here" / "out" / "r.json"
    raw = Raw({"baseline": ("b.json", "ini option tweak_baseline")}, ini_dir=tmp_path / "ini")
    assert resolve_options(raw).baseline_path == tmp_path / "ini" / "b.json"
    # "../" is resolved as written, so the settings line and messages show the file itself
    raw = Raw(
        {"baseline": ("../perf/b.json", "ini option tweak_baseline")}, ini_dir=tmp_path / "ini"
    )
    assert resolve_options(raw).baseline_path == tmp_path / "perf" / "b.json"


def test_a_path_from_the_home_folder_is_the_home_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an ini "~/b.json" saved into a folder named "~" beside the ini file
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    raw = Raw({"baseline": ("~/b.json", "ini option tweak_baseline")}, ini_dir=tmp_path)
    assert resolve_options(raw).baseline_path == tmp_path / "home" / "b.json"
    assert (
        resolve_options(_raw(tmp_path, json="~/r.json")).json_path == tmp_path / "home" / "r.json"
    )


def test_a_report_path_that_is_a_folder_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "here" / "reports").mkdir(parents=True)
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, html="reports"))
    assert str(caught.value) == (
        f"--tweak-html: cannot write the HTML report to {tmp_path / 'here' / 'reports'}: it is "
        f"a folder; name a file, e.g. {tmp_path / 'here' / 'reports' / 'tweak-report.html'}"
    )


def test_saving_where_no_folder_can_be_made_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "notes.txt").write_text("a file, not a folder")
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, save=True, baseline="notes.txt/b.json"))
    assert str(caught.value) == (
        f"--tweak-baseline: --tweak-save cannot write baseline file "
        f"{tmp_path / 'here' / 'notes.txt' / 'b.json'}: {tmp_path / 'here' / 'notes.txt'} is "
        "not a writable folder"
    )
    # without --tweak-save the same path is only read (and found missing): no error
    assert not resolve_options(_raw(tmp_path, baseline="notes.txt/b.json")).save


def test_a_step_summary_that_cannot_be_appended_to_is_named_with_the_fix(tmp_path: Path) -> None:
    # found in the thirteenth user trial: the append failed after the last case and the run,
    # green until then, exited 1
    summary = tmp_path / "summary.md"
    assert step_summary_problem("") is None and step_summary_problem(str(summary)) is None
    summary.write_text("an earlier step's summary\n")
    assert step_summary_problem(str(summary)) is None
    missing = tmp_path / "gone" / "summary.md"
    assert step_summary_problem(str(missing)) == (
        f"$GITHUB_STEP_SUMMARY={missing}: the markdown report cannot be appended there: its "
        f"folder {missing.parent} does not exist; point it at a writable file, or unset it"
    )
    problem = step_summary_problem(str(tmp_path))
    assert problem is not None and ": it is a folder; name a file" in problem
    summary.chmod(0o444)
    problem = step_summary_problem(str(summary))
    assert problem is not None and ": the file is read-only (mode 0444)" in problem
    # --tweak-markdown naming the file itself: written there (folders made), not appended
    assert step_summary_problem(str(missing), markdown_path=missing) is None


def test_saving_over_a_read_only_baseline_file_stops_the_run(tmp_path: Path) -> None:
    # a save replaces the file by a rename, which the file's own mode does not stop: a
    # read-only baseline was rewritten without a word (found in the fifth user trial)
    (tmp_path / "here").mkdir()
    path = tmp_path / "here" / "b.json"
    path.write_text("{}")
    path.chmod(0o444)
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, save=True, baseline="b.json"))
    assert str(caught.value) == (
        f"--tweak-baseline: --tweak-save cannot write baseline file {path}: the file is "
        f"read-only (mode 0444); make it writable (chmod u+w {path}) or name another file"
    )
    # only read, it is fine; writable again, so is the save
    assert not resolve_options(_raw(tmp_path, baseline="b.json")).save
    path.chmod(0o644)
    assert resolve_options(_raw(tmp_path, save=True, baseline="b.json")).save


def test_an_empty_value_or_a_device_given_twice_stops_the_run(tmp_path: Path) -> None:
    # `--tweak-max-graph-breaks=$UNSET` used to mean "no limit", and `cpu=5,cpu=6` the last
    # value, both without a word (found in the sixth user trial)
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, max_graph_breaks=""))
    assert str(caught.value) == (
        "--tweak-max-graph-breaks: empty value; give one, or leave the option out for its default"
    )
    with pytest.raises(OptionError, match=r"^--tweak-threshold: empty value"):
        resolve_options(_raw(tmp_path, threshold=" "))
    with pytest.raises(OptionError) as caught:
        resolve_options(_raw(tmp_path, threshold="cpu=5,cpu=6"))
    assert str(caught.value) == (
        "--tweak-threshold: invalid value 'cpu=5,cpu=6': cpu is given twice; give it once"
    )
    # an ini key left empty is the default, as pytest's own ini keys are
    ini = Raw({"max_graph_breaks": ("", "ini option tweak_max_graph_breaks")}, rootdir=tmp_path)
    assert resolve_options(ini).limits.graph_breaks is None


def test_fast_is_a_preset_that_explicit_options_override(tmp_path: Path) -> None:
    fast = MeasureSettings.fast()
    settings = resolve_options(_raw(tmp_path, fast=True, max_time="2")).settings
    assert settings.max_time_s == 2.0
    assert settings.warmup_s == fast.warmup_s
    assert settings.eager == fast.eager


def test_the_metric_decides_whether_the_reference_workloads_are_timed(tmp_path: Path) -> None:
    assert resolve_options(_raw(tmp_path)).settings.reference
    assert not resolve_options(_raw(tmp_path, metric="absolute")).settings.reference


def test_a_limit_option_says_where_it_was_set(tmp_path: Path) -> None:
    limits = resolve_options(_raw(tmp_path, max_graph_breaks="0")).limits
    assert limits.graph_breaks == 0
    assert limits.graph_breaks_source == "--tweak-max-graph-breaks"
    assert limits.recompiles is None


def test_the_command_line_tool_judges_with_the_plugins_numbers(tmp_path: Path) -> None:
    """``python -m pytest_tweak diff --threshold`` and ``--tweak-threshold`` resolve alike."""
    values = {"threshold": "cpu=7", "run_noise": "2", "metric": "absolute"}
    plugin = resolve_options(_raw(tmp_path, **values)).judging
    cli = resolve_judging(Raw({name: (value, f"--{name}") for name, value in values.items()}))
    assert plugin == cli


def test_every_option_has_a_flag_an_ini_key_and_help() -> None:
    names = [option.name for option in OPTIONS]
    assert len(names) == len(set(names))
    for option in OPTIONS:
        assert option.flag == "--tweak-" + option.name.replace("_", "-")
        assert option.dest == f"tweak_{option.name}"
        assert option.help.strip()


def test_an_ini_source_names_the_file_relative_to_where_pytest_was_invoked(tmp_path: Path) -> None:
    option = next(option for option in OPTIONS if option.name == "threshold")
    ini = tmp_path / "proj" / "pyproject.toml"
    assert option.ini_source(None, tmp_path) == "ini option tweak_threshold"
    assert (
        option.ini_source(ini, tmp_path / "proj") == "ini option tweak_threshold in pyproject.toml"
    )
    assert option.ini_source(ini, tmp_path / "proj" / "tests") == (
        f"ini option tweak_threshold in ..{os.sep}pyproject.toml"
    )
