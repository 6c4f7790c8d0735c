"""prereg.toml as a class of inputs: any value of any type at any key is accepted or refused as bad input naming
the file, the line and the field; never another exception, never a value no later stage can use.

The documents are the demo's registration mutated by hypothesis: a key's value replaced by a value of another
type, out of range, huge, negative, NaN, Unicode or a nested table; required keys deleted; unknown keys added;
whole tables replaced. They are written by this file's own TOML writer, which records the line of every key, so
the line a refusal names is checked against where the test put the key. The loader runs in process (unit tier);
tests/test_inputs_cli.py runs a few of the same refusals through `judge run` (exit 2, nothing paid).
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.unit

DEMO = ROOT / "sealed" / "demo"
BASE = tomllib.loads((DEMO / "prereg.toml").read_text(encoding="utf-8"))
BARE = re.compile(r"[A-Za-z0-9_-]+")


# ---- a TOML writer that knows where it put each key ---------------------------------------------------------

def _key(k: str) -> str:
    return k if BARE.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)  # JSON's escapes are TOML's, but TOML also escapes DEL
    return out.replace("\x7f", "\\u007f")


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def _is_tables(v) -> bool:
    return isinstance(v, dict) and bool(v) and all(isinstance(x, dict) for x in v.values())


def dump(doc: dict) -> tuple[str, dict[tuple, int]]:
    """TOML text of `doc` and the 1-based line of every key path (array tables indexed by position). Top-level
    tables get headers ([t], [t.name], [[t]]); anything nested deeper is written inline."""
    out: list[str] = []
    where: dict[tuple, int] = {}

    def put(path: tuple, text: str) -> None:
        out.append(text)
        where[path] = len(out)

    def body(path: tuple, table: dict) -> None:
        for k, v in table.items():
            put((*path, k), f"{_key(k)} = {_value(v)}")

    scalars = {k: v for k, v in doc.items() if not isinstance(v, dict)
               and not (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))}
    body((), scalars)
    for k, v in doc.items():
        if k in scalars:
            continue
        if isinstance(v, list):
            for i, t in enumerate(v):
                put((k, i), f"[[{_key(k)}]]")
                body((k, i), t)
        elif _is_tables(v) and k in ("models", "adapters", "judges"):
            where[(k,)] = len(out) + 1
            for name, t in v.items():
                put((k, name), f"[{_key(k)}.{_key(name)}]")
                body((k, name), t)
        else:
            put((k,), f"[{_key(k)}]")
            body((k,), v)
    return "\n".join(out) + "\n", where


def test_the_writer_round_trips_the_demo():
    text, where = dump(BASE)
    assert tomllib.loads(text) == BASE
    lines = text.splitlines()
    assert lines[where[("analysis", "resamples")] - 1] == "resamples = 10000"
    assert lines[where[("arms", 2, "glue")] - 1] == 'glue = "glue.py:answer"'


# ---- mutations ----------------------------------------------------------------------------------------------

scalars = st.one_of(
    st.booleans(),
    st.integers(),  # any size: TOML integers are 64-bit, larger ones are the parser's to refuse
    st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, -(2**63), 10**10, 10**8, 100_000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, 0.5, 1.5, 1e10]),
    st.text(max_size=12),
    st.sampled_from(["", " ", "\x00", "a\x00b", "../..", "/", ".", "..", "\u2028", "\r", "é", "provider-default",
                     "http://", "ftp://x", "http://[::1", "http://a:99999/v1", "not a url", "embedded:nope",
                     "Q8_0", "base", "trained", "source", "correctness", "pairwise", "auto", "\ufeff"]),
    st.dates(),
    st.datetimes(),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3), max_leaves=6)


def _paths(doc, prefix=()) -> list[tuple]:
    """Every key path in the document, tables and their keys, array elements by index."""
    out = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    for k, v in items:
        path = (*prefix, k)
        out.append(path)
        if isinstance(v, dict) or (isinstance(v, list) and v and all(isinstance(x, dict) for x in v)):
            out += _paths(v, path)
    return out


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _deep(v):
    if isinstance(v, dict):
        return {k: _deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deep(x) for x in v]
    return v


@st.composite
def mutated(draw) -> tuple[dict, list[tuple]]:
    """The demo's registration with one to three mutations, and the paths they touched."""
    doc = _deep(BASE)
    touched = []
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        parent = _get(doc, path[:-1])
        how = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        if how == "replace":
            parent[path[-1]] = draw(values)
        elif how == "delete":
            del parent[path[-1]]
        else:
            target = _get(doc, path)
            if not isinstance(target, dict):  # beside the key drawn, or at the top when that is an array's element
                target, path = (parent, path[:-1]) if isinstance(parent, dict) else (doc, ())
            key = draw(st.text(min_size=1, max_size=8))
            target[key] = draw(values)
            path = (*path, key)
        touched.append(path)
    return doc, touched


@pytest.fixture(scope="module")
def exp_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("props") / "demo"
    shutil.copytree(DEMO, d)
    return d


