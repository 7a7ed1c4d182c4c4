"""``programl optimize``: the learned policy (or -Oz) on a file, the passes and the sizes before and after, the
optimised module written with -o, and one line (exit 1 or 2) for whatever goes wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gymnasium", reason="the gym extra is not installed (pip install 'programl[gym]')")

from programl.cli import main  # noqa: E402
from programl.exceptions import UnsupportedCompiler  # noqa: E402
from programl.gym.tools import find_llvm_tool  # noqa: E402

LOOPS_C = Path(__file__).resolve().parents[1] / "gym" / "data" / "loops.c"
PIPELINES = ["default<Oz>", "default<Oz>,default<Oz>", "function(mem2reg)"]


@pytest.fixture(scope="module")
def tools(clang22) -> None:
    try:
        find_llvm_tool("opt")
        find_llvm_tool("llc")
    except UnsupportedCompiler as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory) -> Path:
    """A small untrained policy (the ml extra)."""
    torch = pytest.importorskip("torch", reason="the policy needs the ml extra")
    pytest.importorskip("torch_geometric", reason="the policy needs the ml extra")
    from programl.data.vocabulary import Vocabulary
    from programl.gym.policy import save_policy
    from programl.models import GGNNGraphClassifier

    torch.manual_seed(0)
    kwargs = {"hidden_channels": 8, "layer_timesteps": [1], "aux_channels": 56, "aux_hidden": 4}
    vocabulary = Vocabulary(["ptr", "i32", "load"], counts=[3, 2, 1])
    model = GGNNGraphClassifier(3, len(PIPELINES), **kwargs)
    spec = {"class": "GGNNGraphClassifier", "args": [3, len(PIPELINES)], "kwargs": kwargs}
    return save_policy(tmp_path_factory.mktemp("policy") / "small", name="small", model=model, model_spec=spec,
                       vocabulary=vocabulary, pipelines=PIPELINES)  # fmt: skip


def optimize(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["optimize", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_oz_prints_the_passes_and_sizes(tools, capsys, tmp_path) -> None:
    code, out, err = optimize(capsys, str(LOOPS_C), "--oz", "-o", str(tmp_path / "out.bc"))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"{LOOPS_C}: optimised by LLVM's -Oz" and lines[1] == "passes: default<Oz>"
    instructions = lines[3].split()
    assert instructions[0] == "instructions" and instructions[2] == instructions[3]  # after == -Oz
    assert int(instructions[2]) < int(instructions[1])
    assert lines[4].startswith(".text bytes") and lines[-1] == f"wrote {tmp_path / 'out.bc'}"
    # the module written is the one measured: reading it back gives the count printed
    code, out, _ = optimize(capsys, str(tmp_path / "out.bc"), "--oz", "--json")
    assert code == 0 and json.loads(out)["sizes"]["instructions"]["before"] == int(instructions[2])


def test_the_policy_chooses_a_pipeline(tools, policy_dir, capsys, tmp_path) -> None:
    code, out, err = optimize(capsys, str(LOOPS_C), "--policy", str(policy_dir), "--json", "-o", str(tmp_path / "o.ll"))
    result = json.loads(out)
    assert code == 0 and err == "" and result["pipeline"] in PIPELINES
    assert result["optimiser"] == "the learned policy small (one shot)"
    assert (tmp_path / "o.ll").read_text().count("define ") >= 2  # textual IR for a .ll output
    code, out, _ = optimize(capsys, str(LOOPS_C), "--policy", str(policy_dir), "--json", "--search", "5")
    searched = json.loads(out)
    assert code == 0 and searched["sizes"]["instructions"]["after"] <= searched["sizes"]["instructions"]["Oz"]


def test_without_a_policy_it_says_so_and_uses_oz(tools, capsys, monkeypatch) -> None:
    pytest.importorskip("torch", reason="the policy needs the ml extra")
    import programl.gym.policy

    monkeypatch.setattr(programl.gym.policy, "DEFAULT_POLICY", "not-shipped")
    code, out, err = optimize(capsys, str(LOOPS_C), "--json")
    assert code == 0 and json.loads(out)["pipeline"] == "default<Oz>"
    assert err.startswith("programl optimize: no learned policy (") and err.endswith("; using -Oz\n")
    assert err.count("\n") == 1


def test_bad_inputs_are_one_line(tools, policy_dir, capsys, tmp_path) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text("define i32 @f() {\n  ret i64 0\n}\n")
    for args, code, where in (
        ([str(tmp_path / "missing.c"), "--oz"], 1, "missing.c"),
        ([str(bad), "--oz"], 1, "bad.ll"),
        ([str(LOOPS_C), "--oz", "-o", str(tmp_path)], 1, str(tmp_path)),  # a folder where the output should go
    ):
        status, out, err = optimize(capsys, *args)
        assert (status, out) == (code, "") and err.count("\n") == 1 and where in err, err
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    for file in policy_dir.iterdir():
        (hostile / file.name).write_bytes(file.read_bytes())
    metadata = json.loads((hostile / "policy.json").read_text())
    metadata["pipelines"][2] = "insert-gcov-profiling"
    (hostile / "policy.json").write_text(json.dumps(metadata))
    status, out, err = optimize(capsys, str(LOOPS_C), "--policy", str(hostile))
    assert status == 1 and out == "" and err.count("\n") == 1 and "insert-gcov-profiling" in err


def test_usage_errors_exit_2(capsys) -> None:
    for args in (["x.c", "--oz", "--search", "3"], ["x.c", "--search", "-1"], ["x.c", "--oz", "--policy", "p"]):
        with pytest.raises(SystemExit) as exit_:
            code = main(["optimize", *args])
            raise SystemExit(code)
        assert exit_.value.code == 2
        capsys.readouterr()
