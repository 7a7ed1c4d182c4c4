"""``programl train`` / ``programl evaluate`` against hostile inputs (issue 12, item 13; docs/reliability.md).

Every case ends with a one-line error (usage errors exit 2, others 1) or the right result, and nothing is lost: a
damaged file is left as it was, and a run killed (``kill -9``, Ctrl-C, a full disk) resumes from its last checkpoint
to exactly the log and weights of an uninterrupted run of the same seed. The data set is the tiny DeepDataFlow one of
the task tests (tests/data/_ddf.py); every subprocess runs under a timeout.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

import programl.cli as cli  # noqa: E402
from programl.data.deepdataflow import build_dataset, discover_inputs  # noqa: E402
from tests.data._ddf import write_sources  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300  # seconds for any one subprocess (a run takes a few seconds)
#: a run of 3 short epochs (the tiny data set has ~40 training examples), tested at T=30 only
TRAIN = [
    "train",
    "dataflow",
    "--analysis",
    "datadep",
    "--threads",
    "1",
    "--val-examples",
    "20",
    "--batch-nodes",
    "600",
    "--test-steps",
    "30",
    "-q",
]
SCHEDULE = ["--train-examples", "30", "60", "90"]


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "train", "programl.cli.train")
    monkeypatch.setitem(cli.COMMANDS, "evaluate", "programl.cli.evaluate")


@pytest.fixture(scope="module")
def ddf(tmp_path_factory) -> Path:
    src = write_sources(tmp_path_factory.mktemp("src"), chains=(2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20))
    root = tmp_path_factory.mktemp("ddf")
    build_dataset(discover_inputs([src]), root, jobs=1)
    return root


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """``programl ARGS`` in this process: (exit code, stdout, stderr)."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exit:  # argparse
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def spawn(*args, cwd: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "programl", *map(str, args)],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"no result in {TIMEOUT} s")
    return process.returncode, out, err


def wait_for(path: Path, process: subprocess.Popen) -> None:
    """Until ``path`` exists (the run has written a checkpoint), or fail if the run ends or takes too long."""
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the run ended ({process.returncode}) before writing {path.name}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {path.name} in {TIMEOUT} s")
        time.sleep(0.05)


def one_line(err: str) -> str:
    """The error line of a failed command; asserts there is no traceback and one line after any usage text."""
    assert "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if not line.startswith((" ", "usage:"))]
    assert len(lines) == 1, err
    return lines[0]


def records(run_dir: Path) -> list[dict]:
    drop = ("seconds", "elapsed_seconds", "val_seconds")
    return [
        {k: v for k, v in json.loads(line).items() if k not in drop}
        for line in (run_dir / "log.jsonl").read_text().splitlines()
    ]


def digest(run_dir: Path) -> str:
    return json.loads((run_dir / "result.json").read_text())["ddp"]["parameter_digests"][0]


@pytest.fixture(scope="module")
def whole(ddf, tmp_path_factory) -> Path:
    """An uninterrupted run of the 3-epoch schedule (the reference of every resumption)."""
    run = tmp_path_factory.mktemp("whole") / "run"
    code, _, err = finish(spawn(*TRAIN, *SCHEDULE, "--dataset", ddf, "--run-dir", run, cwd=run.parent))
    assert code == 0, err
    return run


@pytest.fixture(scope="module")
def base(ddf, tmp_path_factory) -> Path:
    """A finished one-epoch run, copied by the tests that damage a run directory."""
    run = tmp_path_factory.mktemp("base") / "run"
    assert cli.main([*TRAIN, "--train-examples", "30", "--dataset", str(ddf), "--run-dir", str(run)]) == 0
    return run


# ---------------------------------------------------------------------------------------------------------------
# Bad options: usage errors, exit 2, before anything runs


NONSENSE = [
    ("--epochs", "-1"),
    ("--epochs", "0"),
    ("--epochs", str(10**12)),
    ("--batch-nodes", "0"),
    ("--lr", "nan"),
    ("--lr", "-0.1"),
    ("--lr", "inf"),
    ("--weight-decay", "-1"),
    ("--time-limit", "-5"),
    ("--time-limit", "nan"),
    ("--checkpoint-minutes", "-1"),
    ("--seed", "-1"),
    ("--seed", str(2**40)),
    ("--val-seed", "-3"),
    ("--threads", "-2"),
    ("--threads", "100000"),
    ("--test-steps", "0"),
    ("--max-nodes", "0"),
    ("--steps", "-4"),
    ("--train-examples", "50", "20"),
    ("--analysis", "bogus"),
    ("--device", "tpu-9000"),
    ("--epochs", "many"),
]