def _load(exp_dir: Path, text: str):
    (exp_dir / "prereg.toml").write_text(text, encoding="utf-8")
    return load_experiment(exp_dir)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(mutated())
def test_any_mutation_is_loaded_or_refused_at_its_file_line_and_field(exp_dir, case):
    doc, touched = case
    try:
        text, where = dump(doc)
    except TypeError:
        assume(False)
    try:
        _load(exp_dir, text)
    except BadInput as e:
        lines = text.split("\n")  # not splitlines(): a key may hold U+0085 or U+2028, which TOML does not split at
        assert e.file == str(exp_dir / "prereg.toml"), e
        if "not valid TOML" in e.message:
            return  # a value this writer cannot spell in TOML (a time zone, a key TOML refuses); tomllib said so
        assert e.field, e
        if e.line is None:  # only a key that is nowhere in the file (deleted, or never written) has no line
            assert not any(p[-1] == e.field for p in where), (str(e), text)
            return
        line = lines[e.line - 1]
        assert _key(e.field) in line or line.startswith("["), (str(e), line)
        for path in touched:  # a refusal of a key this case put in names the line the writer put it on
            if path in where and path[-1] == e.field and len(touched) == 1 and not isinstance(_get(doc, path), dict):
                assert e.line == where[path], (str(e), path, where[path])


# ---- bounds: every registered count within a documented range, checked at load --------------------------------

# (path, lowest accepted, highest accepted), written here from docs/how-to/register.md "Bounds", not read from the code
BOUNDS = [
    (("experiment", "seed"), 0, 2**32 - 2),
    (("runtime", "threads"), 1, 512),
    (("runtime", "n_ctx"), 16, 2**20),
    (("runtime", "seed"), 0, 2**32 - 2),
    (("runtime", "parallel_sequences"), 1, 256),
    (("runtime", "gpu_layers"), 0, 10_000),
    (("models", "gpt", "concurrency"), 1, 256),
    (("models", "gpt", "attempts"), 1, 20),
    (("models", "gpt", "batch_max_requests"), 1, 1_000_000),
    (("models", "gpt", "batch_max_bytes"), 1, 2**31),
    (("arms", 0, "samples"), 1, 1000),
    (("judge", "verdict_attempts"), 1, 10),
    (("analysis", "resamples"), 100, 100_000),
    (("analysis", "calibration_sims"), 1, 10_000),
    (("analysis", "min_clusters"), 1, 1_000_000),
    (("analysis", "seed"), 0, 2**32 - 2),
    (("audit", "k"), 1, 10_000),
]
NUMBER_BOUNDS = [
    (("models", "gpt", "timeout_s"), 0, 86_400),  # above 0
    (("models", "gpt", "batch_poll_s"), 0, 86_400),  # above 0
    (("gold", "timeout_s"), 0, 86_400),  # above 0
    (("arms", 0, "glue_timeout_s"), 0, 86_400),  # above 0
    (("adapters", "demo-lora", "scale"), -100, 100),
    (("hypotheses", 0, "margin"), 0, 1_000_000),
]


def _with(path: tuple, value) -> dict:
    doc = _deep(BASE)
    _get(doc, path[:-1])[path[-1]] = value
    if path == ("audit", "k"):
        doc["audit"]["max_gamed"] = 0  # within any k
    if path == ("analysis", "calibration_sims"):
        doc["analysis"]["resamples"] = 2000  # sims x resamples within its own bound up to 10,000 sims
    return doc


@pytest.mark.parametrize("path, low, high", BOUNDS, ids=[".".join(map(str, p)) for p, _, _ in BOUNDS])
def test_each_registered_count_is_bounded_at_load(exp_dir, path, low, high):
    for ok in (low, high):
        _load(exp_dir, dump(_with(path, ok))[0])
    for bad in (low - 1, high + 1, 10**12):
        text, where = dump(_with(path, bad))
        with pytest.raises(BadInput) as e:
            _load(exp_dir, text)
        assert e.value.field == path[-1] and e.value.line == where[path], str(e.value)


@pytest.mark.parametrize("path, low, high", NUMBER_BOUNDS, ids=[".".join(map(str, p)) for p, _, _ in NUMBER_BOUNDS])
def test_each_registered_quantity_is_bounded_at_load(exp_dir, path, low, high):
    positive = path[-1] in ("timeout_s", "batch_poll_s", "glue_timeout_s")
    for ok in ((low + 0.001) if positive else float(low), float(high)):
        if path[-1] == "margin" and ok > 2:
            continue  # a margin beyond the scale loads; preflight refuses it against the rubric's scale
        _load(exp_dir, dump(_with(path, ok))[0])
    for bad in ([float(low)] if positive else [low - 0.5]) + [high + 0.5, 1e300]:
        text, where = dump(_with(path, bad))
        with pytest.raises(BadInput) as e:
            _load(exp_dir, text)
        assert e.value.field == path[-1] and e.value.line == where[path], str(e.value)


