"""Time and peak memory of analysis, report and verification at scale, on synthetic raw files.

Builds a sealed two-arm experiment with N questions and writes answers/blinding/judgments rows
as `judge run` would (scores drawn at random: this measures the machinery, not a model), then
times numbers.json, plots, report.md and `judge verify`.

    python benchmarks/report_scale.py --questions 10000             # report at 10,000 questions
    python benchmarks/report_scale.py --questions 25000 --quants 2  # 100,000 judgments
    python benchmarks/report_scale.py --quick                        # CI: 200 questions, proves it runs
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from arms.folder import blinding_secret
from core import jsonl
from core.records import AnswerRow, Judgment, Numbers, RunInfo, row_id
from judge.gold.sources import run_gold
from judge.judging.blinding import blind, folder_label_secret
from judge.judging.calls import build_request, prompt_sha256
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.plots import write_plots
from judge.outputs.report import render
from judge.outputs.review_md import write_review
from judge.results.binding import bind, commit, start_judging
from judge.results.files import anchor
from judge.results.runinfo import Scope, merged, registered
from judge.verify.checks import verify
from models.backends.llama_cpp import EXTRA_SAMPLING
from models.cache import call_key
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric, rubric_dir
from registration.seal import seal

ROOT = Path(__file__).resolve().parent.parent


class _Lines:
    def __init__(self, f):
        self.f = f

    def write(self, record: dict) -> None:
        self.f.write(jsonl.dumps(record) + "\n")


def build(tmp: Path, n: int, quants: int) -> tuple[Path, Path, dict]:
    exp = tmp / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp, ignore=shutil.ignore_patterns("MANIFEST", "training"))
    if quants == 1:  # register only the quant written, so the bound scope is what the folder holds
        text = (exp / "prereg.toml").read_text().replace('quants = ["Q8_0", "Q4_K_M"]', 'quants = ["Q8_0"]')
        blocks = text.split("[[hypotheses]]")
        text = "[[hypotheses]]".join([blocks[0], *(b for b in blocks[1:] if 'quant = "Q4_K_M"' not in b)])
        (exp / "prereg.toml").write_text(text)
    rng = random.Random(0)
    tags = [["in_context"], ["in_context", "arithmetic"], ["out_of_scope"]]
    with open(exp / "sets" / "exam.jsonl", "w") as w:
        for i in range(n):
            w.write(jsonl.dumps({"id": f"q{i:06d}", "question": f"Question {i}?", "reference": "r",
                                 "tags": tags[i % 3], "cluster": f"d{i % 50:02d}"}) + "\n")
    seal(exp)
    e = load_experiment(exp)
    arms, qs = ["base", "trained"], [q for q in ("Q8_0", "Q4_K_M")[:quants]]
    run_dir = tmp / "run"
    run_dir.mkdir()
    rubric = load_rubric(e.rubric, rubric_dir(e.rubric, e.dir))
    panel = [j for j in e.judges if j.name == "local"]
    # the folder bound to the registration before any row, as `judge run` binds it
    binding = bind(run_dir, e, arms, None, panel, "single", {("local", "single"): rubric})
    commit(run_dir, binding)
    binding = start_judging(run_dir, binding, e)
    # rows as `judge run` writes them, so that verify's re-derivation from the raw evidence holds: registered
    # settings, labels from the folder's blinding secret, prompt hashes and raw judge replies, the
    # judge's call keys from its identity (the arms' rows record none: verify lists them as unchecked)
    answers = [AnswerRow(row_id(arm, quant, f"q{i:06d}", 0), arm, quant, f"q{i:06d}", 0, "ok", "answer", "answer",
                         "stop", False, 10, 5, 0.1, "sha", None,
                         {**e.arm(arm).generation.to_dict(), "seed": e.arm(arm).generation.seed})
               for arm in arms for quant in qs for i in range(n)]
    items, keys = blind(answers, {q.id: q for q in load_questions(e.set_paths())},
                        folder_label_secret(blinding_secret(run_dir, binding), binding.label_key), e.seed, e.scrub)
    identity = {"backend": "llama-cpp", "model_sha256": "sha", "lora_sha256": None, "lora_scale": None,
                "chat_template_sha256": "template", "n_ctx": e.runtime.n_ctx, "sampler": EXTRA_SAMPLING}
    read_back = {"model_sha256": "sha", "loras": [], "chat_template_sha256": "template", "cpu_extra_buffers": True}
    # plain buffered writes: the same line format as jsonl.Appender without its per-record fsync
    with open(run_dir / "answers.jsonl", "w") as fa, open(run_dir / "blinding.jsonl", "w") as fb, \
            open(run_dir / "judgments.jsonl", "w") as fj:
        wa, wb, wj = (_Lines(f) for f in (fa, fb, fj))
        for a in answers:
            wa.write(a.to_dict())
        for k in keys:
            wb.write(k.to_dict())
        for item in items:
            score = rng.choice((0, 1, 2))
            fields = {"score": score, "harmful": False, "rationale": "x"}
            raw = json.dumps(fields)
            request = build_request(rubric, item, 0)
            wj.write(Judgment("local", item.label, item.question_id, "scored", score, fields, False, None,
                              prompt_sha256(request),
                              [{"raw": raw, "finish_reason": "stop", "error": None, "repaired": False}],
                              0.1, 10, 5, 0, calls=[call_key(identity, request)]).to_dict())
    scope = Scope(arms, None, [q.id for q in load_questions(e.set_paths())], panel, "single", binding.label_key)
    run = merged({"version": RunInfo.VERSION, **registered(e, scope, rubric)}, {
        "experiment_dir": str(exp), "audit_gate": "not checked",
        "judge": {"identity": identity, "identities": {"local": identity},
                  "effective_settings": {"local/correctness": read_back}}})
    (run_dir / "run.json").write_text(json.dumps(run))
    return exp, run_dir, run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--quants", type=int, default=1, choices=(1, 2))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.questions, args.quants = 200, 1
    with tempfile.TemporaryDirectory() as t:
        exp, run_dir, run = build(Path(t), args.questions, args.quants)
        e = load_experiment(exp)
        # the demo registers both quants; restrict hypotheses to what was written
        timings = {}
        t0 = time.perf_counter()
        numbers = compute_numbers(e, load_questions(e.set_paths()), run_dir, RunInfo.from_dict(run, "run.json"),
                                  run_gold(e, run_dir))
        timings["numbers_s"] = time.perf_counter() - t0
        write_numbers(numbers, run_dir / "numbers.json")
        numbers, run = Numbers.read_file(run_dir / "numbers.json"), RunInfo.read_file(run_dir / "run.json")
        t0 = time.perf_counter()
        write_plots(numbers, run_dir)
        timings["plots_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_review(run_dir, exp)
        (run_dir / "report.md").write_text(render(numbers, run, anchor(run_dir)))
        timings["report_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        problems = verify(run_dir, caches=[]).problems  # no call cache: the judge calls were never made
        timings["verify_s"] = time.perf_counter() - t0
        judgments = sum(1 for _ in open(run_dir / "judgments.jsonl"))
        print(json.dumps({"questions": args.questions, "judgments": judgments,
                          **{k: round(v, 2) for k, v in timings.items()},
                          "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                          "verify_problems": len(problems)}, indent=1))
        assert not problems, problems[:5]


if __name__ == "__main__":
    main()
