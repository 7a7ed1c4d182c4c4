"""The builder's output stays byte-identical while it is made faster (issue 38 item 4).

``byte_identity.json`` holds, for every input below and each of three option sets, the first 16 hex digits of the
sha256 of the graph (``SerializeToString(deterministic=True)``), as the builder made them before the speed work:

* ``examples/*.ll`` and ``tests/data/*.ll``;
* ``tests/data/byte_identity_ir.tar.xz``: the 35 C/C++ programs of ``tests/data/programs`` compiled once by
  clang-22 at -O0 and -O2, and four of them at -O2 -g (frozen IR: switch, invoke/landingpad, indirectbr, inline
  asm, varargs, vectors, atomics, debug records);
* every eighth of the 1,000 legacy IR files of ``../shared/data/legacy-ir`` (LLVM 3.7 IR; skipped when absent).

Regenerate (only when a change of output is intended): ``.venv/bin/python -m tests.graph_builder.test_byte_identity``.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest

from programl.graph_builder.llvm import BuildOptions, graph_from_ir
from tests.conftest import REPO_ROOT, SHARED_DATA, TESTS_DATA

DIGESTS = Path(__file__).with_name("byte_identity.json")
FROZEN_IR = TESTS_DATA / "byte_identity_ir.tar.xz"
LEGACY_IR = SHARED_DATA / "legacy-ir" / "llvm_ir.tar.bz2"
OPTIONS = {
    "default": BuildOptions(),
    "instructions_only": BuildOptions(instructions_only=True),
    "ignore_call_returns": BuildOptions(ignore_call_returns=True),
}


def digests_of(text: str, name: str) -> dict[str, str]:
    return {
        key: hashlib.sha256(
            graph_from_ir(text, module_name=name, options=options).SerializeToString(deterministic=True)
        ).hexdigest()[:16]
        for key, options in OPTIONS.items()
    }


def bundled_inputs() -> dict[str, str]:
    inputs = {}
    for path in sorted(REPO_ROOT.glob("examples/*.ll")) + sorted(TESTS_DATA.glob("*.ll")):
        inputs[str(path.relative_to(REPO_ROOT))] = path.read_text()
    with tarfile.open(FROZEN_IR) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            inputs[f"frozen/{member.name}"] = tar.extractfile(member).read().decode("utf-8")
    return inputs


def legacy_inputs() -> dict[str, str]:
    with tarfile.open(LEGACY_IR) as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".ll")), key=lambda m: m.name)
        return {f"legacy/{m.name}": tar.extractfile(m).read().decode("utf-8") for m in members[::8]}


def expected(prefix: str) -> dict[str, dict[str, str]]:
    return {name: value for name, value in json.loads(DIGESTS.read_text()).items() if name.startswith(prefix)}


def check(inputs: dict[str, str], wanted: dict[str, dict[str, str]]) -> None:
    assert sorted(inputs) == sorted(wanted)
    changed = [
        f"{name} ({key})"
        for name, text in inputs.items()
        for key, digest in digests_of(text, name).items()
        if digest != wanted[name][key]
    ]
    assert not changed, f"graphs changed: {', '.join(changed[:20])}"


def test_bundled_graphs_are_byte_identical() -> None:
    inputs = bundled_inputs()
    check(inputs, {name: value for name, value in json.loads(DIGESTS.read_text()).items() if name in inputs})


def test_legacy_graphs_are_byte_identical() -> None:
    if not LEGACY_IR.exists():
        pytest.skip(f"shared research data not found at {LEGACY_IR}")
    check(legacy_inputs(), expected("legacy/"))


if __name__ == "__main__":
    everything = bundled_inputs()
    if LEGACY_IR.exists():
        everything.update(legacy_inputs())
    lines = [f"{json.dumps(name)}: {json.dumps(digests_of(text, name))}" for name, text in everything.items()]
    DIGESTS.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {len(everything)} inputs to {DIGESTS}")
