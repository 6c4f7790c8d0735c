"""The amendment chain re-checked by hand from the raw amendments.jsonl and judgments.jsonl, without
registration.seal or judge.numbers.analysis: hash chain, numbering, and the rule that an amendment dated at or after
the first judgment of the run cannot govern it unless marked post hoc. The two paths must agree (`disagreement`)."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from core import jsonl


def _utc(text: Any) -> dt.datetime | None:
    """An ISO 8601 time with its UTC offset, else None: a time without a zone cannot be ordered."""
    try:
        t = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else None


def _first_judgment(run_dir: Path, problems: list[str]) -> tuple[dt.datetime, str] | None:
    """The earliest recorded judgment time in the raw judgments.jsonl, parsed (not compared as text)."""
    first = None
    for no, j in jsonl.read(run_dir / "judgments.jsonl"):
        if j.get("time") is None:
            continue
        t = _utc(j["time"])
        if t is None:
            problems.append(f"amendments: {run_dir / 'judgments.jsonl'}:{no}: field 'time': {j['time']!r} is not an "
                            "ISO 8601 time with a UTC offset")
        elif first is None or t < first[0]:
            first = (t, j["time"])
    return first


def amendment_check(exp_dir: Path, run_dir: Path, stored: list[dict]) -> dict[str, Any]:
    """Re-check amendments.jsonl from its raw bytes, by hand, without registration.seal or judge.numbers.analysis.

    The chain is rebuilt as registration.seal defines it: amendment 1's `prev` is the sha256 of MANIFEST, each
    later `prev` the sha256 of the previous record in canonical JSON (sorted keys, no spaces, UTF-8).
    The last record has no successor to chain it, so each record is also compared with the
    `amendments` numbers.json was computed from. Returns every finding (`problems`), the line of the
    first break the main seal check would also see (`broken_at`, else None), and the numbers of the
    amendments dated at or after the first judgment and not marked post hoc (`late`).
    """
    path, manifest = exp_dir / "amendments.jsonl", exp_dir / "MANIFEST"
    out: dict[str, Any] = {"problems": [], "broken_at": None, "late": set()}

    def finding(line: int, field: str | None, message: str, chain: bool = False) -> None:
        out["problems"].append(f"amendments: {path}:{line}:{f' field {field!r}:' if field else ''} {message}")
        if chain and out["broken_at"] is None:
            out["broken_at"] = line

    first = _first_judgment(run_dir, out["problems"])
    prev = hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.exists() else None
    prev_line, k = 0, 0
    lines = path.read_bytes().split(b"\n") if path.exists() else [b""]
    for no, raw in enumerate(lines[:-1], start=1):  # the last piece is "" or a partial record a kill left
        if not raw.strip():
            continue
        k += 1
        try:
            rec = jsonl.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:  # ValueError: invalid JSON, or a key repeated in an object
            finding(no, None, f"amendment {k} is not valid JSON ({e}); nothing after it can be chained", chain=True)
            break
        if not isinstance(rec, dict):
            finding(no, None, f"amendment {k} is not a JSON object; nothing after it can be chained", chain=True)
            break
        missing = [f for f in ("date", "text", "prev") if f not in rec]
        for f in missing:
            finding(no, f, f"amendment {k} is missing it; nothing after it can be chained", chain=True)
        if missing:
            break
        link = "MANIFEST" if prev_line == 0 else f"line {prev_line}"
        if prev is None:
            finding(no, "prev", f"amendment {k} cannot be chained: {manifest} is missing", chain=True)
        elif rec["prev"] != prev:
            finding(no, "prev", f"hash chain broken at amendment {k}, the link from {link} to line {no}: expected "
                    f"{prev[:12]}…, found {str(rec['prev'])[:12]}…; {link} was changed after amendment {k} was "
                    "chained to it, or an amendment was inserted or removed here", chain=True)
        if rec.get("n") != k:
            finding(no, "n", f"reads {rec.get('n')!r}, but this is amendment {k} of the chain")
        post_hoc = rec.get("post_hoc", False)
        if not isinstance(post_hoc, bool):
            finding(no, "post_hoc", f"amendment {k} reads {post_hoc!r}; it must be true or false")
        date = _utc(rec["date"])
        if date is None:
            finding(no, "date", f"amendment {k} reads {rec['date']!r}, not an ISO 8601 time with a UTC offset")
        elif first and date >= first[0] and post_hoc is not True:
            out["late"].add(k)
            finding(no, "date", f"amendment {k} is dated {rec['date']}, not before the first judgment of this run "
                    f"({first[1]}), and is not marked post hoc: it cannot govern this run (record such an "
                    "amendment with `judge amend --post-hoc`)")
        if k > len(stored):
            finding(no, None, f"amendment {k} is not in numbers.json: it was added after the numbers were computed")
        else:
            raw_fields = {"n": rec.get("n"), "date": rec["date"], "text": rec["text"], "post_hoc": post_hoc}
            for f, raw_value in raw_fields.items():
                if stored[k - 1].get(f) != raw_value:
                    finding(no, f, f"amendment {k} reads {raw_value!r}, but numbers.json was computed with "
                            f"{stored[k - 1].get(f)!r}")
        prev = hashlib.sha256(json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                              .encode("utf-8")).hexdigest()
        prev_line = no
    if len(stored) > k:
        out["problems"].append(f"amendments: numbers.json lists {len(stored)} amendment(s), {path} has {k}: "
                               "amendments were removed after the numbers were computed")
    return out


def disagreement(what: str, main: Any, independent: Any) -> list[str]:
    """A finding when the main path and the independent path reach different results on the same files."""
    if main == independent:
        return []
    return [f"amendments: the two paths disagree on {what}: the main path (registration.seal, judge.numbers.analysis) "
            f"gives {main}, the independent plain-Python check gives {independent}"]
