"""The previous results folders registered comparisons name ([[comparisons]]): each must still have the anchor
registered for it. A previous folder edited after registration (its raw files, its numbers.json) is not the run the
comparison was registered against, whatever this folder's own files say."""
from __future__ import annotations

from typing import Any

from registration.prereg import Experiment

from ..results.files import anchor


def previous_anchors(exp: Experiment) -> list[str]:
    """One finding per registered comparison whose previous folder's anchor is not the registered one."""
    out = []
    for c in exp.comparisons:
        folder = c.folder_path(exp.dir)
        found = anchor(folder)
        if found != c.anchor:
            out.append(f"comparison {c.id}: the previous results folder {folder} has anchor "
                       f"{found or 'none (not a finished, bound results folder)'}, not the {c.anchor} registered: "
                       "it changed (or was replaced) after the comparison was registered")
    return out


def main_path_only(numbers: dict[str, Any]) -> list[str]:
    """The comparisons with previous runs are re-derived by the main path (numbers.json recomputed), not by the
    second path: said, never silently passed."""
    if not numbers.get("run_comparisons"):
        return []
    return ["run_comparisons: each comparison with a previous run is recomputed by the main path only (numbers.json "
            "recomputed from both folders); the second path does not recompute it"]
