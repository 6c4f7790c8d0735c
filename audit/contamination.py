"""The contamination gate: n-gram overlap between every sealed question (and its reference) and the training data the
registration names, so a fine-tune that saw the exam in training is not credited with a gain it memorised.

The overlap is defined as lm-evaluation-harness's decontamination defines it (`lm_eval/decontamination/janitor.py`:
`Janitor.normalize_string`, `word_ngrams`; `decontaminate.py`: "an overlap occurs when any of the 13-grams found in
the task document exist in the training set documents"):

- normalisation: ASCII upper case to lower case, every character of Python's `string.punctuation` deleted (the
  Janitor's translation table; other characters, non-ASCII letters included, are kept as they are);
- tokens: the normalised text split on whitespace (`str.split()`);
- n-grams: every run of n consecutive tokens (n = 13 by default, as there and in the GPT-3 paper, Brown et al. 2020,
  appendix C).

A text shorter than n tokens has no n-gram; the GPT-3 paper counts such an example as overlapping when the whole of it
occurs in the training data, and so does `short = "whole"` here (the default); `short = "skip"` leaves it unchecked,
as lm-evaluation-harness does. Per text (a question's `question` and `reference` fields, as registered) the fraction
is its distinct n-grams found anywhere in the training data over its distinct n-grams; a text is contaminated when
that fraction exceeds the registered threshold (0, the default: any shared n-gram), and a question when any of its
registered texts is.

Where each gram occurs is recorded: the training file, its line (JSONL, CSV) or 1-based row (parquet), the column,
and the character span in that cell. The record (contamination.json) is a pure function of the sealed sets, the
training files and the registered settings, so `judge run` computes it again and refuses a record that differs.
"""
from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from core import jsonl
from core.atomic import write_text
from core.errors import BadInput, CheckFailed
from registration.prereg import Contamination, Experiment
from registration.questions import Question, load_questions
from registration.seal import inside

from .log import _csv_records, _parquet_records

NORMALISATION = ("ASCII letters lower-cased, string.punctuation deleted, split on whitespace "
                 "(lm-evaluation-harness decontamination: Janitor.normalize_string, word_ngrams)")
MAX_PLACES = 5  # places recorded per overlapping gram (every occurrence is counted)
VERSION = 1
ROOT = Path(__file__).resolve().parent.parent
_TABLE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase, string.punctuation)
_TOKEN = re.compile(r"\S+")  # the characters str.split() splits on are those \s matches (both: str.isspace)


def normalise(text: str) -> str:
    """The Janitor's normalisation: ASCII upper case to lower case, punctuation deleted."""
    return text.translate(_TABLE)


@dataclass(frozen=True)
class Token:
    text: str  # normalised
    start: int  # its characters in the original text: [start, end)
    end: int


def tokens(text: str) -> list[Token]:
    """normalise(text).split(), with where each token stands in `text` (a token that was all punctuation is gone,
    as it is from the normalised text)."""
    out = []
    for m in _TOKEN.finditer(text):
        t = normalise(m.group(0))
        if t:
            out.append(Token(t, m.start(), m.end()))
    return out


def grams(toks: list[Token], n: int) -> list[tuple[str, ...]]:
    """Every run of n consecutive tokens, in order."""
    words = [t.text for t in toks]
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


@dataclass(frozen=True)
class Place:
    file: str  # as registered
    line: int  # JSONL/CSV line, parquet 1-based row
    column: str
    start: int  # characters of the cell: [start, end)
    end: int


@dataclass(frozen=True)
class Overlap:
    gram: str  # its normalised tokens joined by one space
    occurrences: int
    places: tuple[Place, ...]  # the first MAX_PLACES, in file, line and column order


@dataclass(frozen=True)
class TextOverlap:
    field: str  # "question" | "reference"
    tokens: int
    whole: bool  # shorter than n tokens: matched whole (short = "whole")
    grams: int  # distinct grams checked (0: too short and skipped, or empty)
    found: int  # of them, found in the training data
    fraction: float
    contaminated: bool
    overlaps: tuple[Overlap, ...]


@dataclass(frozen=True)
class QuestionOverlap:
    id: str
    set: str
    contaminated: bool
    texts: tuple[TextOverlap, ...]


@dataclass(frozen=True)
class Source:
    file: str  # as registered, relative to the experiment folder
    sha256: str
    rows: int


