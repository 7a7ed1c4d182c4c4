"""No file of the repository names a place on the machine it was written on: a path under a development machine's
work folder, a home folder (Linux, the root user's, macOS) or a concrete path in its scratch folder is a fact of
that machine, wrong on every other checkout, and says nothing a relative path or a placeholder would not.

Every file ``git ls-files`` lists is read (binary files are skipped) and every line that names such a path fails the
test, listed as ``file:line: text``. Allowed, because they mean the same on every machine:

* system locations: ``/dev``, ``/proc``, ``/usr``, ``/etc``, ``/bin``, ``/opt`` ... (``/usr/bin/clang-22``,
  ``/dev/zero`` in the security tests, ``/etc/xdg``);
* the scratch folder and the home folders named alone, and a path in them that is a pattern rather than a place: a
  glob, a variable or a template (``*``, ``$X``, ``{...}``, ``<name>``, ``XXXXXX``), or a placeholder for the file or
  the user (one letter, or ``me``, ``user``, ``you``, ``someone``, ``alice``, ``bob``): the hostile inputs of the
  security tests and the refusals the docs quote;
* ``${TMPDIR:-...}`` defaults, and the same words inside a longer path or a URL (``runs/x/root/``,
  ``.github/workflows``, ``https://host/home/``), which are not absolute.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: An absolute path into a work, home or scratch folder: not preceded by a path or word character (so not a
#: component of a longer path or a URL), the folder a whole component, then the rest of the path if any.
MACHINE = re.compile(r"(?<![\w.~$/:-])/(work|root|home|Users|tmp)(?=[/\s`'\")\]:,;]|$)(/[^\s`'\")\]]*)?")
#: What makes the rest of a path a pattern (a glob, a variable, a template) rather than a place.
PATTERN = re.compile(r"[<*${]|XXXXXX")
#: Names that stand for any file or user.
PLACEHOLDERS = {"me", "user", "you", "someone", "alice", "bob"}


def _is_machine_path(folder: str, rest: str) -> bool:
    first = rest.strip("/").split("/")[0]
    placeholder = bool(PATTERN.search(rest)) or len(first) == 1 or first in PLACEHOLDERS
    if folder in ("work", "root"):  # the folder itself is the machine's
        return not PATTERN.search(rest)
    return bool(first) and not placeholder  # a home or the scratch folder: only a concrete place in it


def machine_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` that names a path of a particular machine."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if any(_is_machine_path(m.group(1), m.group(2) or "") for m in MACHINE.finditer(line)):
            found.append((number, line.strip()))
    return found


def _tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in listed.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted in the working tree, or a submodule
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_the_pattern() -> None:
    """What is a machine's path and what is not (the words are built here so that this file holds none of them)."""
    work, home, root, users, scratch = ("/" + name for name in ("work", "home", "root", "Users", "tmp"))
    for line in (f"see {work}/runs/x", f"`{work}` kept", f"{home}/dev1/.cache", f"--pack {scratch}/poj104.npz",
                 f"cd {root}/ir", f"({users}/dev1/src)", f"--data={work}/data", f"dump to {scratch}/hlo"):  # fmt: skip
        assert machine_paths(line), line
    for line in ("/usr/bin/clang-22", "/dev/zero", "/proc/self/status", "/etc/xdg/programl", "runs/x/root/ir",
                 ".github/workflows/ci.yml", "https://example.org/home/page", f"a {scratch}/<name>-XXXXXX file",
                 f"{scratch}/programl-flang-* folders", f"default ${{TMPDIR:-{scratch}}}", f"TMPDIR (default {scratch})",
                 f"under {scratch}/ or elsewhere", "$TMPDIR/site", "~/.cache/programl", "../shared/data",
                 f'["-o", "{scratch}/x"]', f'{{"files": ["{home}/*/*.c"]}}', f"from {home}/me/.ssh/id_rsa",
                 f"a {home} folder"):  # fmt: skip
        assert not machine_paths(line), line


def test_no_file_names_a_machines_path() -> None:
    hits = []
    for path in _tracked_files():
        text = _text(path)
        if text is None:
            continue
        relative = path.relative_to(REPO).as_posix()
        hits += [f"{relative}:{number}: {line[:160]}" for number, line in machine_paths(text)]
    assert not hits, "paths of a particular machine (use a relative path or a placeholder):\n" + "\n".join(hits)