@pytest.mark.parametrize("bad", NONSENSE, ids=lambda bad: " ".join(bad))
def test_dataflow_nonsense_numbers_are_usage_errors(capsys, ddf, tmp_path, bad) -> None:
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "--dataset", ddf, "--run-dir", run, *bad)
    assert code == 2
    assert one_line(err).startswith("programl train dataflow: error: ") and bad[0] in err
    assert not run.exists()  # nothing was started


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "devmap", "--platform", "bogus"],
        ["train", "devmap", "--message-dropout", "1.5"],
        ["train", "devmap", "--lr", "nan"],
        ["train", "devmap", "--epochs", "-1"],
        ["train", "devmap", "--fold-seed", "-1"],
        ["train", "classifyapp", "--dropout", "2"],
        ["train", "classifyapp", "--epochs", "0"],
        ["train", "classifyapp", "--time-limit", "-5"],
        ["train", "classifyapp", "--jobs", "-4"],
        ["evaluate", "dataflow", "--run-dir", "x", "--threads", "-1"],
        ["evaluate", "dataflow", "--run-dir", "x", "--checkpoint", "middle"],
        ["evaluate", "devmap", "--platform", "intel"],
        ["evaluate", "classifyapp", "--split", "everything"],
    ],
    ids=" ".join,
)
def test_other_tasks_nonsense_options_are_usage_errors(capsys, tmp_path, argv) -> None:
    code, _, err = run_cli(capsys, *argv, "--device", "cpu", "-q")
    assert code == 2 and one_line(err).startswith(f"programl {argv[0]} {argv[1]}: error: ")


def test_device_cuda_without_a_gpu_is_a_usage_error(capsys, ddf, tmp_path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is available here")
    code, _, err = run_cli(capsys, *TRAIN, "--dataset", ddf, "--run-dir", tmp_path / "run", "--device", "cuda")
    assert code == 2 and "CUDA is not available" in one_line(err)
    code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", tmp_path / "run", "--device", "cuda:1")
    assert code == 2 and "CUDA is not available" in one_line(err)


# ---------------------------------------------------------------------------------------------------------------
# Bad data sets: one line, exit 1


def test_missing_empty_and_damaged_data_sets(capsys, ddf, tmp_path) -> None:
    def train(dataset, *extra):
        return run_cli(
            capsys, *TRAIN, "--train-examples", "30", "--dataset", dataset, "--run-dir", tmp_path / "run", *extra
        )

    code, _, err = train(tmp_path / "nowhere")
    assert code == 1 and "vocab/programl.csv: no vocabulary" in one_line(err)
    (tmp_path / "empty").mkdir()
    code, _, err = train(tmp_path / "empty")
    assert code == 1 and "no vocabulary" in one_line(err)

    damaged = tmp_path / "damaged-vocab"
    shutil.copytree(ddf, damaged, ignore=shutil.ignore_patterns("processed"))
    (damaged / "vocab" / "programl.csv").write_bytes(b"text\x00\xff\xfe\n")
    code, _, err = train(damaged)
    assert code == 1 and "programl.csv: not a vocabulary" in one_line(err)

    unlabelled = tmp_path / "unlabelled"  # built without the analysis, or every label file damaged
    shutil.copytree(ddf, unlabelled, ignore=shutil.ignore_patterns("processed"))
    from programl.data.deepdataflow.labels import convert_labels

    assert convert_labels(unlabelled, "protobuf") == {}  # the original's layout: one label file per analysis
    for path in (unlabelled / "labels" / "datadep").iterdir():
        path.write_bytes(b"\x08\x96\x01junk")
    code, _, err = train(unlabelled)
    assert code == 1 and "no datadep examples to train or validate on" in one_line(err)
    shutil.rmtree(unlabelled / "labels" / "liveness")
    code, _, err = train(unlabelled, "--analysis", "liveness")
    assert code == 1 and "no liveness examples" in one_line(err)


@pytest.mark.parametrize("damage", ["node_ptr", "x.bin", "labels.bin", "root"])
def test_a_damaged_processed_split_is_one_line(capsys, ddf, tmp_path, damage) -> None:
    copy = tmp_path / "ddf"
    shutil.copytree(ddf, copy)
    assert cli.main([*TRAIN, "--train-examples", "30", "--dataset", str(copy), "--run-dir", str(tmp_path / "a")]) == 0
    (graphs,) = copy.glob("processed/*/*/train/graphs")
    labels = graphs.parent / "datadep"
    if damage == "node_ptr":
        path = graphs / "node_ptr.npy"
        path.write_bytes(path.read_bytes()[:50])
    elif damage == "x.bin":
        (graphs / "x.bin").write_bytes(b"")
    elif damage == "labels.bin":
        path = labels / "labels.bin"
        path.write_bytes(path.read_bytes()[:100])
    else:
        import numpy as np

        root = np.load(labels / "root.npy")
        np.save(labels / "root.npy", root + 10_000)
    capsys.readouterr()
    code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "--dataset", copy, "--run-dir", tmp_path / "b")
    assert code == 1 and "a damaged processed split" in one_line(err) and "delete it" in err


