"""`python -m judge verify RESULTS_DIR`: adversarial recomputation from the raw files alone.

Four checks, each naming what no longer matches:
1. the seal of the experiment; every sha256 the folder records (binding.json's registration, run.json's hashes)
   against the experiment folder; run.json's registered part (scope, judges, settings: judge.results.runinfo) against
   binding.json and the registration, whose values every later check uses instead of run.json's; and the sha256 of
   every raw file numbers.json was computed from;
2. every number in numbers.json, recomputed twice: by the main analysis and by a separate, plain-Python path,
   judge.verify.second_path, which imports nothing of the main path's code (own loops for means and counts; exact
   per-question means; the bootstrap, or cluster bootstrap, on the same resamples drawn again in exact Fractions;
   its own implementation of the score rule; its own verdicts and count of registered clusters). Decisions are
   recomputed with the rule the registration names (the default when it names none), never with one recorded in
   the folder. The calibration itself (thousands of simulated decisions) is recomputed from
   that path's own inputs by judge.numbers.stats.calibration, seeded, and the power figures (mde, n_for_margin, and
   under
   ``judge_error = "decide"`` the corrected decision's ``judge_error.power``) by the main path only (a folder
   decided before that power was stated lacks it: listed unchecked). With gold, the judge's error is recomputed by
   judge.verify.second_path.judge_error (agreement, offsets and their bootstrap intervals, the corrected intervals),
   which then applies what the registration says the gold does to the second path's own verdicts (``judge_error =
   "decide"``: the family steps down on the second path's own corrected verdicts, and the corrected interval's
   calibration is reported; ``min_gold_agreement``) before they are compared; every sample drawn for labelling
   (labels/_samples.jsonl) is drawn again by that path from its recorded population, n and seed, and one whose
   picks the seed does not draw, or whose population is not the run's questions, is a finding;
3. report.md, re-rendered from the verified numbers, and review.md (judge.outputs.review_md), from the raw files, each
   compared line by line;
4. the raw files themselves, re-derived from the rawest evidence they hold, and checked complete against the
   scope binding.json registered (judge.verify.rederive), against the call caches the verifier names or its own
   environment's, never a location the folder names.
The anchor (judge.results.files.anchor) is returned to be printed, and compared with one a reviewer recorded.
A list in numbers.json whose entries repeat a name (two comparisons with one id) is a finding, and
each entry is compared on its own, so a second entry cannot hide an edit to the first.
The retry rule of answers.jsonl and judgments.jsonl (a key's last record is its current one; every
earlier record of the key is an `error` superseded by the next, whose `retry_of` is its line) is
read by hand by the second path, not through core.jsonl.current, and checked: a duplicate that is not a retry of
an error is a finding naming file, line and field, and the main path must refuse the same file.
A raw record that breaks its contract (core.records: a field missing or of the wrong type) is not a
finding but bad input, exit 2, as on the main path: neither path can read it.
The amendment chain is checked twice too: by registration.seal and judge.numbers.analysis, and by hand from the raw
amendments.jsonl and judgments.jsonl (hash chain, numbering, and the rule that an amendment dated at or
after the first judgment of this run cannot govern it unless marked post hoc); the two must agree.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arms.folder import BINDING, read_binding, registration
from core import jsonl
from core.errors import BadInput, BadRecord
from core.records import Numbers, RunInfo
from models.cache import cache_dir
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.rubric import load_rubric, rubric_dir
from registration.seal import verify_seal, withheld

from ..gold.sources import Recorded, run_gold
from ..judging.cost import costs
from ..numbers.analysis import compute_numbers, late_amendments
from ..numbers.stats.calibration import calibrate
from ..numbers.stats.rule import Scale
from ..outputs.report import SUMMARY_HEADING, render
from ..outputs.review_md import REVIEW, review_markdown
from ..results.binding import binding_findings
from ..results.files import RAW_FILES, anchor, raw_sha256
from ..results.runinfo import Scope, bound_scope, merged, registered
from .rederive import Replies, rederive
from .second_path import decisions as second_path
from .second_path.biases import recheck as recheck_biases
from .second_path.judge_error import corrected_verdicts, drawn_questions
from .second_path.judge_error import decide as decide_with_gold
from .second_path.judge_error import recompute as recompute_validity
from .second_path.stability import recompute as recompute_stability

TOL = 1e-9


def _key(v: dict) -> str | None:
    """How a row of a list in numbers.json is named in a mismatch: by id, hypothesis, judges or cell."""
    if "id" in v:
        return str(v["id"])
    if "hypothesis" in v:
        return str(v["hypothesis"])
    if "judges" in v and isinstance(v["judges"], list):
        return " vs ".join(map(str, v["judges"]))
    if "arm" in v and "quant" in v:
        return f"{v['arm']}/{v['quant']}"
    return None


def _leaves(x: Any, path: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        out = {}
        for name, v in zip(_names(x), x, strict=False):
            out.update(_leaves(v, f"{path}[{name}]"))
        return out
    return {path: x}


def _names(rows: list[dict]) -> list[str]:
    """Each row's name; a repeated name gets its occurrence (`H1#2`), so a second entry can never hide the first."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for v in rows:
        seen[_key(v)] += 1
        out.append(_key(v) if seen[_key(v)] == 1 else f"{_key(v)}#{seen[_key(v)]}")
    return out


