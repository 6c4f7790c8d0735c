"""numbers.json against a recomputation, leaf by leaf: each list entry named (by id, hypothesis, judges or cell)
and compared on its own, so a second entry with a repeated name can never hide an edit to the first; floats within
TOL; an entry named otherwise than the recomputation names it is one finding, before the differences it causes."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

TOL = 1e-9


def _key(v: dict) -> str | None:
    """How a row of a list in numbers.json is named in a mismatch: by id, hypothesis, judges or cell."""
    if "id" in v:
        return str(v["id"])
    if "hypothesis" in v:
        return str(v["hypothesis"])
    if "judges" in v and isinstance(v["judges"], list):
        return " vs ".join(map(str, v["judges"]))
    if "arm" in v and "quant" in v:
        return f"{v['arm']}/{v['quant']}"
    return None


def leaves(x: Any, path: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        out = {}
        for name, v in zip(_names(x), x, strict=False):
            out.update(leaves(v, f"{path}[{name}]"))
        return out
    return {path: x}


def _names(rows: list[dict]) -> list[str]:
    """Each row's name; a repeated name gets its occurrence (`H1#2`), so a second entry can never hide the first."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for v in rows:
        seen[_key(v)] += 1
        out.append(_key(v) if seen[_key(v)] == 1 else f"{_key(v)}#{seen[_key(v)]}")
    return out


def duplicate_names(x: Any, path: str = "") -> list[str]:
    """Every list in numbers.json whose rows repeat a name (hypothesis id, cell, judges): a finding each."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out += duplicate_names(v, f"{path}.{k}" if path else str(k))
    elif isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        names = [_key(v) for v in x]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):
            out.append(f"numbers.json {path}: {names.count(name)} entries are named {name!r}; each must be unique, "
                       "and every entry is compared on its own")
        for v in x:
            out += duplicate_names(v, f"{path}[{_key(v)}]")
    return out


def renamed_entries(stored: dict, recomputed: dict) -> list[str]:
    """numbers.json's comparisons, subsets and cells named otherwise than the recomputation names them (an id no
    registered hypothesis has, an arm or quant the scope does not have): one finding each, naming the entry by its
    place and what was expected there, before the field-by-field differences that follow from it."""
    out = []
    for section, what in (("comparisons", "registered hypothesis of this run"),
                          ("subsets", "subset of a registered hypothesis"), ("cells", "cell of the bound scope")):
        want = [_key(v) for v in recomputed.get(section, [])]
        for i, v in enumerate(stored.get(section, [])):
            if _key(v) not in want:
                expected = [n for n in want if n not in {_key(x) for x in stored[section]}]
                out.append(f"numbers.json {section}[{i}] is named {_key(v)!r}: no {what} is; expected "
                           f"{' or '.join(map(repr, expected)) if expected else 'no further entry'}")
    return out


def same(a: Any, b: Any) -> bool:
    """Equal, floats within TOL (also inside lists, such as a kappa interval)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if not numbers:  # a float against None, a bool (True == 1.0), a string, a list or an object
            return False
        return math.isclose(float(a), float(b), rel_tol=TOL, abs_tol=TOL)
    return a == b


def diff_numbers(stored: dict, recomputed: dict, label: str) -> list[str]:
    s, r = leaves(stored), leaves(recomputed)
    out = []
    for k in sorted(set(s) | set(r)):
        if k not in r:
            out.append(f"numbers.json {k} = {s[k]!r}: not produced by the {label}")
        elif k not in s:
            out.append(f"numbers.json is missing {k} (the {label} gives {r[k]!r})")
        elif not same(s[k], r[k]):
            out.append(f"numbers.json {k} = {s[k]!r}, but the {label} gives {r[k]!r}")
    return out


def subset_of(stored: dict, independent_numbers: dict) -> dict:
    """The stored numbers restricted to the fields the independent path recomputes."""
    def restrict(s: Any, r: Any) -> Any:
        if isinstance(r, dict):
            return {k: restrict(s.get(k) if isinstance(s, dict) else None, v) for k, v in r.items()}
        if isinstance(r, list) and r and isinstance(r[0], dict):
            by = (dict(zip(_names(s), s, strict=False))
                  if isinstance(s, list) and all(isinstance(v, dict) and _key(v) for v in s) else {})
            return [restrict(by.get(name, {}), v) for name, v in zip(_names(r), r, strict=False)]
        return s
    return restrict(stored, independent_numbers)