def test_resuming_on_another_data_set_is_refused(capsys, ddf, base, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(base, run)
    other = tmp_path / "other"
    shutil.copytree(ddf, other, ignore=shutil.ignore_patterns("processed"))
    code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "60", "--dataset", other, "--run-dir", run)
    assert code == 2 and "other options (dataset)" in one_line(err)


# ---------------------------------------------------------------------------------------------------------------
# Damaged run directories: one line, exit 1, the damaged file left as it was


def _damage(run: Path, case: str) -> Path:
    """Damage one file of a copied run; returns it."""
    if case == "config-garbage":
        path = run / "config.json"
        path.write_text('{"model": {"analysis": ')
    elif case == "config-list":
        path = run / "config.json"
        path.write_text("[1, 2]")
    elif case == "config-other-task":
        path = run / "config.json"
        saved = json.loads(path.read_text())
        path.write_text(json.dumps({**saved, "task": "classifyapp"}))
    elif case == "config-missing":
        path = run / "config.json"
        path.unlink()
    elif case in ("last-truncated", "best-truncated"):
        path = run / ("last.pt" if case.startswith("last") else "best.pt")
        path.write_bytes(path.read_bytes()[:1000])
    elif case == "last-empty":
        path = run / "last.pt"
        path.write_bytes(b"")
    elif case == "last-pickle-of-a-list":
        path = run / "last.pt"
        torch.save([1, 2, 3], path)
    elif case == "last-another-model":
        path = run / "last.pt"
        from programl.training import save_checkpoint

        save_checkpoint(path, model=torch.nn.Linear(3, 2), epoch=1)
    elif case == "log-garbage":
        path = run / "log.jsonl"
        path.write_text(path.read_text() + "garbage{\n")
    elif case == "log-not-a-record":
        path = run / "log.jsonl"
        path.write_text("[1, 2]\n")
    elif case == "vocab-garbage":
        path = run / "vocab.csv"
        path.write_bytes(b"\xff\xfe\x00")
    else:  # pragma: no cover
        raise AssertionError(case)
    return path


