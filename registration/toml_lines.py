"""Where a key sits in a TOML file, so a bad registration is reported at its line.

tomllib returns plain dicts without positions. Parsers mark the table they are reading with
`table(...)`; the loader then finds the line of the offending key (or of its table's header)
with `KeyLines` and re-raises the BadInput naming it. The scan reads headers, `key = value`
lines and the keys of one-line inline tables: enough to locate what a registration can get wrong.
"""
from __future__ import annotations

import re
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core import text as input_text
from core.errors import BadInput

_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=\s*(.*)$")
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?")
_INLINE_KEY = re.compile(rf"[{{,]\s*({_KEY})\s*=")
_AT_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def lines(text: str) -> list[str]:
    """A TOML text's lines as TOML counts them: ended by LF or CRLF only (str.splitlines would also split at
    U+2028, form feeds and other characters a TOML string may hold, and shift every line number after them)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(_name(p) for p in re.findall(rf"{_KEY}", dotted))


def _name(key: str) -> str:
    """A key as TOML reads it: a bare key as written, a quoted one without its quotes and with its escapes."""
    if key.startswith('"'):
        try:
            return tomllib.loads(f"k = {key}")["k"]
        except tomllib.TOMLDecodeError:
            return key.strip('"')
    return key.strip("'")


class KeyLines:
    """Line numbers (1-based) of every table header and key in a TOML text; array tables are indexed
    by position, as tomllib lists them: ("hypotheses", 1, "margin") is the second hypothesis's margin."""

    def __init__(self, text: str):
        self.lines: dict[tuple, int] = {}
        arrays: dict[tuple, int] = {}  # array-of-tables path -> index of its last element
        current: tuple = ()
        closing = None  # a multi-line string's delimiter while inside one
        depth = 0  # open brackets of a multi-line array
        for no, line in enumerate(lines(text), start=1):
            if closing:
                if line.count(closing) % 2:
                    closing = None
                continue
            if depth:
                depth += line.count("[") - line.count("]")
                continue
            m = _HEADER.match(line)
            if m and not _ASSIGN.match(line):
                parts = _parts(m.group(2))
                if m.group(1) == "[[":
                    path = (*self._resolve(parts[:-1], arrays), parts[-1])
                    arrays[path] = arrays.get(path, -1) + 1
                    path = (*path, arrays[path])
                else:
                    path = self._resolve(parts, arrays)
                current = path
                self.lines.setdefault(path, no)
                continue
            m = _ASSIGN.match(line)
            if not m:
                continue
            path = (*current, *_parts(m.group(1)))
            self.lines.setdefault(path, no)
            value = m.group(2)
            for delim in ('"""', "'''"):
                if value.count(delim) % 2:
                    closing = delim
            if value.startswith("{"):
                for key in _INLINE_KEY.findall(value):
                    self.lines.setdefault((*path, _name(key)), no)
            elif value.startswith("[") and not closing:
                depth = max(0, value.count("[") - value.count("]"))

    def _resolve(self, parts: tuple[str, ...], arrays: dict[tuple, int]) -> tuple:
        """A header below an array of tables ([arms.generation] after [[arms]]) belongs to its last element."""
        out: tuple = ()
        for p in parts:
            out = (*out, p)
            if out in arrays:
                out = (*out, arrays[out])
        return out

    def find(self, table: tuple, field: str | None) -> int | None:
        """The line of `field` in `table` (or nested in one of its inline tables), else of the table itself."""
        if field is not None:
            if (*table, field) in self.lines:
                return self.lines[(*table, field)]
            nested = [no for path, no in self.lines.items() if path[:len(table)] == table and path[-1] == field]
            if nested:
                return min(nested)
        return self.lines.get(table) if table else None


@contextmanager
def table(*path: str | int) -> Iterator[None]:
    """Mark a BadInput raised while reading this table (innermost mark wins) so the loader can find its line."""
    try:
        yield
    except BadInput as e:
        if getattr(e, "table", None) is None:
            e.table = path
        raise


def located(e: BadInput, text: str) -> BadInput:
    """The same BadInput with the line of its key (or table) in `text`, when it had none."""
    if e.line is not None:
        return e
    line = KeyLines(text).find(getattr(e, "table", ()), e.field)
    return BadInput(e.file, e.message, line=line, field=e.field) if line is not None else e


def read(file: Path) -> tuple[str, dict]:
    """A TOML file's text (`decode`) and its document (`loads`)."""
    text = decode(Path(file).read_bytes(), file)
    return text, loads(text, file)


def decode(raw: bytes, file) -> str:
    """A TOML file's bytes as text by core.text's rule (strict UTF-8), a bad byte refused at its line and the key
    there."""
    try:
        return input_text.decode(raw, file)
    except BadInput as e:
        raise BadInput(file, e.message, line=e.line, field=_key_at(raw.decode("utf-8", "replace"), e.line)) from None


def _key_at(text: str, line: int | None) -> str | None:
    """The key assigned, or the table declared, on `line` of a TOML text."""
    if line is None or line > len(lines(text)):
        return None
    src = lines(text)[line - 1]
    key = _HEADER.match(src) if not _ASSIGN.match(src) else _ASSIGN.match(src)
    if not key:
        return None
    return ".".join(_parts(key.group(2) if key.re is _HEADER else key.group(1)))


def loads(text: str, file) -> dict:
    """tomllib.loads, its errors as BadInput naming the line and the key there (a duplicated table or key
    is such an error: TOML refuses to declare one twice)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _AT_LINE.search(str(e))
        line = int(m.group(1)) if m else None
        message = _AT_LINE.sub("", str(e)).strip()
        if message.startswith("Cannot declare") or message.startswith("Cannot overwrite"):
            message += ": each table and key may be declared once (names must be unique)"
        raise BadInput(file, f"not valid TOML: {message}", line=line, field=_key_at(text, line)) from None
