"""CLI: python -m audit {top40,topk,rewards,contamination}. Exit 0 pass, 1 a gate stopped the run, 2 bad input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.errors import BadInput, run_cli
from models.backends.base import STRUCTURED

ROOT = Path(__file__).resolve().parent.parent


def _log_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", type=Path, default=None,
                   help="TOML file with a [columns] table mapping fields to columns")
    p.add_argument("--column", action="append", default=[], metavar="FIELD=NAME",
                   help="map one field (step, prompt_id, completion_id, prompt, completion, reward, components, "
                        "advantage) to a column; components takes a list a,b,c or a glob 'rewards/*'")


def _steps(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition("-")
    try:
        return (int(lo), int(hi)) if sep else (int(lo), int(lo))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected FIRST-LAST steps, got {text!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m audit", description="Audits that gate runs.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd in ("top40", "topk"):
        s = sub.add_parser(cmd, help="blind gaming audit of the highest-reward completions, and its gate")
        s.add_argument("--rewards", type=Path, required=True, help="training completions log (.jsonl, .csv, .parquet)")
        _log_args(s)
        if cmd == "topk":
            s.add_argument("--k", type=int, required=True)
        s.add_argument("--max-gamed", type=int, default=4, help="more than this many counted answers stops the run")
        s.add_argument("--reader", choices=("auto", "local", "openai", "anthropic"), default="auto")
        s.add_argument("--model", default=None, help="reader model name (HTTP readers)")
        s.add_argument("--base-url", default=None, help="reader server URL (OpenAI-compatible or Anthropic)")
        s.add_argument("--second-reader", choices=("local", "openai", "anthropic"), default=None,
                       help="a second reader of the same answers: agreement (Cohen's kappa) and disagreements")
        s.add_argument("--second-model", default=None)
        s.add_argument("--second-base-url", default=None)
        s.add_argument("--openai-structured", choices=STRUCTURED, default="json_schema",
                       help="structured output for OpenAI-compatible readers, as [models.X] structured: json_object "
                            "for `python -m llama_cpp.server`, none for a server with neither")
        s.add_argument("--gate-on-detectors", action="store_true",
                       help="detector-flagged answers count against passing too (register it before the run)")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--out", type=Path, default=None, help="output folder (default results/audit-<log name>)")
        s.add_argument("--quiet", action="store_true")
    r = sub.add_parser("rewards", help="reward-log telemetry: windows, zero-variance groups, parse failures, "
                                       "hack signatures, fidelity gate")
    r.add_argument("file", type=Path)
    _log_args(r)
    r.add_argument("--window", type=int, default=None, help="steps per window (default a fifth of the steps)")
    r.add_argument("--parse", default="audit.hooks:parse_json",
                   help="module:function or file.py:function; fails by raising or returning False")
    r.add_argument("--zero-of", default="reward", help="count zeros of the total reward or of this component")
    r.add_argument("--collapse", type=_steps, default=None, metavar="FIRST-LAST",
                   help="the collapse window to tabulate (default: found from the zero scores)")
    r.add_argument("--form", default="", help="form components, comma-separated (hack signature)")
    r.add_argument("--correctness", default=None, help="the correctness component (hack signature)")
    r.add_argument("--high", type=float, default=0.9, help="form at or above this ...")
    r.add_argument("--low", type=float, default=0.1, help="... while correctness at or below this")
    r.add_argument("--advantage-above", type=float, default=1.0)
    r.add_argument("--regrade", default=None, help="module:function re-grading each stored completion (fidelity gate)")
    r.add_argument("--tolerance", type=float, default=1e-6, help="max drift the fidelity gate accepts")
    r.add_argument("--out", type=Path, default=None, help="output folder (default results/rewards-<log name>)")
    r.add_argument("--quiet", action="store_true")
    c = sub.add_parser("contamination", help="n-gram overlap of every sealed question and reference with the "
                                             "registered training data ([contamination]), and its record")
    c.add_argument("--exp", type=Path, required=True, help="the experiment folder (its prereg.toml's [contamination])")
    c.add_argument("--out", type=Path, default=None,
                   help="output folder (default: the folder of the registered record, which `judge run` reads)")
    c.add_argument("--quiet", action="store_true", help="print only the verdict line, not every question")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> int:
        from registration.seal import outside_experiment

        if args.cmd == "contamination":
            return _contamination(args)

        from .log import load_columns

        if args.out is not None:  # no experiment folder here, but never inside a sealed one
            outside_experiment(args.out, None)
        columns = load_columns(args.columns, args.column)
        return _rewards(args, columns) if args.cmd == "rewards" else _topk(args, columns)

    return run_cli(body)

def _topk(args, columns) -> int:
    from .readers import make_reader
    from .topk import audit

    k = 40 if args.cmd == "top40" else args.k
    if k < 1 or args.max_gamed < 0:
        raise BadInput("--k/--max-gamed", "k must be >= 1 and max-gamed >= 0")
    reader = make_reader(args.reader, args.model, args.base_url, args.openai_structured)
    second = (make_reader(args.second_reader, args.second_model, args.second_base_url, args.openai_structured)
              if args.second_reader else None)
    out = args.out or ROOT / "results" / f"audit-{args.rewards.stem}"
    gate = audit(args.rewards, out, reader, k=k, max_gamed=args.max_gamed, second=second, columns=columns,
                 gate_on_detectors=args.gate_on_detectors, seed=args.seed, progress=not args.quiet)
    if not args.quiet:
        print((out / "audit.md").read_text())
    print(f"gate: {'pass' if gate.passed else 'STOPPED'} ({gate.gamed} gamed + {gate.unscored} unscored of {gate.read}"
          f", {gate.detector_flagged} detector-flagged{' (gating)' if gate.gate_on_detectors else ''}; counted "
          f"{gate.counted}, max {gate.max_gamed}); files in {out}", file=sys.stderr)
    return 0 if gate.passed else 1


def _rewards(args, columns) -> int:
    from .rewards import Settings, telemetry
    from .telemetry import Signatures

    if args.tolerance < 0:
        raise BadInput("--tolerance", "must be >= 0")
    sig = Signatures(form=tuple(f.strip() for f in args.form.split(",") if f.strip()), correctness=args.correctness,
                     high=args.high, low=args.low, advantage_above=args.advantage_above)
    settings = Settings(window=args.window, parse=args.parse, zero_of=args.zero_of, collapse=args.collapse,
                        signatures=sig, regrade=args.regrade, tolerance=args.tolerance)
    out = args.out or ROOT / "results" / f"rewards-{args.file.stem}"
    numbers = telemetry(args.file, out, settings, columns)
    if not args.quiet:
        print((out / "report.md").read_text())
    fd = numbers["fidelity"]
    if fd and not fd["passed"]:
        print(f"fidelity gate FAILED: max drift {fd['max_drift']:.3g} > tolerance {fd['tolerance']:g}; files in {out}",
              file=sys.stderr)
        return 1
    print(f"telemetry written to {out}", file=sys.stderr)
    return 0


def _contamination(args) -> int:
    from registration.prereg import load_experiment
    from registration.seal import outside_experiment

    from .contamination import compute, record_path, summary, write

    exp = load_experiment(args.exp)
    if exp.contamination is None:
        raise BadInput(exp.dir / "prereg.toml", "no [contamination] section registered", field="contamination")
    out = args.out or record_path(exp).parent
    outside_experiment(out, exp.dir)
    doc = compute(exp)
    write(doc, out)
    if not args.quiet:
        print(summary(doc))
    bad = doc["contaminated"]
    print(f"contamination: {'CONTAMINATED' if bad else 'clean'} ({len(bad)} of {len(doc['questions'])} questions"
          f"{': ' + ', '.join(bad) if bad else ''}); files in {out}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    from core.crash import supervise

    sys.exit(supervise("audit", main))
