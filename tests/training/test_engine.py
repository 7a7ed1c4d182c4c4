"""Tests of programl.training.engine (the one training loop of the three tasks) on a toy task: budgets in epochs,
examples and time, bit-exact resumption within an epoch, the best-checkpoint rule, the warm-up / cosine / clipping
schedule, messages through :mod:`logging`, and quiet progress bars off a terminal."""

from __future__ import annotations

import io
import json
import logging
import math
import re
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_geometric.data import Data  # noqa: E402

from programl.models import AccuracyAccumulator  # noqa: E402
from programl.training import (  # noqa: E402
    Budget,
    Schedule,
    Trainer,
    TrainingTask,
    configure_logging,
    load_checkpoint,
    lr_factor,  # noqa: E402
)
from programl.util import progress as progress_module  # noqa: E402

TIMING = ("seconds", "elapsed_seconds", "val_seconds")


class Toy(TrainingTask):
    """20 examples of 4 features, batches of 3 in a seeded order, a dropout MLP; ``val`` scripts the validation
    accuracy of each epoch (else it is measured); ``stop_at`` raises after that many training steps (an
    interruption). The examples are PyG ``Data`` the engine's loader collates."""

    name = "toy"
    curve_metrics = ("loss", "accuracy")

    def __init__(self, val=None, stop_at=None, reseed=True, lower_is_better=False):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(20, 4, generator=generator)
        self.y = (self.x[:, 0] > 0).long()
        self.train_data = self.val_data = [Data(x=self.x[i : i + 1], y=self.y[i : i + 1]) for i in range(20)]
        self.val, self.stop_at, self.reseed, self.lower_is_better = val, stop_at, reseed, lower_is_better
        self.steps, self.lrs, self.clipped = 0, [], []
        self.init_seed = 3
        self.checkpoint_extra = {"config": {"toy": 1}}

    def build(self, device):
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.ReLU(), torch.nn.Linear(8, 2)
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)

        def observe(opt, args, kwargs):
            self.lrs.append(opt.param_groups[0]["lr"])
            grads = [p.grad.norm() for p in model.parameters() if p.grad is not None]
            self.clipped.append(float(torch.norm(torch.stack(grads))))

        optimizer.register_step_pre_hook(observe)
        return model.to(device), optimizer

    def epoch_seed(self, epoch, rank):
        return 1000 + epoch if self.reseed else None

    def plan(self, pass_index):
        order = np.random.default_rng([7, pass_index]).permutation(20)
        return [order[i : i + 3].tolist() for i in range(0, 20, 3)]

    def new_metrics(self):
        return AccuracyAccumulator()

    def val_plan(self):
        return [list(range(20))]

    def step(self, model, batch, metrics):
        assert batch.x.device == next(model.parameters()).device  # the engine moved the batch to the model
        if torch.is_grad_enabled():
            self.steps += 1
            if self.stop_at is not None and self.steps > self.stop_at:
                raise KeyboardInterrupt
            self.metrics = metrics
        logits = model(batch.x)
        loss = torch.nn.functional.cross_entropy(logits, batch.y)
        metrics.update(logits, batch.y, loss.detach())
        return loss

    def selection(self, val):
        return (self.val.pop(0) if self.val is not None else val["accuracy"],)

    def better(self, candidate, best):
        return candidate < best if self.lower_is_better else candidate > best

    def epoch_line(self, record):
        return f"epoch {record['epoch']}: toy"


def fit(tmp_path, task=None, budget=None, **options):
    options.setdefault("plot_each_epoch", False)  # curves.png once, at the end
    trainer = Trainer(task or Toy(), tmp_path, budget or Budget(epochs=3), **options)
    return trainer, trainer.run()


def weights(trainer) -> list:
    return [t.clone() for t in trainer.model.state_dict().values()]


