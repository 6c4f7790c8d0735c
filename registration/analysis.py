"""[analysis]: how the registered hypotheses are decided: the bootstrap, the decision rule, the family, the style
covariates, what gold does to a decision and the power a gold-corrected decision should have."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput

from . import vocabulary
from .settings import BOUNDS, bounded, check_keys, setting
from .vocabulary import DEFAULT_METHOD, DEFAULT_RULE, METHODS

ANALYSIS_KEYS = ("resamples", "method", "seed", "max_unscored", "decision_rule", "min_clusters", "calibration_sims",
                 "calibration_ceiling", "family_adjustment", "style", "judge_error", "target_power",
                 "assumed_gold_correlation", "pass_score")
# How the registered hypotheses are controlled as one family ([analysis] family_adjustment;
# judge.numbers.biases.family_decisions): Holm's step-down (the default: no order needed, uniformly more powerful than
# Bonferroni), a fixed sequence in the registered order of [[hypotheses]], or no adjustment (each hypothesis at its
# own alpha).
FAMILIES = ("holm", "fixed-sequence", "none")
# Style covariates a paired difference may be adjusted for, over a hypothesis's own pairs
# (judge.numbers.biases.style_counts): answer length is always one of them.
STYLES = ("length", "headers", "list_items", "citations")
JUDGE_ERROR = ("report", "decide")  # what gold does to a decision: an interval beside it, or its bound


@dataclass(frozen=True)
class Analysis:
    resamples: int = 10000
    method: str = DEFAULT_METHOD  # registration.vocabulary.METHODS
    seed: int = 0
    max_unscored: float = 0.10  # above this share of unscored answers in either arm: inconclusive
    rule: str = DEFAULT_RULE  # the decision rule (registration.vocabulary.RULES)
    min_clusters: int = 10  # a set that declares clusters: fewer clusters than this in a comparison is inconclusive
    calibration_sims: int = 200  # data sets simulated at the boundary to measure each decision's false-claim rate
    calibration_ceiling: float | None = None  # the calibration line flags a rate above it; None: 2 * alpha
    family: str = "holm"  # FAMILIES: how the registered hypotheses are adjusted as one family
    style: tuple[str, ...] = ("length",)  # STYLES the style caution adjusts for; length always first
    # "report": the prediction-powered (gold-corrected) interval is printed beside each decision, with a caution
    # where it would decide otherwise; "decide": it is the decision's bound
    judge_error: str = "report"
    # the power the gold-corrected decision should have at the margin: `judge label --sample` and the report say how
    # many labelled questions reach it (judge.numbers.stats.ppi_power)
    target_power: float = 0.8
    # before gold exists, the correlation of the gold and the judge's paired differences that power is stated at
    assumed_gold_correlation: float = 0.5
    # a sample passes when its score is at or above this (pass^k, pass@k: judge.stats.stability); None: the rubric's
    # highest score
    pass_score: float | None = None


def parse_analysis(at: Any, file: Path, seed: int) -> Analysis:
    where = "[analysis]"
    check_keys(at, ANALYSIS_KEYS, file, where)
    resamples = bounded(at, "resamples", "integer", file, where, 10000)
    method = setting(at, "method", "string", file, where, DEFAULT_METHOD)
    if method not in METHODS:
        raise BadInput(file, f"{where} method must be {' or '.join(repr(m) for m in METHODS)}", field="method")
    max_unscored = setting(at, "max_unscored", "number", file, where, 0.10)
    if not 0 <= max_unscored <= 1:
        raise BadInput(file, f"{where} max_unscored is a share of answers, in [0, 1]; got {max_unscored!r}",
                       field="max_unscored")
    rule = setting(at, "decision_rule", "string", file, where, DEFAULT_RULE)
    if rule not in vocabulary.RULES:  # read when parsed: the words both paths' rule registries are held to
        raise BadInput(file, f"{where} decision_rule must be one of {', '.join(map(repr, vocabulary.RULES))}, not "
                       f"{rule!r}", field="decision_rule")
    counts = {key: bounded(at, key, "integer", file, where, default)
              for key, default in (("min_clusters", 10), ("calibration_sims", 200))}
    work = BOUNDS["calibration_work"]
    if counts["calibration_sims"] * resamples > work.high:
        raise BadInput(file, f"{where} calibration_sims x resamples = {counts['calibration_sims'] * resamples:,} "
                       f"exceeds {work.high:,} ({work.why}): register fewer of either", field="calibration_sims")
    ceiling = setting(at, "calibration_ceiling", "number", file, where, None)
    if ceiling is not None and not 0 < ceiling < 1:
        raise BadInput(file, f"{where} calibration_ceiling must be a number in (0, 1), not {ceiling!r}",
                       field="calibration_ceiling")
    family = setting(at, "family_adjustment", "string", file, where, "holm")
    if family not in FAMILIES:
        raise BadInput(file, f"{where} family_adjustment must be one of {', '.join(repr(f) for f in FAMILIES)}, not "
                       f"{family!r}", field="family_adjustment")
    style = setting(at, "style", "strings", file, where, ["length"])
    for name in style:
        if name not in STYLES:
            raise BadInput(file, f"{where} style names {name!r}, which is not a style covariate; the covariates: "
                           f"{', '.join(STYLES)}", field="style")
    if len(set(style)) != len(style):
        raise BadInput(file, f"{where} style lists a covariate twice: {style}", field="style")
    judge_error = setting(at, "judge_error", "string", file, where, "report")
    if judge_error not in JUDGE_ERROR:
        raise BadInput(file, f"{where} judge_error must be one of {', '.join(repr(x) for x in JUDGE_ERROR)}, not "
                       f"{judge_error!r}", field="judge_error")
    target_power = setting(at, "target_power", "number", file, where, 0.8)
    if not 0 < target_power < 1:
        raise BadInput(file, f"{where} target_power is a probability in (0, 1), not {target_power!r}",
                       field="target_power")
    rho = setting(at, "assumed_gold_correlation", "number", file, where, 0.5)
    if not 0 <= rho <= 1:
        raise BadInput(file, f"{where} assumed_gold_correlation is a correlation the judge's scores help by, in "
                       f"[0, 1], not {rho!r}", field="assumed_gold_correlation")
    pass_score = setting(at, "pass_score", "number", file, where, None)  # inside the rubric's scale: judge.preflight
    return Analysis(resamples=resamples, method=method, seed=bounded(at, "seed", "integer", file, where, seed),
                    max_unscored=float(max_unscored), rule=rule, min_clusters=counts["min_clusters"],
                    calibration_sims=counts["calibration_sims"],
                    calibration_ceiling=None if ceiling is None else float(ceiling), family=family,
                    style=tuple(s for s in STYLES if s == "length" or s in style), judge_error=judge_error,
                    target_power=float(target_power), assumed_gold_correlation=float(rho), pass_score=pass_score)
