"""`judge init`: a new experiment folder from what a user has (a base model, maybe a LoRA adapter, a question set and
a judge), written as the shortest prereg.toml the parser accepts, with the set copied in and the folder sealed.

The registration holds only what differs from the defaults (every default is in docs/reference/registration.md),
so a reader sees the choices that were made. With an adapter it registers the base-versus-trained non-inferiority
hypothesis at each quant; without one, a single arm and no hypothesis (answers and verdicts, nothing decided).
Everything is checked before the folder is made: a refused argument leaves nothing behind.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInput
from models.files import EMBEDDED

from .prereg import load_experiment
from .questions import FIELDS, TABULAR, SetFormat, load_questions
from .seal import outside_experiment, seal, verify_seal
from .settings import http_url, plain_name

DEFAULT_QUANTS = ("Q8_0", "Q4_K_M")  # the demo's: an 8-bit and a 4-bit quant derived from the base
DEFAULT_RUBRIC = "correctness"  # rubrics/correctness.toml, shipped with the project and referenced by name
MARGIN = 0.10  # the demo's non-inferiority margin, on the rubric's 0-2 scale
ALPHA = 0.025  # one-sided
SET_SUFFIXES = (".jsonl", *TABULAR)
GENERATED_ADAPTER = "generated:demo"  # models.lora's seeded stand-in, as the demo registers it
JUDGE_FORMS = "openai:MODEL, anthropic:MODEL, served:URL or local"
# The Messages API accepts no temperature, top_p or seed: registered as the provider's default, so the settings
# check does not refuse the rubric's temperature 0 (as the demo registers it).
PROVIDER_DEFAULTS = ('generation = { temperature = "provider-default", top_p = "provider-default", '
                     'seed = "provider-default" }')


@dataclass(frozen=True)
class JudgeChoice:
    """The judge `--judge` names: a backend and its model (or server), or the base model itself."""

    kind: str  # "openai", "anthropic", "served" or "local"
    target: str = ""  # the provider's model name, or the server's URL


@dataclass(frozen=True)
class JudgeKind:
    """What a `--judge KIND:TARGET` form writes: the backend, the key the run needs, whether TARGET is a server's URL
    (else the provider's model name), and whether the provider's default sampling is registered instead of the
    rubric's, as the demo registers it for its Anthropic judge."""

    backend: str
    key_env: str | None
    target_is_url: bool = False
    provider_defaults: bool = False


JUDGE_KINDS = {"openai": JudgeKind("openai", "OPENAI_API_KEY"),
               "anthropic": JudgeKind("anthropic", "ANTHROPIC_API_KEY", provider_defaults=True),
               "served": JudgeKind("openai", None, target_is_url=True)}


def parse_judge(text: str) -> JudgeChoice:
    kind, sep, target = text.partition(":")
    if text == "local":
        return JudgeChoice("local")
    if not sep or kind not in JUDGE_KINDS or not target.strip():
        raise BadInput("--judge", f"must be one of {JUDGE_FORMS}, got {text!r}")
    if JUDGE_KINDS[kind].target_is_url:
        http_url(target, "--judge", "served:URL", "URL")
    return JudgeChoice(kind, target)


def parse_quants(text: str) -> tuple[str, ...]:
    quants = tuple(q.strip() for q in text.split(","))
    if not all(quants):
        raise BadInput("--quants", f"must be a comma-separated list of quant names (e.g. Q8_0,Q4_K_M), got {text!r}")
    if len(set(quants)) != len(quants):
        raise BadInput("--quants", f"lists a quant twice: {text!r}")
    return quants


def parse_columns(text: str) -> tuple[tuple[str, str], ...]:
    """`id=qid,question=prompt,...`: the set's column of each field."""
    pairs = []
    for item in text.split(","):
        field, sep, column = (s.strip() for s in item.partition("="))
        if not sep or not column:
            raise BadInput("--columns", f"must be FIELD=COLUMN,... (e.g. id=qid,question=prompt), got {item!r}")
        if field not in FIELDS:
            raise BadInput("--columns", f"maps no field {field!r}; the fields: {', '.join(FIELDS)}")
        pairs.append((field, column))
    fields, columns = [f for f, _ in pairs], [c for _, c in pairs]
    if len(set(fields)) != len(fields) or len(set(columns)) != len(columns):
        raise BadInput("--columns", f"maps a field twice or two fields to one column: {text!r}")
    return tuple(pairs)


def _base_source(base: str) -> tuple[str, str | None]:
    """The registered source of the base model and its family (known for an embedded model only)."""
    if base.startswith("embedded:"):
        name = base.split(":", 1)[1]
        if name not in EMBEDDED:
            raise BadInput("--base", f"names no embedded model {name!r}; known: {', '.join(sorted(EMBEDDED))}")
        return base, name
    return str(_gguf("--base", base)), None


def _adapter_source(adapter: str) -> str:
    """The registered source of the adapter: a LoRA GGUF file, or the demo's seeded stand-in (not trained), with
    which a user without an adapter at hand can walk the whole way on any base."""
    return adapter if adapter == GENERATED_ADAPTER else str(_gguf("--adapter", adapter))


def _gguf(option: str, path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise BadInput(option, f"no such file: {path}")
    if p.suffix.lower() != ".gguf":
        raise BadInput(option, f"must be a .gguf file, got {path}")
    return p.resolve()


def _q(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def _list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def prereg_text(name: str, base: str, family: str | None, adapter: str | None, set_rel: str,
                columns: tuple[tuple[str, str], ...], judge: JudgeChoice, quants: tuple[str, ...]) -> str:
    """The registration `init` writes: only what differs from the defaults, each choice commented."""
    out = ["# Pre-registration written by `python -m judge init`. Every key not here takes its default",
           "# (docs/reference/registration.md). Edit, then seal again: python -m judge seal DIR", "",
           "[experiment]", f"name = {_q(name)}", "seed = 1   # blinding labels and order",
           f"sets = [{_q(set_rel)}]", ""]
    if columns:
        inline = ", ".join(f"{f} = {_q(c)}" for f, c in columns)
        out += [f"[sets.{_q(set_rel)}]   # the set's column of each field", f"columns = {{ {inline} }}",
                ""]
    out += ["[models.base]", 'backend = "llama-cpp"',
            f"source = {_q(base)}" + ("" if base.startswith("embedded:") else "   # the quants are derived from it")]
    if family:
        out.append(f"family = {_q(family)}   # a judge of the same family gets a self-preference warning")
    out.append("")
    judge_model, judge_table = _judge_tables(judge, quants)
    out += judge_model
    if adapter is not None:
        what = ("the demo's seeded LoRA: NOT trained, a stand-in" if adapter == GENERATED_ADAPTER
                else "a llama.cpp LoRA GGUF")
        out += ["[adapters.trained]", f"source = {_q(adapter)}   # {what}", ""]
    arms = [("base", None)] + ([("trained", "trained")] if adapter is not None else [])
    for arm, adapter_name in arms:
        out += ["[[arms]]", f"name = {_q(arm)}", 'model = "base"']
        if adapter_name:
            out.append(f"adapter = {_q(adapter_name)}")
        out += [f"quants = {_list(quants)}", ""]
    out += ["[judge]", f"rubric = {_q(DEFAULT_RUBRIC)}   # rubrics/{DEFAULT_RUBRIC}.toml: 0/1/2 against "
            "the reference", ""]
    out += judge_table
    if adapter is not None:
        for quant in quants:
            out += ["[[hypotheses]]", f"id = {_q(f'H1-{quant}')}",
                    f"text = {_q(f'trained is not worse than base by more than {MARGIN:.2f} at {quant}')}",
                    'a = "base"', 'b = "trained"', f"quant = {_q(quant)}", 'kind = "non_inferiority"',
                    f"margin = {MARGIN:.2f}", f"alpha = {ALPHA}", ""]
    else:
        out += ["# No hypothesis: one arm answers and is judged, nothing is decided. Register a second arm and a",
                "# [[hypotheses]] table to compare two.", ""]
    return "\n".join(out)


def _judge_tables(judge: JudgeChoice, quants: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The judge's [models.judge] table (none for the local judge, the base model itself) and its [judges.*]."""
    if judge.kind == "local":
        return [], ["[judges.local]   # the base model grades its own answers: a smoke test, not an unrelated opinion",
                    'model = "base"', f"quant = {_q(quants[0])}", ""]
    kind = JUDGE_KINDS[judge.kind]
    model = ["[models.judge]", f"backend = {_q(kind.backend)}"]
    if kind.target_is_url:
        model += ['source = "served"   # the model name sent to the server',
                  f"base_url = {_q(judge.target)}"]
    else:
        model.append(f"source = {_q(judge.target)}")
    table = ["[judges.judge]", 'model = "judge"']
    if kind.key_env:
        table.append(f"requires_env = {_q(kind.key_env)}   # the run stops, naming it, when it is unset")
    if kind.provider_defaults:
        table.append(PROVIDER_DEFAULTS)
    return model + [""], table + [""]


def scaffold(exp_dir: Path, base: str, set_file: Path, judge: str = "local", adapter: str | None = None,
             quants: str = ",".join(DEFAULT_QUANTS), columns: str | None = None) -> Path:
    """Write and seal a new experiment folder; returns its prereg.toml. Refuses a non-empty folder and any bad
    argument (BadInput naming it) before anything is written."""
    exp_dir = Path(exp_dir)
    if exp_dir.exists() and (not exp_dir.is_dir() or any(exp_dir.iterdir())):
        raise BadInput(exp_dir, "exists and is not empty: init writes a new experiment folder and never overwrites "
                       "one; name a new or empty folder")
    outside_experiment(exp_dir, None, "DIR")  # inside a sealed folder, it would break that folder's seal
    name = plain_name(exp_dir.resolve().name, exp_dir, "the folder's name", "name")  # the experiment's name
    source, family = _base_source(base)
    adapter_source = None if adapter is None else _adapter_source(adapter)
    choice = parse_judge(judge)
    quant_names = parse_quants(quants)
    set_file = Path(set_file)
    if not set_file.is_file():
        raise BadInput("--set", f"no such file: {set_file}")
    if not set_file.name.lower().endswith(SET_SUFFIXES):
        raise BadInput("--set", f"must be a {', '.join(SET_SUFFIXES)} file, got {set_file}")
    mapping = () if columns is None else parse_columns(columns)
    if mapping and not set_file.name.lower().endswith(TABULAR):
        raise BadInput("--columns", "maps the columns of a .csv or .parquet set; a JSONL set names its fields as the "
                       "project does")
    fmt = SetFormat(mapping)
    load_questions([set_file], {set_file: fmt})  # a bad set is refused now, naming its file, row and column
    set_rel = f"sets/{set_file.name}"
    text = prereg_text(name, source, family, adapter_source, set_rel, mapping, choice, quant_names)
    created = not exp_dir.exists()
    try:
        (exp_dir / "sets").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(set_file, exp_dir / set_rel)
        prereg = exp_dir / "prereg.toml"
        prereg.write_text(text, encoding="utf-8")
        load_experiment(exp_dir)
        seal(exp_dir)
        verify_seal(exp_dir)
    except BaseException:  # a half-written folder would be refused as non-empty by the next try
        if created:
            shutil.rmtree(exp_dir, ignore_errors=True)
        else:
            _empty(exp_dir)
        raise
    return prereg


def _empty(exp_dir: Path) -> None:
    for path in exp_dir.iterdir():
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
