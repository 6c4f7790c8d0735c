"""`python -m judge view RUN [--blind]`: review.html, one self-contained page to read every answer beside its verdict.

The page is one file with its CSS and JavaScript inline and the data embedded as JSON: no server, no network
(its Content-Security-Policy allows no fetch at all, and only the page's own script and style, by hash), so it
opens from disk in any browser. Every value is untrusted text: the JSON is escaped so nothing in it can close
its <script> element, and the page builds its DOM with text nodes only, never from HTML.

Review mode shows the decisions table (numbers.json) and, for each hypothesis, its questions (judge.outputs.review)
with filters and sorting, each answer with its gold scores from every source (judge.gold.sources). Blind mode
(`--blind`) is generated from the blinded projection alone (judge.outputs.review.blind_view): labels, questions,
references and the answers as the judge read them, in the blinded order; the file holds no arm, model, quant or judge,
and no gold score: the page is for labelling, and a gold score shown beside an answer would anchor the person labelling
it. A person scores each answer there and downloads a labels file (core.records.HumanLabel), which judge.gold.labels
checks.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
from dataclasses import asdict
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template

from core.atomic import write_text
from core.errors import BadInput
from core.records import HumanLabel, Judgment, Numbers, RunInfo
from core.records.conform import violation
from core.records.schema import schema

from ..results.files import NUMBERS, RUN
from .review import Answer, BlindView, Review, blind_view
from .review_md import folder_review
from .summary import summary

TEMPLATES = Path(__file__).resolve().parent / "templates"
GENERATOR = "blindeval judge view"  # in every page's <meta name="generator">: only such a file is overwritten
# the documents the review page embeds, each by its key in the page's data, with its contract and its file
EMBEDDED = {"numbers": (Numbers, NUMBERS), "run": (RunInfo, RUN)}
# the contracts whose fields head the page's tables: each field's description in the JSON Schema emitted from them is
# its header's help, so the page's help is the contracts' own and never written twice
HELP = {"Comparison": "numbers", "Result": "numbers", "StabilityCell": "numbers",
        "RunInfo": "run", "RunJudge": "run"}


def _finite(x: Any) -> Any:
    """`x` with every NaN or infinity as None: JSON has no such numbers, and the page's parser refuses them."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def embed(data: Any) -> str:
    """JSON to put inside <script type="application/json">: ASCII only, and no `<`, `>` or `&`, so no text in it
    (`</script>`, `<!--`) can end the element or change how the HTML parser reads it."""
    text = json.dumps(_finite(data), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def csp_hash(text: str) -> str:
    """A Content-Security-Policy source allowing exactly this inline script or style."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(str(text).encode()).digest()).decode() + "'"


@cache
def _template() -> Template:
    env = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, autoescape=True,
                      keep_trailing_newline=True)
    env.filters["csp_hash"] = csp_hash
    return env.get_template("review.html.j2")


def render_page(data: dict[str, Any], blind: bool) -> str:
    return _template().render(blind=blind, data=embed(data), generator=GENERATOR)


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def _verdict(j: Judgment) -> dict[str, Any]:
    return {"judge": j.judge, "status": j.status, "score": j.score, "fields": j.fields, "error": j.error,
            "repaired": j.repaired, "rubric": j.rubric, "attempts": list(j.attempts),
            "judge_answer": (j.judge_answer or {}).get("text")}


def _answer(a: Answer) -> dict[str, Any]:
    return {"arm": a.arm, "quant": a.quant, "sample": a.sample, "label": a.label, "status": a.status,
            "text": a.text, "shown": a.shown if a.shown != a.text else None, "scrubbed": a.scrubbed,
            "injection": a.injection, "truncated": a.truncated, "error": a.error, "gold": _gold(a),
            "verdicts": [_verdict(v) for v in a.verdicts]}


def _gold(a: Answer) -> dict[str, Any] | None:
    """An answer's gold scores (judge.gold.sources, every source): their mean and count, the sources they come from, and
    each one; None where it has none."""
    if not a.gold:
        return None
    return {"mean": _float(a.gold_mean), "count": len(a.gold_scored),
            "sources": list(dict.fromkeys(g.source for g in a.gold if g.status == "scored")),
            "scores": [{"source": g.source, "origin": g.origin, "labeller": g.labeller, "score": g.score,
                        "status": g.status, "error": g.error, "note": g.note} for g in a.gold]}


def review_data(r: Review) -> dict[str, Any]:
    """The review page's data: everything joined, each flag and difference computed here, never in the page."""
    answers: dict[str, Any] = {}
    questions: dict[str, Any] = {}
    rows = []
    for h in r.hypotheses:
        for p in h.pairs:
            q = p.question
            questions[q.id] = {"question": q.question, "reference": q.reference, "tags": list(q.tags)}
            for a in p.answers:
                answers[a.row] = _answer(a)
            rows.append({
                "hypothesis": h.id, "question": q.id, "a": [a.row for a in p.a], "b": [a.row for a in p.b],
                "difference": {j: _float(p.difference(j)) for j in r.judges},
                "unscored": {j: p.unscored(j) for j in r.judges},
                "disagreement": any(a.disagreement for a in p.answers),
                "flagged": any(a.flagged for a in p.answers),
                "gold": any(a.gold_scored for a in p.answers),
                "pairwise": [{"first": k.first, "second": k.second, **_verdict(v)} for k, v in p.pairwise],
            })
    return {
        # run.json and numbers.json embedded as written: the page reads their fields as the files name them
        "run": r.run.to_dict(), "numbers": None if r.numbers is None else r.numbers.to_dict(), "anchor": r.anchor,
        "help": help_text(), "judges": list(r.judges), "scale": list(r.scale),
        "summary": [] if r.numbers is None else [asdict(line) for line in summary(r.numbers)],  # as report.md opens
        "hypotheses": [{"id": h.id, "text": h.text, "a": h.a, "b": h.b, "quant": h.quant, "subset": list(h.subset)}
                       for h in r.hypotheses],
        "questions": questions, "answers": answers, "rows": rows,
    }


@cache
def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each document the page embeds, emitted from its contract (core.records.schema)."""
    return {key: schema(contract) for key, (contract, _) in EMBEDDED.items()}


def help_text() -> dict[str, dict[str, str]]:
    """Each field's description, by contract, for the contracts whose fields head the page's tables (HELP)."""
    out = {}
    for name, key in HELP.items():
        doc = schemas()[key]
        body = doc if name == EMBEDDED[key][0].__name__ else doc["$defs"][name]  # the document itself, or a section
        out[name] = {f: p["description"] for f, p in body["properties"].items() if p.get("description")}
    return out


def conforming(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """`data`, once each document it embeds conforms, as the page will hold it (NaN and infinities null), to the
    schema emitted from its contract: else bad input naming the file and the field."""
    for key, (_, name) in EMBEDDED.items():
        found = violation(_finite(data[key]), schemas()[key])
        if found:
            where, what = found
            raise BadInput(Path(run_dir) / name, f"{what}: the review page embeds it as its schema (the contract's) "
                           "describes it, and this does not conform", field=where or None)
    return data


def blind_data(b: BlindView) -> dict[str, Any]:
    """The blind page's data: only the blinded projection, and the labels record's contract."""
    return {"run_key": b.run_key, "rubric": b.rubric, "scale": list(b.scale),
            "record": {"type": HumanLabel.TYPE, "version": HumanLabel.VERSION},
            "items": [{"label": i.label, "question_id": i.question_id, "question": i.question,
                       "reference": i.reference, "answer": i.answer} for i in b.items]}


def writable(out: Path) -> Path:
    """`out`, unless writing it would overwrite something that is not a page `judge view` wrote (the raw files
    first of all): then bad input naming it."""
    out = Path(out)
    if out.is_dir():
        raise BadInput(out, "is a folder: --out names the page's file")
    if out.exists() or out.is_symlink():
        head = out.read_bytes()[:4096] if out.is_file() and not out.is_symlink() else b""
        if f'<meta name="generator" content="{GENERATOR}">'.encode() not in head:
            raise BadInput(out, "exists and is not a page `judge view` wrote: refusing to overwrite it (the raw files "
                           "of a run are its evidence); choose another --out")
    return out


def view(run_dir: Path, blind: bool = False, out: Path | None = None, exp_dir: Path | None = None) -> Path:
    """Write review.html (or, blind, review-blind.html) for a results folder; return its path."""
    run_dir = Path(run_dir)
    out = writable(out or run_dir / ("review-blind.html" if blind else "review.html"))
    if blind:
        data = blind_data(blind_view(run_dir, exp_dir))
    else:
        r = folder_review(run_dir, exp_dir)
        if r.numbers is None:
            raise BadInput(run_dir / NUMBERS, "missing: the run has not finished, so there are no decisions "
                           "to show (re-run `judge run` to finish it)")
        data = conforming(review_data(r), run_dir)
    return write_text(out, render_page(data, blind))
