"""Write the documentation site's reference pages (docs/reference/*.md) from the code, so they cannot drift.

- cli.md: every command and option of `python -m judge`, `python -m arms` and `python -m audit`, read from their
  argparse parsers (each package's `__main__.parser()`; no command is run).
- registration.md: every key of prereg.toml, from the registration's own schema: the known-key tuples
  (registration/prereg.py, registration/spec.py), the bounds (spec.BOUNDS), the generation settings' dataclass, and
  the type and default of each `setting(...)`/`bounded(...)` call that reads the key, found in the parsing code's
  syntax tree. A key whose type or default is decided by code rather than by such a call says so.
- records.md: every field of run.json, numbers.json, binding.json and BUNDLE.json, walked from the frozen
  dataclasses of core/records/ (types, required or optional, and the comments and docstrings that say why).
- schemas/NAME.schema.json: the JSON Schema (draft 2020-12) of each of those documents and of each raw record kind,
  from core/records/schema.py.

`python docs/gen_reference.py` rewrites the pages; `--check` exits 1 naming each page that differs from a fresh
generation (tests/test_docs_site.py runs the same comparison).
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import re
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "reference"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEADER = "<!-- Generated from the code: do not edit; run `python docs/gen_reference.py`. -->\n\n"


def _cell(text: object) -> str:
    """Text fit for one cell of a Markdown table."""
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ").strip()


# ---------------------------------------------------------------------------------------------------------------
# Commands: the argparse parsers
# ---------------------------------------------------------------------------------------------------------------


def parsers() -> dict[str, argparse.ArgumentParser]:
    """The three command lines, by program name, as their __main__ modules build them."""
    from arms.__main__ import parser as arms_parser
    from audit.__main__ import parser as audit_parser
    from judge.__main__ import parser as judge_parser

    return {p.prog: p for p in (judge_parser(), arms_parser(), audit_parser())}


def subcommands(p: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand of `p`: its help line and its own parser."""
    out = {}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out[name] = (helps.get(name, ""), sub)
    return out


