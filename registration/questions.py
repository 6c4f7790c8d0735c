"""Sealed question sets: one JSON object per line with id, question, reference, tags, cluster; or a CSV or parquet
file whose columns a registered mapping names (`SetFormat`).

A JSONL set is read by core.jsonl's COMPLETE rule (`read_sealed`): every non-blank line is a question, the last
one with or without a final newline, in strict UTF-8 with LF or CRLF line ends. It is not an append-only raw
file, so nothing is ever skipped as torn. A CSV set is decoded as every input is (core.text: strict UTF-8, a
leading byte-order mark dropped) and parsed whole by the csv module, so a quoted cell may hold commas, quotes and
line breaks; its first row names the columns. A parquet set is read by pyarrow. Every row of either passes the
checks a JSON line does; bad input names the file, the row (a CSV row's first line, a parquet row's index) and
the file's column.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from core import jsonl
from core import text as input_text
from core.errors import BadInput
from core.tables import csv_rows

FIELDS = ("id", "question", "reference", "tags", "cluster")  # a question's fields, as a JSONL set names them
TABULAR = (".csv", ".parquet")  # set files read through a column mapping
DEFAULT_TAG_SEPARATOR = ";"


@dataclass(frozen=True)
class SetFormat:
    """Where a CSV or parquet set keeps each field: a registered column per field (a field not registered is read
    from the column of its own name, and may be absent unless it is id or question), and what separates tags in
    one cell (a parquet list column needs no separator)."""

    columns: tuple[tuple[str, str], ...] = ()  # (field, column) as registered
    tag_separator: str = DEFAULT_TAG_SEPARATOR

    def column(self, field: str) -> str:
        return dict(self.columns).get(field, field)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    reference: str | None
    tags: tuple[str, ...]
    cluster: str | None
    set: str  # the set file's name, e.g. "exam.jsonl"
    line: int = 0  # its line in that file (a CSV row's first line, a parquet row's index), for messages about it


def load_questions(paths: list[Path], formats: Mapping[Path, SetFormat] | None = None) -> list[Question]:
    """Read and validate every set; duplicate ids across sets, and a set without questions, are bad input.
    `formats`: the registered column mapping of each CSV or parquet set, by path (Experiment.set_formats_by_path);
    a tabular set without one is read by its columns' own names."""
    out: list[Question] = []
    where: dict[str, str] = {}
    for path in paths:
        if not path.is_file():
            raise BadInput(path, "question set not found")
        before = len(out)
        for rec, at in _records(path, (formats or {}).get(path, SetFormat())):
            qid = rec["id"]
            if not isinstance(qid, str) or not qid:
                raise at.bad("must be a non-empty string", "id")
            if qid in where:
                raise at.bad(f"duplicate question id {qid!r} (first at {where[qid]})", "id")
            where[qid] = f"{path.name}:{at.shown}"
            if not isinstance(rec["question"], str) or not rec["question"].strip():
                raise at.bad("must be a non-empty string", "question")
            tags = rec.get("tags", [])
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise at.bad("must be a list of strings", "tags")
            ref = rec.get("reference")
            if ref is not None and not isinstance(ref, str):
                raise at.bad("must be a string", "reference")
            out.append(Question(id=qid, question=rec["question"], reference=ref, tags=tuple(tags),
                                cluster=_cluster(rec.get("cluster"), at), set=path.name, line=at.line))
        if len(out) == before:
            raise BadInput(path, "the question set holds no questions: a run on it would report on nothing")
    return out


@dataclass(frozen=True)
class _At:
    """Where a record was read, for messages: a JSON line, a CSV row's first line, or a parquet row's index; and
    the file's own name of each field (a tabular set's registered column)."""

    path: Path
    line: int
    fmt: SetFormat | None = None  # None: a JSONL set, whose fields are named as ours
    parquet: bool = False

    @property
    def shown(self) -> str:
        return f"row {self.line}" if self.parquet else str(self.line)

    def bad(self, message: str, field: str) -> BadInput:
        if self.fmt is None:
            return BadInput(self.path, message, line=self.line, field=field)
        column = self.fmt.column(field)
        named = "" if column == field else f" (the column read as the question's {field})"
        if self.parquet:
            return BadInput(self.path, f"row {self.line}{named}: {message}", field=column)
        return BadInput(self.path, f"{message}{named}", line=self.line, field=column)