def records(directory) -> list[dict]:
    lines = (directory / "log.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def test_epoch_budget(tmp_path) -> None:
    trainer, result = fit(tmp_path)
    assert result.epochs == 3 and [r["epoch"] for r in records(tmp_path)] == [1, 2, 3]
    assert [r["train_examples"] for r in records(tmp_path)] == [20, 40, 60]  # every example once per epoch
    assert len(trainer.task.lrs) == 3 * 7
    for name in ("last.pt", "best.pt", "log.csv", "curves.png"):
        assert (tmp_path / name).is_file(), name


def test_example_budget_runs_passes_across_epochs(tmp_path) -> None:
    trainer, result = fit(tmp_path, budget=Budget(examples=[7, 15, 40]))
    seen = [r["train_examples"] for r in records(tmp_path)]
    # steps of 3 until each target; a pass is 6 batches of 3 and one of 2 (20), then a new pass in a new order
    assert seen == [9, 15, 40]
    state = load_checkpoint(tmp_path / "last.pt", restore_rng=False)["extra"]["state"]
    assert state["pass"] == 1 and state["cursor"] == 7 and result.examples == 40


@pytest.mark.parametrize("rule", ["after", "before"])
def test_time_budget_stops_every_process_after_an_epoch(tmp_path, rule, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="programl")
    _, result = fit(tmp_path, budget=Budget(epochs=5, time_limit=1e-12, time_rule=rule))
    assert result.epochs == 1 and [r["epoch"] for r in records(tmp_path)] == [1]
    assert any("time limit" in r.getMessage() and r.name == "programl.training" for r in caplog.records)


@pytest.mark.parametrize(
    "schedule",
    [Schedule(), Schedule(warmup_examples=25, lr_decay="cosine", clip_grad_norm=0.5)],
    ids=["defaults", "warmup-cosine-clip"],
)
@pytest.mark.parametrize("examples", [False, True], ids=["epochs", "examples"])
@pytest.mark.parametrize("workers", [0, 2], ids=["in-process", "two-workers"])
def test_resuming_within_an_epoch_is_bit_exact(tmp_path, schedule, examples, workers) -> None:
    """Also with loader workers, which draw batches ahead of the trained step: the checkpoint's state is that of
    the step trained, not of the last batch drawn."""
    budget = Budget(examples=[10, 30, 50]) if examples else Budget(epochs=3)
    whole, _ = fit(tmp_path / "whole", budget=budget, schedule=schedule)
    with pytest.raises(KeyboardInterrupt):  # after 9 steps: in the middle of the second epoch
        fit(
            tmp_path / "cut",
            Toy(stop_at=9),
            budget=budget,
            schedule=schedule,
            checkpoint_minutes=0,
            workers=workers,
        )
    state = load_checkpoint(tmp_path / "cut" / "last.pt", restore_rng=False)["extra"]["state"]
    assert state["epoch"] == 1 and state["cursor"] > 0 and state["partial"] is not None
    resumed, _ = fit(tmp_path / "cut", budget=budget, schedule=schedule)
    for a, b in zip(weights(whole), weights(resumed)):
        assert torch.equal(a, b)
    assert records(tmp_path / "whole") == records(tmp_path / "cut")
    assert whole.task.lrs[-len(resumed.task.lrs) :] == resumed.task.lrs  # the schedule went on where it stopped


@pytest.mark.parametrize("examples", [False, True], ids=["epochs", "examples"])
def test_a_checkpoint_within_an_epoch_says_where_the_epoch_stands(tmp_path, caplog, examples) -> None:
    """A log without a bar (stderr redirected, as here) gets a line at each checkpoint within an epoch, counted
    from the epoch's start also after a resumption, and nothing with ``show=False`` (``-q``)."""
    budget = Budget(examples=[10, 30, 50]) if examples else Budget(epochs=3)
    # the epoch's share: the second epoch's examples (from the first's overshoot, 12 by batches of 3, to 30), or its
    # batches (7 of 20 examples by 3)
    unit, total = ("examples", 18) if examples else ("batches", 7)
    caplog.set_level(logging.INFO, logger="programl.training")
    with pytest.raises(KeyboardInterrupt):  # after 9 steps: in the middle of the second epoch
        fit(tmp_path, Toy(stop_at=9), budget=budget, checkpoint_minutes=0)
    lines = [r.getMessage() for r in caplog.records if "last.pt written" in r.getMessage()]
    assert lines and all(re.fullmatch(r"epoch [12]/3: last\.pt written after [\d,]+ of [\d,]+ \w+.*", x) for x in lines)
    second = [x for x in lines if x.startswith("epoch 2/3")]
    cut = int(re.search(r"after (\d+) of", second[-1]).group(1))
    assert f"of {total} {unit}" in second[-1] and "min of training left" in second[-1]
    caplog.clear()
    fit(tmp_path, budget=budget, checkpoint_minutes=0)  # resumed: the epoch's count goes on from the cut
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("epoch 2/3: last.pt")]
    assert int(re.search(r"after (\d+) of", resumed[0]).group(1)) > cut
    caplog.clear()
    fit(tmp_path / "quiet", budget=budget, checkpoint_minutes=0, show=False)
    assert not [r for r in caplog.records if "last.pt written" in r.getMessage()]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_a_cpu_run_resumes_within_an_epoch_on_the_gpu(tmp_path) -> None:
    """A run cut in the middle of an epoch on the CPU goes on on a GPU: its ``last.pt``, loaded there, holds the
    partial metrics with their tensors moved to the GPU (found when POJ-104 moved to a lent H100)."""
    from programl.training import Distributed

    budget = Budget(epochs=2)
    with pytest.raises(KeyboardInterrupt):  # after 9 steps of 7 per epoch: 2 steps into the second
        fit(tmp_path, Toy(stop_at=9), budget=budget, checkpoint_minutes=0)
    partial = load_checkpoint(tmp_path / "last.pt", restore_rng=False)["extra"]["state"]["partial"]
    assert int(partial["sums"][2]) == 6
    task = Toy()
    trainer, result = fit(tmp_path, task, budget=budget, dist=Distributed(device=torch.device("cuda")))
    assert result.epochs == 2 and next(trainer.model.parameters()).is_cuda and task.steps == 5
    assert int(task.metrics.sums[2]) == 20  # the second epoch's metrics count the examples before the cut too
    assert [r["train_examples"] for r in records(tmp_path)] == [20, 40]