def duplicate_names(x: Any, path: str = "") -> list[str]:
    """Every list in numbers.json whose rows repeat a name (hypothesis id, cell, judges): a finding each."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out += duplicate_names(v, f"{path}.{k}" if path else str(k))
    elif isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        names = [_key(v) for v in x]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):
            out.append(f"numbers.json {path}: {names.count(name)} entries are named {name!r}; each must be unique, "
                       "and every entry is compared on its own")
        for v in x:
            out += duplicate_names(v, f"{path}[{_key(v)}]")
    return out


def renamed_entries(stored: dict, recomputed: dict) -> list[str]:
    """numbers.json's comparisons, subsets and cells named otherwise than the recomputation names them (an id no
    registered hypothesis has, an arm or quant the scope does not have): one finding each, naming the entry by its
    place and what was expected there, before the field-by-field differences that follow from it."""
    out = []
    for section, what in (("comparisons", "registered hypothesis of this run"),
                          ("subsets", "subset of a registered hypothesis"), ("cells", "cell of the bound scope")):
        want = [_key(v) for v in recomputed.get(section, [])]
        for i, v in enumerate(stored.get(section, [])):
            if _key(v) not in want:
                expected = [n for n in want if n not in {_key(x) for x in stored[section]}]
                out.append(f"numbers.json {section}[{i}] is named {_key(v)!r}: no {what} is; expected "
                           f"{' or '.join(map(repr, expected)) if expected else 'no further entry'}")
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal, floats within TOL (also inside lists, such as a kappa interval)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if not numbers:  # a float against None, a bool (True == 1.0), a string, a list or an object
            return False
        return math.isclose(float(a), float(b), rel_tol=TOL, abs_tol=TOL)
    return a == b


def diff_numbers(stored: dict, recomputed: dict, label: str) -> list[str]:
    s, r = _leaves(stored), _leaves(recomputed)
    out = []
    for k in sorted(set(s) | set(r)):
        if k not in r:
            out.append(f"numbers.json {k} = {s[k]!r}: not produced by the {label}")
        elif k not in s:
            out.append(f"numbers.json is missing {k} (the {label} gives {r[k]!r})")
        elif not _same(s[k], r[k]):
            out.append(f"numbers.json {k} = {s[k]!r}, but the {label} gives {r[k]!r}")
    return out


def _utc(text: Any) -> dt.datetime | None:
    """An ISO 8601 time with its UTC offset, else None: a time without a zone cannot be ordered."""
    try:
        t = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else None


def _first_judgment(run_dir: Path, problems: list[str]) -> tuple[dt.datetime, str] | None:
    """The earliest recorded judgment time in the raw judgments.jsonl, parsed (not compared as text)."""
    first = None
    for no, j in jsonl.read(run_dir / "judgments.jsonl"):
        if j.get("time") is None:
            continue
        t = _utc(j["time"])
        if t is None:
            problems.append(f"amendments: {run_dir / 'judgments.jsonl'}:{no}: field 'time': {j['time']!r} is not an "
                            "ISO 8601 time with a UTC offset")
        elif first is None or t < first[0]:
            first = (t, j["time"])
    return first


def amendment_check(exp_dir: Path, run_dir: Path, stored: list[dict]) -> dict[str, Any]:
    """Re-check amendments.jsonl from its raw bytes, by hand, without registration.seal or judge.numbers.analysis.

    The chain is rebuilt as registration.seal defines it: amendment 1's `prev` is the sha256 of MANIFEST, each
    later `prev` the sha256 of the previous record in canonical JSON (sorted keys, no spaces, UTF-8).
    The last record has no successor to chain it, so each record is also compared with the
    `amendments` numbers.json was computed from. Returns every finding (`problems`), the line of the
    first break the main seal check would also see (`broken_at`, else None), and the numbers of the
    amendments dated at or after the first judgment and not marked post hoc (`late`).
    """
    path, manifest = exp_dir / "amendments.jsonl", exp_dir / "MANIFEST"
    out: dict[str, Any] = {"problems": [], "broken_at": None, "late": set()}

    def finding(line: int, field: str | None, message: str, chain: bool = False) -> None:
        out["problems"].append(f"amendments: {path}:{line}:{f' field {field!r}:' if field else ''} {message}")
        if chain and out["broken_at"] is None:
            out["broken_at"] = line

    first = _first_judgment(run_dir, out["problems"])
    prev = hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.exists() else None
    prev_line, k = 0, 0
    lines = path.read_bytes().split(b"\n") if path.exists() else [b""]
    for no, raw in enumerate(lines[:-1], start=1):  # the last piece is "" or a partial record a kill left
        if not raw.strip():
            continue
        k += 1
        try:
            rec = jsonl.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:  # ValueError: invalid JSON, or a key repeated in an object
            finding(no, None, f"amendment {k} is not valid JSON ({e}); nothing after it can be chained", chain=True)
            break
        if not isinstance(rec, dict):
            finding(no, None, f"amendment {k} is not a JSON object; nothing after it can be chained", chain=True)
            break
        missing = [f for f in ("date", "text", "prev") if f not in rec]
        for f in missing:
            finding(no, f, f"amendment {k} is missing it; nothing after it can be chained", chain=True)
        if missing:
            break
        link = "MANIFEST" if prev_line == 0 else f"line {prev_line}"
        if prev is None:
            finding(no, "prev", f"amendment {k} cannot be chained: {manifest} is missing", chain=True)
        elif rec["prev"] != prev:
            finding(no, "prev", f"hash chain broken at amendment {k}, the link from {link} to line {no}: expected "
                    f"{prev[:12]}…, found {str(rec['prev'])[:12]}…; {link} was changed after amendment {k} was "
                    "chained to it, or an amendment was inserted or removed here", chain=True)
        if rec.get("n") != k:
            finding(no, "n", f"reads {rec.get('n')!r}, but this is amendment {k} of the chain")
        post_hoc = rec.get("post_hoc", False)
        if not isinstance(post_hoc, bool):
            finding(no, "post_hoc", f"amendment {k} reads {post_hoc!r}; it must be true or false")
        date = _utc(rec["date"])
        if date is None:
            finding(no, "date", f"amendment {k} reads {rec['date']!r}, not an ISO 8601 time with a UTC offset")
        elif first and date >= first[0] and post_hoc is not True:
            out["late"].add(k)
            finding(no, "date", f"amendment {k} is dated {rec['date']}, not before the first judgment of this run "
                    f"({first[1]}), and is not marked post hoc: it cannot govern this run (record such an "
                    "amendment with `judge amend --post-hoc`)")
        if k > len(stored):
            finding(no, None, f"amendment {k} is not in numbers.json: it was added after the numbers were computed")
        else:
            raw_fields = {"n": rec.get("n"), "date": rec["date"], "text": rec["text"], "post_hoc": post_hoc}
            for f, raw_value in raw_fields.items():
                if stored[k - 1].get(f) != raw_value:
                    finding(no, f, f"amendment {k} reads {raw_value!r}, but numbers.json was computed with "
                            f"{stored[k - 1].get(f)!r}")
        prev = hashlib.sha256(json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                              .encode("utf-8")).hexdigest()
        prev_line = no
    if len(stored) > k:
        out["problems"].append(f"amendments: numbers.json lists {len(stored)} amendment(s), {path} has {k}: "
                               "amendments were removed after the numbers were computed")
    return out


def _disagreement(what: str, main: Any, independent: Any) -> list[str]:
    """A finding when the main path and the independent path reach different results on the same files."""
    if main == independent:
        return []
    return [f"amendments: the two paths disagree on {what}: the main path (registration.seal, judge.numbers.analysis) "
            f"gives {main}, the independent plain-Python check gives {independent}"]


def _subset_of(stored: dict, independent_numbers: dict) -> dict:
    """The stored numbers restricted to the fields the independent path recomputes."""
    def restrict(s: Any, r: Any) -> Any:
        if isinstance(r, dict):
            return {k: restrict(s.get(k) if isinstance(s, dict) else None, v) for k, v in r.items()}
        if isinstance(r, list) and r and isinstance(r[0], dict):
            by = (dict(zip(_names(s), s, strict=False))
                  if isinstance(s, list) and all(isinstance(v, dict) and _key(v) for v in s) else {})
            return [restrict(by.get(name, {}), v) for name, v in zip(_names(r), r, strict=False)]
        return s
    return restrict(stored, independent_numbers)


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


def cost_findings(run: dict, run_dir: Path, exp) -> list[str]:
    """run.json's cost table against the one the raw files and batches.jsonl give (none before costs were kept)."""
    if "cost" not in run:
        return []
    again = {(c["role"], c["name"]): c for c in costs(exp, run["arms"], run["judge"]["panel"],
                                                       set(run["question_ids"]), run_dir)}
    out = []
    for c in run["cost"]:
        other = again.get((c["role"], c["name"]), {})
        for k in sorted(set(c) | set(other)):
            if c.get(k) != other.get(k):
                out.append(f"run.json cost of {c['role']} {c['name']}: {k} reads {c.get(k)!r}, the raw files "
                           f"and batches.jsonl give {other.get(k)!r}")
    return out


