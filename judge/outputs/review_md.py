"""review.md: the appendix beside report.md where a reviewer reads each answer next to its verdicts.

A mean hides what one answer shows at once. For every registered hypothesis of the run, review.md lists the
questions on which the two arms' scores differ, the largest difference first (by the primary judge), then the
ties, then the questions an arm has no score on, at most MAX_QUESTIONS of them (review.html has every question).
Each entry gives the question, its reference, both arms' answers (and the text the judge read, where blinding
changed it), each judge's score, rationale and any unscored reason, and the flags: identity text scrubbed,
grader-directed text, length, truncation and the answer's gold scores (their mean and count where several
are scores; each with the note its labeller wrote, if any).

It is rendered from the join judge.outputs.review makes of the raw files (one join for this file and review.html), the
sealed questions, every gold score judge.gold.sources reads (sealed labels files, the gold program, and the labels
people gave the run in labels/, as the numbers count them) and numbers.json's hypothesis definitions only. `judge run`
writes it; `judge verify` renders it again and compares line by line, like report.md.

Every text that comes from a model, a judge, a question set or a registration is untrusted: a multi-line text is
shown in a fenced code block whose fence is longer than any run of backticks inside it, a name or id in an inline
code span built the same way (its line breaks made spaces), and every paragraph is one line. So no answer can open
a heading, a table, a link, a list or HTML in review.md, whatever it holds.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from core.atomic import write_text
from core.records import Comparison, Judgment

from ..gold.sources import GoldScore, folder_gold
from ..results.files import REVIEW
from .review import Answer, HypothesisPairs, Pair, Review, joined, load

MAX_QUESTIONS = 20  # per hypothesis: the appendix stays readable; review.html has every question
LINE_BREAKS = re.compile("\r\n|\r|\n")  # CommonMark's line endings (a U+2028 or a form feed is text to it)
BACKTICKS = re.compile("`+")


def _fence(text: str, least: int) -> str:
    return "`" * max(least, max((len(m) for m in BACKTICKS.findall(text)), default=0) + 1)


def code(value: Any) -> str:
    """`value` as one inline code span, never read as Markdown. Its line breaks become spaces (a line break could
    start a block); the fence is longer than any run of backticks inside; one space pads each side where CommonMark
    strips one (text that starts or ends with a backtick, or starts and ends with a space)."""
    s = LINE_BREAKS.sub(" ", str(value))
    if not s:
        return "(empty)"
    fence = _fence(s, 1)
    pad = s[0] == "`" or s[-1] == "`" or (s[0] == " " and s[-1] == " " and s.strip(" ") != "")
    return f"{fence} {s} {fence}" if pad else f"{fence}{s}{fence}"


def block(text: str) -> str:
    """`text` as a fenced code block, shown verbatim (line endings as LF): no line of it can close the fence."""
    s = LINE_BREAKS.sub("\n", text)
    fence = _fence(s, 3)
    return f"{fence}text\n{s}\n{fence}"


def number(x: Fraction) -> str:
    """A difference, exact where it is an integer: +2, -1, 0, +0.500."""
    return "0" if x == 0 else f"{int(x):+d}" if x.denominator == 1 else f"{float(x):+.3f}"


def ordered(h: HypothesisPairs, judge: str) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """The hypothesis's questions by `judge`: those that differ (the largest absolute difference first, then in the
    run's order), the ties, and those an arm has no score on (both in the run's order)."""
    differ = [p for p in h.pairs if p.difference(judge)]
    differ.sort(key=lambda p: -abs(p.difference(judge)))  # stable: equal differences keep the run's order
    ties = [p for p in h.pairs if p.difference(judge) == 0]
    unpaired = [p for p in h.pairs if p.difference(judge) is None]
    return differ, ties, unpaired


def render_review(r: Review, limit: int = MAX_QUESTIONS) -> str:
    """review.md from the join (judge.outputs.review.joined), gold scores included."""
    run, primary = r.run, r.run.judge.primary
    definitions = {c.id: c for c in (r.numbers.comparisons if r.numbers else ())}
    out = [f"# Review: {code(run.experiment or run.name)}, run {code(run.name)}", "",
           f"Per registered hypothesis, the questions on which the two arms' scores differ, the largest difference "
           f"first, then the ties, then the questions an arm has no score on: at most {limit} per hypothesis (every "
           f"question is in review.html: `python -m judge view RESULTS_DIR`). A difference is by the primary judge, "
           f"{code(primary)}: the mean of arm b's scored samples minus arm a's.", "",
           "Questions, references, answers and the judges' words are shown verbatim in code blocks, never read as "
           "Markdown; an answer the judge read otherwise (normalised, identity text scrubbed) is shown as it read "
           "it too. " + _gold_sources(r), "",
           "Written by `judge run` from the raw files, the sealed questions and the hypotheses' definitions in "
           "numbers.json; `judge verify` renders it again and compares it line by line.", ""]
    if not r.hypotheses:
        out += ["No registered hypothesis compares two arms of this run.", ""]
    for h in r.hypotheses:
        out += _hypothesis(h, definitions.get(h.id), primary, r.judges, limit)
    return "\n".join(out).rstrip("\n") + "\n"


def _gold_sources(r: Review) -> str:
    """Where the gold scores come from. A run nobody labelled keeps the sentence review.md had before people's labels
    were shown in it, so a folder written then still renders line for line."""
    if not any(g.source == "human" for h in r.hypotheses for p in h.pairs for a in p.answers for g in a.gold):
        return ("Gold scores are those of the registered sources (sealed labels files, the gold program); labels "
                "people add after the run (`judge label`) are not evidence of the run and are not here.")
    return ("Gold scores are those of every source: the registered ones (sealed labels files, the gold program) and "
            "the labels people gave the run (`judge label`, in labels/), as the numbers count them; where an answer "
            "has several, their mean and count come first.")


def _hypothesis(h: HypothesisPairs, c: Comparison | None, primary: str, judges: tuple[str, ...],
                limit: int) -> list[str]:
    """One hypothesis's questions; `c`: its decision in numbers.json, whose definition heads them (None: the run has
    not finished, or did not decide it)."""
    differ, ties, unpaired = ordered(h, primary)
    shown = (differ + ties + unpaired)[:limit]
    definition = "" if c is None else (f"{code(c.kind.replace('_', '-'))}, margin {code(c.margin)}, "
                                       f"alpha {code(c.alpha)}")
    out = [f"## {code(h.id)}: {code(h.b)} vs {code(h.a)} at {code(h.quant)}", ""]
    if definition:
        out += [f"Registered: {definition}" + (f"; subset {code('+'.join(h.subset))}" if h.subset else "") + ".", ""]
    if h.text:
        out += [f"Hypothesis: {code(h.text)}.", ""]
    more = len(h.pairs) - len(shown)
    out += [f"{len(h.pairs)} questions: {len(differ)} differ, {len(ties)} tied, {len(unpaired)} without a score of "
            f"both arms by {code(primary)}. Shown here: {len(shown)}" + (
                f"; the other {more} are in review.html (`python -m judge view RESULTS_DIR`)." if more else "."), ""]
    for n, p in enumerate(shown, start=1):
        out += _question(n, h, p, primary, judges)
    return out


def _question(n: int, h: HypothesisPairs, p: Pair, primary: str, judges: tuple[str, ...]) -> list[str]:
    q, d = p.question, p.difference(primary)
    what = f"{code(h.b)} − {code(h.a)} = {number(d)}" if d is not None else "not paired (an arm has no score)"
    out = [f"### {n}. {code(q.id)}: {what}", ""]
    others = [f"{code(j)} {number(x) if (x := p.difference(j)) is not None else 'not paired'}" for j in judges
              if j != primary]
    if others:
        out += ["Other judges: " + ", ".join(others) + ".", ""]
    if q.tags:
        out += ["Tags: " + ", ".join(code(t) for t in q.tags) + ".", ""]
    out += ["Question:", "", block(q.question), ""]
    out += (["Reference:", "", block(q.reference), ""] if q.reference is not None else ["Reference: none.", ""])
    for side, answers in (("a", p.a), ("b", p.b)):
        if not answers:
            out += [f"Arm {side}, {code(h.a if side == 'a' else h.b)}: no answer row.", ""]
        for a in answers:
            out += _answer(side, a, judges)
    for k, v in p.pairwise:
        first = f"{code(k.first)} shown first"
        if v.status == "scored":
            said = {0: "a tie", 1: code(k.first), 2: code(k.second)}.get(v.score, code(v.score))
            out += [f"Pairwise, judge {code(v.judge)}, {first}: preferred {said}.", ""]
        else:
            out += [f"Pairwise, judge {code(v.judge)}, {first}: {code(v.status)}.", ""]
        out += _words(v)
    return out


def _answer(side: str, a: Answer, judges: tuple[str, ...]) -> list[str]:
    out = [f"#### Arm {side}: {code(a.arm)}, sample {a.sample}" + (f", label {code(a.label)}" if a.label else ""), ""]
    if a.status != "ok":
        out += [f"Status {code(a.status)}: the model call failed, so it was never judged. Its error:", "",
                block(json.dumps(a.error, ensure_ascii=False, indent=1) if not isinstance(a.error, str) else a.error),
                ""]
        return out
    words = len((a.text or "").split())
    flags = [f"{words} words", "truncated" if a.truncated else "not truncated",
             f"identity text scrubbed: {a.scrubbed}", f"grader-directed text: {a.injection}",
             "gold: " + _golds(a)]
    out += ["Flags: " + ", ".join(flags) + ".", "", block(a.text or ""), ""]
    if a.shown is not None and a.shown != a.text:
        out += ["As the judge read it (normalised, identity text scrubbed):", "", block(a.shown), ""]
    for j in judges:
        v = next((v for v in a.verdicts if v.judge == j), None)
        if v is None:
            out += [f"Judge {code(j)}: no verdict.", ""]
        elif v.status == "scored":
            rest = [f"{k} {code(json.dumps(x))}" for k, x in sorted((v.fields or {}).items())
                    if not isinstance(x, str) and k != "score"]
            out += [f"Judge {code(j)}: score {v.score}" + (", " + ", ".join(rest) if rest else "") + ".", ""]
            out += _words(v)
        else:
            out += [f"Judge {code(j)}: {code(v.status)} after {len(v.attempts)} attempt(s), no score.", ""]
            out += _words(v)
    return out


def _words(v: Judgment) -> list[str]:
    """A verdict's text fields (its rationale), each in a block; for a verdict without a score, why."""
    out = []
    own = (v.judge_answer or {}).get("text")
    if (v.judge_answer or {}).get("form") == "two_calls" and isinstance(own, str):  # one_reply's: a field, below
        out += ["Its own answer, written before it saw the candidate:", "", block(own), ""]
    for k, x in sorted((v.fields or {}).items()):
        if isinstance(x, str):
            out += [f"Its {code(k)}:", "", block(x), ""]
    if v.status != "scored" and v.error:
        out += ["Why it has no score:", "", block(str(v.error)), ""]
    return out


