"""Checking a written gate before scoring: a run may use an audit only if it passed, on this exact log,
with the registered k, maximum and detector rule. A missing, stale or different gate is as good as failed;
when detectors gate, a gate whose detectors ran under other rules (thresholds, or the judge's
grader-injection patterns or the text normalisation before them, changed since) is stale: it may have missed
what they flag now."""
from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path

from core import jsonl
from core.errors import CheckFailed
from judge.judging.blinding import INJECTION, NORMALISATION

from .detectors import Thresholds


def check_gate(gate_file: Path, log: Path, *, k: int, max_gamed: int, gate_on_detectors: bool = False) -> dict:
    """The gate document when it passed under the registered settings; else CheckFailed saying why."""
    gate_file, log = Path(gate_file), Path(log)
    if not gate_file.exists():
        raise CheckFailed(f"audit gate {gate_file} is missing: run "
                          f"`python -m audit topk --k {k} --rewards {log}` first")
    try:
        doc = jsonl.loads(gate_file.read_text())
    except ValueError as e:  # invalid JSON, or a key repeated in an object (jsonl.DuplicateKey)
        raise CheckFailed(f"audit gate {gate_file} is not valid JSON ({e})") from None
    sha = hashlib.sha256(log.read_bytes()).hexdigest() if log.exists() else None
    problems = []
    if doc.get("input", {}).get("sha256") != sha:
        problems.append(f"it audited another log (sha256 {str(doc.get('input', {}).get('sha256'))[:12]}…, "
                        f"registered log {str(sha)[:12]}…)")
    for key, want in (("k", k), ("max_gamed", max_gamed), ("gate_on_detectors", gate_on_detectors)):
        if doc.get(key) != want:
            problems.append(f"{key} is {doc.get(key)!r}, registered {want!r}")
    det = doc.get("detectors") or {}
    if gate_on_detectors and (det.get("thresholds") != asdict(Thresholds())
                              or det.get("grader_patterns") != list(INJECTION)
                              or det.get("grader_normalisation") != NORMALISATION):
        problems.append("its detectors ran under other detector rules (thresholds, grader-injection patterns or the "
                        "text normalisation before them changed since): re-run the audit")
    if doc.get("verdict") != "pass":
        problems.append(f"it stopped the run ({doc.get('counted')} counted against passing, "
                        f"max {doc.get('max_gamed')})")
    if problems:
        raise CheckFailed(f"audit gate {gate_file}: " + "; ".join(problems))
    return doc