@dataclass(frozen=True)
class Verification:
    """What `judge verify` found: every mismatch (exit 1 if any), what it could not check (printed, never
    silent), the folder's anchor (judge.results.files.anchor; None without binding.json), and, for a published bundle,
    what it checked and how it is tied to that anchor (printed)."""

    problems: list[str]
    unchecked: list[str]
    anchor: str | None
    checked: tuple[str, ...] = ()


@dataclass(frozen=True)
class Published:
    """What a published bundle (judge.verify.bundle) gives verify in place of what it withholds: the run's questions,
    those of a private set as the bundle describes them (ids, tags, clusters; no text); the original raw files' and
    binding.json's sha256 (its answers.jsonl and judgments.jsonl are published with values withheld); the original
    folder's anchor; whether that folder had review.md (its report links to it); and what it recorded at publishing
    of the gold sources on the answers whose text it withholds (judge.gold.sources.Recorded). Nothing is re-derived from
    the rows' text then (it is withheld): judge.verify.bundle lists that as unchecked."""

    questions: list[Question]
    raw_sha256: dict[str, str]
    anchor: str
    review: bool
    gold: Recorded = field(default_factory=Recorded)


def cache_file(path: Path) -> Path:
    """A call cache named on the command line: its folder (BLINDEVAL_CACHE's form) or its calls.sqlite."""
    return Path(path) / "calls.sqlite" if Path(path).is_dir() else Path(path)


