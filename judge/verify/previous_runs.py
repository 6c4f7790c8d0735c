"""The previous results folders registered comparisons name ([[comparisons]]): each must still have the anchor
registered for it. A previous folder edited after registration (its raw files, its numbers.json) is not the run the
comparison was registered against, whatever this folder's own files say."""
from __future__ import annotations

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

