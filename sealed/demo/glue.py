"""The demo glue: BM25 retrieval over the experiment's knowledge base, then format enforcement.

Deterministic: the same question and the same model output always give the same final answer. It lives
in the experiment folder (registered as "glue.py:answer"), so the seal covers it.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from arms.glue import CallModel, GlueResult
from arms.questions import Question

SYSTEM = ("You answer questions about the rules below. Use only the context. "
          "Answer in one or two sentences and cite the article number.")
DECLINE = "The material does not cover this question; please contact the scheme office."
MIN_SCORE = 2.0  # below this BM25 score the glue declines instead of asking the model
TOKEN = re.compile(r"[a-z0-9]+")
STOP = set("a an the of to in on for and or is are be by with at from as it this that what how do does i my "
           "can if when who which there their".split())


def _tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP]


@lru_cache(maxsize=8)
def _chunks(kb_dir: str) -> tuple[tuple[str, str], ...]:
    """Split each KB file into article chunks with ids like 'd03#3.2'."""
    out = []
    for path in sorted(Path(kb_dir).glob("*.md")):
        title = ""
        for block in re.split(r"\n\s*\n", path.read_text()):
            block = block.strip()
            if block.startswith("# "):
                title = block[2:].strip()
                continue
            m = re.match(r"Article\s+([\d.]+)", block)
            cid = f"{path.stem}#{m.group(1).rstrip('.')}" if m else f"{path.stem}#{len(out)}"
            if block:
                out.append((cid, f"{title}. {block}" if title else block))
    return tuple(out)


def bm25(query: str, docs: tuple[tuple[str, str], ...], k1: float = 1.5, b: float = 0.75) -> list[tuple[float, str]]:
    """Okapi BM25 scores, best first; ties broken by chunk id so the order is deterministic."""
    toks = [_tokens(t) for _, t in docs]
    n = len(docs)
    avg = sum(map(len, toks)) / max(n, 1)
    df = Counter(w for t in toks for w in set(t))
    q = _tokens(query)
    scored = []
    for (cid, _), t in zip(docs, toks, strict=False):
        tf = Counter(t)
        s = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / avg))
        scored.append((round(s, 6), cid))
    return sorted(scored, key=lambda x: (-x[0], x[1]))


def enforce_format(text: str, cite: str) -> str:
    """At most two complete sentences, no markdown, and a citation."""
    text = re.sub(r"[*#`>_]+", "", text).strip()
    text = re.sub(r"\s+", " ", text)
    sentences = re.findall(r"[^.!?]+[.!?]", text)
    if sentences:
        text = "".join(sentences[:2]).strip()
    if not text:
        return DECLINE
    if "article" not in text.lower():
        text = f"{text} (Article {cite})"
    return text


def answer(question: Question, call_model: CallModel, experiment_dir: Path) -> GlueResult:
    docs = _chunks(str(experiment_dir / "kb"))
    ranked = bm25(question.question, docs)
    top = [cid for s, cid in ranked[:2] if s >= MIN_SCORE]
    trace = {"retrieved": [[cid, s] for s, cid in ranked[:2]]}
    if not top:
        return GlueResult(DECLINE, {**trace, "declined": True})
    by_id = dict(docs)
    context = "\n".join(f"[{cid.split('#')[1]}] {by_id[cid]}" for cid in top)
    prompt = f"Context:\n{context}\n\nQuestion: {question.question}"
    reply = call_model([("system", SYSTEM), ("user", prompt)])
    final = enforce_format(reply.text, top[0].split("#")[1])
    return GlueResult(final, {**trace, "prompt": prompt, "raw_output": reply.text, "declined": False})