def _records(path: Path, fmt: SetFormat) -> Iterator[tuple[dict[str, Any], _At]]:
    """Each question record of a set file with where it was read; a tabular row's cells under our field names."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_records(path, fmt)
    elif suffix == ".parquet":
        yield from _parquet_records(path, fmt)
    else:
        for no, rec in jsonl.read_sealed(path, required=("id", "question")):
            yield rec, _At(path, no)


def _mapped(path: Path, names: list[str], fmt: SetFormat, line: int | None) -> dict[str, int]:
    """Each field's column position among the file's column `names`; a column named twice, or the id's, the
    question's or a registered column missing, is bad input naming it."""
    registered = dict(fmt.columns)
    found: dict[str, int] = {}
    for field in FIELDS:
        column = fmt.column(field)
        hits = [i for i, n in enumerate(names) if n == column]
        if len(hits) > 1:
            raise BadInput(path, f"the file names column {column!r} {len(hits)} times: which one holds the {field} "
                           "is ambiguous", line=line, field=column)
        if hits:
            found[field] = hits[0]
        elif field in ("id", "question") or field in registered:
            how = "registered for" if field in registered else "needed for (no other column is registered for it)"
            raise BadInput(path, f"no column {column!r}, {how} the question's {field}; the file's columns: "
                           f"{', '.join(map(repr, names))}", line=line, field=column)
    return found


def _split_tags(cell: str, separator: str) -> list[str]:
    """A cell's tags: split at the separator, each stripped of surrounding whitespace, empty ones dropped."""
    return [t.strip() for t in cell.split(separator) if t.strip()]


def _csv_records(path: Path, fmt: SetFormat) -> Iterator[tuple[dict[str, Any], _At]]:
    text = input_text.read(path)
    # newline="\n": nothing translated (a quoted cell keeps its line breaks, as with newline=""), and lines end at LF
    # only, so a row's line is counted as every input's is (CRLF is LF); a bare CR outside quotes is refused
    reader = csv.reader(io.StringIO(text, newline="\n"), strict=True)
    header: list[str] | None = None
    columns: dict[str, int] = {}
    for start, row in csv_rows(reader, path, "is not CSV the csv module reads at this row"):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line, as a JSONL set skips one
        if header is None:
            header = row
            columns = _mapped(path, header, fmt, start)
            continue
        if len(row) != len(header):
            raise BadInput(path, f"the row has {len(row)} cells, the header {len(header)}: a cell holding a comma "
                           "or a line break must be quoted", line=start)
        rec: dict[str, Any] = {}
        for field, i in columns.items():
            cell = row[i]
            if field == "tags":
                rec[field] = _split_tags(cell, fmt.tag_separator)
            elif field in ("id", "question"):
                rec[field] = cell
            elif cell != "":
                rec[field] = cell  # an empty reference or cluster cell: none
        yield _no_nul(rec, _At(path, start, fmt))
    if header is None:
        raise BadInput(path, "holds no header row naming its columns", line=1)


def _parquet_records(path: Path, fmt: SetFormat) -> Iterator[tuple[dict[str, Any], _At]]:
    import pyarrow
    import pyarrow.parquet

    try:
        data = pyarrow.parquet.read_table(path)
    except (pyarrow.ArrowException, OSError) as e:
        raise BadInput(path, f"is not a parquet file pyarrow can read: {e}") from None
    columns = _mapped(path, data.column_names, fmt, None)
    try:
        values = {field: data.column(i).to_pylist() for field, i in columns.items()}
    except (pyarrow.ArrowException, UnicodeDecodeError, ValueError) as e:
        raise BadInput(path, f"has a column pyarrow cannot read as values: {e}") from None
    for i in range(data.num_rows):
        rec: dict[str, Any] = {}
        for field, column in values.items():
            value = column[i]
            if field == "tags" and isinstance(value, str):
                value = _split_tags(value, fmt.tag_separator)
            if value is not None or field in ("id", "question"):
                rec[field] = value
        yield _no_nul(rec, _At(path, i, fmt, parquet=True))


def _no_nul(rec: dict[str, Any], at: _At) -> tuple[dict[str, Any], _At]:
    """A tabular row refused, as a JSON line is, when a cell holds a NUL character."""
    for field, value in rec.items():
        if any("\0" in v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)):
            raise at.bad("holds a NUL character (\\u0000), which no question, reference or tag may hold", field)
    return rec, at


def _cluster(value: object, at: _At) -> str | None:
    """A cluster label is a string or an integer (kept as its decimal text, so 3 and "3" are one cluster)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value:
        return value
    raise at.bad(f"must be a non-empty string or an integer naming the question's cluster, got {value!r}", "cluster")
