"""Training completion logs: JSONL, CSV or parquet, one row per completion, columns mapped by name.

Trainers name their columns differently (TRL writes `rewards/<func>` columns, others nest the
components in one object), so every field is looked up through a `Columns` mapping given by
`--column FIELD=NAME` flags or a small TOML file (`[columns]` table). Bad values name the file,
the line (CSV: the physical line the record starts on; parquet: the 1-based row) and the column.
"""
from __future__ import annotations

import csv
import fnmatch
import hashlib
import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterator

from core import jsonl
from core.errors import BadInput
from core.tables import parquet_rows

FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class Columns:
    """Where each field lives in the log.

    `prompt_id` / `completion_id` set to "" are derived (sha256 of the prompt / the line number).
    `components` is a column holding an object (JSONL, parquet struct, JSON text in CSV), a tuple
    of flat columns, or a glob such as "rewards/*". `components` and `advantage` are optional under
    their default names and required once mapped explicitly.
    """

    step: str = "step"
    prompt_id: str = "prompt_id"
    completion_id: str = "completion_id"
    prompt: str = "prompt"
    completion: str = "completion"
    reward: str = "reward"
    components: str | tuple[str, ...] = "components"
    advantage: str = "advantage"
    optional: frozenset[str] = field(default=frozenset({"components", "advantage"}), compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in fields(self) if f.name != "optional"}


@dataclass(frozen=True)
class Completion:
    step: int
    prompt_id: str
    completion_id: str
    prompt: str
    completion: str
    reward: float
    line: int
    components: dict[str, float] = field(default_factory=dict)
    advantage: float | None = None


@dataclass(frozen=True)
class Log:
    path: Path
    format: str
    sha256: str
    columns: Columns
    rows: list[Completion]

    @property
    def component_names(self) -> tuple[str, ...]:
        return tuple(self.rows[0].components)

    @property
    def steps(self) -> list[int]:
        return sorted({r.step for r in self.rows})


def load_columns(toml_file: Path | None = None, pairs: list[str] | tuple[str, ...] = ()) -> Columns:
    """The mapping from a TOML `[columns]` table, then `FIELD=NAME` flags on top (flags win)."""
    given: dict[str, tuple[Any, str]] = {}
    if toml_file is not None:
        try:
            doc = tomllib.loads(Path(toml_file).read_text())
        except FileNotFoundError:
            raise BadInput(toml_file, "column mapping file not found") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise BadInput(toml_file, f"not valid TOML: {e}") from None
        table = doc.get("columns")
        if not isinstance(table, dict):
            raise BadInput(toml_file, "needs a [columns] table", field="columns")
        given |= {k: (v, str(toml_file)) for k, v in table.items()}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise BadInput("--column", f"expected FIELD=NAME, got {pair!r}")
        given[key.strip()] = (value.strip(), "--column")
    known = {f.name for f in fields(Columns)} - {"optional"}
    mapping: dict[str, Any] = {}
    for key, (value, source) in given.items():
        if key not in known:
            raise BadInput(source, f"unknown field; known: {', '.join(sorted(known))}", field=key)
        if key == "components" and isinstance(value, list):
            value = tuple(value)
        elif key == "components" and source == "--column" and "," in value:
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if not (isinstance(value, str) or (key == "components" and isinstance(value, tuple)
                                           and all(isinstance(v, str) for v in value))):
            raise BadInput(source, f"must be a column name, got {value!r}", field=key)
        mapping[key] = value
    return replace(Columns(**mapping), optional=Columns.optional - set(mapping))


def read_log(path: Path, columns: Columns | None = None) -> Log:
    path, columns = Path(path), columns or Columns()
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise BadInput(path, f"unknown log format {path.suffix!r}: use .jsonl, .csv or .parquet")
    if not path.exists():
        raise BadInput(path, "rewards log not found")
    records = {"jsonl": _jsonl_records, "csv": _csv_records, "parquet": parquet_rows}[fmt](path)
    out: list[Completion] = []
    seen: dict[str, int] = {}
    header: set[str] | None = None
    for line, rec in records:
        if header is None:
            header = set(rec)
            components = _component_columns(path, columns, header)
        c = _completion(path, line, rec, columns, components, text=fmt == "csv")
        if c.completion_id in seen:
            raise BadInput(path, f"duplicate completion id (first at line {seen[c.completion_id]})", line=line,
                           field=columns.completion_id)
        if out and set(c.components) != set(out[0].components):
            raise BadInput(path, f"components {sorted(c.components)} differ from line {out[0].line}'s "
                           f"{sorted(out[0].components)}", line=line, field=_name(columns.components))
        seen[c.completion_id] = line
        out.append(c)
    if not out:
        raise BadInput(path, "no completions in the log")
    return Log(path, fmt, hashlib.sha256(path.read_bytes()).hexdigest(), columns, out)


