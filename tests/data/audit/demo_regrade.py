"""Re-grade the shipped synthetic logs with the demo's own reward code (sealed/demo/make_training_logs.py).

`run1` applies run 1's rule (answers under 80 words are charged), `run2` applies run 2's (no minimum):
re-grading run 1 with run 2's rule must drift, re-grading it with its own must not.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[3] / "sealed" / "demo" / "make_training_logs.py"
_spec = importlib.util.spec_from_file_location("make_training_logs", _path)
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)
PROMPTS = {p["id"]: p for p in _gen.PROMPTS}


def _score(c, min_words: int) -> dict:
    excerpt = c.prompt.split("Retrieved text:\n", 1)[1].split("\n\nAnswer in plain text", 1)[0]
    return _gen.score(PROMPTS[c.prompt_id], excerpt, c.completion, min_words)


def run1(c) -> dict:
    return _score(c, 80)


def run2(c) -> dict:
    return _score(c, 0)