def folder_scope(run_dir: Path, run: dict, exp: Experiment,
                 questions: list[Question] | None = None) -> tuple[Scope, list[str]]:
    """The scope the folder's binding.json registered. A folder written before folders were bound has none: its
    scope is read from run.json for the checks that follow, and that is a finding of its own."""
    doc = read_binding(run_dir)
    if doc is not None:
        return bound_scope(doc, exp, run_dir / BINDING, questions), []
    judges = {j.name: j for j in exp.judges}
    j = run["judge"]
    named, where = (j["panel"], "judge.panel") if j.get("panel") else ([j.get("primary")], "judge.primary")
    for name in named:
        if name not in judges:
            raise BadInput(run_dir / "run.json", f"names judge {name!r}, which the registration does not have "
                           f"({', '.join(judges)}), and no {BINDING} binds the folder's judges", field=where)
    for arm in run["arms"]:
        if arm not in {a.name for a in exp.arms}:
            raise BadInput(run_dir / "run.json", f"names arm {arm!r}, which the registration does not have, and no "
                           f"{BINDING} binds the folder's arms", field="arms")
    scope = Scope(list(run["arms"]), run.get("limit"), list(run["question_ids"]),
                  [judges[n] for n in named], j.get("mode") or "single",
                  run.get("label_key") or f"blinding:{exp.seed}:{run['name']}")
    return scope, [f"{run_dir / BINDING}: missing: this folder was written before results folders were bound to "
                   "their registration, so nothing registered its scope (arms, questions, judges) to check it "
                   "complete against, and it has no anchor. Run the experiment into a new folder (no call the cache "
                   "holds is paid for again)"]