def top_k(rows: list[Completion], k: int) -> list[Completion]:
    """The k highest rewards; ties broken by completion id (ascending) so the selection is deterministic."""
    return sorted(rows, key=lambda c: (-c.reward, c.completion_id))[:k]


# -- sources -----------------------------------------------------------------------------------
def _jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from jsonl.read(path)


def _csv_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows with the physical line each record starts on (quoted completions span several lines)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        try:
            end = reader.line_num
            for rec in reader:
                start, end = end + 1, reader.line_num
                if None in rec:
                    raise BadInput(path, "more cells than header columns", line=start)
                yield start, {k: (v if v != "" else None) for k, v in rec.items()}
        except csv.Error as e:
            raise BadInput(path, f"not valid CSV ({e})", line=reader.line_num) from None
        except UnicodeDecodeError as e:
            raise BadInput(path, f"not UTF-8 ({e})") from None


# -- fields ------------------------------------------------------------------------------------
def _name(components: str | tuple[str, ...]) -> str:
    return components if isinstance(components, str) else ",".join(components)


def _component_columns(path: Path, columns: Columns, header: set[str]) -> str | tuple[str, ...] | None:
    """The object column, or the flat columns, that hold the components; None when the log has none."""
    spec = columns.components
    if isinstance(spec, tuple):
        missing = [c for c in spec if c not in header]
        if missing:
            raise BadInput(path, f"component columns missing from the log: {missing}", line=1, field=missing[0])
        return spec
    if any(ch in spec for ch in "*?["):
        matched = tuple(sorted(c for c in header if fnmatch.fnmatchcase(c, spec)))
        if not matched:
            raise BadInput(path, f"no column matches the components pattern {spec!r}", line=1, field="components")
        return matched
    if spec not in header and "components" in columns.optional:
        return None
    return spec


def _completion(path: Path, line: int, rec: dict[str, Any], cols: Columns, components, text: bool) -> Completion:
    def value(column: str, optional: bool = False) -> Any:
        v = rec.get(column)
        if v is None and not optional:
            raise BadInput(path, "missing", line=line, field=column)
        return v

    def number(v: Any, column: str) -> float:
        if text and isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise BadInput(path, f"must be a finite number, got {v!r}", line=line, field=column)
        return float(v)

    def string(column: str) -> str:
        v = value(column)
        if not isinstance(v, str):
            raise BadInput(path, f"must be a string, got {type(v).__name__}", line=line, field=column)
        return v

    step = number(value(cols.step), cols.step)
    if step != int(step):
        raise BadInput(path, f"must be a whole number, got {step!r}", line=line, field=cols.step)
    prompt = string(cols.prompt)
    pid = str(value(cols.prompt_id)) if cols.prompt_id else hashlib.sha256(prompt.encode()).hexdigest()[:12]
    cid = str(value(cols.completion_id)) if cols.completion_id else f"line{line}"
    comps: dict[str, float] = {}
    if isinstance(components, tuple):
        comps = {c: number(value(c), c) for c in components}
    elif components is not None:
        obj = value(components)
        if text and isinstance(obj, str):
            try:
                obj = jsonl.loads(obj)
            except ValueError as e:  # invalid JSON, or a key repeated in the object (jsonl.DuplicateKey)
                raise BadInput(path, f"must be a JSON object ({e})", line=line, field=components) from None
        if not isinstance(obj, dict):
            raise BadInput(path, f"must be an object of numbers, got {obj!r}", line=line, field=components)
        comps = {str(k): number(v, f"{components}.{k}") for k, v in obj.items()}
    adv = value(cols.advantage, optional="advantage" in cols.optional)
    return Completion(int(step), pid, cid, prompt, string(cols.completion), number(value(cols.reward), cols.reward),
                      line, comps, None if adv is None else number(adv, cols.advantage))
