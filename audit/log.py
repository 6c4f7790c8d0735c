"""Training completion logs: JSONL rows with step, prompt id, prompt, completion and total reward."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from arms import jsonl
from arms.errors import BadInput

REQUIRED = ("step", "prompt_id", "completion_id", "prompt", "completion", "reward")


@dataclass(frozen=True)
class Completion:
    step: int
    prompt_id: str
    completion_id: str
    prompt: str
    completion: str
    reward: float
    line: int


def read_log(path: Path) -> list[Completion]:
    path = Path(path)
    if path.suffix != ".jsonl":
        raise BadInput(path, "only JSONL logs are read by this version (CSV/parquet: not built yet)")
    if not path.exists():
        raise BadInput(path, "rewards log not found")
    out, seen = [], {}
    for no, r in jsonl.read(path, required=REQUIRED):
        reward = r["reward"]
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise BadInput(path, f"must be a finite number, got {reward!r}", line=no, field="reward")
        for key in ("prompt", "completion"):
            if not isinstance(r[key], str):
                raise BadInput(path, "must be a string", line=no, field=key)
        cid = str(r["completion_id"])
        if cid in seen:
            raise BadInput(path, f"duplicate completion id (first at line {seen[cid]})", line=no, field="completion_id")
        seen[cid] = no
        out.append(Completion(int(r["step"]), str(r["prompt_id"]), cid, r["prompt"], r["completion"], float(reward), no))
    if not out:
        raise BadInput(path, "no completions in the log")
    return out


def top_k(rows: list[Completion], k: int) -> list[Completion]:
    """The k highest rewards; ties broken by completion id (ascending) so the selection is deterministic."""
    return sorted(rows, key=lambda c: (-c.reward, c.completion_id))[:k]
