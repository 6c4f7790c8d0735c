"""Text from outside: the one rule by which input files are decoded, and the Unicode a record may hold.

Every file a user hands us (prereg.toml, rubrics, templates, question sets) is strict UTF-8; one leading
byte-order mark (U+FEFF, which Windows editors write) is dropped; any other byte sequence is refused naming
the line and column of the first bad byte, never replaced. A lone surrogate (U+D800 to U+DFFF, which JSON can
spell as an escape `\\ud800` though it is no Unicode character) cannot be encoded as UTF-8: a string holding
one could be read but never written back into a raw file, hashed or sent, so it is refused where it enters
(a set file, a server's reply) and shown escaped in messages (`shown`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .errors import BadInput

BOM = "\ufeff"


def decode(raw: bytes, file: str | Path) -> str:
    """`raw` as strict UTF-8 without its leading byte-order mark; else BadInput at the first bad byte's line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise BadInput(file, f"is not UTF-8: byte 0x{raw[e.start]:02x} at line {line}, column {column} ({e.reason}); "
                       "save the file as UTF-8", line=line) from None
    return text.removeprefix(BOM)


def read(path: Path) -> str:
    """An input file's text by `decode`."""
    return decode(Path(path).read_bytes(), path)


def path_of(value: Any, test: Callable[[str], bool], where: str = "") -> str | None:
    """The path (`key`, `key.sub`, `key[2]`) of the first string in a JSON-like value (keys included) that passes
    `test`, "" for the value itself; None when none does."""
    if isinstance(value, str):
        return where if test(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{where}.{k}" if where else str(k)
            if isinstance(k, str) and test(k):
                return path
            found = path_of(v, test, path)
            if found is not None:
                return found
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = path_of(v, test, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def has_surrogate(s: str) -> bool:
    """Does `s` hold a lone surrogate (the only characters of a Python string UTF-8 cannot encode)?"""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate(value: Any) -> str | None:
    """The path of the first string in a JSON-like value holding a lone surrogate (`path_of`)."""
    return path_of(value, has_surrogate)


def shown(s: str) -> str:
    """`s` with any lone surrogate written as its escape (`\\ud800`): safe to print, hash and write."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8") if has_surrogate(s) else s