def test_sims_times_resamples_is_bounded(exp_dir):
    doc = _deep(BASE)
    doc["analysis"].update(resamples=100_000, calibration_sims=200)  # 2 x 10^7: the most
    _load(exp_dir, dump(doc)[0])
    doc["analysis"]["calibration_sims"] = 201
    text, where = dump(doc)
    with pytest.raises(BadInput) as e:
        _load(exp_dir, text)
    assert e.value.field == "calibration_sims" and e.value.line == where[("analysis", "calibration_sims")]


def test_a_seed_that_samples_would_carry_past_the_bound_is_refused(exp_dir):
    doc = _deep(BASE)
    doc["arms"][0]["samples"] = 3
    doc["arms"][0]["generation"]["seed"] = 2**32 - 4  # samples get seed, seed + 1, seed + 2 = 2^32 - 2: the most
    _load(exp_dir, dump(doc)[0])
    doc["arms"][0]["generation"]["seed"] = 2**32 - 3
    text, where = dump(doc)
    with pytest.raises(BadInput) as e:
        _load(exp_dir, text)
    assert e.value.field == "seed" and e.value.line == where[("arms", 0, "generation")]


@pytest.mark.parametrize("url", ["not a url", "ftp://host/v1", "http://", "http://[::1", "http://host:99999/v1",
                                 "http://exa mple/v1", "localhost:8080/v1", "http://a\tb/v1"])
def test_a_base_url_that_is_not_an_http_url_is_refused(exp_dir, url):
    doc = _deep(BASE)
    doc["models"]["gpt"]["base_url"] = url
    text, where = dump(doc)
    with pytest.raises(BadInput) as e:
        _load(exp_dir, text)
    assert e.value.field == "base_url" and e.value.line == where[("models", "gpt", "base_url")], str(e.value)


def test_a_base_url_that_is_one_loads(exp_dir):
    doc = _deep(BASE)
    doc["models"]["gpt"]["base_url"] = ["http://127.0.0.1:8080/v1", "https://api.example.com/v1"]
    assert _load(exp_dir, dump(doc)[0]).models["gpt"].base_urls[1] == "https://api.example.com/v1"


@pytest.mark.parametrize("path, value", [(("experiment", "name"), "../escape"), (("experiment", "name"), ""),
                                         (("arms", 0, "name"), "a/b"), (("judge", "rubric"), "../rubrics/x"),
                                         (("experiment", "name"), "tab\there")])
def test_a_name_that_would_become_a_path_outside_its_folder_is_refused(exp_dir, path, value):
    text, where = dump(_with(path, value))
    with pytest.raises(BadInput) as e:
        _load(exp_dir, text)
    assert e.value.field == path[-1] and e.value.line == where[path], str(e.value)


# ---- the file itself: encodings and line ends ----------------------------------------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.binary(min_size=1, max_size=3))
def test_a_prereg_that_is_not_utf8_is_refused_at_the_line_of_the_bad_byte(exp_dir, at, junk):
    raw = (DEMO / "prereg.toml").read_bytes()
    at = at % len(raw)
    bad = raw[:at] + b"\xff" + junk + raw[at:]  # 0xff never occurs in UTF-8
    (exp_dir / "prereg.toml").write_bytes(bad)
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    line = raw[:at].count(b"\n") + 1
    assert e.value.line == line and "not UTF-8" in e.value.message
    key = re.match(rb"\s*([A-Za-z0-9_-]+)\s*=", bad.split(b"\n")[line - 1])
    if key:  # the key assigned on that line is the field
        assert e.value.field == key.group(1).decode(), str(e.value)


@pytest.mark.parametrize("bom, newline", [(b"", b"\r\n"), (b"\xef\xbb\xbf", b"\n"), (b"\xef\xbb\xbf", b"\r\n")])
def test_a_prereg_with_a_byte_order_mark_or_crlf_loads_and_keeps_its_line_numbers(exp_dir, bom, newline):
    raw = (DEMO / "prereg.toml").read_bytes()
    (exp_dir / "prereg.toml").write_bytes(bom + raw.replace(b"\n", newline))
    assert load_experiment(exp_dir).name == "demo"
    text = raw.decode().replace("resamples = 10000", 'resamples = "x"')
    (exp_dir / "prereg.toml").write_bytes(bom + text.encode().replace(b"\n", newline))
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    assert e.value.line == text.splitlines().index('resamples = "x"') + 1


def test_a_line_separator_inside_a_string_does_not_shift_line_numbers(exp_dir):
    text = (DEMO / "prereg.toml").read_text(encoding="utf-8")
    text = text.replace('name = "demo"', 'name = "demo"\ndescription2 = "a\u2028b\x0cc"', 1)
    text = text.replace('description = "Does', 'description = "\u2028Does', 1)
    text = text.replace("\ndescription2 = \"a\u2028b\x0cc\"", "", 1)
    text = text.replace("resamples = 10000", "resamples = -5")
    (exp_dir / "prereg.toml").write_text(text, encoding="utf-8")
    with pytest.raises(BadInput) as e:
        load_experiment(exp_dir)
    assert e.value.field == "resamples" and e.value.line == text.split("\n").index("resamples = -5") + 1
