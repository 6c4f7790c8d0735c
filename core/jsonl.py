"""Append-only JSONL: the raw files are the source of truth, so a kill must never corrupt them.

Each record is one line, written with a single write() of the whole line, flushed and fsynced.
A kill can leave at most one partial last line; readers skip it (reporting it) and the next
writer truncates it away before appending, so earlier records are never touched.

The retry rule, shared by answers.jsonl, judgments.jsonl and the audit's verdicts.jsonl: a record
whose `status` is `error` (the call failed after its attempts) is asked again by the next run,
which appends the new record with `retry_of` = the line of the error record it replaces. So a
key's current record is its LAST one in file order, and every earlier record of that key is an
error superseded by the next. `current()` is the one reader of that rule on the main path, and
checks it while reading; judge.verify.checks re-checks it by its own code.

A JSON object with a repeated key is refused (`loads`), in these files and in every JSON a user hands
us: readers disagree on which value counts, so such a record has no one meaning.

Two writers appending to one file at once (what the results folder's lock now prevents), or an older
bug, leave a file that breaks the rule: a key with two finished records, or a record that does not
retry the one before it. `deduplicated` computes the one repair (`judge repair` writes it): each key
keeps its first finished record, so no answer or verdict already given changes, with the errors that
record retries; every other record is moved out, with its line and the reason.

Two readers, two rules for the last line. `read` is for the raw files this harness appends to: a last line
without its newline is a record torn by a kill, skipped (the TORN-TAIL rule). `read_sealed` is for input a
user wrote and sealed (question sets): the file is finished, so a last line without a newline is a record
like any other, and every line counts (the COMPLETE rule); it also decodes by `core.text` (strict UTF-8, one
leading byte-order mark dropped), takes LF or CRLF line ends, skips blank lines, and refuses a carriage
return that ends no line, a NUL and a lone surrogate, each at its line.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from . import text
from .errors import BadInput, BadRecord


def dumps(record: dict[str, Any]) -> str:
    """Canonical one-line JSON (sorted keys) so hashes of records are stable."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def link(record: dict[str, Any]) -> str:
    """The hash chain's rule (amendments.jsonl, labels files): each record's `prev` is this hash of the record
    before it, the sha256 of its canonical line, so no record can be edited, inserted or dropped unseen."""
    return hashlib.sha256(dumps(record).encode()).hexdigest()