def bound_registration(exp: Experiment, scope: Scope, bound: dict | None) -> tuple[dict, frozenset, list[str]]:
    """binding.json's registration entries as the experiment folder gives them now (arms.folder.registration);
    the entries that cannot be computed here (a glue module that does not import on this machine), and why."""
    rubric = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir))
    kinds = [("single", rubric)] + ([("pairwise", load_rubric("pairwise", rubric_dir("pairwise", exp.dir)))]
                                    if scope.mode != "single" else [])
    rubrics = {(j.name, kind): j.rubric(r) for j in scope.panel for kind, r in kinds}
    try:
        return registration(exp, scope.arms, scope.panel, scope.mode, rubrics), frozenset(), []
    except BadInput as e:  # a glue imported from the Python path that this machine cannot import
        plain = [a for a in scope.arms if not exp.arm(a).glue]
        now = registration(exp, plain, scope.panel, scope.mode, rubrics)
        skipped = frozenset(k for k in (bound or {}) if k not in now and k.startswith(("glue ", "chat template")))
        return now, skipped, [f"{BINDING}: {', '.join(sorted(skipped))}: not compared with the experiment folder: {e}"]


def record_findings(run: dict, expected: dict, path: Path) -> list[str]:
    """run.json against what the binding and the registration give for its registered part (judge.results.runinfo)."""
    stored, want = _leaves(run), _leaves(expected)
    return [f"{path}: field {k!r}: reads {stored.get(k, '<missing>')!r}, but binding.json and the experiment folder "
            f"give {want[k]!r}" for k in want if k not in stored or not _same(stored[k], want[k])]


