"""Benchmarks by URI: the generators, the project's data sets, fixed splits, and the Csmith differential test (an
optimised program prints the checksum the unoptimised one prints)."""

from __future__ import annotations

import subprocess
from collections import Counter

import numpy as np
import pytest

from programl.exceptions import UnsupportedCompiler
from programl.gym.benchmarks import SPLITS, benchmark_uris, load_benchmark, sample_uris, split_of, split_uris
from programl.gym.env import LlvmEnv
from programl.gym.errors import BenchmarkError, ObservationError
from programl.gym.tools import find_csmith


def test_splits_are_fixed_by_the_uri() -> None:
    uris = [f"generator://llvm-stress-v0/{seed}" for seed in range(2000)]
    splits = [split_of(uri) for uri in uris]
    assert splits == [split_of(uri) for uri in reversed(uris)][::-1]  # no dependence on the other URIs
    counts = Counter(splits)
    assert set(counts) == set(SPLITS)
    assert 0.77 < counts["train"] / 2000 < 0.83 and 0.08 < counts["test"] / 2000 < 0.12
    # pinned: the rule of docs/gym.md#benchmarks (SHA-256 of "<seed>:<uri>", first 8 bytes modulo 10)
    not_train = {s: split_of(f"generator://llvm-stress-v0/{s}") for s in range(50)}
    assert {s: split for s, split in not_train.items() if split != "train"} == {
        13: "test", 33: "test", 34: "test", 36: "test", 43: "test", 47: "val", 48: "val"
    }  # fmt: skip
    assert [split_of(uri, seed=1) for uri in uris] != splits
    assert split_uris("llvm-stress-v0", "test", count=100) == [u for u in uris[:100] if split_of(u) == "test"]
    with pytest.raises(BenchmarkError, match="count="):
        benchmark_uris("csmith-v0")


def test_samples_are_fixed_and_spread(shared_data) -> None:
    # a generator's sample: its first seeds of the split (13, 33, 34, 36, 43 are the first test seeds, pinned above)
    assert sample_uris("llvm-stress-v0", "test", 5) == [f"generator://llvm-stress-v0/{s}" for s in (13, 33, 34, 36, 43)]
    assert len(sample_uris("csmith-v0", "val", 40)) == 40  # more seeds are scanned until enough are found
    # a data set's sample spreads over its split (POJ-104's order is by problem: not only problem 1's programs)
    sample = sample_uris("poj104-v1", "test", 20, shared_data)
    test = split_uris("poj104-v1", "test", shared_data)
    assert len(set(sample)) == 20 and set(sample) <= set(test) and sample == sorted(sample, key=test.index)
    assert len({uri.split("/")[3] for uri in sample}) >= 15
    assert sample_uris("poj104-v1", "test", 20, shared_data) == sample
    for count in (0, -1, 2.5, True):
        with pytest.raises(BenchmarkError, match="positive integer"):
            sample_uris("llvm-stress-v0", "test", count)


def test_llvm_stress_is_deterministic(opt22) -> None:
    first = load_benchmark("generator://llvm-stress-v0/42")
    assert first.bitcode == load_benchmark("generator://llvm-stress-v0/42").bitcode
    assert first.bitcode != load_benchmark("generator://llvm-stress-v0/43").bitcode


def test_optnone_is_removed(loops_c) -> None:
    env = LlvmEnv(str(loops_c), observation_space="Ir")
    text, _ = env.reset()
    assert " optnone" not in text and "noinline" in text  # clang -O0 put both on every function
    assert not env.step(env.action_space.names.index("mem2reg"))[4]["action_had_no_effect"]


def test_poj104_programs(shared_data, opt22, clang22) -> None:
    uris = benchmark_uris("poj104-v1", shared_data)
    assert len(uris) > 50_000 and uris[0] == "benchmark://poj104-v1/1/2"
    env = LlvmEnv(uris[0], data_dir=shared_data, observation_space="Programl")
    graph, info = env.reset()
    assert info["benchmark"] == uris[0] and graph.number_of_nodes() > 10
    assert env.observation["IrInstructionCountOz"] < env.observation["IrInstructionCountO0"]
    with pytest.raises(BenchmarkError, match="no such program"):
        load_benchmark("benchmark://poj104-v1/1/1", data_dir=shared_data)


def test_devmap_kernels(shared_data, opt22, clang22, tmp_path) -> None:
    uris = benchmark_uris("devmap-v0", shared_data)
    assert len(uris) == 680
    env = LlvmEnv(uris[0], data_dir=shared_data, cache_dir=tmp_path, reward_space="IrInstructionCountOz")
    env.reset()
    assert env.step(env.action_space.names.index("mem2reg"))[1] > 0
    with pytest.raises(ObservationError, match="spir64"):  # llc-22 has no back end for OpenCL's SPIR target
        env.observation["ObjectTextSizeBytes"]


def _csmith() -> None:
    try:
        find_csmith()
    except UnsupportedCompiler as error:
        pytest.skip(str(error))


def _run(clang: str, bitcode_path, tmp_path, name: str) -> bytes:
    executable = tmp_path / name
    subprocess.run([clang, "-w", str(bitcode_path), "-o", str(executable)], check=True, timeout=300)
    result = subprocess.run([str(executable)], capture_output=True, timeout=20, cwd=tmp_path)
    assert result.returncode == 0
    return result.stdout


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_csmith_differential(seed, opt22, clang22, tmp_path) -> None:
    """Random passes keep the meaning of a Csmith program: the optimised program prints the same checksum."""
    _csmith()
    env = LlvmEnv(f"generator://csmith-v0/{seed}", observation_space=None, reward_space="IrInstructionCount")
    env.reset()
    assert env.benchmark.language == "c" and "csmith" in env.benchmark.source.lower()
    rng = np.random.default_rng(seed)
    for action in rng.integers(env.action_space.n, size=25):
        if env.step(int(action))[2]:
            break
    assert env.episode_reward > 0  # the passes did change the program
    env.write_bitcode(tmp_path / "initial.bc", initial=True)
    env.write_bitcode(tmp_path / "optimised.bc")
    expected = _run(clang22, tmp_path / "initial.bc", tmp_path, "initial")
    assert expected.startswith(b"checksum = ")
    assert _run(clang22, tmp_path / "optimised.bc", tmp_path, "optimised") == expected


def test_csmith_absent_is_one_line(monkeypatch, opt22, tmp_path) -> None:
    from programl.gym import tools

    tools._find_csmith.cache_clear()
    monkeypatch.setenv("PROGRAML_CSMITH", str(tmp_path / "no-csmith"))
    try:
        with pytest.raises(UnsupportedCompiler, match="apt-get install csmith"):
            load_benchmark("generator://csmith-v0/1")
    finally:
        tools._find_csmith.cache_clear()
