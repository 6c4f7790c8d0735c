"""[[comparisons]]: an arm of this run against an arm of a previous results folder, registered before this run and
decided like a hypothesis. The previous folder is named by the anchor `judge run` printed for it, so the run it
names cannot change after registration without the decision refusing it (judge.numbers.registered_comparisons)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput

from .hypotheses import decision_settings
from .settings import check_keys, setting
from .spec import ArmSpec

COMPARISON_KEYS = ("id", "text", "folder", "anchor", "arm", "previous_arm", "quant", "kind", "margin", "alpha")
ANCHOR = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class RegisteredComparison:
    id: str
    folder: str  # the previous results folder, relative to the experiment folder unless absolute
    anchor: str  # its anchor as `judge run` printed it (judge.results.files.anchor)
    arm: str  # this run's arm: b, the arm under test
    previous_arm: str  # the previous folder's arm: a, the reference
    quant: str  # the quant of both arms
    kind: str
    margin: float
    alpha: float
    text: str = ""

    def folder_path(self, exp_dir: Path) -> Path:
        return Path(self.folder) if Path(self.folder).is_absolute() else Path(exp_dir) / self.folder


def parse_comparison(where: str, t: Any, file: Path, arms: dict[str, ArmSpec],
                     before: list[RegisteredComparison]) -> RegisteredComparison:
    check_keys(t, COMPARISON_KEYS, file, where)
    cid = setting(t, "id", "string", file, where)
    if not cid.strip():
        raise BadInput(file, f"{where} id must not be empty", field="id")
    if any(c.id == cid for c in before):
        raise BadInput(file, f"{where} repeats comparison id {cid!r}: ids must be unique", field="id")
    folder = setting(t, "folder", "string", file, where)
    if not folder.strip():
        raise BadInput(file, f"{where} folder must name the previous results folder", field="folder")
    anchor = setting(t, "anchor", "string", file, where)
    if not ANCHOR.fullmatch(anchor):
        raise BadInput(file, f"{where} anchor must be the previous folder's anchor as `judge run` printed it "
                       f"(64 lowercase hex digits), got {anchor!r}", field="anchor")
    arm = setting(t, "arm", "string", file, where)
    if arm not in arms:
        raise BadInput(file, f"{where} names unknown arm {arm!r}", field="arm")
    quant = setting(t, "quant", "string", file, where)
    if quant not in arms[arm].quants:
        raise BadInput(file, f"{where}: arm {arm!r} has no quant {quant!r}", field="quant")
    previous_arm = setting(t, "previous_arm", "string", file, where, arm)
    if not previous_arm.strip():
        raise BadInput(file, f"{where} previous_arm must not be empty", field="previous_arm")
    kind, margin, alpha = decision_settings(t, file, where)
    return RegisteredComparison(id=cid, folder=folder, anchor=anchor, arm=arm, previous_arm=previous_arm,
                                quant=quant, kind=kind, margin=margin, alpha=alpha,
                                text=setting(t, "text", "string", file, where, ""))