def interrupted_with_hours_before(tmp_path, budget, seconds: float, drop: tuple[str, ...] = ()) -> None:
    """Cut a toy run 2 steps into its second epoch, then make its ``last.pt`` say those steps took ``seconds`` more
    (as if they ran on a slower device), without the state keys ``drop``."""
    with pytest.raises(KeyboardInterrupt):  # after 9 steps of 7 per epoch: 2 steps into the second
        fit(tmp_path, Toy(stop_at=9), budget=budget, checkpoint_minutes=0)
    saved = torch.load(tmp_path / "last.pt", weights_only=True)
    saved["extra"]["state"]["seconds"] += seconds
    for key in drop:
        del saved["extra"]["state"][key]
    torch.save(saved, tmp_path / "last.pt")


@pytest.mark.parametrize("examples", [False, True], ids=["epochs", "examples"])
def test_an_epoch_resumed_within_reports_all_its_seconds(tmp_path, examples) -> None:
    """A resumed epoch's ``seconds`` count its steps before the cut too (the checkpoint's time), so the log's
    epoch times add up to the run's training time (less the checkpoint writes between epochs, milliseconds)."""
    budget = Budget(examples=[20, 40]) if examples else Budget(epochs=2)
    interrupted_with_hours_before(tmp_path, budget, 3600.0)  # the two steps before the cut took an hour
    _, result = fit(tmp_path, Toy(), budget=budget)
    first, second = records_with_times(tmp_path)
    assert second["seconds"] >= 3600.0  # the hour before the cut, not only the five steps after the resumption
    assert first["seconds"] + second["seconds"] == pytest.approx(result.seconds, abs=1.0)


def test_the_before_rule_judges_a_resumed_epoch_by_this_processs_pace(tmp_path) -> None:
    """An epoch begun slowly elsewhere (hours on a CPU) and finished here (a GPU) does not make the "before" rule
    expect hours for the next epoch: it scales this process's part of the epoch. The epoch's own time counts the
    hours exactly (the checkpoint keeps the run's time when the epoch began; the log's time is rounded)."""
    interrupted_with_hours_before(tmp_path, Budget(epochs=4), 10 * 3600.0)  # the first two steps took ten hours
    saved = torch.load(tmp_path / "last.pt", weights_only=True)
    budget = Budget(epochs=4, time_limit=(saved["extra"]["state"]["seconds"] + 60) / 60, time_rule="before")
    _, result = fit(tmp_path, Toy(), budget=budget)
    assert result.epochs == 4
    assert records_with_times(tmp_path)[1]["seconds"] >= 10 * 3600.0  # the second epoch's own time counts them


