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

from dataclasses import dataclass, field
from pathlib import Path

from arms.folder import read_binding
from core import jsonl
from core.errors import BadInput, BadRecord
from core.records import Numbers, RunInfo
from models.cache import cache_dir
from registration.prereg import load_experiment
from registration.questions import Question, load_questions
from registration.rubric import load_rubric, rubric_dir
from registration.seal import verify_seal

from ..gold.sources import Recorded, run_gold
from ..numbers.analysis import compute_numbers, late_amendments
from ..numbers.stats.calibration import calibrate
from ..numbers.stats.rule import Scale
from ..outputs.report import SUMMARY_HEADING, render
from ..outputs.review_md import REVIEW, review_markdown
from ..results.binding import binding_findings
from ..results.files import RAW_FILES, anchor, raw_sha256
from ..results.runinfo import merged, registered
from .amendments import amendment_check, disagreement
from .compare import diff_numbers, duplicate_names, renamed_entries, subset_of
from .earlier_versions import (
    agreement_interval,
    earlier_intervals,
    earlier_rule_findings,
    earlier_version_findings,
    labels_since,
    unmeasured_stability,
    unstated_power,
    version_findings,
)
from .previous_runs import previous_anchors
from .rederive import rederive
from .replies import Replies
from .scope import bound_registration, cost_findings, folder_scope, record_findings, refuse_withheld
from .second_path import decisions as second_path
from .second_path import raw_files
from .second_path.biases import recheck as recheck_biases
from .second_path.judge_error import corrected_verdicts, drawn_questions
from .second_path.judge_error import decide as decide_with_gold
from .second_path.judge_error import recompute as recompute_validity
from .second_path.judges import independent_judges
from .second_path.previous_runs import recompute as recompute_previous_runs
from .second_path.stability import recompute as recompute_stability


@dataclass(frozen=True)
class Verification:
    """What `judge verify` found: every mismatch (exit 1 if any), what it could not check (printed, never
    silent), the folder's anchor (judge.results.files.anchor; None without binding.json), for a published bundle
    what it checked and how it is tied to that anchor, and the documents read migrated from an earlier version
    (core.records.migrate: expected of an older folder, never a finding; printed)."""

    problems: list[str]
    unchecked: list[str]
    anchor: str | None
    checked: tuple[str, ...] = ()
    migrated: tuple[str, ...] = ()  # each document written by an earlier version, as it was read (printed)


@dataclass(frozen=True)
class Published:
    """What a published bundle (judge.verify.bundle) gives verify in place of what it withholds: the run's questions,
    those of a private set as the bundle describes them (ids, tags, clusters; no text); the original raw files' and
    binding.json's sha256 (its answers.jsonl and judgments.jsonl are published with values withheld); the original
    folder's anchor; whether that folder had review.md (its report links to it); and what it recorded at publishing
    of the gold sources on the answers whose text it withholds (judge.gold.sources.Recorded). Nothing is re-derived from
    the rows' text then (it is withheld): judge.verify.bundle_check lists that as unchecked."""

    questions: list[Question]
    raw_sha256: dict[str, str]
    anchor: str
    review: bool
    gold: Recorded = field(default_factory=Recorded)


def cache_file(path: Path) -> Path:
    """A call cache named on the command line: its folder (BLINDEVAL_CACHE's form) or its calls.sqlite."""
    return Path(path) / "calls.sqlite" if Path(path).is_dir() else Path(path)


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
    run_doc, numbers_doc = RunInfo.read_file(run_dir / "run.json"), Numbers.read_file(run_dir / "numbers.json")
    run = as_written = run_doc.to_dict()  # of this version: an older file is read migrated, as written otherwise
    numbers = numbers_doc.to_dict()
    migrated = tuple(map(str, run_doc.migrated + numbers_doc.migrated))
    if exp_dir is None and run_doc.experiment_dir is None:
        raise BadInput(run_dir / "run.json", "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    exp_dir = Path(exp_dir or run_doc.experiment_dir)
    digest = published.anchor if published else anchor(run_dir)
    problems: list[str] = version_findings(run_dir, run_doc, numbers_doc)
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
            problems += disagreement("the first broken line of the amendment chain", e.line, amend["broken_at"])
        return Verification(list(dict.fromkeys(problems)), [], digest, migrated=migrated)
    problems += disagreement("the first broken line of the amendment chain", None, amend["broken_at"])
    if published is None:
        refuse_withheld(exp_dir)
    exp = load_experiment(exp_dir)
    problems += previous_anchors(exp)
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
        if numbers_doc.raw_sha256.get(name) != sha:
            problems.append(f"raw file {name}: sha256 {sha[:12]}… differs from the one numbers.json was computed "
                            f"from ({str(numbers_doc.raw_sha256.get(name))[:12]}…)")
    all_q = published.questions if published else load_questions(exp.set_paths(), exp.set_formats_by_path())
    wanted = set(scope.question_ids)
    questions = {q.id: list(q.tags) for q in all_q if q.id in wanted}
    clusters = {q.id: q.cluster for q in all_q}
    answer_rows = raw_files.by_hand(run_dir / "answers.jsonl", ("row",), raw_files.VERIFY_ANSWER_FIELDS)
    verdicts = raw_files.by_hand(run_dir / "judgments.jsonl", ("judge", "label"))
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
        computed = compute_numbers(exp, all_q, run_dir, RunInfo.from_dict(run, run_dir / "run.json"), gold, earlier,
                                    interval)
        main = computed.to_dict()
    except BadRecord:  # a record missing a field cannot be read by either path: bad input, not a finding
        raise
    except BadInput as e:  # the main path refuses the raw files (e.g. the retry rule): nothing to compare with
        problems.append(f"the main path refuses the raw files: {e}")
        return Verification(list(dict.fromkeys(problems + amend["problems"])), unchecked, digest, migrated=migrated)
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
    problems += disagreement("which amendments are dated after the first judgment and not marked post hoc",
                              sorted(a.n for a in late_amendments(computed)), sorted(amend["late"]))
    ind = second_path.independent(numbers, run, run_dir, questions, exp, clusters, answer_rows, verdicts,
                                  lambda *args, scale, **kw: calibrate(*args, scale=Scale(*scale), **kw))
    ind["judges"] = independent_judges(numbers, run, run_dir, questions, exp, answer_rows, verdicts)
    judged = list(verdicts.last.values())
    if "run_comparisons" in numbers:
        ind["run_comparisons"] = recompute_previous_runs(numbers, run, run_dir, exp, clusters, ind["cells"])
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
        problems += diff_numbers(subset_of(numbers, check), check,
                                 "independent plain-Python recomputation of the judge's error")
    problems += diff_numbers(subset_of(numbers, ind), ind, "independent plain-Python recomputation")
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
    return Verification(list(dict.fromkeys(problems)), list(dict.fromkeys(unchecked)), digest, migrated=migrated)


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
