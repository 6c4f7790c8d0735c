"""Registration keys renamed so that each name means one thing, and the migration that still reads the old names.

`batch` was a number in [runtime] (sequences llama.cpp decodes together) and a switch in [models.NAME] (answer
through the provider's batch API); `rule` in [analysis] was one of three rules (decision, gold-corrected interval,
panel); `attempts` counted verdicts asked again in [judge] and the tries of one call in [models.NAME]; `family` named
a model's family in [models.NAME] and the adjustment of the hypotheses as one family in [analysis]. A sealed
prereg.toml cannot be edited, so an old name still loads as its new one, and the loader says which it renamed
(Experiment.renamed_keys). Registering both names in one table is refused: which would count?
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInput

from .toml_lines import KeyLines


@dataclass(frozen=True)
class Renamed:
    table: str  # a top-level table; with `each`, every table under it ([models.NAME])
    old: str
    new: str
    each: bool = False

    def where(self, name: str | None = None) -> str:
        return f"[{self.table}.{name}]" if self.each else f"[{self.table}]"


RENAMED = (
    Renamed("runtime", "batch", "parallel_sequences"),
    Renamed("models", "batch", "provider_batch", each=True),
    Renamed("analysis", "rule", "decision_rule"),
    Renamed("judge", "attempts", "verdict_attempts"),  # [models.NAME] attempts: the tries of one call
    Renamed("analysis", "family", "family_adjustment"),  # [models.NAME] family: the model's family
)


def migrate(doc: dict, text: str, file: Path) -> tuple[dict, tuple[str, ...], dict[tuple, str]]:
    """`doc` with every old key under its new name (the tables touched are copied, `doc` is left as read), a notice
    per key renamed naming the file, line, table and old -> new, and {(table path, new key): old key} so an error
    about the value can point at the key as written. Both names in one table: BadInput naming both."""
    out = dict(doc)
    notices: list[str] = []
    written: dict[tuple, str] = {}
    lines = KeyLines(text)
    for r in RENAMED:
        tables = out.get(r.table)
        if not isinstance(tables, dict):
            continue
        paths = [((r.table, name), name) for name in tables] if r.each else [((r.table,), None)]
        for path, name in paths:
            t = tables[name] if r.each else tables
            if not isinstance(t, dict) or r.old not in t:
                continue
            line = lines.find(path, r.old)
            if r.new in t:
                raise BadInput(file, f"{r.where(name)} registers both {r.old} (its old name) and {r.new}: keep "
                               f"{r.new} only", line=line, field=r.old)
            moved = {(r.new if k == r.old else k): v for k, v in t.items()}
            if r.each:
                tables = out[r.table] = {**tables, name: moved}
            else:
                tables = out[r.table] = moved
            at = f"{file}:{line}" if line is not None else str(file)
            notices.append(f"{at}: {r.where(name)} {r.old} is now {r.new} (read as {r.new}; the old name still loads)")
            written[(*path, r.new)] = r.old
    return out, tuple(notices), written