def options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a user gives (positional and optional), without --help."""
    return [a for a in p._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def _usage_name(a: argparse.Action) -> str:
    if not a.option_strings:
        return a.metavar or a.dest.upper()
    names = ", ".join(a.option_strings)
    if a.nargs == 0:
        return names
    if a.choices:
        value = "{" + ",".join(map(str, a.choices)) + "}"
    else:
        value = a.metavar or a.dest.upper()
    return f"{names} [{value}]" if a.nargs == "?" else f"{names} {value}"


def _default(a: argparse.Action) -> str:
    if not a.option_strings:
        return "required"
    if a.required:
        return "required"
    if a.nargs == 0:
        return "off"
    if a.default is None or a.default == [] or a.default == "":
        return "—"
    if isinstance(a.default, Path) and a.default.is_absolute() and a.default.is_relative_to(ROOT):
        return f"`{a.default.relative_to(ROOT)}`"  # the same page from every checkout
    return f"`{a.default}`"


def _notes(a: argparse.Action, group_of: dict[int, str]) -> str:
    notes = []
    if isinstance(a, argparse._AppendAction):
        notes.append("repeatable")
    if id(a) in group_of:
        notes.append(f"not with {group_of[id(a)]}")
    if a.nargs == "?" and a.const:
        notes.append(f"alone: `{a.const!r}`")
    return "; ".join(notes)


def _exclusive(p: argparse.ArgumentParser) -> dict[int, str]:
    """For each option in a mutually exclusive group, the others of its group."""
    out = {}
    for g in p._mutually_exclusive_groups:
        for a in g._group_actions:
            others = [o.option_strings[0] for o in g._group_actions if o is not a]
            out[id(a)] = ", ".join(f"`{o}`" for o in others)
    return out


def cli_page() -> str:
    lines = [HEADER, "# Commands and options\n\n",
             "Every command of the three command lines, as their argparse parsers define them. Exit codes: 0 ok, 1 a "
             "registered gate or check failed, 2 bad input (a message naming the file, line and field).\n"]
    for prog, p in parsers().items():
        lines.append(f"\n## `{prog}`\n\n")
        if p.description:
            lines.append(f"{p.description}\n\n")
        for name, (help_line, sub) in subcommands(p).items():
            lines.append(f"### `{prog} {name}`\n\n{help_line}\n\n")
            acts = options(sub)
            if not acts:
                lines.append("No options.\n\n")
                continue
            group_of = _exclusive(sub)
            lines.append("| argument | default | notes | what it does |\n|---|---|---|---|\n")
            for a in acts:
                lines.append(f"| `{_cell(_usage_name(a))}` | {_cell(_default(a))} | {_cell(_notes(a, group_of))} | "
                             f"{_cell(a.help or '')} |\n")
            lines.append("\n")
    return "".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Registration: prereg.toml's schema
# ---------------------------------------------------------------------------------------------------------------


def registration_tables() -> dict[str, tuple[tuple[str, ...], str, str]]:
    """Each table of prereg.toml: its known keys (the parser's own tuple), the module and the function that reads
    them."""
    from models.backends.base import Generation
    from registration import analysis, comparisons, gates, gold, hypotheses, judges, prereg, rubric, spec

    return {
        "[experiment]": (prereg.EXPERIMENT_KEYS, "registration/prereg.py", "_experiment"),
        "[runtime]": (prereg.RUNTIME_KEYS, "registration/spec.py", "parse_runtime"),
        "[models.NAME]": (spec.MODEL_KEYS, "registration/spec.py", "_model"),
        "[adapters.NAME]": (spec.ADAPTER_KEYS, "registration/spec.py", "parse_adapters"),
        "[[arms]]": (spec.ARM_KEYS, "registration/spec.py", "_arm"),
        "generation (of an arm or a judge)": (tuple(Generation.__dataclass_fields__), "registration/spec.py",
                                              "parse_generation"),
        "[judge]": (prereg.JUDGE_KEYS, "registration/prereg.py", "_experiment"),
        "[judges.NAME]": (judges.JUDGE_TABLE_KEYS, "registration/judges.py", "parse_judge"),
        "[analysis]": (analysis.ANALYSIS_KEYS, "registration/analysis.py", "parse_analysis"),
        "[[hypotheses]]": (hypotheses.HYPOTHESIS_KEYS, "registration/hypotheses.py",
                             "parse_hypothesis, decision_settings"),
        "[[comparisons]]": (comparisons.COMPARISON_KEYS, "registration/comparisons.py",
                              "parse_comparison, registration/hypotheses.py:decision_settings"),
        "[audit]": (gates.AUDIT_KEYS, "registration/gates.py", "parse_audit"),
        "[gold]": (gold.gold_keys(), "registration/gold.py", "parse_gold, _labels, _program"),
        "[contamination]": (gates.CONTAMINATION_KEYS, "registration/gates.py", "parse_contamination"),
        '[sets."FILE"]': (prereg.SET_KEYS, "registration/prereg.py", "_set_format"),
        "rubrics/NAME.toml (a rubric)": (rubric.RUBRIC_KEYS, "registration/rubric.py", "_rubric"),
    }


@dataclasses.dataclass
class KeyInfo:
    kind: str | None = None
    default: str | None = None  # Python source of the default as declared; None: required
    required: bool = False
    bound: str | None = None  # the BOUNDS entry
    choices: str | None = None  # the module constant listing the accepted values
    read_by: str = ""


def _literal_bindings(node: ast.AST) -> list[dict[str, ast.AST]]:
    """The names a `for key, default in ((...), ...)` loop or comprehension binds, one dict per iteration, when it
    iterates over a literal tuple; else []."""
    if isinstance(node, ast.For):
        gens = [(node.target, node.iter)]
    elif isinstance(node, (ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)):
        gens = [(g.target, g.iter) for g in node.generators]
    else:
        return []
    out = []
    for target, it in gens:
        if not isinstance(it, (ast.Tuple, ast.List)):
            continue
        for elt in it.elts:
            if isinstance(target, ast.Name):
                out.append({target.id: elt})
            elif isinstance(target, ast.Tuple) and isinstance(elt, ast.Tuple) and len(elt.elts) == len(target.elts):
                out.append({t.id: e for t, e in zip(target.elts, elt.elts, strict=True) if isinstance(t, ast.Name)})
    return out


def _calls(func: ast.FunctionDef) -> list[tuple[ast.Call, dict[str, ast.AST]]]:
    """Every call in `func`, with the literal loop bindings in force where it is (one entry per binding)."""
    out = []

    def visit(node: ast.AST, env: dict[str, ast.AST]) -> None:
        bindings = _literal_bindings(node)
        if bindings:
            for b in bindings:
                for child in ast.iter_child_nodes(node):
                    visit(child, {**env, **b})
            return
        if isinstance(node, ast.Call):
            out.append((node, env))
        for child in ast.iter_child_nodes(node):
            visit(child, env)

    visit(func, {})
    return out


def _const(node: ast.AST | None, env: dict[str, ast.AST]) -> object:
    if isinstance(node, ast.Name) and node.id in env:
        node = env[node.id]
    return node.value if isinstance(node, ast.Constant) else None


def _source(node: ast.AST, env: dict[str, ast.AST]) -> str:
    if isinstance(node, ast.Name) and node.id in env:
        node = env[node.id]
    return ast.unparse(node)


def _functions(path: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def read_keys(path: str, function: str, table: str) -> dict[str, KeyInfo]:
    """What `function` declares of each key it reads with setting/bounded/_one_of/.get: kind, default, bound and the
    constant of accepted values it is checked against."""
    found: dict[str, KeyInfo] = {}
    for name in function.split(", "):  # a table read by several functions (one per registered source) names each
        where, _, name = name.rpartition(":")  # a function of another module: "registration/hypotheses.py:name"
        for key, info in _read_keys(_functions(where or path)[name], name, table).items():
            found.setdefault(key, info)
    return found


def _read_keys(func: ast.FunctionDef, function: str, table: str) -> dict[str, KeyInfo]:
    found: dict[str, KeyInfo] = {}
    variables: dict[str, str] = {}  # a variable assigned from a read -> its key
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            call = node.value
            name = getattr(call.func, "id", None)
            if name in ("setting", "bounded") and len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
                variables[node.targets[0].id] = call.args[1].value
    discarded = {id(n.value) for n in ast.walk(func) if isinstance(n, ast.Expr)}  # a check whose value is unused
    for call, env in _calls(func):
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
        if name in ("setting", "bounded") and len(call.args) >= 5:
            key = _const(call.args[1], env)
            where = _const(call.args[4], env)
            if not isinstance(key, str) or (isinstance(where, str) and where != table):
                continue
            info = found.setdefault(key, KeyInfo())
            info.kind = _const(call.args[2], env)
            if len(call.args) <= 5:
                info.required = id(call) not in discarded
            elif id(call) not in discarded:  # a discarded check's default is only what it checks when absent
                info.default = _source(call.args[5], env)
            if name == "bounded":
                bound = next((_const(k.value, env) for k in call.keywords if k.arg == "bound"), None)
                info.bound = bound or key
            info.read_by = function
        elif name == "sealed_files" and len(call.args) >= 5:  # (table, key, file, where, exp_dir[, default])
            key, where = _const(call.args[1], env), _const(call.args[3], env)
            if not isinstance(key, str) or (isinstance(where, str) and where != table):
                continue
            info = found.setdefault(key, KeyInfo())
            info.kind, info.read_by = "strings", function
            if len(call.args) <= 5:
                info.required = True
            else:
                info.default = _source(call.args[5], env)
        elif name == "_one_of" and len(call.args) >= 3:
            key = _const(call.args[1], env)
            if isinstance(key, str):
                info = found.setdefault(key, KeyInfo())
                info.kind, info.choices = "string", ast.unparse(call.args[2])
                info.default = f"BACKEND_MODEL_KEYS[{key!r}]"
                info.read_by = function
        elif name == "get" and len(call.args) in (1, 2) and isinstance(_const(call.args[0], env), str):
            info = found.setdefault(_const(call.args[0], env), KeyInfo())
            if info.default is None and not info.required:
                info.default = _source(call.args[1], env) if len(call.args) == 2 else "None"
    for node in ast.walk(func):  # `if mode not in MODES` (or `vocabulary.RULES`): the values a read key may take
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in variables \
                and isinstance(node.ops[0], ast.NotIn) and isinstance(node.comparators[0], (ast.Name, ast.Attribute)):
            key = variables[node.left.id]
            if key in found and found[key].choices is None:
                found[key].choices = ast.unparse(node.comparators[0])
    return found


class Computed(str):
    """A default the code computes when the file is loaded (from another key), shown as its source."""


def _evaluated(source: str, modules: list) -> object:
    """The value of a default's source in the modules that declare it, else the source itself (Computed)."""
    for m in modules:
        try:
            return eval(source, vars(m))  # our own code's declared constants, e.g. DEFAULT_METHOD
        except Exception:  # noqa: BLE001 - a local variable (e.g. the experiment's seed): shown as written
            continue
    return Computed(source)


def _toml(value: object) -> str:
    if isinstance(value, Computed):
        return f"computed when loaded: `{value}`"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{}" if not value else repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _generation_defaults() -> dict[str, tuple[str, str]]:
    from models.backends.base import Generation

    hints = typing.get_type_hints(Generation)
    out = {}
    for f in dataclasses.fields(Generation):
        out[f.name] = (_type_name(hints[f.name]), _toml(f.default) if f.default is not dataclasses.MISSING else "")
    return out


def registration_page() -> str:
    from core.records.schema import field_comments
    from registration import analysis, gates, gold, hypotheses, prereg, rubric, settings, spec

    modules = [prereg, hypotheses, analysis, gates, gold, spec, rubric, settings]  # where a default or choice is named
    generation = _generation_defaults()
    comments = field_comments(sys.modules["models.backends.base"].Generation)
    lines = [HEADER, "# Registration keys (prereg.toml)\n\n",
             "Every key each table of `prereg.toml` accepts: a key not listed is refused when the file is loaded "
             "(exit 2, naming the table and the key). The type, default and range are taken from the code that reads "
             "the key (`registration/prereg.py`, `registration/spec.py`); where that code decides them other than "
             "through its declared reads, the row names the function to read.\n\n",
             "Top-level tables: " + ", ".join(f"`{t}` ({prereg.SHAPES[t]})" for t in prereg.TABLES) + ".\n"]
    for table, (keys, path, function) in registration_tables().items():
        found = read_keys(path, function, table if table.startswith("[") and "NAME" not in table
                          and "FILE" not in table and "[[" not in table else "")
        lines.append(f"\n## `{table}`\n\nRead by `{function}` in `{path}`.\n\n")
        lines.append("| key | type | default | range | accepted values |\n|---|---|---|---|---|\n")
        for key in keys:
            info = found.get(key, KeyInfo())
            kind = info.kind or ""
            if table.startswith("generation"):
                kind, default = generation[key]
                if key in comments:
                    kind += f" ({comments[key]})"
            elif info.required:
                default = "required"
            elif info.default is not None:
                default = _toml(_evaluated(info.default, modules))
            elif table == "[models.NAME]" and key in spec.BACKEND_MODEL_KEYS:
                default = _toml(spec.BACKEND_MODEL_KEYS[key])
            else:
                default = ""
            if not kind and default == "{}":
                kind = "table"
            if not kind:
                kind = f"checked in code: `{function}`"
            bound = ""
            if info.bound:
                b = spec.BOUNDS[info.bound]
                low = f"above {b.low:g}, up to" if b.above else f"{b.low:g} to"
                bound = f"{low} {b.high:,} ({b.why})"
            choices = ""
            if info.choices:
                value = _evaluated(info.choices, modules)
                choices = ", ".join(f"`{v}`" for v in value) if isinstance(value, (tuple, list, dict)) else ""
            lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_cell(bound)} | {_cell(choices)} |\n")
    lines.append(renamed_keys_section())
    return "".join(lines).rstrip("\n") + "\n"


