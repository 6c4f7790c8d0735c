"""The documentation site: it builds with `mkdocs build --strict` (a broken link or a page missing from the nav
fails), fetches nothing from elsewhere when viewed, and its reference pages are the code's own (docs/gen_reference.py):
a command option, a registration key or a result-file field added without regenerating them fails here."""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

# a request the built site would make to another host when opened: a script, a stylesheet or font, a CSS import
FETCHES_ELSEWHERE = re.compile(r"<script[^>]*\ssrc=\"(?:https?:)?//|<link[^>]*\shref=\"(?:https?:)?//"
                               r"|@import\s+url\(\s*[\"']?(?:https?:)?//|fonts\.googleapis|fonts\.gstatic")


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their types through it
    spec.loader.exec_module(module)
    return module


def _build(config: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def _fetches(site: Path) -> list[str]:
    """Each built file and the first request it would make to another host."""
    found = []
    for path in site.rglob("*"):
        if path.suffix in (".html", ".css", ".js") and path.is_file():
            m = FETCHES_ELSEWHERE.search(path.read_text(errors="replace"))
            if m:
                found.append(f"{path.relative_to(site)}: {m.group(0)}")
    return found


def test_the_site_builds_strict_and_fetches_nothing_from_elsewhere(tmp_path):
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    site = tmp_path / "site"
    assert (site / "reference" / "cli" / "index.html").is_file() and (site / "index.html").is_file()
    assert _fetches(site) == []


def test_the_fetch_check_finds_a_web_font_and_a_broken_link_fails_the_build(tmp_path):
    """The two checks above can fail: Material's default Google font is a fetch, and a link to a page that does not
    exist stops a strict build."""
    config = (ROOT / "mkdocs.yml").read_text()
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    fonts = tmp_path / "fonts.yml"
    fonts.write_text(config.replace("docs_dir: docs", f"docs_dir: {docs}").replace("font: false",
                                                                                   "font:\n    text: Roboto"))
    assert _build(fonts, tmp_path / "fonts").returncode == 0
    assert any(f.startswith("index.html: <link") for f in _fetches(tmp_path / "fonts"))
    (docs / "tutorial.md").write_text("# Tutorial\n\nSee [the steps](no-such-page.md).\n")
    broken = tmp_path / "broken.yml"
    broken.write_text(config.replace("docs_dir: docs", f"docs_dir: {docs}"))
    failed = _build(broken, tmp_path / "broken")
    assert failed.returncode != 0 and "no-such-page.md" in failed.stderr


def test_the_reference_pages_are_a_fresh_generation(gen):
    """Regenerate with `python docs/gen_reference.py` after changing a parser, a registration key or a contract."""
    for name, text in gen.pages().items():
        assert (ROOT / "docs" / "reference" / name).read_text() == text, f"docs/reference/{name} is stale"
    assert gen.main(["--check"]) == 0


def _walk(parser, prog: str) -> dict[str, list[str]]:
    """Every subcommand of a parser and its arguments' names, walked apart from the generator."""
    import argparse

    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[f"{prog} {name}"] = [a.option_strings[0] if a.option_strings else (a.metavar or a.dest.upper())
                                         for a in sub._actions if not isinstance(a, argparse._HelpAction)]
    return out


def _sections(text: str, level: str) -> dict[str, str]:
    parts = re.split(rf"^{level} `(.+?)`\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_command_and_option_is_in_the_reference():
    from arms.__main__ import parser as arms
    from audit.__main__ import parser as audit
    from judge.__main__ import parser as judge

    page = _sections((ROOT / "docs" / "reference" / "cli.md").read_text(), "###")
    commands = {**_walk(judge(), "python -m judge"), **_walk(arms(), "python -m arms"),
                **_walk(audit(), "python -m audit")}
    assert {"python -m judge verify", "python -m arms collect", "python -m audit rewards"} <= set(commands)
    assert set(page) == set(commands)
    for command, names in commands.items():
        rows = re.findall(r"^\| `([^ `]+)", page[command], flags=re.M)
        assert rows == [n.replace("<", "&lt;") for n in names], command


def test_every_registration_key_is_in_the_reference_under_its_table():
    from models.backends.base import Generation
    from registration import analysis, comparisons, gates, gold, hypotheses, judges, prereg, rubric, spec

    tables = {"[experiment]": prereg.EXPERIMENT_KEYS, "[runtime]": prereg.RUNTIME_KEYS,
              "[models.NAME]": spec.MODEL_KEYS, "[adapters.NAME]": spec.ADAPTER_KEYS, "[[arms]]": spec.ARM_KEYS,
              "[judge]": prereg.JUDGE_KEYS,
              "generation (of an arm or a judge)": tuple(f.name for f in dataclasses.fields(Generation)),
              "[judges.NAME]": judges.JUDGE_TABLE_KEYS, "[analysis]": analysis.ANALYSIS_KEYS,
              "[[hypotheses]]": hypotheses.HYPOTHESIS_KEYS, "[[comparisons]]": comparisons.COMPARISON_KEYS,
              "[audit]": gates.AUDIT_KEYS, "[gold]": gold.gold_keys(),
              '[sets."FILE"]': prereg.SET_KEYS, "[contamination]": gates.CONTAMINATION_KEYS,
              "rubrics/NAME.toml (a rubric)": rubric.RUBRIC_KEYS}
    text = (ROOT / "docs" / "reference" / "registration.md").read_text()
    page = _sections(text, "##")
    assert set(page) == set(tables)
    for table, keys in tables.items():
        assert re.findall(r"^\| `(\w+)`", page[table], flags=re.M) == list(keys), table
    for name in prereg.TABLES:
        assert f"`{name}`" in text.split("\n## ", 1)[0]


def test_a_documented_default_and_range_are_what_the_loader_does(tmp_path):
    """The reference's defaults of [analysis] and [runtime] against a registration that leaves them out, loaded by
    the real loader; and a documented upper bound is refused one above it."""
    from core.errors import BadInput
    from registration.prereg import load_experiment

    text = (ROOT / "docs" / "reference" / "registration.md").read_text()
    page = _sections(text, "##")

    def documented(table: str, key: str) -> str:
        return re.search(rf"^\| `{key}` \| [^|]* \| ([^|]*) \|", page[table], flags=re.M).group(1).strip()

    exp_dir = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp_dir)
    demo = (exp_dir / "prereg.toml").read_text()
    for block in ("runtime", "analysis"):  # drop the demo's own settings of these two tables
        demo = re.sub(rf"^\[{block}\]\n(?:(?!\[).*\n)*", "", demo, flags=re.M)
    (exp_dir / "prereg.toml").write_text(demo)
    exp = load_experiment(exp_dir)
    assert str(exp.analysis.resamples) == documented("[analysis]", "resamples")
    assert f'"{exp.analysis.method}"' == documented("[analysis]", "method")
    assert f'"{exp.analysis.family}"' == documented("[analysis]", "family_adjustment")
    assert str(exp.runtime.n_ctx) == documented("[runtime]", "n_ctx")
    high = re.search(r"^\| `threads` \|.*? to ([\d,]+)", page["[runtime]"], flags=re.M).group(1)
    (exp_dir / "prereg.toml").write_text(demo + f"\n[runtime]\nthreads = {int(high.replace(',', '')) + 1}\n")
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    assert e.value.field == "threads"


def _entry_classes() -> list[type]:
    from core import records

    todo = [c for c in vars(records).values()
            if isinstance(c, type) and issubclass(c, records.Document) and c is not records.Document]
    seen: list[type] = []
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.append(cls)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            stack = [hints[f.name]]
            while stack:
                h = stack.pop()
                if isinstance(h, type) and issubclass(h, records.Entry):
                    todo.append(h)
                stack.extend(typing.get_args(h))
    return seen


def test_every_field_of_every_result_file_is_in_the_reference():
    from core.records import Binding, Document, Numbers, RunInfo
    from core.records.check import BOOKKEEPING

    classes = _entry_classes()
    assert {RunInfo, Numbers, Binding} <= set(classes) and len(classes) > 20
    text = (ROOT / "docs" / "reference" / "records.md").read_text()
    for cls in classes:
        heading = f"## {cls.WHAT}\n" if issubclass(cls, Document) else f"### {cls.__name__}\n"
        assert heading in text, cls.__name__
        section = re.split(r"^##+ ", text.split(heading, 1)[1], flags=re.M)[0]
        fields = [f.name for f in dataclasses.fields(cls) if f.name not in BOOKKEEPING]
        assert re.findall(r"^\| `(\w+)`", section, flags=re.M) == fields, cls.__name__
