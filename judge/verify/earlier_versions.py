"""What a folder written by an earlier version of blindeval holds otherwise, said as such and never as a forgery:
numbers it lacks (listed unchecked and left out of the comparison), decisions an earlier rule made (one line naming
the version and what re-decides the folder), intervals recomputed as that version computed them, and the documents'
versions (core.records.migrate migrates them; run.json and numbers.json must be of one version)."""
from __future__ import annotations

from pathlib import Path

from core.records import Numbers, RunInfo


def unstated_power(numbers: dict, main: dict) -> list[str]:
    """A folder decided under ``judge_error = "decide"`` before the corrected decision's power was stated has no
    ``judge_error.power``: the figures decide nothing, so they are left out of the comparison (dropped from the
    recomputation ``main``) and listed as unchecked, never a finding."""
    stored = {c["id"]: c.get("judge_error") or {} for c in numbers["comparisons"]}
    out = []
    for c in main["comparisons"]:
        e = c.get("judge_error") or {}
        if "power" in e and c["id"] in stored and "power" not in stored[c["id"]]:
            del e["power"]
            out.append(f"numbers.json comparison {c['id']}: no judge_error.power (decided before the gold-corrected "
                       "decision's power was stated): not compared; `judge run` into the folder adds it")
    return out


def unmeasured_stability(numbers: dict, main: dict) -> list[str]:
    """A folder written before stability across samples was measured has no `stability`: nothing decided by it, so it
    is left out of the comparison (dropped from the recomputation ``main``) and listed as unchecked, never a
    finding."""
    if "stability" in numbers:
        return []
    del main["stability"]
    return ["numbers.json: no stability (written before pass^k, pass@k and the agreement across samples were "
            "measured): not compared; `judge run` into the folder adds it without any model call"]


def labels_since(numbers: dict, main: dict) -> list[str]:
    """People's labels given after numbers.json was computed change every number that reads gold: one line, put
    first, says so and how to fold them in, so the mismatches after it are read as that and not as a forgery."""
    def human(n: dict) -> int:
        return (((n.get("judge_validity") or {}).get("gold") or {}).get("sources") or {}).get("human") or 0

    before, now = human(numbers), human(main)
    if before == now:
        return []
    return [f"labels/: people's gold scores are {now} now, numbers.json was computed with {before}: labels were given "
            "or removed after the run. Run the same `python -m judge run` into this folder again to fold them in (no "
            "model call is repeated), then verify; the mismatches below follow from it"]


def earlier_rule_findings(numbers: dict, exp) -> list[str]:
    """A folder whose decisions were made by another rule than the one its registration names now (the default
    rule changed: a registration naming none was decided by `bootstrap_and_t` before), or by decision code that
    did not yet know the rubric's scale. verify recomputes with the registered rule only, so a folder can never
    be passed on a rule of the writer's choosing; this line says why its decisions differ and what re-decides
    them."""
    results = [c["result"] for c in numbers["comparisons"] if c["result"] is not None]
    rules = sorted({str(r.get("rule")) for r in results if r.get("rule") != exp.analysis.rule})
    if rules:
        return [f"numbers.json: decided by rule {', '.join(rules)}, but the registration's rule is "
                f"{exp.analysis.rule!r} (the default when [analysis] names none; before it, the default was "
                "'bootstrap_and_t'): `judge run` into the folder re-decides it without any model call"]
    if any("scale" not in r for r in results):
        return ["numbers.json: decided by an earlier version of the decision rules (its results record no rubric "
                "scale): `judge run` into the folder re-decides it without any model call"]
    if "family" not in numbers:
        return ["numbers.json: decided before the registered hypotheses were decided as one family and the judge "
                "biases were measured beside each decision: `judge run` into the folder re-decides it without any "
                "model call"]
    return []