def repair_tail(path: Path) -> int:
    """Drop a partial last line left by a kill; return the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return 0
        # walk back to the previous newline
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            buf = f.read(pos - start)
            i = buf.rfind(b"\n")
            if i >= 0:
                cut = start + i + 1
                break
            pos = start
        else:
            cut = 0
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
        return size - cut


class Appender:
    """Appends records to one JSONL file, durably, one line per record."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._f = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any], retry_of: int | None = None) -> None:
        """Append one record; `retry_of` is the line of the error record it replaces (the module's retry rule)."""
        if retry_of is not None:
            record = {**record, "retry_of": retry_of}
        self._f.write(dumps(record) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "Appender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def loads(text: str) -> Any:
    """json.loads that refuses an object with a repeated key (DuplicateKey) instead of keeping the last value."""
    return json.loads(text, object_pairs_hook=_unique)


def json_lines(data: bytes) -> list[Any]:
    """The records of JSON Lines someone else wrote (a provider's results file). Lines end at \\n alone, as in
    every file read here: a JSON text holds no raw \\n, but may hold U+2028, U+0085 and the other characters
    `str.splitlines` would also split at. Blank lines are skipped."""
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def read(path: Path, *, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """A raw file's records as (line number, record), by the TORN-TAIL rule: a last line without its newline was
    cut by a kill and is skipped; any other bad line is BadInput."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    complete = lines[:-1]  # the last element is "" after a final newline, or a partial record
    for no, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadInput(path, f"not valid JSON ({e})", line=no) from None
        yield no, _record(line, path, no, required)


def read_sealed(path: Path, *, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """A sealed input file's records as (line number, record), by the COMPLETE rule: every line counts, the last
    one with or without its newline. Bad bytes or characters are BadInput naming the line (and the field whose
    value holds them, when the line is otherwise a JSON object)."""
    path = Path(path)
    data = path.read_bytes()
    for no, raw in enumerate(data.split(b"\n"), start=1):
        if no == 1:
            raw = raw.removeprefix(text.BOM.encode())
        raw = raw.removesuffix(b"\r")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadInput(path, f"is not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1} ({e.reason}); "
                           "save the file as UTF-8", line=no,
                           field=_field(raw.decode("utf-8", "surrogateescape"), text.has_surrogate)) from None
        for char, what in (("\r", "a carriage return that ends no line (a bare CR): lines must end with LF or CRLF"),
                           ("\x00", "a NUL character, which is not text")):
            if char in line:
                raise BadInput(path, f"holds {what}", line=no, field=_field(line, lambda c, x=char: c == x))
        if not line.strip():
            continue
        rec = _record(line, path, no, required)
        for test, what in ((text.has_surrogate, "a lone surrogate (an escape such as \\ud800 that is no Unicode "
                                                "character): it could not be written, hashed or sent"),
                           (lambda s: "\x00" in s, "a NUL character (\\u0000), which is not text")):
            where = text.path_of(rec, test)
            if where is not None:
                raise BadInput(path, f"holds {what}", line=no, field=where or None)
        yield no, rec


def _field(line: str, bad: Callable[[str], bool]) -> str | None:
    """The field of the JSON object on `line` whose value (or key) holds the characters `bad` picks as written in
    the file (not as escapes); None when the line is no such object. Each is replaced by a character the line
    lacks, which a JSON string may hold, and the field holding that is found."""
    marker = next((chr(c) for c in range(0xE000, 0xF900) if chr(c) not in line), None)  # a private-use character
    if marker is None:
        return None
    try:
        rec = loads("".join(marker if bad(c) else c for c in line))
    except (ValueError, RecursionError):
        return None
    return text.path_of(rec, lambda s: marker in s) or None


def _record(line: str, path: Path, no: int, required: tuple[str, ...]) -> dict[str, Any]:
    """One line as a JSON object with the `required` keys; else BadInput naming the line (and the key)."""
    try:
        rec = loads(line)
    except DuplicateKey as e:
        raise BadInput(path, f"{e.key!r} appears twice in one JSON object: readers disagree on which value "
                       "counts (most keep the last silently), so the record is refused", line=no,
                       field=e.key) from None
    except (json.JSONDecodeError, RecursionError) as e:
        raise BadInput(path, f"not valid JSON ({e})", line=no) from None
    if not isinstance(rec, dict):
        raise BadInput(path, "a record must be a JSON object", line=no)
    for key in required:
        if key not in rec:
            raise BadRecord(path, "missing", line=no, field=key)
    return rec


@dataclass(frozen=True)
class Current:
    """A key's current record: its last in file order (as `make` built it), the line it is on (a retry
    points at it), its status, and how many error records of the same key it supersedes."""

    line: int
    record: Any
    status: str
    superseded: int = 0


def current(path: Path, key: tuple[str, ...], *, required: tuple[str, ...] = (),
            make: Callable[..., Any] | None = None) -> dict[tuple, Current]:
    """The current record of each key (the tuple of its `key` fields), in order of first appearance.

    `make(rec, file, line)` turns each raw record into what is kept (e.g. `AnswerRow.from_dict`, which names
    the file and line of a bad record), so a large file is not held twice, as dicts and as records.

    Checks the retry rule as it reads, because a file that breaks it has no defined current record:
    a record following one of the same key must replace an `error` and say so with `retry_of` = that
    record's line, and a first record has no `retry_of`. Anything else is BadInput naming the line and field.
    """
    out: dict[tuple, Current] = {}
    build = make or (lambda rec, file, line: rec)
    for no, rec in read(path, required=(*key, "status", *required)):
        k = tuple(rec[f] for f in key)
        before, retry_of = out.get(k), rec.get("retry_of")
        if before is None:
            if retry_of is not None:
                raise BadInput(path, f"reads {retry_of!r}, but this is the first record of {_name(key, k)}: there is "
                               "nothing for it to retry", line=no, field="retry_of")
            out[k] = Current(no, build(rec, path, no), rec["status"])
            continue
        if before.status != "error":
            raise BadInput(path, f"{_name(key, k)} already has a finished record at line {before.line} (status "
                           f"{before.status!r}): only an `error` record is superseded by a retry{REPAIR_HINT}",
                           line=no, field=key[-1])
        if type(retry_of) is not int or retry_of != before.line:
            raise BadInput(path, f"reads {retry_of!r}, but the record it supersedes (the previous one of "
                           f"{_name(key, k)}) is at line {before.line}{REPAIR_HINT}", line=no, field="retry_of")
        out[k] = Current(no, build(rec, path, no), rec["status"], before.superseded + 1)
    return out


REPAIR_HINT = (". Two writers at once leave such a file; in a results folder `python -m judge repair DIR` keeps "
               "the first finished record of each key and moves the others to repaired.jsonl")


@dataclass(frozen=True)
class Moved:
    """A record `deduplicated` takes out of its file: the line it was on, why, and the record itself."""

    line: int
    reason: str
    record: dict[str, Any]


def deduplicated(path: Path, key: tuple[str, ...], retried: bool = True) -> tuple[bytes, list[Moved]]:
    """The file as it reads once each key keeps one valid history, and the records moved out of it.

    With the retry rule (`retried`): each key keeps its first finished record (not `error`), or if it has none its
    last error, together with the chain of errors that record retries (`retry_of` by `retry_of`); every other
    record of the key is moved. Without it (blinding keys, one per label): each key keeps its first record. Kept
    lines keep their bytes, but a `retry_of` is renumbered to the line its record moves to. A partial last line
    (a killed write) is dropped, as the next append would. A `retry_of` that points at anything but an earlier
    error of its key is not what concurrent writers of this code leave (each retries an error it read), so it is
    refused, naming the line: such a file was edited, and is not repaired by guesswork.
    """
    path = Path(path)
    raw = path.read_bytes().split(b"\n")[:-1] if path.exists() else []
    records = list(read(path, required=(*key, "status") if retried else key))
    history: dict[tuple, list[int]] = {}
    at: dict[int, dict[str, Any]] = {}
    for no, rec in records:
        history.setdefault(tuple(rec[f] for f in key), []).append(no)
        at[no] = rec
    kept: set[int] = set()
    moved: list[Moved] = []
    for k, lines in history.items():
        what = _name(key, k)
        if not retried:
            first = lines[0]
            kept.add(first)
            moved += [Moved(no, f"a second record of {what} (" + ("identical to" if at[no] == at[first] else
                            "differs from") + f" the first, kept at line {first})", at[no]) for no in lines[1:]]
            continue
        finished = [no for no in lines if at[no]["status"] != "error"]
        chosen = finished[0] if finished else lines[-1]
        chain, no = [chosen], chosen
        while (retry_of := at[no].get("retry_of")) is not None:
            earlier_error = type(retry_of) is int and retry_of in lines and retry_of < no and \
                at[retry_of]["status"] == "error"
            if not earlier_error:
                raise BadInput(path, f"reads {retry_of!r}, which is not the line of an earlier error record of {what}: "
                               "concurrent writers never leave that, so the file was edited and `judge repair` does "
                               "not guess which record counts", line=no, field="retry_of")
            chain.append(retry_of)
            no = retry_of
        kept.update(chain)
        for no in (n for n in lines if n not in chain):
            if no in finished:
                reason = f"a second finished record of {what}: its first, kept at line {chosen}, counts"
            elif no > chosen and finished:
                reason = f"an error record of {what} written after its finished record, kept at line {chosen}"
            else:
                reason = f"an error record of {what} that the record kept at line {chosen} does not retry"
            moved.append(Moved(no, reason, at[no]))
    order = sorted(kept)
    renumbered = {old: new for new, old in enumerate(order, start=1)}
    out = []
    for no in order:
        rec, retry_of = at[no], at[no].get("retry_of")
        same = retry_of is None or renumbered[retry_of] == retry_of
        out.append(raw[no - 1] if same else dumps({**rec, "retry_of": renumbered[retry_of]}).encode())
    return b"".join(line + b"\n" for line in out), sorted(moved, key=lambda m: m.line)


def _name(key: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{f} {v!r}" for f, v in zip(key, values, strict=False))


def to_retry(records: dict[tuple, Current]) -> dict[tuple, int]:
    """Key -> line of every current record that is an `error`: what a re-run asks again, pointing at that line."""
    return {k: c.line for k, c in records.items() if c.status == "error"}
