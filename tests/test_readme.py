"""README's registration reference is real: its example parses, and a misspelt setting is refused."""
from __future__ import annotations

import re

import pytest

from core.errors import BadInput
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.unit


def _example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Registering your own experiment", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_registers_every_documented_field(tmp_path):
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
    """The reverse direction: each key a table accepts (the parser's own known-key tuples) appears in README's block."""
    import tomllib

    from models.backends.base import Generation
    from registration import prereg, spec

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
        "[judges.*]": (prereg.JUDGE_TABLE_KEYS, doc["judges"].values()),
        "[analysis]": (prereg.ANALYSIS_KEYS, [doc["analysis"]]),
        "[[hypotheses]]": (prereg.HYPOTHESIS_KEYS, doc["hypotheses"]),
        "[audit]": (prereg.AUDIT_KEYS, [doc["audit"]]),
        "[gold]": (prereg.GOLD_KEYS, [doc["gold"]]),
        "[sets.*]": (prereg.SET_KEYS, doc["sets"].values()),
        "[contamination]": (prereg.CONTAMINATION_KEYS, [doc["contamination"]]),
    }
    for name, (known, documented) in tables.items():
        shown = {key for t in documented for key in t}
        assert set(known) <= shown, f"README's registration reference lacks {name} {sorted(set(known) - shown)}"