def test_a_checkpoint_without_the_epochs_start_time_takes_it_from_the_log(tmp_path) -> None:
    """Checkpoints written before ``epoch_began`` was kept still resume: the epoch's earlier part is the checkpoint's
    time less the log's ``elapsed_seconds`` (rounded to 0.1 s, hence the tolerance)."""
    interrupted_with_hours_before(tmp_path, Budget(epochs=2), 3600.0, drop=("epoch_began",))
    _, result = fit(tmp_path, Toy(), budget=Budget(epochs=2))
    assert result.epochs == 2
    assert records_with_times(tmp_path)[1]["seconds"] >= 3600.0 - 0.06


def records_with_times(directory) -> list[dict]:
    return [json.loads(line) for line in (directory / "log.jsonl").read_text().splitlines()]


def test_resuming_after_the_last_epoch_trains_no_more(tmp_path) -> None:
    first, done = fit(tmp_path)
    again, result = fit(tmp_path)
    assert again.task.steps == 0 and result.epochs == 3 and len(records(tmp_path)) == 3
    # the training time is the checkpoint's, not that plus the second start (and plotting)
    assert (
        result.seconds
        == done.seconds
        == load_checkpoint(tmp_path / "last.pt", restore_rng=False)["extra"]["state"]["seconds"]
    )
    for a, b in zip(weights(first), weights(again)):
        assert torch.equal(a, b)


def test_best_checkpoint_rule(tmp_path) -> None:
    trainer, result = fit(tmp_path / "up", Toy(val=[0.5, 0.7, 0.7, 0.6]), budget=Budget(epochs=4))
    assert result.best == (0.7,) and result.best_epoch == 2  # a tie keeps the earlier epoch
    assert load_checkpoint(tmp_path / "up" / "best.pt", restore_rng=False)["epoch"] == 2
    saved = load_checkpoint(tmp_path / "up" / "last.pt", restore_rng=False)
    assert saved["best_metric"] == 0.7 and saved["best_epoch"] == 2 and saved["extra"]["best"] == [0.7]
    _, result = fit(tmp_path / "down", Toy(val=[0.5, 0.7, 0.4, 0.6], lower_is_better=True), budget=Budget(epochs=4))
    assert result.best_epoch == 3  # the task's rule


def test_lr_factor_values() -> None:
    warm = Schedule(warmup_examples=100)
    assert [lr_factor(warm, n, 0.0) for n in (10, 50, 100, 400)] == [0.1, 0.5, 1.0, 1.0]
    cosine = Schedule(lr_decay="cosine")
    assert [lr_factor(cosine, 0, p) for p in (0.0, 1.0)] == [1.0, 0.0]
    assert lr_factor(cosine, 0, 0.5) == pytest.approx(0.5) and lr_factor(cosine, 0, 0.25) == pytest.approx(
        (1 + math.cos(math.pi / 4)) / 2
    )
    assert lr_factor(Schedule(warmup_examples=10, lr_decay="cosine"), 5, 0.5) == pytest.approx(0.25)


def test_warmup_raises_the_learning_rate_by_examples(tmp_path) -> None:
    trainer, _ = fit(tmp_path / "warm", budget=Budget(epochs=1), schedule=Schedule(warmup_examples=9))
    assert trainer.task.lrs[:4] == pytest.approx([0.05 * 3 / 9, 0.05 * 6 / 9, 0.05, 0.05])
    plain, _ = fit(tmp_path / "plain", budget=Budget(epochs=1))
    assert set(plain.task.lrs) == {0.05}  # off by default: the optimizer's own rate, untouched
    assert "train_grad_norm" not in records(tmp_path / "plain")[0]


def test_clipping_is_applied_and_recorded(tmp_path) -> None:
    trainer, _ = fit(tmp_path, schedule=Schedule(clip_grad_norm=0.01))
    assert max(trainer.task.clipped) <= 0.01 * (1 + 1e-5)  # what the optimizer stepped with
    for record in records(tmp_path):
        assert record["train_grad_norm_max"] >= record["train_grad_norm"] > 0.01  # the norms before clipping


