"""The layer contract (docs/architecture.md): each package is one layer, and no module imports a layer above its own.

Every import counts: one inside a function, and one under `if TYPE_CHECKING:` (a type names what it depends on as
surely as a call does). A package's `__main__.py` is its command line, and every command line is in the top layer,
beside the pipeline it runs. No two modules may import each other, however indirectly (a circle of lazy imports
included): a circle is one module split in two. A new top-level package must be given a layer here, so the contract
cannot be skipped by adding one. judge/'s sub-packages are layers inside it by the same rule (JUDGE_LAYERS), and a
module of judge/ outside them (its command line excepted) must be given one."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent

# One layer per package, lowest first.
LAYERS: tuple[tuple[str, str], ...] = (
    ("core", "errors, atomic writes, JSONL, the raw records, the crash supervisor"),
    ("models", "backends, model files, spec types, the call cache and loop, provider batches"),
    ("registration", "specs, questions, rubrics, hypotheses, the seal"),
    ("arms", "answers"),
    ("judge", "blinding, verdicts, statistics, report, verification"),
    ("audit", "the gaming audit, its gate, reward telemetry"),
    ("pipeline", "commands: the pipeline, and every package's __main__"),
)
PACKAGES = tuple(p for p, _ in LAYERS)
# judge/'s sub-packages, lowest first: each may import its own and those below it, never one above.
JUDGE_LAYERS: tuple[tuple[str, str], ...] = (
    ("judging", "blinding, the judge call, verdicts, pairwise items, checks before paying, budget, cost"),
    ("results", "a results folder's files and reading, what judging binds in it, run.json's registered part"),
    ("numbers", "numbers.json: the analysis, the statistics, agreement, biases, the judge's validity"),
    ("gold", "gold sources, people's labels files, labelling, a label draw's power"),
    ("outputs", "report.md, review.md, the review page and its join, plots, export"),
    ("verify", "verify, re-derivation, the second path, published bundles"),
)
NOT_PRODUCT = {"tests", "benchmarks", "sealed", "results", "docs", "rubrics", "build"}


def layer_of(module: str, layers=LAYERS) -> int | None:
    """A module's layer: its package's; a package's `__main__` (its command line) is in the top layer."""
    packages = [p for p, _ in layers]
    if module.split(".")[0] not in packages:
        return None
    return len(layers) - 1 if module.split(".")[-1] == "__main__" else packages.index(module.split(".")[0])


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, module: str, packages=PACKAGES) -> list[tuple[int, str]]:
    """(line, first-party name) for every import in the file, relative ones resolved; `from pkg import name` gives
    `pkg.name`, which is a module or a name in one."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.extend((node.lineno, f"{target}.{a.name}") for a in node.names)
    return sorted((line, m) for line, m in out if m.split(".")[0] in packages)


def product_modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    return {module_name(path, root): path for package in packages for path in sorted((root / package).rglob("*.py"))}


def resolve(name: str, modules: dict[str, Path]) -> str:
    """The module an imported name lives in: itself when it is one, else the deepest module above it."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def unplaced_packages(root: Path, layers=LAYERS) -> list[str]:
    placed = {p for p, _ in layers}
    return [f"{d.name}/: a package with no layer in tests/test_layers.py" for d in sorted(root.iterdir())
            if (d / "__init__.py").is_file() and d.name not in placed | NOT_PRODUCT]


def violations(root: Path, layers=LAYERS) -> list[str]:
    packages = tuple(p for p, _ in layers)
    modules = product_modules(root, packages)
    found = unplaced_packages(root, layers)
    for module, path in modules.items():
        mine = layer_of(module, layers)
        for line, name in imports(path, module, packages):
            target = resolve(name, modules)
            theirs = layer_of(target, layers)
            if theirs is not None and theirs > mine:
                found.append(f"{path.relative_to(root)}:{line}: {module} ({layers[mine][0]}) imports {target} "
                             f"({layers[theirs][0]}), a layer above")
    return found