def earlier_version_findings(numbers: dict, main: dict) -> list[str]:
    """Why a folder's verdicts differ from the ones the decision code now gives, where an earlier version decided
    them otherwise: its calibration line withdrew a claim (above `calibration_ceiling`: the calibration is now a
    diagnostic that withdraws nothing), or, under `judge_error = "decide"`, its family stepped down on the judge-only
    verdicts (it now steps down on the gold-corrected ones), or its calibration line under "decide" was the judge's
    where the judge alone was inconclusive (it is now the corrected interval's wherever there is one). The
    differences are findings of their own; this line names the version and what re-decides the folder."""
    again = {c["id"]: c for c in main["comparisons"]}
    out = []
    for c in numbers["comparisons"]:
        m = again.get(c["id"])
        if m is not None and ((m.get("calibration") or {}).get("interval") == "ppi"
                              and (c.get("calibration") or {}).get("interval") != "ppi"):
            out.append(f"numbers.json comparisons[{c['id']}]: its calibration line is the judge's, which an earlier "
                       "version kept under judge_error = \"decide\" where the judge alone was inconclusive; it is now "
                       "the gold-corrected interval's wherever there is one: `judge run` into the folder re-decides "
                       "it without any model call")
        if m is None or m["verdict"] == c["verdict"]:
            continue
        why = ("withdrawn by its calibration line, which an earlier version let withdraw a claim; the calibration is "
               "now a diagnostic that withdraws nothing" if "above the registered ceiling" in c["reason"] else
               "decided under judge_error = \"decide\" by an earlier version, whose family stepped down on the "
               "judge-only verdicts; the family now steps down on the gold-corrected intervals that decide"
               if m["reason"].startswith('judge_error = "decide"') and (c.get("family") or {}).get("size", 1) > 1
               else None)
        if why:
            out.append(f"numbers.json comparisons[{c['id']}]: {why}: `judge run` into the folder re-decides it "
                       "without any model call")
    return out


def earlier_intervals(numbers: dict) -> bool:
    """Whether an earlier version wrote the folder's judge_validity: an agreement without ``resampling`` or a
    corrected estimate without ``step`` (core.records.GoldAgreement, Estimate). Both paths then recompute it as that
    version did (judge.numbers.validity), and verify lists it as unchecked, never as a mismatch."""
    agreements = [j["agreement"] for j in (numbers.get("judge_validity") or {}).get("judges", []) if j["agreement"]]
    estimates = [e for c in numbers["comparisons"] for e in ((c.get("judge_error") or {}).get("ppi"),
                                                               (c.get("judge_error") or {}).get("gold_only")) if e]
    return any("resampling" not in a for a in agreements) or any("step" not in e for e in estimates)


def agreement_interval(numbers: dict) -> str:
    """The agreement intervals' method the folder was written with: "percentile" where an agreement records no
    ``interval`` (core.records.GoldAgreement: written before the intervals were BCa), else "bca". Both paths
    recompute it so."""
    agreements = [j["agreement"] for j in (numbers.get("judge_validity") or {}).get("judges", []) if j["agreement"]]
    return "percentile" if any("interval" not in a for a in agreements) else "bca"


def version_findings(run_dir: Path, run: RunInfo, numbers: Numbers) -> list[str]:
    """run.json and numbers.json are written together by one `judge run`, so of one version of blindeval: a folder
    whose two documents are of different versions had one of them replaced or its version edited. Each is read
    migrated to this version (core.records.migrate), which is expected of an older folder, never a finding."""
    written = {name: doc.migrated[0].version if doc.migrated else doc.VERSION
               for name, doc in (("run.json", run), ("numbers.json", numbers))}
    if written["run.json"] == written["numbers.json"]:
        return []
    return [f"{run_dir / 'numbers.json'}: field {Numbers.VERSION_KEY!r}: written as version "
            f"{written['numbers.json']}, but run.json as version {written['run.json']}: one `judge run` writes both, "
            "of one version, so one of them was replaced or its version edited"]