def verify(run_dir: Path, exp_dir: Path | None = None, caches: list[Path] | None = None,
           recorded: str | None = None, published: Published | None = None,
           secret_withheld: bool = False) -> Verification:
    """Every mismatch in a results folder. `caches`: the call caches to compare recorded calls with (None: the
    environment's, BLINDEVAL_CACHE or ~/.cache/blindeval; []: none, reported as unchecked); never the location
    the folder names. `recorded`: the anchor a reviewer recorded when the run finished. `published`: the folder is
    a published bundle's (judge.verify.bundle), which stands in for what it withholds. `secret_withheld`: the folder is
    a bundle's, which never holds the blinding secret (judge.verify.rederive: the labels are not re-derived, noted)."""
    run_dir = Path(run_dir)
    for name in ("run.json", "numbers.json", "report.md", *RAW_FILES):
        if not (run_dir / name).exists():
            raise BadInput(run_dir / name, "missing: not a finished results folder")
    run = as_written = RunInfo.read_file(run_dir / "run.json").to_dict()
    numbers = Numbers.read_file(run_dir / "numbers.json").to_dict()
    exp_dir = Path(exp_dir or run["experiment_dir"])
    digest = published.anchor if published else anchor(run_dir)
    problems: list[str] = []
    if recorded is not None and recorded != digest:
        problems.append(f"anchor: this folder's anchor is {digest}, not the {recorded} recorded: something a decision "
                        "depends on (binding.json, run.json, the raw files or numbers.json) changed since")
    amend = amendment_check(exp_dir, run_dir, numbers["amendments"])
    try:
        verify_seal(exp_dir)
    except BadInput as e:
        problems.append(f"seal: {e}")
        problems += amend["problems"]
        if Path(e.file).name == "amendments.jsonl":  # otherwise the seal stopped before it read the amendments
            problems += _disagreement("the first broken line of the amendment chain", e.line, amend["broken_at"])
        return Verification(list(dict.fromkeys(problems)), [], digest)
    problems += _disagreement("the first broken line of the amendment chain", None, amend["broken_at"])
    if published is None:
        refuse_withheld(exp_dir)
    exp = load_experiment(exp_dir)
    scope, unbound = folder_scope(run_dir, run, exp, published and published.questions)
    problems += unbound
    bound = read_binding(run_dir)
    now, skipped, unchecked = bound_registration(exp, scope, bound.registration if bound else None)
    problems += binding_findings(run_dir, exp, now, skipped, amend["late"])
    expected = registered(exp, scope, load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)))
    edited_run = record_findings(run, expected, run_dir / "run.json")
    problems += edited_run
    run = merged(run, expected)  # from here on the scope, judges and settings are the bound ones, never run.json's
    for name, sha in (published.raw_sha256 if published else raw_sha256(run_dir)).items():
        if numbers["raw_sha256"].get(name) != sha:
            problems.append(f"raw file {name}: sha256 {sha[:12]}… differs from the one numbers.json was computed "
                            f"from ({str(numbers['raw_sha256'].get(name))[:12]}…)")
    all_q = published.questions if published else load_questions(exp.set_paths(), exp.set_formats_by_path())
    wanted = set(scope.question_ids)
    questions = {q.id: list(q.tags) for q in all_q if q.id in wanted}
    clusters = {q.id: q.cluster for q in all_q}
    answer_rows = second_path.by_hand(run_dir / "answers.jsonl", ("row",), second_path.VERIFY_ANSWER_FIELDS)
    verdicts = second_path.by_hand(run_dir / "judgments.jsonl", ("judge", "label"))
    rule = answer_rows.problems + verdicts.problems
    problems += rule
    if not rule and not published:  # a file that breaks the retry rule has no current records to re-derive
        replies = Replies([cache_file(p) for p in caches] if caches is not None
                               else [cache_dir() / "calls.sqlite"])
        try:
            found, not_checked = rederive(run_dir, run, exp, all_q, scope, replies, secret_withheld)
            cache_problems, cache_unchecked = replies.findings()
        finally:
            replies.close()
        problems += found + cache_problems
        unchecked += not_checked + cache_unchecked
    try:
        gold = run_gold(exp, run_dir, published.questions, published.gold) if published else run_gold(exp, run_dir)
        if gold is not None and gold.stopped:
            unchecked.append(f"gold: {gold.stopped}, so the gold scores of that answer and every one after it were "
                             "recomputed as errors")
        earlier = earlier_intervals(numbers)
        interval = agreement_interval(numbers)
        main = compute_numbers(exp, all_q, run_dir, run, gold, earlier, interval)
    except BadRecord:  # a record missing a field cannot be read by either path: bad input, not a finding
        raise
    except BadInput as e:  # the main path refuses the raw files (e.g. the retry rule): nothing to compare with
        problems.append(f"the main path refuses the raw files: {e}")
        return Verification(list(dict.fromkeys(problems + amend["problems"])), unchecked, digest)
    unchecked += unstated_power(numbers, main)
    unchecked += unmeasured_stability(numbers, main)
    if published:  # the raw files the numbers were computed from are the originals the bundle stands in for
        main["raw_sha256"] = dict(published.raw_sha256)
    if rule:
        problems.append("retry rule: the two paths disagree: the independent plain-Python check finds the breaches "
                        "above, the main path (core.jsonl.current) accepted the raw files")
    problems += duplicate_names(numbers)
    problems += renamed_entries(numbers, main)
    problems += earlier_rule_findings(numbers, exp)
    problems += earlier_version_findings(numbers, main)
    problems[:0] = labels_since(numbers, main)
    problems += diff_numbers(numbers, main, "recomputation from raw files")
    problems += amend["problems"]
    problems += _disagreement("which amendments are dated after the first judgment and not marked post hoc",
                              sorted(a["n"] for a in late_amendments(main)), sorted(amend["late"]))
    ind = second_path.independent(numbers, run, run_dir, questions, exp, clusters, answer_rows, verdicts,
                                  lambda *args, scale, **kw: calibrate(*args, scale=Scale(*scale), **kw))
    ind["judges"] = second_path.independent_judges(numbers, run, run_dir, questions, exp, answer_rows, verdicts)
    judged = list(verdicts.last.values())
    if "stability" in numbers:
        ind["stability"] = recompute_stability(run, run_dir, exp, questions, clusters, judged)
    blinded = ({r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
               if gold is not None else {})
    corrected = (corrected_verdicts(run, exp, gold, blinded, judged, questions, earlier)
                 if gold is not None and exp.analysis.judge_error == "decide" else None)
    problems += recheck_biases(numbers, run, run_dir, exp, questions, list(answer_rows.last.values()),
                               judged, ind, clusters, corrected)
    totals: dict[str, dict[str, int]] = {}
    for j in verdicts.last.values():
        t = totals.setdefault(f"{j['judge']}/{j.get('rubric', 'correctness')}",
                              {"scored": 0, "unscored": 0, "error": 0, "repaired": 0})
        t[j["status"]] += 1
        t["repaired"] += bool(j.get("repaired"))
    ind["judge_totals"] = totals
    ind["quant_check"] = {"means": {c["arm"]: {} for c in ind["cells"]}}
    for c in ind["cells"]:
        ind["quant_check"]["means"][c["arm"]][c["quant"]] = c["mean"]
    if gold is not None:
        alphas = {c["id"]: (c.get("family") or {}).get("tested_at")  # checked against verify's own family
                  for c in numbers["comparisons"]}
        problems += drawn_questions(gold, blinded, questions)[1]
        check = recompute_validity(run, exp, gold, blinded, judged, questions, alphas, earlier, interval)
        decide_with_gold(ind["comparisons"], check, run, exp, gold, blinded, judged, questions, alphas, earlier)
        if earlier:
            unchecked.append("judge_validity: written by an earlier version, whose agreement intervals resampled "
                             "answers (not whole questions) and whose corrected interval's guard was one score point "
                             "(not half the rubric's range): recomputed as that version computed them; `judge run` "
                             "into the folder recomputes them without any model call")
        elif interval == "percentile":
            unchecked.append("judge_validity: written by an earlier version, whose agreement intervals were percentile "
                             "intervals (not BCa): recomputed as that version computed them; `judge run` into the "
                             "folder recomputes them without any model call")
        problems += diff_numbers(_subset_of(numbers, check), check,
                                 "independent plain-Python recomputation of the judge's error")
    problems += diff_numbers(_subset_of(numbers, ind), ind, "independent plain-Python recomputation")
    problems += cost_findings(run, run_dir, exp)
    review = published.review if published else (run_dir / REVIEW).is_file()
    # report.md is rendered from numbers.json (its contract holds every field the report reads) and from run.json as
    # written, or, where run.json's registered part differs from the registration (named above), from the registered
    # values: an edited or dropped setting is that finding, never a report that cannot be rendered
    actual = (run_dir / "report.md").read_text().splitlines()
    summarised = SUMMARY_HEADING in actual  # a report written before reports opened with a summary has none
    if not summarised:
        unchecked.append(f"report.md: written before reports opened with a summary ({SUMMARY_HEADING!r}); the rest "
                         "is checked line by line, and `judge run` into the folder renders it with one, without any "
                         "model call")
    expected_report = render(Numbers.from_dict(numbers, run_dir / "numbers.json"), RunInfo.from_dict(
        run if edited_run else as_written, run_dir / "run.json"), digest, review, summarised).splitlines()
    for i in range(max(len(expected_report), len(actual))):
        e = expected_report[i] if i < len(expected_report) else "<missing>"
        a = actual[i] if i < len(actual) else "<missing>"
        if e != a:
            problems.append(f"report.md line {i + 1}: reads {a!r}, numbers.json renders {e!r}")
    if not published:
        found, not_checked = review_findings(run_dir, exp_dir)
        problems += found
        unchecked += not_checked
    return Verification(list(dict.fromkeys(problems)), list(dict.fromkeys(unchecked)), digest)


def refuse_withheld(exp_dir: Path) -> None:
    """A results folder is verified against every input it was run on: a private file withheld from the experiment
    folder is bad input, named with the two ways to verify without it (never a message to re-run)."""
    missing = withheld(exp_dir)
    if missing:
        more = f" (and {len(missing) - 1} more private file(s))" if len(missing) > 1 else ""
        raise BadInput(Path(exp_dir) / missing[0], f"is sealed private (MANIFEST binds it by sha256 only) and is not "
                       f"here{more}: verifying a results folder re-derives its raw files from every input the run "
                       "read. Give the experiment folder that holds it with --exp, or verify the bundle `judge "
                       "publish` writes, which needs no private file (`judge verify BUNDLE`)")


def review_findings(run_dir: Path, exp_dir: Path) -> tuple[list[str], list[str]]:
    """review.md rendered again from the raw files and compared line by line, like report.md; a folder written
    before `judge run` wrote it has none (listed as unchecked)."""
    path = run_dir / REVIEW
    if not path.is_file():
        return [], [f"{path}: absent (written by `judge run` since the review appendix existed; a `judge run` into "
                    "the folder writes it, repeating no model call): not compared"]
    try:
        expected, actual = review_markdown(run_dir, exp_dir).splitlines(), path.read_text().splitlines()
    except BadInput as e:  # run.json or the experiment no longer gives the join: named above, and here
        return [f"{REVIEW}: cannot be rendered again from this folder: {e}"], []
    out = []
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else "<missing>"
        a = actual[i] if i < len(actual) else "<missing>"
        if e != a:
            out.append(f"{REVIEW} line {i + 1}: reads {a[:200]!r}, the raw files render {e[:200]!r}")
    if len(out) > 10:  # one edit shifts every line after it: the first ones say where
        out = out[:10] + [f"{REVIEW}: {len(out) - 10} more lines differ from what the raw files render"]
    return out, []