DAMAGED = {  # case -> (command, what the error says)
    "config-garbage": ("train", "config.json:1:24: not JSON"),
    "config-list": ("evaluate", 'config.json: no "model" options'),
    "config-other-task": ("train", "a `programl train classifyapp` run, not a `programl train dataflow` run"),
    "config-missing": ("train", "no config.json"),
    "last-truncated": ("train", "last.pt: not a readable checkpoint"),
    "last-empty": ("train", "last.pt: not a readable checkpoint"),
    "last-pickle-of-a-list": ("train", "last.pt: not a programl checkpoint"),
    "last-another-model": ("train", "last.pt: a checkpoint of another model or options"),
    "best-truncated": ("evaluate", "best.pt: not a readable checkpoint"),
    "log-garbage": ("train", "log.jsonl:2:1: not a JSON record"),
    "log-not-a-record": ("train", "log.jsonl:1:1: not a per-epoch record"),
    "vocab-garbage": ("evaluate", "vocab.csv: not a vocabulary"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_run_is_one_line_and_left_as_it_was(capsys, ddf, base, tmp_path, case) -> None:
    command, message = DAMAGED[case]
    run = tmp_path / "run"
    shutil.copytree(base, run)
    damaged = _damage(run, case)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    if command == "train":
        code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "60", "--dataset", ddf, "--run-dir", run)
    else:
        code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", run, "--test-steps", "30", "-q")
    assert code == 1
    line = one_line(err)
    assert line.startswith(f"programl {command} dataflow: error: ") and message in line, line
    assert str(run) in line or damaged.name in line
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert after == before  # nothing lost, nothing half-written
    if command == "train" and case != "config-missing":  # --restart is the way out
        code, _, err = run_cli(
            capsys, *TRAIN, "--train-examples", "30", "--dataset", ddf, "--run-dir", run, "--restart"
        )
        assert code == 0, err
        assert [r["epoch"] for r in records(run)] == [1]


def test_evaluate_without_a_checkpoint(capsys, base, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(base, run)
    (run / "best.pt").unlink()
    code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", run, "--test-steps", "30", "-q")
    assert code == 1 and one_line(err).endswith("best.pt: no checkpoint (train first, or choose another --checkpoint)")
    code, _, _ = run_cli(
        capsys, "evaluate", "dataflow", "--run-dir", run, "--test-steps", "30", "--checkpoint", "last", "-q"
    )
    assert code == 0 and (run / "evaluation_last_test.json").is_file()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (("--stable-patience", "0"), "--stable-patience must be positive, not 0"),
        (("--stable-max-steps", "-5"), "--stable-max-steps must be positive, not -5"),
        (("--eval-batch-nodes", "0"), "--eval-batch-nodes must be positive"),
    ],
)
def test_evaluate_overrides_are_checked_as_the_runs_options(capsys, base, tmp_path, bad, message) -> None:
    """The options an evaluation replaces of the run (``--stable-patience`` ...) have the ranges of the run's own: a
    usage error before the data is read or anything written (a patience of 0 or a negative step bound was a ValueError
    traceback once the test split was converted and the model loaded)."""
    run = tmp_path / "run"
    shutil.copytree(base, run)
    code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", run, "--test-steps", "stable", *bad, "-q")
    assert code == 2 and message in one_line(err)
    assert not (run / "evaluation_best_test.json").exists()


def test_a_run_of_another_task(capsys, base, tmp_path) -> None:
    code, _, err = run_cli(capsys, "evaluate", "devmap", "--run-dir", base, "-q")
    assert code == 1 and "a `programl train dataflow` run, not a `programl train devmap` run" in one_line(err)
    code, _, err = run_cli(capsys, "evaluate", "classifyapp", "--run-dir", base, "-q")
    assert code == 1 and "not a `programl train classifyapp` run" in one_line(err)
    legacy = tmp_path / "legacy"  # a classifyapp-like run written before runs recorded their task
    legacy.mkdir()
    (legacy / "config.json").write_text(json.dumps({"model": {"hidden": 8}, "data_dir": "nowhere"}))
    code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", legacy, "-q")
    assert code == 1 and "no analysis, " in one_line(err)


def test_run_directories_that_cannot_be_written(capsys, ddf, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for run_dir in (blocker, blocker / "run"):
        code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "--dataset", ddf, "--run-dir", run_dir)
        assert code == 1 and one_line(err).startswith(f"programl train dataflow: error: {run_dir}")
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    target = read_only / "run"
    if os.access(read_only, os.W_OK):  # root writes anywhere: use a file system that refuses directories
        target = Path("/sys/programl-test-run")
        try:
            target.mkdir()
        except OSError:
            pass
        else:  # pragma: no cover
            target.rmdir()
            pytest.skip("no directory here refuses writes to this user")
    code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "--dataset", ddf, "--run-dir", target)
    assert code == 1 and str(target) in one_line(err)