def _golds(a: Answer) -> str:
    """An answer's gold scores, each with its source and where it was read; where several are scores, their mean
    and count first, with the sources they come from."""
    if not a.gold:
        return "none"
    each = "; ".join(_gold(g) for g in a.gold)
    if len(a.gold_scored) < 2:
        return each
    sources = ", ".join(dict.fromkeys(g.source for g in a.gold if g.status == "scored"))
    return f"mean {code(mean(a.gold_mean))} of {len(a.gold_scored)} scores ({sources}): {each}"


def mean(x: Fraction) -> str:
    """A mean score, exact where it is an integer: 2, 1.500."""
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.3f}"


def _gold(g: GoldScore) -> str:
    what = {"scored": lambda: code(g.score), "undecided": lambda: "undecided"}.get(g.status, lambda: "error")()
    return (f"{what} ({g.source} {code(g.origin)})" + (f": {code(g.error)}" if g.error else "")
            + (f" note {code(g.note)}" if g.note else ""))


def review_markdown(run_dir: Path, exp_dir: Path | None = None) -> str:
    """review.md of a results folder."""
    return render_review(folder_review(run_dir, exp_dir))


def folder_review(run_dir: Path, exp_dir: Path | None = None) -> Review:
    """The join of a results folder with every gold score of its answers, from one load of its raw files: what
    review.md and review.html show."""
    d = load(run_dir, exp_dir)
    return joined(d, folder_gold(d).by_label())


def write_review(run_dir: Path, exp_dir: Path | None = None) -> Path:
    return write_text(Path(run_dir) / REVIEW, review_markdown(run_dir, exp_dir))
