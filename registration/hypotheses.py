"""[[hypotheses]]: what a registered hypothesis claims of two arms at one quant, checked when prereg.toml is loaded."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput

from .settings import bounded, check_keys, setting
from .spec import ArmSpec
from .vocabulary import DEFAULT_STATISTIC, KINDS, PASS_HAT_K, STATISTICS

HYPOTHESIS_KEYS = ("id", "text", "a", "b", "quant", "kind", "margin", "alpha", "subset", "statistic")


@dataclass(frozen=True)
class Hypothesis:
    id: str
    a: str  # reference arm
    b: str  # arm under test: the estimate is mean(b) - mean(a)
    quant: str
    kind: str
    margin: float
    alpha: float
    subset: tuple[str, ...] = ()  # question tags; empty = all questions
    text: str = ""
    statistic: str = DEFAULT_STATISTIC  # registration.vocabulary.STATISTICS: what each question contributes


def parse_hypothesis(where: str, t: Any, file: Path, arms: dict[str, ArmSpec], before: list[Hypothesis]) -> Hypothesis:
    check_keys(t, HYPOTHESIS_KEYS, file, where)
    hid = setting(t, "id", "string", file, where)
    if not hid.strip():
        raise BadInput(file, f"{where} id must not be empty", field="id")
    if any(h.id == hid for h in before):
        raise BadInput(file, f"{where} repeats hypothesis id {hid!r}: ids must be unique (reports and verify key "
                       "comparisons by id)", field="id")
    quant = setting(t, "quant", "string", file, where)
    for side in ("a", "b"):
        arm = setting(t, side, "string", file, where)
        if arm not in arms:
            raise BadInput(file, f"{where} names unknown arm {arm!r}", field=side)
        if quant not in arms[arm].quants:
            raise BadInput(file, f"{where}: arm {arm!r} has no quant {quant!r}", field="quant")
    if t["a"] == t["b"]:
        raise BadInput(file, f"{where} compares arm {t['a']!r} with itself", field="b")
    kind, margin, alpha = decision_settings(t, file, where)
    subset = setting(t, "subset", "strings", file, where, [])
    statistic = setting(t, "statistic", "string", file, where, DEFAULT_STATISTIC)
    if statistic not in STATISTICS:
        raise BadInput(file, f"{where} statistic must be one of {STATISTICS}, got {statistic!r}", field="statistic")
    return Hypothesis(id=hid, a=t["a"], b=t["b"], quant=quant, kind=kind, margin=margin, alpha=alpha,
                      subset=tuple(subset), text=setting(t, "text", "string", file, where, ""), statistic=statistic)


def decision_settings(t: dict, file: Path, where: str) -> tuple[str, float, float]:
    """A registered decision's kind, margin and one-sided alpha (a hypothesis's, a comparison with a previous
    run's), each checked."""
    kind = setting(t, "kind", "string", file, where)
    if kind not in KINDS:
        raise BadInput(file, f"{where} kind must be one of {KINDS}", field="kind")
    margin = bounded(t, "margin", "number", file, where)
    if kind == "equivalence" and margin == 0:
        raise BadInput(file, f"{where} an equivalence margin of 0 can never be shown: register the largest "
                       "difference that still counts as equivalent", field="margin")
    alpha = setting(t, "alpha", "number", file, where)
    if not 0 < alpha < 0.5:
        raise BadInput(file, f"{where} alpha (one-sided) must be in (0, 0.5), got {alpha!r}", field="alpha")
    return kind, float(margin), float(alpha)


def check_statistic(where: str, h: Hypothesis, pass_score: float | None, judge_error: str, panel_rule: str,
                    file: Path) -> None:
    """A pass^k hypothesis needs the registered pass score its indicator is taken at ([analysis] pass_score): the
    rubric's highest score is a default for a description, not for a registered claim. It is decided on the primary
    judge's samples by the judge's own interval: a gold-corrected decision ([analysis] judge_error = "decide") and a
    panel rule other than "primary" decide on mean scores, so they are refused beside it."""
    if h.statistic != PASS_HAT_K:
        return
    if pass_score is None:
        raise BadInput(file, f'{where} statistic = "{PASS_HAT_K}" needs [analysis] pass_score: register the score '
                       "a sample must reach to pass", field="statistic")
    other = ("[analysis] judge_error = \"decide\"" if judge_error == "decide"
             else f"[judge] panel_rule = {panel_rule!r}" if panel_rule != "primary" else None)
    if other is not None:
        raise BadInput(file, f'{where} statistic = "{PASS_HAT_K}" is decided on the primary judge\'s own samples, '
                       f"but {other} decides on mean scores: register the mean, or that setting's default",
                       field="statistic")
