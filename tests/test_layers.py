"""The package's shape, read from its sources: data flows one way (no module imports one above
it in the flow, no import circles), plugin.py is wiring only, and each rule has one home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "pytest_tweak"

#: The flow, bottom first: a module may import from its own layer and those below it.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "plain parts",
        frozenset(
            {
                "accuracy",
                "backend_configs",
                "citizen",
                "devices",
                "files",
                "formatting",
                "locks",
                "logs",
                "memory",
                "stats",
            }
        ),
    ),
    ("torch and files", frozenset({"backends", "baselines", "counters", "fingerprint", "measure"})),
    ("one case", frozenset({"case", "registry", "tuning", "verdict"})),
    ("options", frozenset({"options"})),
    ("cases and results", frozenset({"collect", "hookspec", "results"})),
    ("the run", frozenset({"runstate"})),
    (
        "what is printed and written",
        frozenset(
            {"reports", "reports.html", "reports.json", "reports.markdown", "reports.text"}
            | {"terminal"}
        ),
    ),
    ("running a case, crossing to the controller", frozenset({"fixture", "xdist"})),
    ("entry points", frozenset({"plugin", "cli", "__init__", "__main__"})),
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``name`` imports, anywhere in it (lazy and TYPE_CHECKING
    imports count): ``from . import __version__`` names the package, which is loaded first,
    and is left out."""
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    if name == "__init__":
        package = []
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[: len(package) - (node.level - 1)]
        targets = (
            [".".join([*base, *node.module.split(".")])]
            if node.module
            else [".".join([*base, alias.name]) for alias in node.names]
        )
        for target in targets:
            if target in modules:
                found.add(target)
            elif target.rsplit(".", 1)[0] in modules:
                found.add(target.rsplit(".", 1)[0])
    return found - {name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    placed = [name for _, names in LAYERS for name in names]
    assert sorted(placed) == sorted(graph), "a module was added or removed: give it a layer"


def test_no_module_imports_one_above_it_in_the_flow(graph: dict[str, set[str]]) -> None:
    level = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
    upward = [
        f"{module} ({LAYERS[level[module]][0]}) imports {target} ({LAYERS[level[target]][0]})"
        for module, targets in graph.items()
        for target in targets
        if level[target] > level[module]
    ]
    assert upward == []


def test_there_is_no_import_circle(graph: dict[str, set[str]]) -> None:
    circles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif len(path) < len(graph):
                visit(target, [*path, target])

    for module in sorted(graph):
        visit(module, [module])
    assert circles == []


def test_the_plugin_module_is_wiring_only() -> None:
    """Under 500 lines, and nothing a unit test would call: its public functions are pytest
    hooks or the fixture, the rest a few private helpers that read pytest's objects."""
    source = (PACKAGE / "plugin.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) < 500
    tree = ast.parse(source)
    public = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    ]
    assert [name for name in public if not name.startswith("pytest_")] == [
        "TweakWarning",
        "tweak",
    ]


@pytest.mark.parametrize(
    ("rule", "definition"),
    [
        ("atomic write", "def write_atomic("),
        ("text table", "def text_table("),
        ("geometric mean", "def geometric_mean("),
        ("seconds as people read them", "def format_seconds("),
        ("bytes as people read them", "def format_bytes("),
        ("fingerprint policy", "def apply_policy("),
        ("judging options", "def resolve_judging("),
        ("the plain form of a finished case", "class CaseResult"),
    ],
)
def test_each_rule_has_one_home(rule: str, definition: str) -> None:
    homes = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if definition in path.read_text(encoding="utf-8")
    ]
    assert len(homes) == 1, f"{rule}: {homes}"


def _names_the_threshold(source: str) -> bool:
    """Code (not a docstring) that reads or sets a threshold, or the option's name."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "threshold_pct":
            return True
        if isinstance(node, ast.keyword) and node.arg == "threshold_pct":
            return True
        if isinstance(node, ast.Constant) and node.value in ("threshold", "tweak_threshold"):
            return True
    return False


def test_the_threshold_crosses_three_modules_from_the_command_line_to_the_verdict() -> None:
    """``--tweak-threshold`` is read by the plugin as one raw value among all (it never
    names it), resolved into a `Judging` by options.py, and used by verdict.py; the modules
    between them pass the `Judging` along without looking at the threshold."""
    named = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _names_the_threshold(path.read_text(encoding="utf-8"))
    }
    # printing the threshold in force, and the other command line (python -m pytest_tweak
    # diff --threshold), are not on the plugin's way from --tweak-threshold to the verdict
    printers = {"terminal.py", "reports/__init__.py", "cli.py"}
    assert named - printers == {"options.py", "verdict.py"}
    assert "threshold" not in (PACKAGE / "plugin.py").read_text(encoding="utf-8")
