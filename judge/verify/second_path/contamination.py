"""verify's second path for numbers.json's `contamination`: which sealed questions overlap the registered training
data, derived again from the sealed sets and the training files by this module's own code, written from the
definition (lm-evaluation-harness's decontamination: ASCII letters lower-cased, `string.punctuation` deleted, the
text split on whitespace, runs of n tokens; a text shorter than n tokens matched whole under short = "whole"; a text
contaminated when more than `threshold` of its distinct n-grams occur in the training data), never through
registration.contamination or judge.contamination.
"""
from __future__ import annotations

import csv
import hashlib
import json
import string
from pathlib import Path
from typing import Any

from registration.questions import load_questions

_PUNCTUATION = frozenset(string.punctuation)
_UPPER = frozenset(string.ascii_uppercase)


def words(text: str) -> list[str]:
    """The normalised tokens: character by character, then split."""
    kept = "".join(ch.lower() if ch in _UPPER else ch for ch in text if ch not in _PUNCTUATION)
    return kept.split()


def _texts(path: Path, columns: tuple[str, ...]) -> list[str]:
    """Every registered column's text of every row (a JSON line, a CSV row, a parquet row)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8-sig").split("\n") if line.strip()]
    elif suffix == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    else:
        import pandas as pd

        rows = pd.read_parquet(path).to_dict("records")
    return [r[c] for r in rows for c in columns if isinstance(r.get(c), str)]


def contaminated(exp) -> tuple[list[str], dict[str, str]]:
    """The ids of the contaminated sealed questions, in set order, and each training file with its sha256."""
    c = exp.contamination
    texts: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {}
    for q in load_questions(exp.set_paths(), exp.set_formats_by_path()):
        for field in c.fields:
            value = getattr(q, field)
            if value is None:
                continue
            w = words(value)
            if len(w) < c.n:
                texts[q.id, field] = (tuple(w),) if w and c.short == "whole" else ()
            else:
                texts[q.id, field] = tuple(dict.fromkeys(tuple(w[i:i + c.n]) for i in range(len(w) - c.n + 1)))
    wanted = {g for grams in texts.values() for g in grams}
    sizes = {len(g) for g in wanted}
    seen: set[tuple[str, ...]] = set()
    files = {}
    for rel in c.training:
        path = (exp.dir / rel).resolve()
        files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        for text in _texts(path, c.columns):
            w = words(text)
            for size in sizes:
                seen.update(g for g in (tuple(w[i:i + size]) for i in range(len(w) - size + 1)) if g in wanted)
    bad: list[str] = []
    for (qid, _), grams in texts.items():
        if grams and sum(g in seen for g in grams) / len(grams) > c.threshold and qid not in bad:
            bad.append(qid)
    return bad, files


_FOUND: dict[tuple, tuple[list[str], dict[str, str]]] = {}


def contaminated_once(exp) -> tuple[list[str], dict[str, str]]:
    """`contaminated`, once per registration and state of its input files (verify asks for each hypothesis)."""
    files = [*exp.set_paths(), *((exp.dir / rel).resolve() for rel in exp.contamination.training)]
    key = (str(exp.dir), exp.contamination, tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files))
    if key not in _FOUND:
        _FOUND[key] = contaminated(exp)
    return _FOUND[key]


def left_out(exp, h) -> frozenset[str]:
    """The questions hypothesis `h` is not decided on: the contaminated ones when decide = "clean_only" and it is
    about an arm trained on the registered data; none otherwise."""
    c = exp.contamination
    if c is None or c.decide != "clean_only" or not {h.a, h.b} & set(c.arms):
        return frozenset()
    return frozenset(contaminated_once(exp)[0])


def section(exp, bad: list[str], files: dict[str, str], clean: list[dict[str, Any]]) -> dict[str, Any]:
    """The section as this path gives it, with its clean comparisons (decided by judge.verify.second_path.decisions)."""
    c = exp.contamination
    return {"n": c.n, "threshold": c.threshold, "decide": c.decide, "arms": list(c.arms), "training": files,
            "contaminated": bad, "comparisons": clean}