def graph(root: Path, packages=PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules it imports (every import, anywhere in the file)."""
    modules = product_modules(root, packages)
    out: dict[str, set[str]] = {}
    for module, path in modules.items():
        out[module] = {t for _, name in imports(path, module, packages) if (t := resolve(name, modules)) != module}
    return out


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_module_imports_a_layer_above_it():
    assert violations(ROOT) == []


def sublayer_violations(root: Path, package: str = "judge", layers=JUDGE_LAYERS) -> list[str]:
    """Every import from a sub-package of `package` into one above it, and every module of `package` in none of its
    sub-packages (its `__init__` and its command line, `__main__`, excepted)."""
    names = [n for n, _ in layers]
    modules = {m: p for m, p in product_modules(root).items() if m.split(".")[0] == package}

    def level(module: str) -> int | None:
        parts = module.split(".")
        return names.index(parts[1]) if len(parts) > 1 and parts[1] in names else None

    found = [f"{path.relative_to(root)}: a module of {package}/ in none of its layers (JUDGE_LAYERS in "
             "tests/test_layers.py)" for m, path in modules.items()
             if m != package and m.split(".")[-1] != "__main__" and level(m) is None]
    for module, path in modules.items():
        mine = level(module)
        if mine is None:
            continue
        for line, name in imports(path, module):
            target = resolve(name, modules)
            theirs = level(target) if target.split(".")[0] == package else None
            if theirs is not None and theirs > mine:
                found.append(f"{path.relative_to(root)}:{line}: {module} ({names[mine]}) imports {target} "
                             f"({names[theirs]}), a layer above")
    return found


def test_no_module_of_judge_imports_a_sub_package_above_its_own():
    assert sublayer_violations(ROOT) == []


def test_the_judge_layer_check_catches_an_upward_import_and_an_unplaced_module(tmp_path):
    """A lazy upward import (judging reading the report), a type-only one (results naming verify's type), imports
    downward and within a layer (allowed), the command line importing the top, and modules in no layer."""
    plant(tmp_path, {
        "judge/__main__.py": "from judge.verify.checks import verify\n",
        "judge/judging/blinding.py": "def f():\n    from ..outputs.report import render\n",
        "judge/results/files.py": "from typing import TYPE_CHECKING\nfrom ..judging.blinding import blind\n"
                                  "if TYPE_CHECKING:\n    from judge.verify.checks import Verification\n",
        "judge/numbers/analysis.py": "from ..results.files import load_raw\nfrom .stats.rule import Scale\n",
        "judge/numbers/stats/rule.py": "Scale = 1\n",
        "judge/verify/checks.py": "from ..numbers.analysis import x\nfrom . import bundle\n",
        "judge/verify/bundle.py": "",
        "judge/outputs/report.py": "from ..gold.sources import x\n",
        "judge/gold/sources.py": "",
        "judge/loose.py": "",
        "judge/rooms/thing.py": "",
    })
    assert sublayer_violations(tmp_path) == [
        "judge/loose.py: a module of judge/ in none of its layers (JUDGE_LAYERS in tests/test_layers.py)",
        "judge/rooms/__init__.py: a module of judge/ in none of its layers (JUDGE_LAYERS in tests/test_layers.py)",
        "judge/rooms/thing.py: a module of judge/ in none of its layers (JUDGE_LAYERS in tests/test_layers.py)",
        "judge/judging/blinding.py:2: judge.judging.blinding (judging) imports judge.outputs.report (outputs), "
        "a layer above",
        "judge/results/files.py:4: judge.results.files (results) imports judge.verify.checks (verify), a layer above",
    ]


def test_no_modules_import_each_other_in_a_circle():
    assert circles(graph(ROOT)) == []


SECOND_PATH = "judge.verify.second_path"


def second_path_reaches(root: Path, packages=PACKAGES) -> list[str]:
    """Every module of judge/ outside the second path that the second path's modules import, directly or through
    other modules, lazily or for types: the main path's code (judge.numbers.stats, judge.numbers.analysis and what
    they use) lives in judge/, so the second path may import only its own modules and lower layers (the decision
    vocabulary in registration.vocabulary). Importing a module runs its packages' __init__ too, so those count, but
    for the packages the second path sits in (judge, judge.verify), which any of its modules runs: what those
    import is followed all the same."""
    edges = graph(root, packages)
    ours = {m for m in edges if m == SECOND_PATH or m.startswith(SECOND_PATH + ".")}
    seen, todo = set(ours), sorted(ours)
    while todo:
        module = todo.pop()
        parents = {module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1)}
        for t in (edges.get(module, set()) | (parents & set(edges))) - seen:
            seen.add(t)
            todo.append(t)
    above = {SECOND_PATH.rsplit(".", k)[0] for k in range(1, SECOND_PATH.count(".") + 1)}
    return sorted(m for m in seen - ours - above if m.split(".")[0] == "judge")


def test_the_second_path_imports_nothing_of_the_main_path():
    assert (ROOT / "judge" / "verify" / "second_path" / "decisions.py").is_file()
    assert second_path_reaches(ROOT) == []


def plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if parent != Path(".") and not (root / parent / "__init__.py").exists():
                (root / parent / "__init__.py").write_text("")
        path.write_text(text)


def test_the_contract_catches_an_upward_import_lazy_or_for_types_only(tmp_path):
    """A lower module that imports a higher one inside a function, one that does so only for types, and a new
    package nobody placed."""
    plant(tmp_path, {
        "core/errors.py": "def f():\n    from judge.verify import x\n",
        "core/atomic.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from models.spec import Runtime\n",
        "models/spec.py": "from core import atomic\nfrom ..core.errors import f\n",
        "judge/verify.py": "from core.errors import f\nfrom models import spec\n",
        "extras/thing.py": "",
    })
    assert violations(tmp_path) == [
        "extras/: a package with no layer in tests/test_layers.py",
        "core/atomic.py:3: core.atomic (core) imports models.spec (models), a layer above",
        "core/errors.py:2: core.errors (core) imports judge.verify (judge), a layer above",
    ]


def test_a_packages_command_line_is_in_the_top_layer(tmp_path):
    """`python -m judge` runs the pipeline: judge/__main__.py may import it, judge/verify.py may not, and nothing
    may import a __main__."""
    plant(tmp_path, {
        "judge/__main__.py": "from pipeline.run import run\n",
        "judge/verify.py": "from pipeline.run import run\n",
        "pipeline/run.py": "from judge import verify\n",
        "audit/gate.py": "from judge.__main__ import main\n",
    })
    assert sorted(violations(tmp_path)) == [
        "audit/gate.py:1: audit.gate (audit) imports judge.__main__ (pipeline), a layer above",
        "judge/verify.py:1: judge.verify (judge) imports pipeline.run (pipeline), a layer above",
    ]


def test_circles_are_found_lazy_imports_and_type_only_imports_included(tmp_path):
    """Two circles (one through a lazy import, one through a TYPE_CHECKING import) and a diamond that is none."""
    plant(tmp_path, {
        "models/load.py": "def f():\n    from .backends import registry\n",
        "models/backends/registry.py": "from . import llama\n",
        "models/backends/llama.py": "def g():\n    from ..load import f\n",
        "registration/prereg.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .rubric import R\n",
        "registration/rubric.py": "from .prereg import DIR\n",
        "judge/a.py": "from . import b, c\n",
        "judge/b.py": "from .d import x\n",
        "judge/c.py": "from .d import x\n",
        "judge/d.py": "x = 1\n",
    })
    assert circles(graph(tmp_path)) == [
        ["models.backends.llama", "models.backends.registry", "models.load"],
        ["registration.prereg", "registration.rubric"],
    ]


def test_the_second_path_scan_finds_a_lazy_import_and_one_through_a_lower_module(tmp_path):
    """A lazy import of the main path's rule, one reached through a registration module that imports
    judge.numbers.stats (itself an upward import, reported by the layer scan too), and one made by the __init__ of the
    package the second path sits in."""
    plant(tmp_path, {
        "judge/verify/second_path/decisions.py": "from registration import words\n",
        "judge/verify/second_path/biases.py": "from . import decisions\ndef f():\n"
                                              "    from ...numbers.stats.rule import Scale\n",
        "judge/verify/__init__.py": "from ..gold import sources\n",
        "judge/gold/sources.py": "",
        "judge/numbers/stats/rule.py": "Scale = 1\n",
        "judge/numbers/stats/paired.py": "from .rule import Scale\n",
        "registration/words.py": "from judge.numbers.stats import paired\n",
    })
    assert second_path_reaches(tmp_path) == ["judge.gold", "judge.gold.sources", "judge.numbers",
                                             "judge.numbers.stats", "judge.numbers.stats.paired",
                                             "judge.numbers.stats.rule"]


def test_relative_imports_resolve_to_the_module_they_name(tmp_path):
    (tmp_path / "pipeline").mkdir()
    f = tmp_path / "pipeline" / "run.py"
    f.write_text("from . import plan\nfrom judge.verify import check\nfrom models.backends import registry\n")
    assert imports(f, "pipeline.run") == [(1, "pipeline.plan"), (2, "judge.verify.check"),
                                          (3, "models.backends.registry")]


def test_sealed_glue_still_imports_the_question_by_its_old_name():
    """The demo's glue, sealed before questions moved to registration/, imports them from arms.questions: the move
    left the sealed folder as it was, so results folders bound to it still verify against it."""
    from arms.glue import load_glue
    from arms.questions import Question
    from registration.questions import Question as Registered
    from registration.seal import verify_seal

    demo = ROOT / "sealed" / "demo"
    verify_seal(demo)
    assert Question is Registered and callable(load_glue("glue.py:answer", demo))
