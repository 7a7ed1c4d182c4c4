"""The wide C corpus as a benchmark data set (``benchmark://wide-v0/<source>/<path>``): URIs checked before anything
is read, splits fixed by the URI, the sources agreeing with the recipe, and one archive's program compiled and
optimised (it needs Lua's archive: taken from the configured download cache, else downloaded; the test skips, with
the reason, when neither works)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from programl.exceptions import ProgramlError
from programl.gym import wide
from programl.gym.benchmarks import DATASETS, load_benchmark, split_of
from programl.gym.env import LlvmEnv
from programl.gym.errors import BenchmarkError

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "datasets" / "deepdataflow22-wide" / "recipe.json"


@pytest.fixture
def empty_caches(tmp_path, monkeypatch) -> Path:
    """Download and unpack caches that hold nothing (and no network: a download fails at once)."""
    import programl.data.download as download

    def offline(url, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise ProgramlError(f"{url}: no network in this test")

    monkeypatch.setattr(download, "download_url", offline)
    monkeypatch.setenv("PROGRAML_GYM_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PROGRAML_GYM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_uris_parse() -> None:
    assert "wide-v0" in DATASETS
    assert wide.parse_uri("benchmark://wide-v0/lua/src/lapi.c") == ("lua", "src/lapi.c")
    assert wide.parse_uri("benchmark://wide-v0/box2d/src/common/b2_timer.cpp") == ("box2d", "src/common/b2_timer.cpp")
    assert wide.parse_uri("benchmark://wide-v0/zstd/lib/common/x%2By.c") == ("zstd", "lib/common/x+y.c")


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("benchmark://wide-v0/lua", "expected benchmark://wide-v0/<source>/<path>"),
        ("benchmark://wide-v0/nosuch/src/a.c", "unknown source 'nosuch'"),
        ("benchmark://wide-v0/lapack/SRC/dgesv.f", "unknown source 'lapack'"),  # Fortran is not in the data set
        ("benchmark://wide-v0/lua/../../etc/passwd.c", "relative path inside the archive"),
        ("benchmark://wide-v0/lua/src//lapi.c", "relative path inside the archive"),
        ("benchmark://wide-v0/lua/src/%2e%2e/x.c", "relative path inside the archive"),
        ("benchmark://wide-v0/lua/src/lua.h", "not a C or C++ file"),
        ("benchmark://wide-v0/lua/src/lapi.c?x=1", "not a benchmark://wide-v0/"),
    ],
)
def test_malformed_uris_are_refused_before_anything_is_read(uri, says, empty_caches) -> None:
    with pytest.raises(BenchmarkError) as error:
        load_benchmark(uri)
    assert says in str(error.value) and "\n" not in str(error.value)
    assert not (empty_caches / "data").exists() and not (empty_caches / "cache").exists()  # nothing downloaded


def test_splits_are_fixed_by_the_uri() -> None:
    """As for every data set: the SHA-256 of '<seed>:<uri>' alone (docs/gym.md, Splits); these never change."""
    expected = {
        "benchmark://wide-v0/lua/src/lapi.c": "train",
        "benchmark://wide-v0/lua/src/lvm.c": "train",
        "benchmark://wide-v0/lua/src/lcode.c": "val",
        "benchmark://wide-v0/lua/src/luac.c": "test",
        "benchmark://wide-v0/zstd/programs/util.c": "test",
        "benchmark://wide-v0/box2d/src/common/b2_timer.cpp": "test",
        "benchmark://wide-v0/erfa/liberfa/erfa/src/pmp.c": "test",
    }
    assert {uri: split_of(uri) for uri in expected} == expected


def test_a_missing_archive_without_network_is_one_line(empty_caches) -> None:
    assert not wide.is_cached("lua")
    with pytest.raises(BenchmarkError) as error:
        load_benchmark("benchmark://wide-v0/lua/src/lapi.c")
    message = str(error.value)
    assert message.startswith("benchmark://wide-v0/lua: ") and "no network" in message and "\n" not in message
    assert not list((empty_caches / "data").rglob("*.tar.gz"))  # a failed download leaves nothing


def test_the_sources_are_the_recipes() -> None:
    """:data:`SOURCES` is the recipe's C and C++ archive sources, field for field."""
    if not RECIPE.is_file():
        pytest.skip(f"{RECIPE.relative_to(REPO)} is not in this checkout")
    recipe = json.loads(RECIPE.read_text())
    clang = {
        s["name"]: s
        for s in recipe["sources"]
        if s.get("kind") == "archive" and any(c.startswith("clang") for c in s.get("compilers", ["clang-22"]))
    }
    assert list(clang) == list(wide.SOURCES)
    for name, source in wide.SOURCES.items():
        for key in ("url", "sha256", "files", "exclude", "includes", "defines", "flags"):
            assert source.get(key) == clang[name].get(key), (name, key)


@pytest.fixture(scope="module")
def lua_caches(tmp_path_factory) -> tuple[Path, Path]:
    """A data folder whose downloads/ holds Lua's archive (linked from the configured cache, else downloaded) and an
    empty unpack cache; skips, with the reason, when the archive is neither cached nor downloadable."""
    from programl.data.deepdataflow.sources import cache_path
    from programl.data.download import fetch

    source = {"kind": "archive", "name": "lua", **wide.SOURCES["lua"]}
    root = tmp_path_factory.mktemp("wide")
    data = root / "data"
    configured = wide.archive_root() / cache_path(source)
    try:
        fetch(data / cache_path(source), source["sha256"], url=source["url"], mirrors=[configured.parent], timeout=20)
    except ProgramlError as error:
        pytest.skip(f"Lua's archive is not in the download cache ({configured.parent}) and not downloadable: {error}")
    return data, root / "cache"


def test_a_program_of_the_archive(lua_caches, opt22, clang22) -> None:
    data, cache = lua_caches
    assert wide.is_cached("lua", data, cache) and not wide.is_cached("zstd", data, cache)
    assert wide.source_files("lua", data, cache)[:3] == ["src/lapi.c", "src/lauxlib.c", "src/lbaselib.c"]
    assert len(wide.source_files("lua", data, cache)) == 34  # fixed by the archive's sha256
    benchmark = load_benchmark("benchmark://wide-v0/lua/src/lapi.c", data_dir=data, cache_dir=cache)
    assert benchmark.language == "c" and "lua_absindex" in benchmark.source
    assert (cache / "wide").is_dir() and not (cache / "downloads").exists()  # the archive is read from data/

    env = LlvmEnv(benchmark="benchmark://wide-v0/lua/src/lapi.c", data_dir=data, cache_dir=cache,
                  observation_space="IrInstructionCount", reward_space="IrInstructionCountOz")  # fmt: skip
    o0, _ = env.reset()
    assert o0 == env.unwrapped.observation["IrInstructionCountO0"] > env.unwrapped.observation["IrInstructionCountOz"]
    count, reward, terminated, _, _ = env.step(env.unwrapped.action_space.names.index("mem2reg"))
    assert count < o0 and reward > 0 and not terminated

    with pytest.raises(BenchmarkError, match="not a program of lua"):
        load_benchmark("benchmark://wide-v0/lua/src/nosuch.c", data_dir=data, cache_dir=cache)