def training_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, str, str]]:
    """(line or row, column, text) of every registered column of every row; a row without one of them, or with one
    that is not a string, is bad input naming the file, the line and the column. A JSONL file is read whole (the
    last line counts with or without its newline), as a sealed input is."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows: Iterator[tuple[int, dict[str, Any]]] = jsonl.read_sealed(path)
    elif suffix == ".csv":
        rows = _csv_records(path)
    elif suffix in (".parquet", ".pq"):
        rows = _parquet_records(path)
    else:
        raise BadInput(path, f"unknown training data format {path.suffix!r}: use .jsonl, .csv or .parquet")
    where = "row {0}: " if suffix in (".parquet", ".pq") else ""
    for line, rec in rows:
        for column in columns:
            value = rec.get(column)
            if not isinstance(value, str):
                what = "missing" if value is None else f"must be a string, got {type(value).__name__}"
                raise BadInput(path, where.format(line) + f"{what} (a registered [contamination] column)",
                               line=None if where else line, field=column)
            yield line, column, value


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def overlap(questions: list[Question], training: list[tuple[str, Path]],
            settings: Contamination) -> tuple[list[QuestionOverlap], list[Source]]:
    """Every question's overlap with the training files ((registered name, path) pairs)."""
    n, short = settings.n, settings.short
    checked: dict[tuple[str, str], tuple[list[Token], set[tuple[str, ...]], bool]] = {}
    index: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for q in questions:
        for field in settings.fields:
            text = getattr(q, field)
            if text is None:
                continue
            toks = tokens(text)
            whole = 0 < len(toks) < n and short == "whole"
            own = {tuple(t.text for t in toks)} if whole else set(grams(toks, n))
            checked[q.id, field] = (toks, own, whole)
            for g in own:
                index.setdefault(g, []).append((q.id, field))
    lengths = sorted({len(g) for g in index})
    counts: dict[tuple[str, ...], int] = {}
    places: dict[tuple[str, ...], list[Place]] = {}
    sources = []
    for name, path in training:
        if not path.is_file():
            raise BadInput(path, "training data file not found (a [contamination] training file)")
        rows = 0
        last = None
        for line, column, text in training_rows(path, settings.columns):
            rows += line != last
            last = line
            toks = tokens(text)
            for length in lengths:
                for i in range(len(toks) - length + 1):
                    g = tuple(t.text for t in toks[i:i + length])
                    if g in index:
                        counts[g] = counts.get(g, 0) + 1
                        at = places.setdefault(g, [])
                        if len(at) < MAX_PLACES:
                            at.append(Place(name, line, column, toks[i].start, toks[i + length - 1].end))
        sources.append(Source(name, sha256(path), rows))
    out = []
    for q in questions:
        texts = []
        for field in settings.fields:
            if (q.id, field) not in checked:
                continue
            toks, own, whole = checked[q.id, field]
            found = sorted(g for g in own if g in counts)
            fraction = len(found) / len(own) if own else 0.0
            texts.append(TextOverlap(field, len(toks), whole, len(own), len(found), fraction,
                                     fraction > settings.threshold,
                                     tuple(Overlap(" ".join(g), counts[g], tuple(places[g])) for g in found)))
        out.append(QuestionOverlap(q.id, q.set, any(t.contaminated for t in texts), tuple(texts)))
    return out, sources


def settings_doc(c: Contamination) -> dict[str, Any]:
    return {"n": c.n, "threshold": c.threshold, "fields": list(c.fields), "short": c.short,
            "columns": list(c.columns), "arms": list(c.arms), "decide": c.decide, "normalisation": NORMALISATION}


def compute(exp: Experiment) -> dict[str, Any]:
    """The contamination record of this registration: settings, inputs (by sha256) and every question's overlap."""
    c = exp.contamination
    if c is None:
        raise BadInput(exp.dir / "prereg.toml", "no [contamination] section registered", field="contamination")
    prereg = exp.dir / "prereg.toml"
    questions = load_questions(exp.set_paths(), exp.set_formats_by_path())
    training = [(rel, inside(exp.dir, rel, prereg, "training")) for rel in c.training]
    result, sources = overlap(questions, training, c)
    contaminated = [q.id for q in result if q.contaminated]
    doc = {"version": VERSION, "experiment": exp.name, **settings_doc(c),
            "sets": [{"file": rel, "sha256": sha256(p)} for rel, p in zip(exp.sets, exp.set_paths(), strict=True)],
            "training": [asdict(s) for s in sources],
            "verdict": "contaminated" if contaminated else "clean",
            "contaminated": contaminated, "questions": [asdict(q) for q in result]}
    return json.loads(text(doc))  # as the file reads back (tuples are lists), so a record compares equal to it


def text(doc: dict[str, Any]) -> str:
    """The record as JSON, one canonical form (what `judge run` compares byte for byte)."""
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