def renamed_keys_section() -> str:
    """The old key names that still load, each under its new name (registration/renamed.py)."""
    from registration.renamed import RENAMED

    rows = "".join(f"| `{r.where('NAME')}` | `{r.old}` | `{r.new}` |\n" for r in RENAMED)
    return ("\n## Renamed keys\n\nEach key name means one thing. A registration written with an old name still "
            "loads (a sealed prereg.toml cannot be edited): the old key is read as the new one and `judge run` prints "
            "one notice per key naming the file, line, table and old -> new. A table registering both names is "
            "refused (exit 2).\n\n| table | old key | new key |\n|---|---|---|\n" + rows)


# ---------------------------------------------------------------------------------------------------------------
# Records: run.json, numbers.json, binding.json, BUNDLE.json
# ---------------------------------------------------------------------------------------------------------------


def _type_name(hint: object) -> str:
    if hint is type(None):
        return "null"
    if isinstance(hint, type):
        return hint.__name__
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(f'"{a}"' if isinstance(a, str) else repr(a) for a in args)
    if origin is tuple and args[-1:] == (Ellipsis,):
        return f"list[{_type_name(args[0])}]"
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    return str(hint).replace("typing.", "")


def _entries_in(hint: object) -> list[type]:
    from core.records import Entry

    if isinstance(hint, type):
        return [hint] if issubclass(hint, Entry) else []
    found = [e for a in typing.get_args(hint) for e in _entries_in(a)]
    return list(dict.fromkeys(found))


