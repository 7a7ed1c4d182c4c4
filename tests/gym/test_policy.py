"""The learned policy: its folder read as hostile input, the one-shot choice, and the search it guides."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the policy needs the ml extra (pip install 'programl[ml]')")
pytest.importorskip("torch_geometric", reason="the policy needs the ml extra (pip install 'programl[ml]')")

from programl.data.vocabulary import Vocabulary  # noqa: E402
from programl.gym.agents import baseline, run_pipeline  # noqa: E402
from programl.gym.env import LlvmEnv  # noqa: E402
from programl.gym.policy import (  # noqa: E402
    DEFAULT_POLICY,
    POLICY_DIR,
    PolicyError,
    check_pipeline,
    guided_search,
    load_policy,
    save_policy,
)
from programl.models import GGNNGraphClassifier  # noqa: E402

PIPELINES = ["default<Oz>", "default<Oz>,default<Oz>", "function(mem2reg),function(instcombine<no-verify-fixpoint>)"]
KWARGS = {"hidden_channels": 8, "layer_timesteps": [1], "aux_channels": 56, "aux_hidden": 4}


class Payload:
    """Not a tensor: a weights file holding one must be refused, never unpickled."""


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory) -> Path:
    """A small untrained policy written by save_policy."""
    torch.manual_seed(0)
    vocabulary = Vocabulary(["ptr", "i32", "load", "store", "br"], counts=[50, 40, 30, 20, 10])
    model = GGNNGraphClassifier(len(vocabulary), len(PIPELINES), **KWARGS)
    spec = {"class": "GGNNGraphClassifier", "args": [len(vocabulary), len(PIPELINES)], "kwargs": KWARGS}
    return save_policy(tmp_path_factory.mktemp("policy") / "small", name="small", model=model, model_spec=spec,
                       vocabulary=vocabulary, pipelines=PIPELINES, refine_actions=[96, 48])  # fmt: skip


@pytest.fixture
def env(loops_c):
    return LlvmEnv(str(loops_c), observation_space=None, reward_space="IrInstructionCountOz")


def copy_policy(source: Path, target: Path, **changes) -> Path:
    """A copy of a policy folder with policy.json entries replaced."""
    target.mkdir()
    for file in source.iterdir():
        (target / file.name).write_bytes(file.read_bytes())
    metadata = json.loads((source / "policy.json").read_text())
    metadata.update(changes)
    (target / "policy.json").write_text(json.dumps(metadata))
    return target


def test_one_shot_runs_the_best_scored_pipeline(policy_dir, env) -> None:
    policy = load_policy(policy_dir)
    assert policy.pipelines == PIPELINES and policy.refine_actions == [96, 48]
    env.reset()
    scores = policy.scores(env)
    assert scores.shape == (3,) and scores.sum() == pytest.approx(1.0)
    result = policy.optimize(env)
    assert result.agent == "policy" and result.steps == 1
    assert result.pipeline == PIPELINES[int(scores.argmax())] == PIPELINES[policy.rank(env)[0]]
    state, reward, cost = run_pipeline(env, result.pipeline)
    assert (reward, cost, state.bitcode) == (result.reward, result.cost, result.bitcode)


def test_guided_search_is_at_least_oz_and_reproducible(policy_dir, env) -> None:
    policy = load_policy(policy_dir)
    result = guided_search(env, policy, top_k=1, max_seconds=20)
    oz = baseline(env, "Oz")
    assert result.agent == "guided" and result.cost <= oz.cost and result.reward >= oz.reward
    check_pipeline(result.pipeline)
    state, reward, cost = run_pipeline(env, result.pipeline)  # one opt-22 run of the pipeline gives what it says
    assert (cost, reward) == (result.cost, pytest.approx(result.reward))


def test_pipelines_are_an_allow_list() -> None:
    assert check_pipeline("default<Oz>,function(gvn),cgscc(inline)") == "default<Oz>,function(gvn),cgscc(inline)"
    for bad in ("insert-gcov-profiling", "default<Oz>,function(print<domtree>)", "default<Oz", "", None, "a,,b"):
        with pytest.raises(PolicyError):
            check_pipeline(bad)


def test_hostile_policy_folders(policy_dir, tmp_path) -> None:
    def refused(match: str, **changes) -> None:
        folder = copy_policy(policy_dir, tmp_path / f"p{len(list(tmp_path.iterdir()))}", **changes)
        with pytest.raises(PolicyError, match=match) as error:
            load_policy(folder)
        assert "\n" not in str(error.value)

    refused("refusing to run it", pipelines=["default<Oz>", "insert-gcov-profiling", PIPELINES[2]])
    refused("GGNNGraphClassifier", model={"class": "DataflowGGNN", "args": [5, 3], "kwargs": {}})
    model = json.loads((policy_dir / "policy.json").read_text())["model"]
    refused("hidden_channels", model={**model, "kwargs": {**KWARGS, "hidden_channels": 10**9}})
    refused("does not accept", model={**model, "kwargs": {**KWARGS, "extra": 1}})
    refused("model.args", pipelines=PIPELINES[:2])  # the network gives 3 scores
    refused("format", format=99)
    refused("refine_actions", refine_actions=["function(gvn)", "insert-gcov-profiling"])
    weights = json.loads((policy_dir / "policy.json").read_text())["weights"]
    refused("sha256", weights={**weights, "sha256": "0" * 64})
    refused("unchecked", weights={"file": "weights.pt", "bytes": weights["bytes"]})
    refused("naming a file", weights={**weights, "file": "../weights.pt"})
    with pytest.raises(PolicyError, match="not a policy"):
        load_policy(tmp_path / "nowhere")


def test_weights_that_are_not_tensors_are_not_unpickled(policy_dir, tmp_path) -> None:
    buffer = io.BytesIO()
    torch.save({"embedding.weight": Payload()}, buffer)
    data = buffer.getvalue()
    folder = copy_policy(policy_dir, tmp_path / "pickled", weights={
        "file": "weights.pt", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})  # fmt: skip
    (folder / "weights.pt").write_bytes(data)
    with pytest.raises(PolicyError, match="weights.pt"):
        load_policy(folder)


def test_a_fifo_in_place_of_the_weights_is_not_read(policy_dir, tmp_path) -> None:
    folder = copy_policy(policy_dir, tmp_path / "fifo")
    (folder / "weights.pt").unlink()
    os.mkfifo(folder / "weights.pt")
    with pytest.raises(PolicyError, match="FIFO"):
        load_policy(folder)


def test_the_shipped_policy_loads() -> None:
    if not (POLICY_DIR / DEFAULT_POLICY / "policy.json").exists():
        pytest.skip("no policy is shipped in this checkout")
    policy = load_policy()
    assert policy.name == DEFAULT_POLICY and policy.pipelines[0] == "default<Oz>"
    assert (POLICY_DIR / DEFAULT_POLICY / "MODEL_CARD.md").read_text().startswith("# ")


def test_the_policy_agents_run_by_name(policy_dir, loops_c) -> None:
    from programl.gym.parallel import run_agent

    outcomes = list(run_agent("policy", [str(loops_c)], agent_kwargs={"policy": policy_dir}))
    guided = list(run_agent("guided", [str(loops_c)], agent_kwargs={"policy": policy_dir, "max_seconds": 5}))
    assert outcomes[0].ok and outcomes[0].value.pipeline in PIPELINES
    assert guided[0].ok and guided[0].value.agent == "guided" and guided[0].value.cost > 0
