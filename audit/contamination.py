"""The contamination gate's record: `python -m audit contamination` writes it (contamination.json, and the same
listing as contamination.md), and `judge run` requires it for the arms trained on the registered data.

The overlap itself is registration.contamination's (lm-evaluation-harness's normalisation and 13-gram rule). The
record is a pure function of the sealed sets, the training files and the registered settings, so `judge run`
computes it again and refuses a record that differs: missing, computed from other inputs or settings, or edited.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core import jsonl
from core.atomic import write_text
from core.errors import CheckFailed
from registration.contamination import NORMALISATION, overlap, questions_and_training, sha256
from registration.prereg import Contamination, Experiment

VERSION = 1
ROOT = Path(__file__).resolve().parent.parent


def settings_doc(c: Contamination) -> dict[str, Any]:
    """The registered settings as the record states them (a record made under others is stale)."""
    return {"n": c.n, "threshold": c.threshold, "fields": list(c.fields), "short": c.short,
            "columns": list(c.columns), "arms": list(c.arms), "decide": c.decide, "normalisation": NORMALISATION}


def compute(exp: Experiment) -> dict[str, Any]:
    """The contamination record of this registration: settings, inputs (by sha256) and every question's overlap."""
    c = exp.contamination
    questions, training = questions_and_training(exp)
    result, sources = overlap(questions, training, c)
    contaminated = [q.id for q in result if q.contaminated]
    doc = {"version": VERSION, "experiment": exp.name, **settings_doc(c),
           "sets": [{"file": rel, "sha256": sha256(p)} for rel, p in zip(exp.sets, exp.set_paths(), strict=True)],
           "training": [asdict(s) for s in sources],
           "verdict": "contaminated" if contaminated else "clean",
           "contaminated": contaminated, "questions": [asdict(q) for q in result]}
    return json.loads(text(doc))  # as the file reads back (tuples are lists), so a record compares equal to it


def text(doc: dict[str, Any]) -> str:
    """The record as JSON, in one canonical form."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def summary(doc: dict[str, Any]) -> str:
    """Per question its verdict, and for a contaminated one each overlapping gram and where it occurs."""
    out = [f"# Contamination: {len(doc['contaminated'])} of {len(doc['questions'])} questions contaminated", "",
           f"{doc['n']}-grams after normalisation ({doc['normalisation']}); a text is contaminated when more than "
           f"{doc['threshold']:g} of its distinct grams occur in the training data; texts shorter than {doc['n']} "
           f"tokens: {'matched whole' if doc['short'] == 'whole' else 'not checked'}. Fields: "
           f"{', '.join(doc['fields'])}. Training data: "
           + "; ".join(f"{t['file']} ({t['rows']} rows, columns {', '.join(doc['columns'])}, sha256 "
                       f"{t['sha256'][:12]}…)" for t in doc["training"])
           + f". Arms trained on it: {', '.join(doc['arms'])}; decide = \"{doc['decide']}\".", ""]
    for q in doc["questions"]:
        parts = [f"{t['field']} {t['found']}/{t['grams']}" + (" (whole)" if t["whole"] else "")
                 for t in q["texts"]]
        out.append(f"- {q['id']}: {'CONTAMINATED' if q['contaminated'] else 'clean'} ({'; '.join(parts)})")
        for t in q["texts"]:
            for o in t["overlaps"]:
                at = ", ".join(f"{p['file']}:{p['line']} {p['column']}[{p['start']}:{p['end']}]" for p in o["places"])
                more = f" (+{o['occurrences'] - len(o['places'])} more)" if o["occurrences"] > len(o["places"]) else ""
                out.append(f"  - {t['field']}: \"{o['gram']}\" x{o['occurrences']} at {at}{more}")
    return "\n".join(out) + "\n"


def write(doc: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "contamination.md", summary(doc))
    return write_text(out / "contamination.json", text(doc))


def record_path(exp: Experiment) -> Path:
    """Where the registered record is: relative to the repository root unless absolute, as the audit gate's is."""
    record = Path(exp.contamination.record)
    return record if record.is_absolute() else ROOT / record


def check_record(record: Path, exp: Experiment) -> dict[str, Any]:
    """The record when it is the one this registration's inputs give, computed again now; else CheckFailed saying
    what differs (missing, other inputs or settings, or an edited verdict): as good as no gate."""
    c = exp.contamination
    command = f"python -m audit contamination --exp {exp.dir}"
    if not record.exists():
        raise CheckFailed(f"contamination record {record} is missing: run `{command}` first")
    try:
        stored = jsonl.loads(record.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckFailed(f"contamination record {record} is not valid JSON ({e})") from None
    now = compute(exp)
    if stored == now:
        return now
    if not isinstance(stored, dict):
        raise CheckFailed(f"contamination record {record} is not the record `{command}` writes")
    what = [k for k in ("version", *settings_doc(c), "sets", "training") if stored.get(k) != now[k]]
    if what:
        why = f"it was computed with other {', '.join(what)} than registered and sealed now"
    else:
        why = "its verdicts differ from those its own inputs give (the record was edited)"
    raise CheckFailed(f"contamination record {record}: {why}: re-run `{command}`")
