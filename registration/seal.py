"""Sealing: the sha256 MANIFEST of an experiment folder, its verification, and dated amendments.

MANIFEST lines are `<sha256>  <relative path>`, or `<sha256>  private:<relative path>` for a private
file bound by hash only: it may be absent (kept out of the repository); when present it must match.
Any other file that goes missing breaks the seal.

The seal lists every regular file under the folder, with no exclusion by name: a `__pycache__` or
`.git` folder, a dotfile, a `.pyc`, a file called MANIFEST in a subfolder are all listed, because a run
can read any of them (a question set can sit in any folder, Python imports bytecode it finds beside a
source). Exactly two files are not listed, both at the top of the folder: MANIFEST itself (it cannot
hold its own hash) and amendments.jsonl (appended after sealing; each amendment is hash-chained to the
MANIFEST and the amendment before it, so none can be inserted, edited or dropped unseen). Neither can be
registered as a file a run reads (`inside`). A symbolic link, or anything that is not a regular file or
folder (a FIFO, a socket, a device), is refused by `seal` and by every check of the seal: a link's
target could change, or lie outside, unseen; reading a FIFO could block forever. A name a MANIFEST
line cannot hold (a line break, not UTF-8, or a top-level name starting with `private:`) is refused.
A path the registration names (a question set) must resolve inside the folder, where the seal covers
it; code is imported from the folder only as the sealed bytes (`sealed_bytes`, used by arms.glue).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
from pathlib import Path

from core import jsonl
from core.atomic import write_text
from core.errors import BadInput

MANIFEST = "MANIFEST"
AMENDMENTS = "amendments.jsonl"
UNLISTED = (MANIFEST, AMENDMENTS)  # at the folder's top only; the same names in a subfolder are listed
PRIVATE = "private:"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listable(exp_dir: Path, path: Path) -> str:
    """The MANIFEST name of a file: its path relative to the folder, refused when a MANIFEST line cannot hold it."""
    rel = path.relative_to(exp_dir).as_posix()
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(path, "the file name is not valid UTF-8: a MANIFEST line cannot name it; rename it") from None
    if "\n" in rel or "\r" in rel:
        raise BadInput(path, "the file name holds a line break: a MANIFEST line cannot name it; rename it")
    if rel.startswith(PRIVATE):
        raise BadInput(path, f"a name starting with {PRIVATE!r} at the top of the folder reads as a private entry in "
                       "MANIFEST; rename it")
    return rel


def sealed_files(exp_dir: Path) -> dict[str, Path]:
    """MANIFEST name -> path of every file the seal covers: every regular file under the folder but the top-level
    MANIFEST and amendments.jsonl. A symbolic link or a special file anywhere is bad input, named."""
    exp_dir = Path(exp_dir)
    if not exp_dir.is_dir():
        raise BadInput(exp_dir, "no such experiment folder")
    out = {}
    for top, dirs, files in os.walk(exp_dir, onerror=_unreadable):
        for name in sorted(dirs + files):
            path = Path(top) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise BadInput(path, "is a symbolic link: the seal covers only real files inside the experiment "
                               "folder (copy the target in, then seal)")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise BadInput(path, "is not a regular file (a FIFO, socket or device): the seal covers only regular "
                               "files; remove it")
            if top == str(exp_dir) and name in UNLISTED:
                if not stat.S_ISREG(mode):
                    raise BadInput(path, f"must be a file: the folder's {name} is the seal's own")
                continue
            if stat.S_ISREG(mode):
                out[_listable(exp_dir, path)] = path
    return dict(sorted(out.items(), key=lambda item: item[0].split("/")))  # the order sealing always used


def _unreadable(e: OSError) -> None:
    raise BadInput(e.filename, f"cannot be listed ({e.strerror}): the seal must see every file in the folder")


def inside(exp_dir: Path, rel: str, file: Path, field: str) -> Path:
    """The real path of a file the registration names, refused unless it lies inside the experiment folder and is
    a file the seal lists (not the top-level MANIFEST or amendments.jsonl)."""
    root = Path(exp_dir).resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise BadInput(file, f"{rel!r} resolves to {path}, outside the experiment folder {root}: the seal cannot "
                       "cover it; put the file inside the folder and seal it", field=field)
    if path.parent == root and path.name in UNLISTED:
        raise BadInput(file, f"{rel!r} is the folder's {path.name}, which the seal does not list (it holds the seal "
                       "or the amendments): a run cannot read it as an input", field=field)
    return path


def seal(exp_dir: Path, private: tuple[str, ...] = ()) -> Path:
    """Write MANIFEST over every file in the folder; `private` files keep their hash and may be removed later."""
    exp_dir = Path(exp_dir)
    if not (exp_dir / "prereg.toml").exists():
        raise BadInput(exp_dir / "prereg.toml", "an experiment folder needs a prereg.toml to seal")
    present = sealed_files(exp_dir)
    for rel in private:
        if rel not in present:
            raise BadInput(exp_dir / rel, "private file to bind is not in the folder")
    lines = [f"{_sha(p)}  {PRIVATE if rel in private else ''}{rel}" for rel, p in present.items()]
    out = exp_dir / MANIFEST
    write_text(out, "\n".join(lines) + "\n")
    return out


def read_manifest(exp_dir: Path) -> dict[str, tuple[str, bool]]:
    """relative path -> (sha256, private)."""
    path = Path(exp_dir) / MANIFEST
    if not path.exists():
        raise BadInput(path, "experiment is not sealed: run `python -m judge seal DIR` first")
    out: dict[str, tuple[str, bool]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(path, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    # split at line feeds only (a CR before one is dropped): a file name may hold other characters that
    # str.splitlines() breaks at, never a CR or LF (`seal` refuses those)
    for no, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        sha, sep, rel = line.partition("  ")
        if not sep or len(sha) != 64:
            raise BadInput(path, "expected '<sha256>  <path>'", line=no)
        private = rel.startswith(PRIVATE)
        rel = rel.removeprefix(PRIVATE)
        if rel in out:
            raise BadInput(path, f"{rel!r} is listed twice", line=no)
        out[rel] = (sha, private)
    return out


def verify_seal(exp_dir: Path) -> dict[str, tuple[str, bool]]:
    """Check every file: a change, the removal of a non-private file, or a file the MANIFEST does not list (one
    added after sealing, or written by anything since) is bad input naming it."""
    exp_dir = Path(exp_dir)
    present = sealed_files(exp_dir)
    manifest = read_manifest(exp_dir)
    for rel, (sha, private) in manifest.items():
        path = exp_dir / rel
        if rel not in present:
            if private:
                continue  # bound by hash only: private inputs stay out of the repository
            raise BadInput(path, "removed after sealing (in MANIFEST, not on disk, not marked private)")
        if _sha(path) != sha:
            raise BadInput(path, f"changed after sealing (MANIFEST sha256 {sha[:12]}…, file {_sha(path)[:12]}…)")
    extra = [rel for rel in present if rel not in manifest]
    if extra:
        more = f" (and {len(extra) - 1} more unlisted file(s))" if len(extra) > 1 else ""
        why = (" Bytecode is never imported from an experiment folder and this harness writes none there: delete it."
               if "__pycache__" in extra[0].split("/") or extra[0].endswith((".pyc", ".pyo")) else
               " A run could read it unsealed: remove it, or seal the folder again.")
        raise BadInput(present[extra[0]], f"added after sealing: not in MANIFEST{more}.{why}")
    verify_amendments(exp_dir)
    return manifest


def withheld(exp_dir: Path) -> list[str]:
    """The private files (bound by hash only) the folder does not hold, by MANIFEST name."""
    return [rel for rel, (_, private) in read_manifest(exp_dir).items()
            if private and not (Path(exp_dir) / rel).exists()]


def sealed_sha256(exp_dir: Path, path: Path) -> str | None:
    """The sha256 of a file of the experiment folder: of its bytes, or, for a private file that is withheld, the one
    MANIFEST binds it by (`verify_seal` checks the two agree wherever the file is present); None when it is absent
    and not private."""
    path = Path(path)
    if path.is_file():
        return _sha(path)
    root = Path(exp_dir).resolve()
    if not path.resolve().is_relative_to(root):
        return None
    sha, private = read_manifest(root).get(path.resolve().relative_to(root).as_posix(), (None, False))
    return sha if private else None


def sealed_folder_of(path: Path) -> Path | None:
    """The sealed experiment folder (one holding prereg.toml and MANIFEST) a file lies in, if any."""
    for folder in Path(path).resolve().parents:
        if (folder / MANIFEST).is_file() and (folder / "prereg.toml").is_file():
            return folder
    return None


def outside_experiment(out: Path, exp_dir: Path | None, option: str = "--out") -> None:
    """Refuse an output path that is, or lies inside, the experiment folder (or any sealed experiment folder),
    symbolic links resolved: what a command writes there changes the sealed folder, and every later run of it is
    refused by the seal check."""
    target = Path(out).resolve()
    folders = [Path(exp_dir).resolve()] if exp_dir is not None else []
    folders += [f for f in (target, *target.parents) if (f / MANIFEST).is_file() and (f / "prereg.toml").is_file()]
    for folder in folders:
        if target == folder or target.is_relative_to(folder):
            raise BadInput(option, f"{out} is inside the experiment folder {exp_dir or folder}: written there, it "
                           "would change the sealed folder and every later run of it would be refused; name a path "
                           "outside it")


def sealed_bytes(exp_dir: Path, path: Path) -> bytes:
    """The bytes of a file in the experiment folder, read once and refused unless MANIFEST lists them: what a
    caller compiles or parses is then exactly what was sealed, whatever happened to the file since the check."""
    root = Path(exp_dir).resolve()
    path = Path(path).resolve()
    if not path.is_relative_to(root):
        raise BadInput(path, f"lies outside the experiment folder {root}: the seal cannot cover it")
    rel = path.relative_to(root).as_posix()
    listed = read_manifest(root).get(rel)
    if listed is None or (path.parent == root and path.name in UNLISTED):
        raise BadInput(path, "is not in the experiment's MANIFEST: only sealed files are read from the folder "
                       "(seal it, or remove it)")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != listed[0]:
        raise BadInput(path, f"changed after sealing (MANIFEST sha256 {listed[0][:12]}…, file "
                       f"{hashlib.sha256(data).hexdigest()[:12]}…)")
    return data


def manifest_sha256(exp_dir: Path) -> str:
    return _sha(Path(exp_dir) / MANIFEST)


def verify_amendments(exp_dir: Path) -> list[dict]:
    path = Path(exp_dir) / AMENDMENTS
    prev = manifest_sha256(exp_dir)
    rows = []
    for no, rec in jsonl.read(path, required=("date", "text", "prev")):
        if rec["prev"] != prev:
            raise BadInput(path, "hash chain broken: amendment edited, inserted or removed", line=no, field="prev")
        prev = jsonl.link(rec)
        rows.append(rec)
    return rows


def amend(exp_dir: Path, text: str, now: dt.datetime | None = None, post_hoc: bool = False) -> dict:
    """Append an amendment. `post_hoc` records honestly that it was written after scoring began."""
    exp_dir = Path(exp_dir)
    rows = verify_amendments(exp_dir)
    prev = jsonl.link(rows[-1]) if rows else manifest_sha256(exp_dir)
    rec = {"n": len(rows) + 1, "date": (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds"),
           "text": text, "post_hoc": post_hoc, "prev": prev}
    with jsonl.Appender(exp_dir / AMENDMENTS) as w:
        w.write(rec)
    return rec


__all__ = ["seal", "verify_seal", "amend", "read_manifest", "manifest_sha256", "inside", "sealed_bytes",
           "sealed_files", "withheld", "sealed_sha256"]
