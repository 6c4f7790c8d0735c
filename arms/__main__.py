"""CLI: python -m arms quantize [--exp DIR] — derive every registered quant file and show what it really is."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import BadInput, CheckFailed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m arms")
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quantize", help="derive the registered quants of every llama-cpp model of an experiment")
    q.add_argument("--exp", type=Path, default=Path(__file__).resolve().parent.parent / "sealed" / "demo")
    args = p.parse_args(argv)
    try:
        from judge.prereg import load_experiment

        from .load import quant_file

        exp = load_experiment(args.exp)
        done = set()
        for arm in exp.arms:
            spec = exp.models[arm.model]
            if spec.backend != "llama-cpp":
                continue
            for quant in arm.quants:
                if (spec.name, quant) in done:
                    continue
                done.add((spec.name, quant))
                qf = quant_file(spec, quant, exp.dir, exp.runtime)
                print(json.dumps({"model": spec.name, **qf.to_dict()}))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CheckFailed as e:
        print(f"check failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
