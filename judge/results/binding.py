"""The judge's part of a results folder's binding (arms.folder holds the lock and the rest): the judges,
rubrics and mode a `judge run` binds, and the amendment chain, bound as it stands when judging starts.

A later run must match every bound entry or is refused (exit 2) naming each difference; once judging
began, an amendment appended after the bound head governs the folder only if marked post hoc. verify
checks the same binding (`binding_findings`).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from arms import folder
from arms.folder import BINDING, JUDGMENTS, changed, commit
from arms.folder import read_binding as _read
from arms.folder import short as _short
from core import jsonl
from core.errors import BadInput
from core.records import Binding
from registration.prereg import Experiment
from registration.seal import manifest_sha256, verify_amendments


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def bind(run_dir: Path, exp: Experiment, arms: list[str], limit: int | None, panel: list, mode: str,
         rubrics: dict) -> Binding:
    """The folder's binding for this run (arms.folder.bind over every entry a judged run depends on); once
    judging began in the folder, refused too when an amendment cannot govern it."""
    out = folder.bind(run_dir, exp, arms, limit, folder.registration(exp, arms, panel, mode, rubrics))
    findings = amendment_findings(exp.dir, out) if _judging_began(Path(run_dir)) else []
    if findings:
        first = findings[0]
        raise BadInput(exp.dir / "amendments.jsonl", first["message"], line=first["line"], field=first["field"])
    return out


def _judging_began(run_dir: Path) -> bool:
    path = Path(run_dir) / JUDGMENTS
    return path.exists() and any(True for _ in jsonl.read(path))


def chain_head(exp_dir: Path) -> dict[str, Any]:
    rows = verify_amendments(exp_dir)
    head = hashlib.sha256(jsonl.dumps(rows[-1]).encode()).hexdigest() if rows else manifest_sha256(exp_dir)
    return {"count": len(rows), "head": head}


def start_judging(run_dir: Path, doc: Binding, exp: Experiment) -> Binding:
    """Bind the amendment chain as it stands when judging starts (while no verdict exists yet)."""
    if _judging_began(run_dir):
        return doc
    doc = changed(run_dir, doc, amendments=chain_head(exp.dir))
    commit(run_dir, doc)
    return doc


def amendment_findings(exp_dir: Path, doc: Binding) -> list[dict[str, Any]]:
    """Amendments that cannot govern this folder: the chain bound when judging began was rewritten, or an
    amendment was appended after it without being marked post hoc. Each names file line and field."""
    bound = doc.amendments
    if not bound:
        return []
    rows = verify_amendments(exp_dir)
    n = bound.count
    head = hashlib.sha256(jsonl.dumps(rows[n - 1]).encode()).hexdigest() if 0 < n <= len(rows) else \
        manifest_sha256(exp_dir) if n == 0 else None
    if head != bound.head:
        return [{"line": min(n, len(rows)) or None, "field": "prev",
                 "message": f"the amendment chain was rewritten after judging began in this results folder: "
                            f"{BINDING} binds its first {n} amendment(s) to head {bound.head[:12]}…, the chain "
                            f"now holds {len(rows)} whose first {n} do not hash to it"}]
    return [{"line": i, "field": "date",
             "message": f"amendment {i} (dated {r['date']}) was added to the chain after judging began in this "
                        f"results folder ({BINDING} binds the first {n}), and is not marked post hoc: it cannot "
                        "govern this run, whatever its date (record it with `judge amend --post-hoc`)"}
            for i, r in enumerate(rows[n:], start=n + 1) if not r.get("post_hoc")]


def binding_findings(run_dir: Path, exp: Experiment, now: dict[str, str], unchecked: frozenset[str] = frozenset(),
                     late: set[int] = frozenset()) -> list[str]:
    """verify's check of a bound folder: every bound entry (`registration`, as `now` computes it from the experiment
    folder, but the `unchecked` ones verify cannot compute here), and whether its amendments may govern it (the
    `late` ones, already named by the date rule, are not named twice)."""
    doc = _read(Path(run_dir))
    if doc is None:
        return []  # written before folders were bound: verify names that
    out = []
    bound = doc.registration
    for k in sorted((set(bound) | set(now)) - set(unchecked)):
        if bound.get(k) != now.get(k):
            out.append(f"{BINDING}: {k}: bound {_short(str(bound.get(k)))}, the experiment folder gives "
                       f"{_short(str(now.get(k)))}: these results were not produced from this experiment as sealed")
    try:
        findings = amendment_findings(exp.dir, doc)
    except BadInput:
        findings = []  # a broken chain: verify's seal and chain checks name it
    for p in (p for p in findings if p["field"] != "date" or p["line"] not in late):
        at = f":{p['line']}" if p["line"] else ""  # a chain emptied has no line to name
        out.append(f"amendments: {exp.dir / 'amendments.jsonl'}{at}: field {p['field']!r}: {p['message']}")
    return out
