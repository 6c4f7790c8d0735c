"""The layer contract (docs/architecture.md): no product module imports a layer above its own.

Every import counts, including one inside a function; only imports under `if TYPE_CHECKING:` (types for
annotations, never executed) are exempt. A new module must be given a layer here, so the contract cannot be
skipped by adding a file."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "models", "registration", "arms", "judge", "audit", "pipeline")

# One layer per package, lowest first (docs/architecture.md).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core: errors, atomic writes, JSONL, records, the crash supervisor", ("core",)),
    ("models: backends, model files, spec types, the call cache and loop, provider batches", ("models",)),
    ("registration: specs, questions, rubrics, hypotheses, the seal", ("registration",)),
    ("arms: answers", ("arms",)),
    ("judge: blinding, verdicts, statistics, report, verification", ("judge",)),
    ("audit: the gaming audit, its gate, reward telemetry", ("audit",)),
    ("commands: the pipeline", ("pipeline",)),
)
PACKAGE_INITS = {f"{p}" for p in PACKAGES} | {"models.backends"}  # a package's own __init__: its layer is its contents'


def layer_of(module: str, layers=LAYERS) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), i)
    return None if best is None else best[1]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(path: Path, module: str, packages=PACKAGES) -> list[tuple[int, str]]:
    """(line, first-party module) for every executed import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import mod` imports pkg.mod when it is a module: count the deeper name
            out.extend((node.lineno, f"{target}.{a.name}") for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(line, m) for line, m in out if m.split(".")[0] in packages]


def violations(root: Path, layers=LAYERS, packages=PACKAGES) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(path, root)
            mine = layer_of(module, layers)
            if mine is None:
                if module not in PACKAGE_INITS:
                    found.append(f"{path.relative_to(root)}: module {module} has no layer in tests/test_layers.py")
                continue
            for line, target in imports(path, module, packages):
                theirs = layer_of(target, layers)
                if theirs is None:
                    theirs = layer_of(target.rpartition(".")[0], layers)  # `from pkg import name`
                if theirs is not None and theirs > mine:
                    found.append(f"{path.relative_to(root)}:{line}: {module} ({layers[mine][0]}) imports {target} "
                                 f"({layers[theirs][0]}), a layer above")
    return found


def test_no_module_imports_a_layer_above_it():
    assert violations(ROOT) == []


def test_the_contract_catches_an_upward_import_even_inside_a_function(tmp_path):
    """Plant a lower module that imports a higher one lazily, and one that only does so for types."""
    for pkg in ("arms", "judge"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "arms" / "errors.py").write_text("def f():\n    from judge.verify import x\n")
    (tmp_path / "arms" / "atomic.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                 "    from judge.verify import x\n")
    (tmp_path / "judge" / "verify.py").write_text("from core.errors import f\nfrom ..arms import atomic\n")
    (tmp_path / "judge" / "mystery.py").write_text("")
    found = violations(tmp_path, packages=("arms", "judge"))
    assert found == [
        "core/errors.py:2: core.errors (base: errors, records, files) imports judge.verify.x (verify), a layer above",
        "judge/mystery.py: module judge.mystery has no layer in tests/test_layers.py",
    ]


def test_relative_imports_resolve_to_the_module_they_name(tmp_path):
    (tmp_path / "judge").mkdir()
    f = tmp_path / "judge" / "run.py"
    f.write_text("from . import stats\nfrom .verify import check\nfrom models.backends import registry\n")
    assert imports(f, "pipeline.run") == [(1, "judge.stats"), (2, "judge.verify.check"),
                                          (3, "models.backends.registry")]
