"""[gold]: where gold scores come from, as the registration knows each source, registered by name in one place.

A gold source is what the judge is measured against (judge.gold reads its scores). Here each is declared by what the
registration sees of it: its name (in numbers.json's gold sources and each gold score), the [gold] key that
registers it and how that key's value is read and checked, the files of the experiment folder it binds a judged
results folder to (arms.folder.gold_entries), and how the report names its count (judge.outputs.report). What a
source does with a run is judge.gold.registry's: it registers the behaviour, and with it this declaration, in one
line. The declaration order is the order a run's gold is listed and counted in numbers.json.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from core.errors import BadInput

from .seal import inside
from .settings import bounded, check_keys, sealed_files, setting
from .spec import CODE_TIMEOUT_S
from .toml_lines import KeyLines

GOLD_PROGRAM = re.compile(r"^(?P<file>[^:]+\.py):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")  # "file.py:function"
TIMEOUT_KEY = "timeout_s"  # every source run as the experiment's own code runs under it (arms.contained)

Reader = Callable[[dict, Path, Path, str], Any]  # ([gold] table, prereg.toml, experiment folder, "[gold]") -> value


@dataclass(frozen=True)
class GoldSourceSpec:
    """A gold source as the registration knows it. `key`: the [gold] key that registers it (None: nothing registers
    it, as people's labels of a run); `read`: that key's value read and checked (`absent`: the value when the key is
    not registered); `binds`:
    the value's (binding entry, file in the experiment folder) pairs; `rank`: where the source stands in a binding
    and in the report's count, lowest first (both were first written with the program first, and a folder's
    binding.json is in its anchor and its report.md is verified line by line, so that order is kept)."""

    name: str
    title: str  # how the report names its count of scores ("sealed labels 3")
    key: str | None = None
    read: Reader | None = None
    absent: Any = None
    binds: Callable[[Any], list[tuple[str, str]]] = lambda value: []
    rank: int = 0


GOLD_SOURCES: dict[str, GoldSourceSpec] = {}


def declare(spec: GoldSourceSpec) -> GoldSourceSpec:
    """`spec` known to the parser by its name (a name declared again is replaced: judge.gold.registry registers a
    source's declaration with its behaviour)."""
    GOLD_SOURCES[spec.name] = spec
    return spec


def ranked() -> list[GoldSourceSpec]:
    """The declared sources in the order a binding and the report list them (`rank`, then declaration)."""
    return sorted(GOLD_SOURCES.values(), key=lambda s: s.rank)


def gold_keys() -> tuple[str, ...]:
    """The keys [gold] accepts: each registrable source's, then the time limit."""
    return (*(s.key for s in GOLD_SOURCES.values() if s.key), TIMEOUT_KEY)


@dataclass(frozen=True)
class Gold:
    """Where gold scores come from (judge.gold reads them): each registered source's value (sealed labels files, a gold
    program, ...), every file inside the experiment folder, so the seal covers it."""

    values: tuple[tuple[str, Any], ...] = ()  # (source name, its registered value), in GOLD_SOURCES order
    # a program runs in a child process (arms.contained): its import, and each call, must finish within this many
    # seconds, or the child is stopped and the answer's gold is an error saying so
    timeout_s: float = CODE_TIMEOUT_S

    def value(self, name: str) -> Any:
        """The registered value of source `name`; its `absent` value when not registered."""
        return dict(self.values).get(name, GOLD_SOURCES[name].absent)


def parse_gold(g: Any, file: Path, exp_dir: Path) -> Gold:
    """[gold]: each source's key read by its own reader; every file named must lie inside the experiment folder (the
    seal covers them); whether they exist and what they hold is checked before the first model call
    (judge.gold.sources.check_gold), as for question sets."""
    where = "[gold]"
    check_keys(g, gold_keys(), file, where)
    values = tuple((s.name, s.read(g, file, exp_dir, where)) for s in GOLD_SOURCES.values() if s.key and s.key in g)
    timeout = bounded(g, "timeout_s", "number", file, where, CODE_TIMEOUT_S, bound="code_timeout_s")
    return Gold(values=values, timeout_s=float(timeout))


def _labels(g: dict, file: Path, exp_dir: Path, where: str) -> tuple[str, ...]:
    """[gold] labels: sealed labels files, each named once."""
    return tuple(sealed_files(g, "labels", file, where, exp_dir, []))


def _program(g: dict, file: Path, exp_dir: Path, where: str) -> str:
    """[gold] program: "file.py:function" in the experiment folder, called (question, reference, answer) -> score."""
    program = setting(g, "program", "string", file, where, None)
    m = GOLD_PROGRAM.match(program)
    if m is None:
        raise BadInput(file, f"{where} program must be \"file.py:function\" (a Python file in the experiment "
                       f"folder and the function in it), got {program!r}", field="program")
    inside(exp_dir, m.group("file"), file, "program")
    return program


LABELS = declare(GoldSourceSpec("labels", "sealed labels", key="labels", read=_labels, absent=(),
                                binds=lambda files: [(f"gold labels {rel} sha256", rel) for rel in files]))
PROGRAM = declare(GoldSourceSpec("program", "program", key="program", read=_program,
                                 binds=lambda spec: [(f"gold program {spec} source sha256", spec.partition(":")[0])],
                                 rank=-1))
# people's labels of a run (labels/ in its folder): nothing registers them
HUMAN = declare(GoldSourceSpec("human", "people"))


def at_key(exp_dir: Path, message: str, key: str) -> BadInput:
    """Bad input about a registered source found after loading (a file missing, a program that cannot be called),
    naming prereg.toml's line of its [gold] key."""
    file = Path(exp_dir) / "prereg.toml"
    return BadInput(file, message, line=KeyLines(file.read_text()).find(("gold",), key), field=key)
