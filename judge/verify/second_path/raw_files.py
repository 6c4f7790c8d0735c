"""The raw files read by hand: the retry rule of answers.jsonl and judgments.jsonl (a key's last record is its current
one; every earlier record of the key is an `error` superseded by the next, whose `retry_of` is its line) walked record
by record, not through core.jsonl.current, every breach a finding naming file, line and field.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from core import jsonl


@dataclass(frozen=True)
class Final:
    """A raw file read by hand under the retry rule: each key's last record, how many records each key
    has, and every breach of the rule (file, line, field)."""

    last: dict[tuple, dict]
    records: dict[tuple, int]
    problems: list[str]


BULK = ("attempts", "calls", "raw_output", "trace", "effective", "settings")  # kept on disk, never recomputed from
# the answer fields verify reads (the main path's records are not imported here)
VERIFY_ANSWER_FIELDS = ("row", "arm", "quant", "question_id", "sample", "status", "text", "truncated")


def _error_kind(rec: dict) -> str:
    """An error record's cause: an answer's `error.kind`, a verdict's last attempt's `error.kind`; else `other`."""
    err = rec.get("error")
    if "attempts" in rec:
        last = (rec["attempts"] or [None])[-1]
        err = last.get("error") if isinstance(last, dict) else None
    return (err.get("kind") if isinstance(err, dict) else None) or "other"


def kind_of(j: dict) -> str:
    """What a verdict judged, read by hand: its `kind`, or in a folder written before verdicts carried one, a pair
    label's P (single answers' labels start with L). Never the rubric's name: any name must verify."""
    return j.get("kind") or ("pairwise" if str(j.get("label", "")).startswith("P") else "single")


def by_hand(path: Path, key: tuple[str, ...], fields: tuple[str, ...] | None = None) -> Final:
    """Walk the raw records in file order, keep each key's last one (only `fields` if given, and never the
    BULK fields: 100,000 records' raw outputs need not be held in memory; an error record keeps its cause
    as `error_kind` instead), and check every later record of a key against the one before it: that one
    must be an `error`, and `retry_of` must be its line."""
    last: dict[tuple, tuple[int, dict]] = {}
    records: dict[tuple, int] = defaultdict(int)
    problems: list[str] = []
    for no, rec in jsonl.read(path):
        k = tuple(rec.get(f) for f in key)
        what = " ".join(f"{f}={v}" for f, v in zip(key, k, strict=False))
        retry_of = rec.get("retry_of")
        if k in last:
            line, prev = last[k]
            if prev.get("status") != "error":
                problems.append(f"{path}:{no}: field {key[-1]!r}: a duplicate record of {what}: line {line} already "
                                f"holds its {prev.get('status')!r} record, and only an error record may be "
                                "superseded by a retry")
            if not (type(retry_of) is int and retry_of == line):
                problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but the record of {what} it "
                                f"supersedes is at line {line}")
        elif retry_of is not None:
            problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but no earlier record of {what} "
                            "exists for it to retry")
        # keys from `fields` or interned: 100,000 records then share one copy of each field name
        kept = {f: rec[f] for f in fields if f in rec} if fields else {sys.intern(f): v for f, v in rec.items()
                                                                     if f not in BULK}
        if rec.get("status") == "error":
            kept["error_kind"] = sys.intern(_error_kind(rec))
        last[k] = (no, kept)
        records[k] += 1
    return Final({k: rec for k, (_, rec) in last.items()}, dict(records), problems)