def test_a_run_directory_in_use_is_refused(capsys, ddf, base, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(base, run)
    with open(run / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a training process would
        code, _, err = run_cli(capsys, *TRAIN, "--train-examples", "30", "60", "--dataset", ddf, "--run-dir", run)
        assert code == 1 and "in use by another programl train or evaluate" in one_line(err)
        code, _, err = run_cli(capsys, "evaluate", "dataflow", "--run-dir", run, "--test-steps", "30", "-q")
        assert code == 1 and "in use" in one_line(err)
    assert [r["epoch"] for r in records(run)] == [1]


# ---------------------------------------------------------------------------------------------------------------
# Interruptions: the resumed run continues exactly


def _resume_and_compare(ddf: Path, run: Path, whole: Path) -> None:
    code, _, err = finish(spawn(*TRAIN, *SCHEDULE, "--dataset", ddf, "--run-dir", run, cwd=run.parent))
    assert code == 0, err
    assert "Traceback" not in err
    assert records(run) == records(whole)
    assert digest(run) == digest(whole)
    assert not list(run.glob(".*.tmp"))


def test_kill_9_in_the_middle_of_an_epoch_then_resume(ddf, whole, tmp_path) -> None:
    run = tmp_path / "run"
    process = spawn(*TRAIN, *SCHEDULE, "--dataset", ddf, "--run-dir", run, "--checkpoint-minutes", "0", cwd=tmp_path)
    wait_for(run / "last.pt", process)  # the first batch is checkpointed: the run is in its first epoch
    process.send_signal(signal.SIGKILL)
    code, _, _ = finish(process)
    assert code == -signal.SIGKILL
    _resume_and_compare(ddf, run, whole)


KILL_IN_WRITE = """
import os, signal, sys
from programl.cli import main
real, count = os.replace, [0]
def replace(src, dst):
    if str(dst).endswith("last.pt"):
        count[0] += 1
        if count[0] == {n}:  # the checkpoint's bytes are written to a temporary, not yet renamed: kill -9 now
            os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst)
os.replace = replace  # programl.util.fs renames with os.replace
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # make test-all (CI runs make test: -m 'not slow')
@pytest.mark.parametrize("n", [3])
def test_kill_9_while_a_checkpoint_is_written_then_resume(ddf, whole, tmp_path, n) -> None:
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-c",
        textwrap.dedent(KILL_IN_WRITE.format(n=n)),
        *TRAIN,
        *SCHEDULE,
        "--dataset",
        str(ddf),
        "--run-dir",
        str(run),
        "--checkpoint-minutes",
        "0",
    ]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert list(run.glob(".last.pt.*.tmp"))  # the write that was cut short
    if n > 1:
        torch.load(run / "last.pt", weights_only=False)  # the checkpoint before it is whole
    _resume_and_compare(ddf, run, whole)


def test_ctrl_c_exits_130_keeps_the_checkpoint_and_resumes(ddf, whole, tmp_path) -> None:
    run = tmp_path / "run"
    # SIGINT as a terminal sends it; the default action, also where this test runs in a background job that ignores it
    process = spawn(
        *TRAIN,
        *SCHEDULE,
        "--dataset",
        ddf,
        "--run-dir",
        run,
        "--checkpoint-minutes",
        "0",
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_for(run / "last.pt", process)
    process.send_signal(signal.SIGINT)
    code, _, err = finish(process)
    assert code == 130 and err.strip().splitlines()[-1] == "programl: interrupted" and "Traceback" not in err
    torch.load(run / "last.pt", weights_only=False)
    _resume_and_compare(ddf, run, whole)


def test_a_full_disk_when_writing_a_checkpoint(ddf, whole, tmp_path) -> None:
    run = tmp_path / "run"
    process = spawn(*TRAIN, *SCHEDULE, "--dataset", ddf, "--run-dir", run, "--checkpoint-minutes", "0", cwd=tmp_path)
    wait_for(run / "last.pt", process)
    size = (run / "last.pt").stat().st_size
    # from now on the process cannot write a file as large as a checkpoint: as a disk that has filled up
    resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (size // 2, size // 2))
    code, _, err = finish(process)
    assert code == 1, err
    line = one_line(err)
    assert line.startswith("programl train dataflow: error: ") and "File too large" in line and ".pt" in line
    torch.load(run / "last.pt", weights_only=False)  # the last whole checkpoint is still there
    assert not list(run.glob(".*.tmp"))
    _resume_and_compare(ddf, run, whole)


# ---------------------------------------------------------------------------------------------------------------
# New-user defects (issue 10)


def test_progress_bars_stay_quiet_when_stderr_is_not_a_terminal(ddf, tmp_path) -> None:
    run = tmp_path / "run"
    argv = [a for a in TRAIN if a != "-q"]
    code, _, err = finish(spawn(*argv, "--train-examples", "30", "--dataset", ddf, "--run-dir", run, cwd=tmp_path))
    assert code == 0, err
    assert "\r" not in err and "epoch 1: " in err  # the epoch lines, without bars