def test_bf16_precision_autocasts_the_training_steps_only(tmp_path) -> None:
    seen = set()

    class Probe(Toy):
        def step(self, model, batch, metrics):
            if torch.is_grad_enabled():
                seen.add(("step", torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
            else:
                seen.add(("validate", torch.is_autocast_enabled("cpu"), None))
            return super().step(model, batch, metrics)

    trainer, _ = fit(tmp_path / "bf16", task=Probe(), budget=Budget(epochs=1), schedule=Schedule(precision="bf16"))
    assert seen == {("step", True, torch.bfloat16), ("validate", False, None)}  # scoring stays float32
    assert {t.dtype for t in trainer.model.state_dict().values()} == {torch.float32}  # so do the weights
    plain, _ = fit(tmp_path / "fp32", budget=Budget(epochs=1))
    assert not torch.equal(weights(trainer)[0], weights(plain)[0])  # the forward passes ran in bfloat16
    again, _ = fit(tmp_path / "bf16-again", budget=Budget(epochs=1), schedule=Schedule(precision="bf16"))
    assert all(torch.equal(a, b) for a, b in zip(weights(trainer), weights(again)))  # and deterministically


def test_messages_go_through_logging(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="programl")
    fit(tmp_path, budget=Budget(epochs=1))
    fit(tmp_path, budget=Budget(epochs=2))
    lines = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert ("programl.training", "INFO", "epoch 1: toy") in lines
    assert any(m.endswith("resuming after 20 training examples (epoch 1)") for _, _, m in lines)
    caplog.clear()
    fit(tmp_path / "quiet", budget=Budget(epochs=1), show=False)
    assert not caplog.records  # the engine's show=False is -q: no epoch or status lines


def test_configure_logging_gives_quiet_one_meaning(capsys) -> None:
    logger = logging.getLogger("programl.tasks.toy")
    configure_logging(quiet=True)
    logger.info("an epoch line")
    logger.warning("a warning")
    configure_logging(quiet=False)
    configure_logging(quiet=False)  # one handler however often it is called
    logger.info("a status line")
    assert capsys.readouterr().err.splitlines() == ["a warning", "a status line"]
    configure_logging(quiet=False, main=False)  # a non-main DDP process
    logger.info("not shown")
    assert capsys.readouterr().err == ""


def test_configure_logging_leaves_other_programl_loggers_alone(capsys, caplog) -> None:
    # a training command run in-process (tests, notebooks) must not take over the graph builder's warnings
    configure_logging(quiet=False)
    logging.getLogger("programl.graph_builder").warning("a.ll: warning: ignoring invalid debug info")
    assert capsys.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records] == ["a.ll: warning: ignoring invalid debug info"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_only_on_a_terminal(monkeypatch) -> None:
    for stream, drawn in ((io.StringIO(), False), (_Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        assert list(progress_module.progress(range(5), 5, "epoch 1")) == list(range(5))
        assert ("epoch 1" in stream.getvalue()) is drawn


def test_init_from_starts_from_a_checkpoints_weights_with_a_new_optimizer(tmp_path) -> None:
    from programl.exceptions import ProgramlError

    fit(tmp_path / "first")
    best = load_checkpoint(tmp_path / "first" / "best.pt", restore_rng=False)["model"]
    second = Trainer(Toy(), tmp_path / "second", Budget(epochs=1), init_from=tmp_path / "first" / "best.pt").start()
    assert all(torch.equal(a, b) for a, b in zip(second.model.state_dict().values(), best.values(), strict=True))
    assert not second.optimizer.state  # Adam's moments start anew
    fresh = Trainer(Toy(), tmp_path / "fresh", Budget(epochs=1)).start()
    assert not all(torch.equal(a, b) for a, b in zip(fresh.model.state_dict().values(), best.values(), strict=True))
    second.run()
    resumed = Trainer(Toy(), tmp_path / "second", Budget(epochs=2), init_from=tmp_path / "nowhere.pt").start()
    assert resumed.state["epoch"] == 1  # a resumed run continues from its last.pt; init_from is not read
    torch.save({"model": {"w": torch.zeros(1)}, "epoch": 0}, tmp_path / "other.pt")
    with pytest.raises(
        ProgramlError, match="other.pt: a checkpoint of another model.*; --init-from needs weights of the same"
    ):
        Trainer(Toy(), tmp_path / "third", Budget(epochs=1), init_from=tmp_path / "other.pt").start()
    with pytest.raises(ProgramlError, match=r"nowhere.pt: no checkpoint \(--init-from needs a run's best.pt or last"):
        Trainer(Toy(), tmp_path / "fourth", Budget(epochs=1), init_from=tmp_path / "nowhere.pt").start()


def test_init_from_reads_an_exported_models_weights_and_compares_vocabularies(tmp_path) -> None:
    """``--init-from`` also takes an exported model (a bare ``state_dict`` in ``weights.pt``, or its directory);
    a ``vocab.csv`` beside the weights must equal the run's vocabulary, text for text and in order."""
    from programl.data.vocabulary import Vocabulary
    from programl.exceptions import ProgramlError

    fit(tmp_path / "first")
    best = load_checkpoint(tmp_path / "first" / "best.pt", restore_rng=False)["model"]
    exported = tmp_path / "exported"
    exported.mkdir()
    torch.save({k: v.clone() for k, v in best.items()}, exported / "weights.pt")
    vocabulary = Vocabulary(["a", "b", "c"], counts=[3, 2, 1])
    vocabulary.save(exported / "vocab.csv")
    for n, source in enumerate((exported, exported / "weights.pt")):
        run = Trainer(Toy(), tmp_path / f"run{n}", Budget(epochs=1), init_from=source, init_vocabulary=vocabulary)
        assert all(torch.equal(a, b) for a, b in zip(run.start().model.state_dict().values(), best.values()))
    for other, message in (
        (
            ["a", "c", "b"],
            r"vocab.csv: the vocabulary of the --init-from weights \(3 texts\) differs from this run's "
            r"\(3 texts; id 1 is 'b' there and 'c' here\)",
        ),
        (["a", "b"], r"\(2 texts; one is a prefix of the other\)"),
    ):
        with pytest.raises(ProgramlError, match=message):
            Trainer(
                Toy(), tmp_path / "refused", Budget(epochs=1), init_from=exported, init_vocabulary=Vocabulary(other)
            ).start()
    assert not (tmp_path / "refused" / "last.pt").exists()
    (tmp_path / "empty").mkdir()
    torch.save([1, 2], tmp_path / "list.pt")
    for source, message in (
        (tmp_path / "empty", r"empty: no weights.pt or best.pt in this directory \(--init-from needs"),
        (tmp_path / "list.pt", r"list.pt: neither a programl checkpoint nor a model's weights \(--init-from needs"),
    ):
        with pytest.raises(ProgramlError, match=message):
            Trainer(Toy(), tmp_path / "refused", Budget(epochs=1), init_from=source).start()


def test_loader_workers_change_nothing_but_who_collates(tmp_path) -> None:
    """The same run with the batches collated in two worker processes: the same weights and log records."""
    inline, _ = fit(tmp_path / "inline", budget=Budget(examples=[10, 30]))
    workers, _ = fit(tmp_path / "workers", budget=Budget(examples=[10, 30]), workers=2)
    for a, b in zip(weights(inline), weights(workers)):
        assert torch.equal(a, b)
    assert records(tmp_path / "inline") == records(tmp_path / "workers")


def test_evaluate_scores_without_gradients_in_eval_mode() -> None:
    """:func:`~programl.training.engine.evaluate`: the task's step over a loader, no gradients, the model in eval
    mode (dropout off: two passes agree), the batches moved to the model's device."""
    from programl.loader import make_loader
    from programl.training.engine import evaluate

    task = Toy()
    torch.manual_seed(0)
    model, _ = task.build("cpu")
    model.train()
    loader = make_loader(task.val_data, [[0, 1, 2], [3, 4]], workers=0)
    first = evaluate(task, model, loader, device=torch.device("cpu")).compute()
    second = evaluate(task, model, loader).compute()
    assert not model.training and first == second and first["count"] == 5
    assert all(p.grad is None for p in model.parameters()) and task.steps == 0
