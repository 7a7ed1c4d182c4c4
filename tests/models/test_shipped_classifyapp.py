"""The shipped classifyapp model on programs it never saw (issue 11 item 6: "tested on examples"): held-out POJ-104
test programs of its own split, through `programl predict classifyapp`, must be classified about as well as its model
card says (test error 5.13 % on 10,006 graphs)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from programl.pretrained import pretrained, pretrained_names  # noqa: E402

SHARED = Path(os.environ.get("PROGRAML_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))

pytestmark = [
    pytest.mark.skipif("classifyapp" not in pretrained_names(), reason="no classifyapp model is shipped"),
    pytest.mark.skipif(shutil.which("clang-22") is None, reason="clang-22 not installed (apt-get install clang-22)"),
    pytest.mark.skipif(not (SHARED / "poj104" / "poj104.tar.xz").is_file(), reason=f"no POJ-104 archive in {SHARED}"),
]


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
def test_held_out_programs_are_classified_as_the_card_says(tmp_path, capsys) -> None:
    from programl.cli import main
    from programl.data.poj104 import read_programs, split_programs, subset_split

    config = pretrained("classifyapp").metadata["training"]["config"]["model"]
    programs = {p.id: p for p in read_programs(SHARED / "poj104")}
    split = subset_split(split_programs(list(programs.values()), seed=config["split_seed"]), config["per_class"])
    first_of_class: dict[int, str] = {}
    for pid in split["test"]:
        first_of_class.setdefault(programs[pid].label, pid)
    files, truth = [], {}
    for label in sorted(first_of_class)[::2]:  # 52 classes, one unseen program each
        path = tmp_path / f"{first_of_class[label]}.cc"
        path.write_text(programs[first_of_class[label]].text)
        files.append(str(path))
        truth[str(path)] = str(label)
    code = main(["predict", "classifyapp", *files, "--json", "-j", "2", "-q"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code in (0, 1)  # a program that does not compile is reported and skipped, as in training
    assert len(records) >= 0.9 * len(files)
    top = {r["file"]: [c["class"] for c in r["predictions"][0]["top"]] for r in records}
    top1 = sum(top[f][0] == truth[f] for f in top) / len(top)
    top5 = sum(truth[f] in top[f] for f in top) / len(top)
    # the card's test accuracy is 0.879 on 3,002 programs; 52 programs: 3 standard deviations below is ~0.74
    print(f"top-1 {top1:.3f}, top-5 {top5:.3f} on {len(top)} programs")
    assert top1 >= 0.7, (top1, top5)
    assert top5 >= 0.9, (top1, top5)
