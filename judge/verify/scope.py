"""A results folder against what registered it: the scope binding.json bound (or, in a folder bound before
bindings, run.json's), binding.json's registration entries and run.json's registered part as the experiment folder
gives them now, the cost table as the raw files give it, and no private file withheld from the experiment folder."""
from __future__ import annotations

from pathlib import Path

from arms.folder import BINDING, read_binding, registration
from core.errors import BadInput
from registration.prereg import Experiment
from registration.questions import Question
from registration.rubric import load_rubric, rubric_dir
from registration.seal import withheld

from ..judging.cost import costs
from ..results.runinfo import Scope, bound_scope
from .compare import leaves, same


def folder_scope(run_dir: Path, run: dict, exp: Experiment,
                 questions: list[Question] | None = None) -> tuple[Scope, list[str]]:
    """The scope the folder's binding.json registered. A folder written before folders were bound has none: its
    scope is read from run.json for the checks that follow, and that is a finding of its own."""
    doc = read_binding(run_dir)
    if doc is not None:
        return bound_scope(doc, exp, run_dir / BINDING, questions), []
    judges = {j.name: j for j in exp.judges}
    j = run["judge"]
    named, where = (j["panel"], "judge.panel") if j.get("panel") else ([j.get("primary")], "judge.primary")
    for name in named:
        if name not in judges:
            raise BadInput(run_dir / "run.json", f"names judge {name!r}, which the registration does not have "
                           f"({', '.join(judges)}), and no {BINDING} binds the folder's judges", field=where)
    for arm in run["arms"]:
        if arm not in {a.name for a in exp.arms}:
            raise BadInput(run_dir / "run.json", f"names arm {arm!r}, which the registration does not have, and no "
                           f"{BINDING} binds the folder's arms", field="arms")
    scope = Scope(list(run["arms"]), run.get("limit"), list(run["question_ids"]),
                  [judges[n] for n in named], j.get("mode") or "single",
                  run.get("label_key") or f"blinding:{exp.seed}:{run['name']}")
    return scope, [f"{run_dir / BINDING}: missing: this folder was written before results folders were bound to "
                   "their registration, so nothing registered its scope (arms, questions, judges) to check it "
                   "complete against, and it has no anchor. Run the experiment into a new folder (no call the cache "
                   "holds is paid for again)"]


def bound_registration(exp: Experiment, scope: Scope, bound: dict | None) -> tuple[dict, frozenset, list[str]]:
    """binding.json's registration entries as the experiment folder gives them now (arms.folder.registration);
    the entries that cannot be computed here (a glue module that does not import on this machine), and why."""
    rubric = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir))
    kinds = [("single", rubric)] + ([("pairwise", load_rubric("pairwise", rubric_dir("pairwise", exp.dir)))]
                                    if scope.mode != "single" else [])
    rubrics = {(j.name, kind): j.rubric(r) for j in scope.panel for kind, r in kinds}
    try:
        return registration(exp, scope.arms, scope.panel, scope.mode, rubrics), frozenset(), []
    except BadInput as e:  # a glue imported from the Python path that this machine cannot import
        plain = [a for a in scope.arms if not exp.arm(a).glue]
        now = registration(exp, plain, scope.panel, scope.mode, rubrics)
        skipped = frozenset(k for k in (bound or {}) if k not in now and k.startswith(("glue ", "chat template")))
        return now, skipped, [f"{BINDING}: {', '.join(sorted(skipped))}: not compared with the experiment folder: {e}"]


def record_findings(run: dict, expected: dict, path: Path) -> list[str]:
    """run.json against what the binding and the registration give for its registered part (judge.results.runinfo)."""
    stored, want = leaves(run), leaves(expected)
    return [f"{path}: field {k!r}: reads {stored.get(k, '<missing>')!r}, but binding.json and the experiment folder "
            f"give {want[k]!r}" for k in want if k not in stored or not same(stored[k], want[k])]


def cost_findings(run: dict, run_dir: Path, exp) -> list[str]:
    """run.json's cost table against the one the raw files and batches.jsonl give (none before costs were kept)."""
    if "cost" not in run:
        return []
    again = {(c["role"], c["name"]): c for c in costs(exp, run["arms"], run["judge"]["panel"],
                                                       set(run["question_ids"]), run_dir)}
    out = []
    for c in run["cost"]:
        other = again.get((c["role"], c["name"]), {})
        for k in sorted(set(c) | set(other)):
            if c.get(k) != other.get(k):
                out.append(f"run.json cost of {c['role']} {c['name']}: {k} reads {c.get(k)!r}, the raw files "
                           f"and batches.jsonl give {other.get(k)!r}")
    return out


def refuse_withheld(exp_dir: Path) -> None:
    """A results folder is verified against every input it was run on: a private file withheld from the experiment
    folder is bad input, named with the two ways to verify without it (never a message to re-run)."""
    missing = withheld(exp_dir)
    if missing:
        more = f" (and {len(missing) - 1} more private file(s))" if len(missing) > 1 else ""
        raise BadInput(Path(exp_dir) / missing[0], f"is sealed private (MANIFEST binds it by sha256 only) and is not "
                       f"here{more}: verifying a results folder re-derives its raw files from every input the run "
                       "read. Give the experiment folder that holds it with --exp, or verify the bundle `judge "
                       "publish` writes, which needs no private file (`judge verify BUNDLE`)")
