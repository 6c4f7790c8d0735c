"""CLI: python -m arms {quantize,collect}. Exit 0 ok, 1 a check failed, 2 bad input.

`quantize` derives every registered quant file and shows what it really is (type read back,
sha256, recipe). `collect` runs answer collection alone — no judging — into OUT/answers.jsonl
and writes OUT/collection.json with what the invocation did; `python -m judge run` does the same
collection as its first stage. Like `judge run`, it holds the folder's lock while it writes and binds
the folder to the registration before its first call (arms.folder).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.atomic import write_text
from core.errors import BadInput, run_cli

DEMO = Path(__file__).resolve().parent.parent / "sealed" / "demo"


def _quantize(args) -> None:
    from models.backends.registry import backend_info
    from models.sources import quant_file
    from registration.prereg import load_experiment

    exp = load_experiment(args.exp)
    done = set()
    for arm in exp.arms:
        spec = exp.models[arm.model]
        if not backend_info(spec.backend).local:
            continue
        for quant in arm.quants:
            if (spec.name, quant) not in done:
                done.add((spec.name, quant))
                print(json.dumps({"model": spec.name, **quant_file(spec, quant, exp.dir, exp.runtime).to_dict()}))


def _collect(args) -> None:
    from models.backends.registry import backend_info
    from models.cache import CallCache
    from models.llama_loader import check_gpu_layers
    from registration.prereg import load_experiment
    from registration.questions import load_questions
    from registration.seal import outside_experiment, verify_seal

    from .collect import collect
    from .context import check_arms
    from .folder import bind, commit, locked, registration

    outside_experiment(args.out, args.exp)
    verify_seal(args.exp)
    exp = load_experiment(args.exp)
    wanted = exp.selected_arms(args.arms)
    if args.limit is not None and args.limit < 1:
        raise BadInput("--limit", "must be a positive number of questions")
    questions = load_questions(exp.set_paths(), exp.set_formats_by_path())[: args.limit]
    if any(backend_info(exp.models[exp.arm(n).model].backend).local for n in wanted):
        check_gpu_layers(exp.runtime.gpu_layers, exp.dir / "prereg.toml")
    check_arms([exp.arm(n) for n in wanted], exp.models, questions, exp.set_paths(), exp.dir,
               exp.runtime)  # a prompt that cannot fit is refused before the first call
    args.out.mkdir(parents=True, exist_ok=True)
    with locked(args.out, "arms collect"):  # a second writer of this folder is refused at once, naming this one
        # bound to one registration before any call (the entries answers depend on): refused if bound to another
        commit(args.out, bind(args.out, exp, wanted, args.limit, registration(exp, wanted), judging=False))
        cache = CallCache(run=args.out)
        try:
            stats = collect([exp.arm(n) for n in wanted], exp.models, exp.adapters, questions, exp.dir,
                            exp.runtime, args.out / "answers.jsonl", cache, progress=not args.quiet)
        finally:
            cache.close()
        record = {"experiment": exp.name, "arms": wanted, "limit": args.limit,
                  "effective_settings": stats.pop("effective"), "last_invocation": {"answers": stats}}
        write_text(args.out / "collection.json", json.dumps(record, indent=1) + "\n")
    print(f"answers: {args.out / 'answers.jsonl'} ({stats['rows_total']} rows, {stats['model_calls']} new model calls, "
          f"{stats['errors']} errors)", file=sys.stderr)


def parser() -> argparse.ArgumentParser:
    """The command line, built apart from running it: docs/gen_reference.py documents it from here."""
    p = argparse.ArgumentParser(prog="python -m arms")
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize", help="derive the registered quants of every llama-cpp model of an experiment")
    q.add_argument("--exp", type=Path, default=DEMO)
    c = sub.add_parser("collect", help="collect answers only (resumable), without judging")
    c.add_argument("--exp", type=Path, default=DEMO)
    c.add_argument("--arms", default="", metavar="NAME,...", help="arms to run (default: every registered arm)")
    c.add_argument("--limit", type=int, default=None, help="only the first N questions")
    c.add_argument("--out", type=Path, required=True, help="folder for answers.jsonl and collection.json")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_cli(lambda: _quantize(args) if args.cmd == "quantize" else _collect(args))

if __name__ == "__main__":
    from core.crash import supervise

    sys.exit(supervise("arms", main))
