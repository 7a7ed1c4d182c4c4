"""The action space: CompilerGym's 124 flags, each mapped, and every action a pass opt-22 runs."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from programl.gym.actions import ACTION_NAMES, ACTIONS, FLAGS, STATUSES, action_index, pipeline_of

from .conftest import GYM_DATA


def test_every_compiler_gym_flag_is_accounted_for() -> None:
    assert len(FLAGS) == 124 and len({f.flag for f in FLAGS}) == 124
    assert {f.status for f in FLAGS} <= set(STATUSES)
    counts = Counter(f.status for f in FLAGS)
    assert counts == {"exists": 106, "renamed": 10, "gone": 7, "excluded": 1}
    for flag in FLAGS:
        assert (flag.pipeline is None) == (flag.status == "gone")
        assert flag.status == "exists" or flag.note, flag.flag  # every change says what changed
        assert flag.pipeline is None or "<" not in flag.pipeline or flag.note, flag.flag  # so does every parameter


def test_actions_are_the_kept_flags_in_compiler_gym_order() -> None:
    kept = [f.flag for f in FLAGS if f.status in ("exists", "renamed")]
    assert [a.flag for a in ACTIONS] == kept
    assert len(set(a.pipeline for a in ACTIONS)) == len(ACTIONS)
    assert ACTION_NAMES[action_index("-mem2reg")] == "mem2reg"
    assert ACTIONS[action_index("-early-cse-memssa")].pipeline == "function(early-cse<memssa>)"
    assert ACTIONS[action_index("licm")].pipeline == "function(loop-mssa(licm))"
    with pytest.raises(KeyError, match="removed in LLVM 15"):
        action_index("-loop-unswitch")
    with pytest.raises(KeyError, match="not an action: excluded"):
        action_index("-insert-gcov-profiling")


def test_opt22_runs_every_action(opt22, tmp_path) -> None:
    # one run of the pipeline of all the actions: opt-22 rejects the whole pipeline if it cannot parse one element
    result = subprocess.run(
        [
            opt22,
            f"-passes={pipeline_of(range(len(ACTIONS)))}",
            str(GYM_DATA / "features.ll"),
            "-o",
            str(tmp_path / "out.bc"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr


def test_the_docs_table_is_the_data_table() -> None:
    """docs/gym.md#actions lists every flag with the status, pipeline and note of FLAGS."""
    from tests.conftest import REPO_ROOT

    rows = []
    for line in (REPO_ROOT / "docs" / "gym.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].isdigit():
            rows.append(cells)
    assert len(rows) == len(FLAGS)
    for index, ((number, flag, status, pipeline, action, note), expected) in enumerate(zip(rows, FLAGS)):
        assert (
            number == str(index)
            and flag == f"`{expected.flag}`"
            and status == expected.status
            and note == expected.note
        )
        assert pipeline == (f"`{expected.pipeline}`" if expected.pipeline else "—")
        kept = expected.status in ("exists", "renamed")
        assert action == (str(action_index(expected.flag)) if kept else "")
