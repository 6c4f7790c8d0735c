"""report.md, rendered from numbers.json and run.json only (so the verifier can re-render it)."""
from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from core.records import ContaminationSection, Numbers, RunInfo
from registration.gold import ranked

from ..results.files import RUN, anchor, read_numbers
from .summary import markdown, summary

TEMPLATES = Path(__file__).resolve().parent / "templates"
# the report's first section (judge.outputs.summary), in reports written since it existed
SUMMARY_HEADING = "## Summary"


def owe_the_reader(numbers: Numbers, run: RunInfo) -> list[str]:
    """Automatic caveats: the things a careful reviewer would otherwise have to dig out."""
    out = list(run.judge.warnings)
    for c in numbers.comparisons:
        r = c.result
        if r and c.margin and r.mde > c.margin:
            out.append(f"{c.id}: with n = {r.n} the smallest detectable effect is {r.mde:.3f}, larger than "
                       f"the margin {c.margin:.2f}; about {r.n_for_margin} questions would be needed.")
    for c in numbers.comparisons:
        r = c.result
        if r and r.sd_diff == 0:
            out.append(f"{c.id}: every one of the {r.n} paired differences is {r.diff:+.3f}, so the interval "
                       "has no width: the judge did not separate these arms on these questions, which is weaker "
                       "evidence than the zero width suggests.")
    for a in numbers.amendments:
        if a.post_hoc or not a.before_first_judgment:
            out.append(f"Amendment {a.n} was written after judging began: it is reported, but cannot have been "
                       "registered blind.")
    if numbers.subsets:
        out.append("Subset results are secondary and exploratory (Bonferroni-adjusted per hypothesis); "
                   "only the registered hypotheses are decisions.")
    if run.limit:
        out.append(f"This run used only the first {run.limit} questions (--limit): a quick look, not a result.")
    unscored = sum(c.unscored + c.judge_errors for c in numbers.cells)
    if unscored:
        out.append(f"{unscored} answers have no verdict (unscored or judge errors); they are excluded, not zeroed.")
    failed = {f"{c.arm}/{c.quant}": c.answer_errors for c in numbers.cells if c.answer_errors}
    if failed:
        out.append(f"{sum(failed.values())} answers are error rows, never judged (the model call failed after its "
                   "registered attempts: a timeout, a lost or cut-off connection, an HTTP error or an unreadable "
                   "reply; each row's cause is in answers.jsonl): " + ", ".join(f"{k} {v}" for k, v in failed.items())
                   + ". They are excluded, not zeroed.")
    # each arm's or judge's read-back settings (arms.settings: by arm/quant or judge/rubric), as run.json keeps them
    unverified = [f"{who} {name} ({', '.join(eff['not_verifiable'])})"
                  for who, settings in (("arm", run.effective_settings or {}),
                                        ("judge", run.judge.effective_settings or {}))
                  for name, eff in settings.items() if eff.get("not_verifiable")]
    if unverified:
        out.append("Sampling settings sent as registered but not verifiable (the backend cannot report what it "
                   "used): " + "; ".join(unverified) + ".")
    out.append("The questions were written for this experiment and have not been independently re-checked.")
    out.append(run.audit_gate)
    if run.contamination:
        out.append(run.contamination)
    return out + contamination_lines(numbers.contamination)


def contamination_lines(s: ContaminationSection | None) -> list[str]:
    """The report's lines on contamination: how many questions, and per hypothesis about a trained arm its clean
    verdict, with a CAUTION where it differs from the verdict on all questions."""
    if not s:
        return []
    bad = s.contaminated
    out = [f"Contamination ({s.n}-gram overlap with {', '.join(s.training)}, the training "
           f"data of {', '.join(s.arms)}): {len(bad)} sealed question(s) contaminated"
           + (f" ({', '.join(bad)})." if bad else ".")]
    if s.decide == "clean_only" and bad:
        out.append(f"As registered (decide = \"clean_only\"), every hypothesis about {', '.join(s.arms)} is decided "
                   f"without the {len(bad)} contaminated question(s).")
    for r in s.comparisons:
        line = (f"{r.id} on the {len(r.paired_questions)} clean questions paired: {r.verdict} (all "
                f"questions: {r.all_questions_verdict})")
        if r.differs:
            line = (f"CAUTION: {line}: the decision depends on questions the trained arm may have memorised; the "
                    "clean verdict is the one that says what was learned.")
        out.append(line if line.endswith(".") else line + ".")
    return out


def error_causes(numbers: Numbers) -> str:
    """One line under the "Arms × quants" table: each cell's answer and judge errors by cause; "" when none
    (also for a numbers.json written before causes were counted: verify then names the missing fields)."""
    out = []
    for field, what in (("answer_error_kinds", "answer errors"), ("judge_error_kinds", "judge errors")):
        parts = [f"{c.arm}/{c.quant} " + ", ".join(f"{k} {v}" for k, v in kinds.items())
                 for c in numbers.cells if (kinds := getattr(c, field))]
        if parts:
            out.append(f"Causes of {what}: " + "; ".join(parts) + ".")
    return " ".join(out)


def render(numbers: Numbers, run: RunInfo, anchor: str | None, review: bool = True, summarised: bool = True) -> str:
    """The report; `anchor` (judge.results.files.anchor, over files numbers.json is one of) is shown in its Inputs;
    `review`: the folder has review.md (judge.outputs.review_md), which the report links to (folders written before it
    existed have none); `summarised`: the report opens with its summary (judge.outputs.summary; reports written before
    it existed do not)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, keep_trailing_newline=True,
                      trim_blocks=False)
    quants = list(dict.fromkeys(q for means in numbers.quant_check.means.values() for q in means))
    return env.get_template("report.md.j2").render(
        n=numbers, run=run, anchor=anchor, review=review, quants=quants, owe=owe_the_reader(numbers, run),
        summary=markdown(summary(numbers)) if summarised else "", summary_heading=SUMMARY_HEADING,
        causes=error_causes(numbers), analysis=run.analysis, gold_sources=[(s.name, s.title) for s in ranked()])


def folder_report(run_dir: Path, review: bool = True, summarised: bool = True) -> str:
    """report.md of a results folder, from its numbers.json and run.json as written, with its anchor."""
    run_dir = Path(run_dir)
    return render(read_numbers(run_dir), RunInfo.read_file(run_dir / RUN), anchor(run_dir), review, summarised)