def documents() -> list[type]:
    """The whole JSON files whose contracts core/records/ declares, in the order it declares them."""
    from core import records

    return [c for c in map(vars(records).get, records.__all__)
            if isinstance(c, type) and issubclass(c, records.Document) and c is not records.Document]


def contract_fields(cls: type) -> list[tuple[str, object, bool, str]]:
    """(name, type, required, comment) of each field of an Entry class."""
    from core.records.check import BOOKKEEPING
    from core.records.schema import field_comments

    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in BOOKKEEPING:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, hints[f.name], required, comments.get(f.name, "")))
    return out


def _doc(cls: type) -> str:
    return " ".join(inspect.cleandoc(cls.__doc__ or "").split())


def records_page() -> str:
    lines = [HEADER, "# Result files (run.json, numbers.json, binding.json, BUNDLE.json)\n\n",
             "The contracts of a results folder's JSON documents, walked from the frozen dataclasses of "
             "`core/records/`. Each file is read through its contract: a required field missing, or any field of "
             "another type at any depth, is bad input naming its path (exit 2). A field marked optional may be absent "
             "(a folder written by an earlier version); keys beyond the contract are kept as written.\n\n",
             "The same contracts as JSON Schemas (draft 2020-12), for a tool that checks a file without blindeval "
             "(`core/records/schema.py`; a value such as 1.0 in an integer field, which a schema accepts "
             "and the reader refuses, is the one known difference): "
             + ", ".join(f"[{name}](schemas/{name}.schema.json)" for name in _schema_names()) + ".\n"]
    seen: set[type] = set()
    for doc_cls in documents():
        lines.append(f"\n## {doc_cls.WHAT}\n\n{_doc(doc_cls)}\n")
        queue = [doc_cls]
        while queue:
            cls = queue.pop(0)
            if cls in seen:
                continue
            seen.add(cls)
            if cls is not doc_cls:
                lines.append(f"\n### {cls.__name__}\n\n{cls.WHAT}. {_doc(cls)}\n")
            lines.append("\n| field | type | required | why |\n|---|---|---|---|\n")
            for name, hint, required, comment in contract_fields(cls):
                nested = _entries_in(hint)
                queue.extend(n for n in nested if n not in seen)
                shown = _cell(_type_name(hint))
                for n in nested:  # each nested contract links to its own table below
                    shown = re.sub(rf"\b{n.__name__}\b", f"[{n.__name__}](#{n.__name__.lower()})", shown)
                lines.append(f"| `{name}` | {shown} | {'yes' if required else 'optional'} | "
                             f"{_cell(comment)} |\n")
    return "".join(lines).rstrip("\n") + "\n"


def _schema_names() -> list[str]:
    from core.records.schema import CONTRACTS

    return list(CONTRACTS)


def schema_files() -> dict[str, str]:
    """The JSON Schema of each document and raw record kind (core.records.schema), one file each."""
    from core.records.schema import schemas

    return {f"schemas/{name}.schema.json": json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
            for name, doc in schemas().items()}


def pages() -> dict[str, str]:
    """Each generated page's file name under docs/reference/ and its text."""
    return {"cli.md": cli_page(), "registration.md": registration_page(), "records.md": records_page(),
            **schema_files()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page differs from a fresh one")
    args = p.parse_args(argv)
    stale = []
    for name, text in pages().items():
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for name in stale:
        print(f"docs/reference/{name} differs from the code: run `python docs/gen_reference.py`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
