"""One class per contract: a name core/records/ defines (Calibration, Estimate, Offset, ...) is defined nowhere else in
the product, so the statistics return the contract itself, never a look-alike turned into a dict to be checked."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from test_layers import LAYERS, product_modules

from conftest import ROOT

pytestmark = pytest.mark.unit

RECORDS = Path("core") / "records"


def class_names(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every class a module defines, nested ones included."""
    return [(n.lineno, n.name) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.ClassDef)]


def duplicates(root: Path) -> list[str]:
    """Each class of a product module outside core/records/ named as a class of core/records/."""
    modules = product_modules(root, tuple(p for p, _ in LAYERS))
    contracts = {name for path in sorted((root / RECORDS).glob("*.py")) for _, name in class_names(path)}
    return [f"{path.relative_to(root)}:{line}: class {name} is also a contract of core/records/"
            for path in modules.values() if RECORDS not in path.relative_to(root).parents
            for line, name in class_names(path) if name in contracts]


def test_no_contract_name_is_defined_twice():
    assert duplicates(ROOT) == []


def test_a_second_class_of_a_contract_name_is_found(tmp_path):
    """Planted: a statistics module with its own Calibration, beside the contract's."""
    (tmp_path / "core" / "records").mkdir(parents=True)
    (tmp_path / "core" / "records" / "comparisons.py").write_text("class Calibration:\n    pass\n")
    (tmp_path / "judge" / "numbers" / "stats").mkdir(parents=True)
    (tmp_path / "judge" / "numbers" / "stats" / "calibration.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Calibration:\n    rate: float\n")
    (tmp_path / "judge" / "numbers" / "stats" / "paired.py").write_text("class Paired:\n    pass\n")
    assert duplicates(tmp_path) == [
        "judge/numbers/stats/calibration.py:5: class Calibration is also a contract of core/records/"]


def test_a_contract_built_by_a_writer_writes_its_declared_order_and_leaves_an_absent_field_out():
    """Calibration (boundary, sims, claims, rate, ceiling, seed, interval): built with its keywords in another order,
    it writes the declared order; `interval` (a str, never null) None is absent, "ppi" is written last. Estimate's
    `df` (float | None) None is written as null."""
    from core.records import Calibration, Estimate

    c = Calibration(seed=3, ceiling=0.05, rate=0.25, claims=1, sims=4, boundary=-0.1)
    assert list(c.to_dict().items()) == [("boundary", -0.1), ("sims", 4), ("claims", 1), ("rate", 0.25),
                                         ("ceiling", 0.05), ("seed", 3)]
    assert list(dataclasses.replace(c, interval="ppi").to_dict())[-1] == "interval"
    e = Estimate(method="ppi", rule="normal", alpha=0.025, estimate=0.1, se=0.2, df=None, low=-0.3, high=0.5,
                 questions=10, labelled=4, strata=())
    assert e.to_dict() == {"method": "ppi", "rule": "normal", "alpha": 0.025, "estimate": 0.1, "se": 0.2, "df": None,
                           "low": -0.3, "high": 0.5, "questions": 10, "labelled": 4, "strata": []}
