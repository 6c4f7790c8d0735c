"""CLI: python -m audit {top40,topk,rewards}. Exit 0 pass, 1 the gate stopped the run, 2 bad input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arms.errors import BadInput, CheckFailed, NotBuilt

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m audit", description="Audits that gate runs.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd in ("top40", "topk"):
        s = sub.add_parser(cmd, help="blind gaming audit of the highest-reward completions, and its gate")
        s.add_argument("--rewards", type=Path, required=True, help="training completions log (JSONL)")
        if cmd == "topk":
            s.add_argument("--k", type=int, required=True)
        s.add_argument("--max-gamed", type=int, default=4, help="more than this many gamed (or unreadable) stops the run")
        s.add_argument("--reader", choices=("auto", "local", "openai", "anthropic"), default="auto")
        s.add_argument("--model", default=None, help="reader model name (HTTP readers)")
        s.add_argument("--base-url", default=None, help="reader server URL (OpenAI-compatible or Anthropic)")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--out", type=Path, default=None, help="output folder (default results/audit-<log name>)")
        s.add_argument("--quiet", action="store_true")
    r = sub.add_parser("rewards", help="reward-log telemetry (not built yet)")
    r.add_argument("file", type=Path)
    args = p.parse_args(argv)
    try:
        if args.cmd == "rewards":
            raise NotBuilt("`audit rewards` (reward-log telemetry) is not implemented yet: see issue 6")
        from .topk import audit

        k = 40 if args.cmd == "top40" else args.k
        if k < 1 or args.max_gamed < 0:
            raise BadInput("--k/--max-gamed", "k must be >= 1 and max-gamed >= 0")
        out = args.out or ROOT / "results" / f"audit-{args.rewards.stem}"
        gate = audit(args.rewards, out, k=k, max_gamed=args.max_gamed, reader=args.reader, model=args.model,
                     base_url=args.base_url, seed=args.seed, progress=not args.quiet)
        if not args.quiet:
            print((out / "audit.md").read_text())
        print(f"gate: {'pass' if gate.passed else 'STOPPED'} ({gate.gamed} gamed + {gate.unscored} unscored "
              f"of {gate.read}, max {gate.max_gamed}); files in {out}", file=sys.stderr)
        return 0 if gate.passed else 1
    except (BadInput, NotBuilt) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CheckFailed as e:
        print(f"check failed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
