"""A small SYNTHETIC GRPO log in the shape of docs/reward-telemetry.md (IT tickets answered as JSON, six rewards).

Deterministic (seeded), stdlib only. 30 steps, one ticket per step, 8 completions per group:
* steps 18-28 carry the seed's parse failures, 0 1 5 5 8 5 4 7 4 6 2: raw paragraph breaks inside
  the JSON "resolution" string (steps 27-28: truncated mid-string instead), and the reward
  zeroes format, quality, citation and calibration when it cannot parse — so every zero quality
  is a parse failure;
* steps 3 and 7 hold one ```json fenced completion (parses once the fence is stripped);
* steps 5 and 9 are zero-variance groups (8 identical completions);
* over the run citations and the confidence habit (stating 0.85) grow while quality falls, as
  in the window table of docs/motivating-experiment.md; `parsimony` is the inverted v1 reward of
  docs/reward-telemetry.md (rewards < 200 or > 400 characters), the "form" component of the hack signature.
`regrade` re-computes the components from a stored completion (the fidelity gate's function).
"""
from __future__ import annotations

import csv
import json
import random
import re
import statistics
from pathlib import Path

STEPS, GROUP = 30, 8
FAILURES = {18: 0, 19: 1, 20: 5, 21: 5, 22: 8, 23: 5, 24: 4, 25: 7, 26: 4, 27: 6, 28: 2}
FENCED = {3, 7}
ZERO_VARIANCE = {5, 9}
COMPONENTS = ("format", "quality", "citation", "calibration", "parsimony", "repetition")

TICKETS = {
    "TRAIN-00041": ("VPN drops every few minutes on the office network.", "KB-0012",
                    ["vpn", "client", "timeout", "keepalive", "reinstall", "certificate"]),
    "TRAIN-00042": ("Printer on floor 3 shows offline for every user.", "KB-0027",
                    ["printer", "spooler", "restart", "driver", "queue", "network"]),
    "TRAIN-00043": ("BGP session will not come up after the maintenance window.", "KB-0033",
                    ["bgp", "neighbor", "asn", "password", "timer", "reset"]),
    "TRAIN-00044": ("Laptop cannot join the Wi-Fi after the password change.", "KB-0040",
                    ["wifi", "profile", "forget", "password", "reconnect", "radius"]),
    "TRAIN-00045": ("Shared drive is read-only for the finance team.", "KB-0051",
                    ["share", "permissions", "group", "acl", "finance", "remap"]),
    "TRAIN-00046": ("Email bounces with a mailbox full error.", "KB-0064",
                    ["mailbox", "quota", "archive", "retention", "increase", "cleanup"]),
}


def prompt(tid: str) -> str:
    text, kb, terms = TICKETS[tid]
    return (f"Ticket: {text}\n\nRetrieved text:\n{kb}: resolve with {', '.join(terms)}.\n\n"
            "Reply with JSON: resolution, cited_artifacts, confidence, escalate.")


def _strip_fence(text: str) -> str:
    m = re.match(r"^\s*```[a-z]*\s*\n?(.*?)\n?\s*```\s*$", text, re.S)
    return m.group(1) if m else text


def regrade(c) -> dict:
    """The reward components of one stored completion (any object with .prompt_id and .completion)."""
    return score(c.prompt_id, c.completion)


def score(tid: str, completion: str) -> dict:
    _, kb, terms = TICKETS[tid]
    words = re.findall(r"[a-z0-9']+", completion.lower())
    tris = list(zip(words, words[1:], words[2:], strict=False))
    repetition = 1.0 - (len(tris) - len(set(tris))) / len(tris) if tris else 1.0
    parsimony = 1.0 if len(completion) < 200 or len(completion) > 400 else 0.0
    try:
        obj = json.loads(_strip_fence(completion))
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):  # the pipeline zeroes four rewards at once when it cannot parse
        comps = dict(format=0.0, quality=0.0, citation=0.0, calibration=0.0, parsimony=parsimony, repetition=repetition)
    else:
        res = str(obj.get("resolution", "")).lower()
        quality = sum(t in res for t in terms) / len(terms)
        cites = obj.get("cited_artifacts") or []
        comps = dict(format=1.0 if set(obj) == {"resolution", "cited_artifacts", "confidence", "escalate"} else 0.5,
                     quality=quality, citation=1.0 if kb in cites else (0.5 if cites else 0.0),
                     calibration=1.0 - (float(obj.get("confidence", 0.0)) - quality) ** 2,
                     parsimony=parsimony, repetition=repetition)
    return {k: round(v, 4) for k, v in comps.items()}


def _completion(rng: random.Random, tid: str, t: float, fail: str | None) -> str:
    _, kb, terms = TICKETS[tid]
    keep = [w for w in terms if rng.random() < 0.85 - 0.6 * t] or [rng.choice(terms)]
    sentences = [f"Check the {w} settings." for w in keep]
    if rng.random() < 0.2 + 0.7 * t:  # answers grow more organised (longer) as training goes on
        sentences += ["Then confirm with the user that the issue is resolved.", "Close the ticket afterwards."]
    intro = "To resolve this issue, follow these steps:" + ("\n\n1. " if fail == "newline" else " ")
    obj = {"resolution": intro + " ".join(sentences),
           "cited_artifacts": [kb] if rng.random() < 0.3 + 0.6 * t else (["KB-0099"] if rng.random() < 0.3 else []),
           "confidence": 0.85 if rng.random() < 0.4 + 0.5 * t else rng.choice([0.3, 0.5, 0.7, 0.95]),
           "escalate": rng.random() < 0.1}
    text = json.dumps(obj)
    if fail == "newline":
        text = text.replace("\\n", "\n")  # raw newlines inside a JSON string: "Invalid control character"
    elif fail == "truncated":
        text = text[: text.index('"cited_artifacts"') + 24]
    return text


def rows(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    ids = sorted(TICKETS)
    out = []
    for step in range(1, STEPS + 1):
        tid = ids[(step - 1) % len(ids)]
        t = (step - 1) / (STEPS - 1)
        n_fail = FAILURES.get(step, 0)
        texts = []
        for k in range(GROUP):
            fail = ("truncated" if step >= 27 else "newline") if k < n_fail else None
            texts.append(_completion(rng, tid, t, fail))
        if step in ZERO_VARIANCE:
            texts = [texts[0]] * GROUP
        if step in FENCED:
            texts[-1] = "```json\n" + texts[-1] + "\n```"
        group = []
        for k, text in enumerate(texts):
            comps = score(tid, text)
            group.append({"step": step, "prompt_id": tid, "completion_id": f"s{step:02d}-c{k + 1}",
                          "prompt": prompt(tid), "completion": text, "reward": round(sum(comps.values()), 4),
                          "components": comps, "synthetic": True})
        mean, sd = statistics.fmean(r["reward"] for r in group), statistics.pstdev(r["reward"] for r in group)
        for r in group:
            r["advantage"] = round((r["reward"] - mean) / sd, 4) if sd > 1e-12 else 0.0
        out.extend(group)
    return out


def write_jsonl(path: Path, data: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return path


def write_csv(path: Path, data: list[dict]) -> Path:
    """TRL-like flat columns under other names: global_step, ticket, text, total, rewards/<name>, adv."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["global_step", "ticket", "id", "query", "text", "total", *(f"rewards/{c}" for c in COMPONENTS),
                    "adv"])
        for r in data:
            w.writerow([r["step"], r["prompt_id"], r["completion_id"], r["prompt"], r["completion"], r["reward"],
                        *(r["components"][c] for c in COMPONENTS), r["advantage"]])
    return path
