"""CLI: python -m judge {init,run,seal,amend,verify,publish,export,compare,repair,view,label,cache}.

Exit 0 ok, 1 a gate/check failed, 2 bad input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.errors import BadInput, run_cli


def parser() -> argparse.ArgumentParser:
    """The command line, built apart from running it: docs/gen_reference.py documents it from here."""
    p = argparse.ArgumentParser(prog="python -m judge", description="Blind LLM-judge evaluation harness.")
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init", help="write, copy in and seal a new experiment folder from a model, a set and a judge")
    i.add_argument("dir", type=Path)
    i.add_argument("--base", required=True, help="the base model: a GGUF file or embedded:smollm2")
    i.add_argument("--adapter", default=None, help="a LoRA GGUF, or generated:demo (the demo's seeded stand-in, not "
                   "trained): adds the trained arm and its non-inferiority test")
    i.add_argument("--set", required=True, type=Path, help="the question set: .jsonl, .csv or .parquet")
    i.add_argument("--columns", default=None, metavar="FIELD=COLUMN,...",
                   help="a .csv or .parquet set's column of each field (id, question, reference, tags, cluster)")
    i.add_argument("--judge", default="local", help="openai:MODEL, anthropic:MODEL, served:URL or local (default)")
    i.add_argument("--quants", default="Q8_0,Q4_K_M", help="quants of each arm, comma-separated (default: Q8_0,Q4_K_M)")
    r = sub.add_parser("run", help="run an experiment end to end (default: the embedded demo)")
    r.add_argument("--exp", type=Path, default=None, help="experiment folder (default: sealed/demo)")
    r.add_argument("--arms", nargs="?", const="", default="", metavar="NAME,...",
                   help="arms to run; with no names, every registered arm")
    r.add_argument("--limit", type=int, default=None, help="only the first N questions, for a quick look")
    r.add_argument("--out", type=Path, default=None, help="results folder (default: results/<run name>)")
    r.add_argument("--judges", default=None, metavar="NAME,...",
                   help="registered judges to run, primary first (default: as registered)")
    r.add_argument("--mode", choices=("single", "pairwise", "both"), default=None,
                   help="single-answer grading, pairwise (both orders), or both (default: as registered)")
    r.add_argument("--quiet", action="store_true", help="no progress bars and no report on screen")
    r.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="stop before a call could take the results folder's cost past USD (at the registered prices); "
                        "resumable (default: [runtime] max_cost_usd, else no ceiling)")
    s = sub.add_parser("seal", help="write the sha256 MANIFEST of an experiment folder")
    s.add_argument("dir", type=Path)
    s.add_argument("--private", action="append", default=[], help="a file bound by hash only (may be removed later)")
    a = sub.add_parser("amend", help="append a dated, hash-chained amendment to a sealed experiment")
    a.add_argument("dir", type=Path)
    a.add_argument("--text", required=True)
    a.add_argument("--post-hoc", action="store_true",
                   help="the amendment is written after judging began (reported as such)")
    v = sub.add_parser("verify", help="recompute every number of a results folder from its raw files")
    v.add_argument("results", type=Path)
    v.add_argument("--exp", type=Path, default=None, help="experiment folder, if it moved since the run")
    caches = v.add_mutually_exclusive_group()
    caches.add_argument("--cache", type=Path, action="append", default=None, metavar="PATH",
                        help="the call cache the run wrote to (a BLINDEVAL_CACHE folder or its calls.sqlite; "
                             "repeatable); default: this environment's BLINDEVAL_CACHE, else ~/.cache/blindeval")
    caches.add_argument("--no-cache", action="store_true",
                        help="verify without a call cache: the comparison with the calls made is reported unchecked")
    v.add_argument("--anchor", default=None, metavar="SHA256",
                   help="the anchor recorded when the run finished: a folder whose anchor differs fails")
    v.add_argument("--bundle-secret", type=Path, default=None, metavar="FILE",
                   help="a bundle only: the results folder's bundle.secret, with which questions.jsonl's commitments "
                   "are opened against the private set given with --exp (the team's own check)")
    pb = sub.add_parser("publish", help="write a bundle a team can put in public: every score, label, verdict, "
                        "number and hash of a results folder, without the text of the experiment's private files")
    pb.add_argument("results", type=Path)
    pb.add_argument("--out", type=Path, default=None, help="the bundle's folder (new, outside the results and "
                    "experiment folders)")
    pb.add_argument("--reveal", metavar="PLACE", action="append", default=None,
                    help="print the salt of a withheld value's commitment (e.g. answers.jsonl:3:text), which opens it, "
                    "instead of writing a bundle (repeatable)")
    pb.add_argument("--exp", type=Path, default=None, help="experiment folder, if it moved since the run")
    x = sub.add_parser("export", help="write a results folder as one tidy table (csv or parquet)")
    x.add_argument("results", type=Path)
    x.add_argument("--format", choices=("csv", "parquet"), default="csv")
    x.add_argument("--out", type=Path, default=None, help="output file, outside the results folder "
                   "(default: RESULTS.export.<format> beside it)")
    x.add_argument("--exp", type=Path, default=None, help="experiment folder, if it moved since the run")
    cp = sub.add_parser("compare", help="an arm of one results folder beside an arm of another, on the same questions "
                        "matched by text (exploratory); with --history, one arm's mean over several runs")
    cp.add_argument("results", type=Path, nargs="+", help="RUN_A RUN_B (A is the reference), or with --history any "
                    "number of runs, oldest first")
    cp.add_argument("--arm", default=None, help="A's arm (default: its run's first arm)")
    cp.add_argument("--arm-b", default=None, help="B's arm (default: --arm, else its run's first arm)")
    cp.add_argument("--quant", default=None, help="the quant on both sides (default: the arm's first registered one)")
    cp.add_argument("--history", action="store_true", help="a table (and with --plot a PNG) of the arm's mean score "
                    "and interval in each run")
    cp.add_argument("--plot", type=Path, default=None, metavar="PNG", help="with --history: draw the history here")
    cp.add_argument("--out", type=Path, default=None, metavar="MD", help="also write the table to this file")
    f = sub.add_parser("repair", help="keep one finished record per key in a results folder two writers wrote at once")
    f.add_argument("results", type=Path)
    w = sub.add_parser("view", help="write review.html: every answer beside its verdicts, one offline page")
    w.add_argument("results", type=Path)
    w.add_argument("--blind", action="store_true", help="only labels and answers as the judge read them, with a "
                   "score entry per answer that downloads a labels file (default file: RESULTS/review-blind.html)")
    w.add_argument("--out", type=Path, default=None, help="output file (default: RESULTS/review.html)")
    w.add_argument("--exp", type=Path, default=None, help="experiment folder, if it moved since the run")
    lb = sub.add_parser("label", help="score a run's answers blind in a terminal, as the judge saw them "
                        "(appended to RESULTS/labels/<labeller>.jsonl; Ctrl-C stops, the same command resumes)")
    lb.add_argument("results", type=Path)
    lb.add_argument("--labeller", default=None, metavar="NAME", help="who is labelling (default: asked)")
    lb.add_argument("--sample", type=int, default=None, metavar="N",
                    help="label every answer to N questions drawn at random (recorded in labels/_samples.jsonl)")
    lb.add_argument("--seed", type=int, default=None, metavar="S",
                    help="the seed of --sample's draw and order (default: the experiment's registered seed)")
    lb.add_argument("--import", dest="import_file", type=Path, default=None, metavar="FILE",
                    help="take labels made elsewhere: a labels.jsonl from `judge view --blind`, or a CSV "
                    "(label,score[,note,labeller,time])")
    lb.add_argument("--exp", type=Path, default=None, help="experiment folder, if it moved since the run")
    c = sub.add_parser("cache", help="the call cache: its size, entries by model, the results folders that used it; "
                       "or prune it")
    c.add_argument("--prune-older-than", type=float, default=None, metavar="DAYS",
                   help="delete the entries no run has stored or read for DAYS days")
    c.add_argument("--prune-gone-runs", action="store_true",
                   help="delete the entries used only by results folders that are no longer on disk")
    return p


def _compare(args: argparse.Namespace) -> None:
    from core.atomic import write_text

    from .numbers.matched import read_side
    from .outputs.compare import compare_sides, history, plot_history, render_comparison, render_history

    runs = args.results
    if args.history:
        sides = [read_side(r, args.arm, args.quant) for r in runs]
        points = history(sides)
        text = render_history(sides, points)
        if args.plot is not None:
            plot_history(points, args.plot)
    else:
        if len(runs) != 2:
            raise BadInput("compare", f"takes two results folders (RUN_A RUN_B), got {len(runs)}; "
                           "several runs of one arm: --history", field="results")
        a = read_side(runs[0], args.arm, args.quant)
        b = read_side(runs[1], args.arm_b or args.arm, args.quant)
        text = render_comparison(a, b, compare_sides(a, b))
    print(text, end="")
    if args.out is not None:
        write_text(args.out, text)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return run_cli(lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    if args.cmd == "init":
        from registration.scaffold import scaffold

        scaffold(args.dir, args.base, args.set, args.judge, args.adapter, args.quants, args.columns)
        print(f"wrote and sealed {args.dir}; next: python -m judge run --exp {args.dir} --arms")
    elif args.cmd == "run":
        from pipeline.run import DEMO, run
        from registration.seal import outside_experiment

        from .results.files import REPORT, anchor

        if args.limit is not None and args.limit < 1:
            raise BadInput("--limit", "must be a positive number of questions")
        if args.max_cost is not None and not 0 <= args.max_cost <= 1_000_000:
            raise BadInput("--max-cost", f"must be a number of USD from 0 to 1,000,000, got {args.max_cost:g}")
        if args.out is not None:
            outside_experiment(args.out, args.exp or DEMO)
        out = run(args.exp or DEMO, args.arms or None, args.limit, args.out, progress=not args.quiet,
                  judge_names=args.judges, mode=args.mode, max_cost=args.max_cost)
        if not args.quiet:
            print((out / REPORT).read_text())
        print(f"results: {out}", file=sys.stderr)
        print(f"anchor: {anchor(out)}")
        return _undecided(out)
    elif args.cmd == "seal":
        from registration.seal import seal

        print(f"wrote {seal(args.dir, tuple(args.private))}")
    elif args.cmd == "amend":
        from registration.seal import amend

        rec = amend(args.dir, args.text, post_hoc=args.post_hoc)
        print(f"amendment {rec['n']} sealed at {rec['date']}")
    elif args.cmd == "verify":
        from .verify.bundle import ANCHOR_NOTE, BUNDLE
        from .verify.bundle_check import verify_bundle
        from .verify.checks import verify

        caches = [] if args.no_cache else args.cache
        if (args.results / BUNDLE).is_file():
            found = verify_bundle(args.results, args.exp, caches, args.anchor, args.bundle_secret)
        elif args.bundle_secret is not None:
            raise BadInput(args.results, "is not a bundle (no BUNDLE.json): --bundle-secret opens a bundle's "
                           "commitments")
        else:
            found = verify(args.results, args.exp, caches, args.anchor)
        for line in found.migrated:
            print(f"migrated: {line}")
        for line in found.checked:
            print(f"checked: {line}")
        for line in found.unchecked:
            print(f"unchecked: {line}")
        print(f"anchor: {found.anchor}")
        if found.problems:
            print(f"verify: {len(found.problems)} mismatch(es) in {args.results}:", file=sys.stderr)
            for line in found.problems:
                print(f"  - {line}", file=sys.stderr)
            return 1
        print(f"verify: every number in {args.results} matches its recomputation from the raw files"
              + (f", except what is listed as unchecked above ({len(found.unchecked)})" if found.unchecked else ""))
        if (args.results / BUNDLE).is_file() and args.anchor is None:  # its last word, where it cannot be missed
            print(f"verify: NOT compared with a recorded anchor: {ANCHOR_NOTE}")
    elif args.cmd == "publish":
        from registration.seal import outside_experiment

        from .verify.bundle import ANCHOR_NOTE, read_bundle
        from .verify.publish import publish
        from .verify.withheld import SECRET, read_salts

        if args.reveal:
            salts = read_salts(args.results / SECRET)
            for place in args.reveal:
                print(f"{place} salt {salts.salt(place).hex()}")
            return 0
        if args.out is None:
            raise BadInput("--out", "is required: the bundle's folder (or --reveal PLACE to open a commitment)")
        outside_experiment(args.out, args.exp)
        b = read_bundle(publish(args.results, args.out, args.exp))
        print(f"wrote {b.dir}: the bundle of run {b.run!r}, tied to anchor {b.anchor}; withheld: "
              + (", ".join(sorted(b.private)) + " (and every value of the rows derived from them, each as a salted "
                 f"commitment whose salts derive from {args.results / SECRET}: keep it, never publish it)"
                 if b.private else "nothing (no file is sealed private)"))
        print(f"anchor: {b.anchor}: {ANCHOR_NOTE}")
    elif args.cmd == "export":
        from registration.seal import outside_experiment

        from .outputs.export import export

        if args.out is not None:
            outside_experiment(args.out, args.exp)
        print(f"wrote {export(args.results, args.format, args.out, args.exp)}")
    elif args.cmd == "compare":
        _compare(args)
    elif args.cmd == "repair":
        from arms.folder import REPAIRED, repair

        moved = repair(args.results)
        if not moved:
            print(f"{args.results}: no raw file to repair (answers.jsonl, blinding.jsonl, judgments.jsonl)")
        for name, n in moved.items():
            print(f"{name}: {n} record(s) moved to {REPAIRED}" if n else f"{name}: nothing to repair")
        if any(moved.values()):
            print(f"repair: each key keeps its first finished record; the moved records and the repair are logged in "
                  f"{args.results / REPAIRED}. Re-run the command that wrote the folder (same arguments) to resume "
                  "and rewrite numbers.json and the report; until then `judge verify` names the raw files as changed")
    elif args.cmd == "view":
        from registration.seal import outside_experiment

        from .outputs.view import view

        if args.out is not None:
            outside_experiment(args.out, args.exp)
        print(f"wrote {view(args.results, args.blind, args.out, args.exp)}")
    elif args.cmd == "label":
        return _label(args)
    elif args.cmd == "cache":
        _cache(args.prune_older_than, args.prune_gone_runs)
    return 0


def _label(args: argparse.Namespace) -> int:
    from .gold.labelling import import_labels, label

    if args.sample is not None and args.sample < 1:
        raise BadInput("--sample", "must be a positive number of questions")
    if args.seed is not None and args.sample is None:
        raise BadInput("--seed", "seeds the draw of --sample; give --sample N with it")
    if args.import_file is None:
        return label(args.results, args.labeller, args.sample, args.seed, args.exp)
    if args.sample is not None:
        raise BadInput("--sample", "draws questions to label in the terminal; an --import brings labels made elsewhere")
    for path, (added, there) in import_labels(args.results, args.import_file, args.labeller, args.exp).items():
        print(f"{path.relative_to(args.results)}: {added} label(s) imported" + (f", {there} already there" if there
                                                                               else ""))
    return 0


def _cache(older_than: float | None, gone_runs: bool) -> None:
    """Show the call cache (BLINDEVAL_CACHE), after pruning it when asked."""
    import datetime as dt
    import math

    from models.cache import CallCache, cache_dir, prune, summary

    if older_than is not None and not (math.isfinite(older_than) and older_than >= 0):
        raise BadInput("--prune-older-than", f"must be a number of days >= 0, got {older_than}")
    path = cache_dir() / "calls.sqlite"
    if not path.exists():
        print(f"call cache: {path} does not exist yet (no model call has been made with this BLINDEVAL_CACHE)")
        return
    cache = CallCache(path)
    try:
        if older_than is not None or gone_runs:
            deleted, freed = prune(cache, older_than, gone_runs)
            print(f"pruned {deleted} entries; the cache's files shrank by {_mb(freed)}")
        s = summary(cache)
    finally:
        cache.close()
    print(f"call cache: {s.path}, {_mb(s.bytes)}, {s.entries} entries")
    for model, n, size in s.by_model:
        print(f"  {n:>8} entries  {_mb(size):>9}  {model}")
    if s.oldest_use is not None:
        oldest = dt.datetime.fromtimestamp(s.oldest_use, dt.timezone.utc).isoformat(timespec="seconds")
        print(f"least recently used entry: {oldest}")
    on_disk = sum(there for _, there, _ in s.runs)
    print(f"results folders that used it: {len(s.runs)} ({on_disk} on disk, {len(s.runs) - on_disk} gone)")
    for run, there, n in s.runs:
        print(f"  {'on disk' if there else 'gone':<7}  {n:>8} entries  {run}")
    print(f"entries no recorded folder used: {s.untracked} (stored before folders were recorded, or outside a run)")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _undecided(out: Path) -> int:
    """Exit 1, with one line per decision, when a registered decision is inconclusive for want of verdicts."""
    from core.records import RunInfo

    from .numbers.analysis import undecided
    from .results.files import RUN, read_numbers

    max_unscored = RunInfo.read_file(out / RUN).analysis.max_unscored
    lines = undecided(read_numbers(out).to_dict(), max_unscored)  # judge.numbers.analysis reads a dict still
    for line in lines:
        print(f"check failed: {line}", file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    from core.crash import supervise

    sys.exit(supervise("judge", main))
