"""What the sealed questions share with registered training data: the n-gram overlap the contamination gate
(`[contamination]`) is decided on, read by `python -m audit contamination` and `judge run` (audit.contamination)
and by the analysis that decides hypotheses again on the clean questions (judge.contamination).

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
and the character span in that cell.
"""
from __future__ import annotations

import csv
import hashlib
import io
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from core import jsonl
from core import text as input_text
from core.errors import BadInput
from core.tables import parquet_rows

from .gates import Contamination
from .prereg import Experiment
from .questions import Question, load_questions
from .seal import inside

NORMALISATION = ("ASCII letters lower-cased, string.punctuation deleted, split on whitespace "
                 "(lm-evaluation-harness decontamination: Janitor.normalize_string, word_ngrams)")
MAX_PLACES = 5  # places recorded per overlapping gram (every occurrence is counted)
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
        rows = _csv_rows(path)
    elif suffix in (".parquet", ".pq"):
        rows = parquet_rows(path)
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


def questions_and_training(exp: Experiment) -> tuple[list[Question], list[tuple[str, Path]]]:
    """Every sealed question, and each registered training file by its registered name and real path."""
    c = exp.contamination
    if c is None:
        raise BadInput(exp.dir / "prereg.toml", "no [contamination] section registered", field="contamination")
    prereg = exp.dir / "prereg.toml"
    return (load_questions(exp.set_paths(), exp.set_formats_by_path()),
            [(rel, inside(exp.dir, rel, prereg, "training")) for rel in c.training])


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows by their header's names, with the line each starts on (a quoted cell may span lines)."""
    reader = csv.DictReader(io.StringIO(input_text.read(path), newline="\n"))
    try:
        end = reader.line_num
        for rec in reader:
            start, end = end + 1, reader.line_num
            yield start, {k: (v if v != "" else None) for k, v in rec.items() if k is not None}
    except csv.Error as e:
        raise BadInput(path, f"not valid CSV ({e})", line=reader.line_num) from None


