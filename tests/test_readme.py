"""README stays a short way in, and the registration example it used to hold is real where it now lives.

README: at most 250 lines, CI's command verbatim, links that resolve, no measured figure (they live in BENCHMARKS.md),
and its own-experiment commands accepted by the real `judge init`. The full registration example, now in
docs/how-to/register.md ("A registration using every table"): it parses, and a misspelt setting is refused."""
from __future__ import annotations

import re
import shlex

import pytest

from core.errors import BadInput
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.unit

README = ROOT / "README.md"
REGISTER = ROOT / "docs" / "how-to" / "register.md"
MAX_LINES = 250


def _example() -> str:
    text = REGISTER.read_text()
    section = text.split("## A registration using every table", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.S).group(1)


def _commands(text: str) -> list[str]:
    """README's indented command lines, each with its continuation lines joined."""
    lines, out = text.splitlines(), []
    for line in lines:
        if line.startswith("    ") and not line.startswith("     "):
            out.append(line.strip())
        elif line.startswith("        ") and out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1] + line.strip()
    return out


def test_readme_is_at_most_250_lines():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_readme_holds_ci_command_verbatim_and_the_demo_command():
    """.ci/run runs README's test command; the two must be the same line."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pip install" in line]
    commands = _commands(README.read_text())
    assert ci and ci[0] in commands
    assert "pip install -e . && python -m judge run --arms" in commands
    assert ci[0].startswith("LLAMA_CPP_BUILD_JOBS=$(nproc) CMAKE_ARGS=")


def test_readme_links_resolve():
    text = README.read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) > 20
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing


def test_readme_states_no_measured_figure():
    """Timings and speed-ups belong in BENCHMARKS.md with their date and command (the report excerpt's own numbers
    are the demo's output, not a measurement of the machine), except the two commands' fresh-machine times, one
    dated paragraph that points to BENCHMARKS.md for how they were taken."""
    figure = re.compile(r"\b\d+(\.\d+)?\s*(min|s|ms|x)\b|\b\d+(\.\d+)?\s*×|\b\d+ (seconds|minutes|hours)\b")
    paragraphs = README.read_text().split("\n\n")
    fresh = [p for p in paragraphs if p.startswith("Fresh-machine times (")]
    assert len(fresh) == 1 and re.search(r"\b20\d\d-\d\d-\d\d\b", fresh[0]) and "BENCHMARKS.md" in fresh[0]
    found = [line for p in paragraphs if p not in fresh for line in p.splitlines() if figure.search(line)]
    assert not found
    assert figure.search("took 7 min 11 s") and figure.search("1.46× faster") and figure.search("about 80 s")


def test_readme_own_experiment_commands_are_what_init_accepts_and_prints(tmp_path, monkeypatch, capsys):
    """README's `judge init` line, run verbatim on planted files of the names it uses, writes a sealed experiment and
    prints README's next command; `view` and `verify` name the folder `run` writes."""
    from judge.__main__ import main, parser

    commands = [c for c in _commands(README.read_text()) if c.startswith("python -m judge ")]
    init = next(c for c in commands if c.startswith("python -m judge init "))
    argv = shlex.split(init)[3:]
    monkeypatch.chdir(tmp_path)
    for flag, content in (("--base", b"GGUF"), ("--adapter", b"GGUF")):
        path = tmp_path / argv[argv.index(flag) + 1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)  # registration names the files; only a run opens them
    columns = dict(pair.split("=") for pair in argv[argv.index("--columns") + 1].split(","))
    (tmp_path / argv[argv.index("--set") + 1]).write_text(
        ",".join(columns.values()) + "\n" + ",".join(f"v{i}" for i in range(len(columns))) + "\n")
    assert main(argv) == 0
    exp = argv[1]
    printed = capsys.readouterr().out
    following = commands[commands.index(init) + 1:]
    assert following[0] == f"python -m judge run --exp {exp} --arms" and following[0] in printed
    assert load_experiment(tmp_path / exp).hypotheses
    for command in following[1:]:
        args = parser().parse_args(shlex.split(command)[3:])
        assert str(args.results) == f"results/{exp}", command


def test_the_register_guide_example_registers_every_documented_field(tmp_path):
    (tmp_path / "prereg.toml").write_text(_example())
    exp = load_experiment(tmp_path)
    served, claude = exp.models["served"], exp.models["claude"]
    assert len(served.urls()) == 2 and served.thinking_control == "chat_template_kwargs"
    assert (served.api_key_env, served.concurrency, served.timeout_s) == ("OPENAI_API_KEY", 8, 120.0)
    assert exp.arm("claude").generation.thinking_budget == 2048 and exp.arm("served").generation.effort == "low"
    assert dict(next(j for j in exp.judges if j.name == "claude").generation)["temperature"] is None
    assert exp.adapters["mine"].scale == 1.0 and exp.audit.arms == ("trained",)
    assert claude.backend == "anthropic" and exp.hypotheses[0].kind == "non_inferiority"
    assert served.structured == "json_schema" and exp.scrub[-1] == "(?i)smollm2?" and len(exp.scrub) > 1


@pytest.mark.parametrize("table, typo", [
    ("[models.served]", "concurency = 8"), ("[models.base]", "imatix = \"x\""), ("[judge]", "atempts = 2"),
    ("[analysis]", "resample = 10"), ("[runtime]", "thread = 1"), ("[experiment]", "sead = 1"),
    ("[judges.local]", "qant = \"Q8_0\""), ("[audit]", "max_gamd = 4"), ("[gold]", "programme = \"g.py:f\""),
    ("[contamination]", "treshold = 0.1"),
])
def test_a_misspelt_setting_is_refused_naming_table_and_key(tmp_path, table, typo):
    text = re.sub(rf"(?m)^{re.escape(table)}.*$", lambda m: f"{m.group(0)}\n{typo}", _example(), count=1)
    assert typo in text
    (tmp_path / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(tmp_path)
    assert e.value.field == typo.split(" ")[0] and table.strip("[]") in str(e.value)


def test_misspelt_arm_and_hypothesis_keys_are_refused(tmp_path):
    for old, new in (('samples = 1', 'sample = 1'), ('subset = []', 'subsets = []')):
        (tmp_path / "prereg.toml").write_text(_example().replace(old, new, 1))
        with pytest.raises(BadInput) as e:
            load_experiment(tmp_path)
        assert e.value.field == new.split(" ")[0]


def test_an_empty_adapter_table_names_its_missing_source(tmp_path):
    text = re.sub(r'(?m)^source = "adapters/mine.gguf".*\n', "", _example())
    text = re.sub(r"(?m)^(scale|sha256) = .*\n(?=(sha256 = .*\n)?\n\[\[arms\]\])", "", text)
    (tmp_path / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(tmp_path)
    assert e.value.field == "source" and "[adapters.mine]" in str(e.value)


def test_every_key_the_parser_reads_is_documented():
    """The reverse direction: each key a table accepts (the parser's own known-key tuples) appears in the example
    (the generated docs/reference/registration.md lists them too: tests/test_docs_site.py)."""
    import tomllib

    from models.backends.base import Generation
    from registration import analysis, comparisons, gates, gold, hypotheses, judges, prereg, spec

    doc = tomllib.loads(_example())
    generations = [a.get("generation", {}) for a in doc["arms"]] + [j.get("generation", {}) for j in
                                                                     doc["judges"].values()]
    tables = {
        "prereg.toml": (prereg.TABLES, [doc]),
        "[experiment]": (prereg.EXPERIMENT_KEYS, [doc["experiment"]]),
        "[runtime]": (prereg.RUNTIME_KEYS, [doc["runtime"]]),
        "[models.*]": (spec.MODEL_KEYS, doc["models"].values()),
        "[adapters.*]": (spec.ADAPTER_KEYS, doc["adapters"].values()),
        "[[arms]]": (spec.ARM_KEYS, doc["arms"]),
        "generation": (tuple(Generation.__dataclass_fields__), generations),
        "[judge]": (prereg.JUDGE_KEYS, [doc["judge"]]),
        "[judges.*]": (judges.JUDGE_TABLE_KEYS, doc["judges"].values()),
        "[analysis]": (analysis.ANALYSIS_KEYS, [doc["analysis"]]),
        "[[hypotheses]]": (hypotheses.HYPOTHESIS_KEYS, doc["hypotheses"]),
        "[[comparisons]]": (comparisons.COMPARISON_KEYS, doc["comparisons"]),
        "[audit]": (gates.AUDIT_KEYS, [doc["audit"]]),
        "[gold]": (gold.gold_keys(), [doc["gold"]]),
        "[sets.*]": (prereg.SET_KEYS, doc["sets"].values()),
        "[contamination]": (gates.CONTAMINATION_KEYS, [doc["contamination"]]),
    }
    for name, (known, documented) in tables.items():
        shown = {key for t in documented for key in t}
        assert set(known) <= shown, f"docs/how-to/register.md's example lacks {name} {sorted(set(known) - shown)}"


def _glance() -> tuple[dict[str, set[str]], set[str]]:
    """The options each command of the reference's at-a-glance block shows, and the commands shown in part (`...`)."""
    text = (ROOT / "docs" / "reference" / "conventions.md").read_text()
    block = re.search(r"\n\n((?:    .*\n)+)", text).group(1)
    shown: dict[str, set[str]] = {}
    partial: set[str] = set()
    command = None
    for line in block.splitlines():
        m = re.match(r"    python -m (\w+) ([\w-]+)", line)
        if m:
            command = f"python -m {m.group(1)} {m.group(2)}"
        usage = line.split("#")[0]
        shown.setdefault(command, set()).update(re.findall(r"(?<![\w-])--[a-z][\w-]*", usage))
        if usage.rstrip().endswith("..."):
            partial.add(command)
    return shown, partial


def test_the_commands_at_a_glance_are_the_parsers_commands_and_options():
    """Both directions: every command and option of the parsers is in the block (all of a command's options unless its
    line ends in `...`), and the block shows no other."""
    import argparse

    from arms.__main__ import parser as arms
    from audit.__main__ import parser as audit
    from judge.__main__ import parser as judge

    parsers = {}
    for prog, p in (("python -m judge", judge()), ("python -m arms", arms()), ("python -m audit", audit())):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    parsers[f"{prog} {name}"] = {o for a in sub._actions for o in a.option_strings if o.startswith("--")
                                                 and o != "--help"}
    shown, partial = _glance()
    assert set(shown) == set(parsers) and partial <= {"python -m audit top40", "python -m audit topk",
                                                        "python -m audit rewards"}
    for command, options in parsers.items():
        assert shown[command] <= options, (command, sorted(shown[command] - options))
        assert command in partial or shown[command] == options, (command, sorted(options - shown[command]))
