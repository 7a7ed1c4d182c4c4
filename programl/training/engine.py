"""The one training loop of the three tasks (docs/spec/tasks.md#schedule; docs/spec/design.md#package-layout):
:class:`Trainer`.

A task (:class:`TrainingTask`) says what is particular to it: its model and optimizer, its data sets (views of
:mod:`programl.datasets`), the training batches of a pass over its data, the one forward step of a batch and its
metric accumulator, its validation batches and its selection rule. The engine does the rest, the same way for every
task:

* data: a ``torch_geometric.loader.DataLoader`` per data set reads and collates the planned batches, in
  ``workers`` processes when asked (:mod:`programl.loader`), and moves them to the device;
* evaluation: :func:`evaluate`, the one loop that scores a model on a data set with the task's step (validation
  after every epoch; the tasks' tests and ``programl evaluate`` call it too);

* budgets: a number of epochs (an epoch is a pass: devmap, classifyapp), or cumulative training examples at the end
  of each epoch (passes run on across epochs: dataflow), and a time limit (:class:`Budget`);
* seeds: the initial weights from the task's seed, an optional re-seed at the start of every epoch, batches in an
  order seeded by (seed, pass);
* ``last.pt`` after every epoch and every ``checkpoint_minutes`` within one (with the partial metrics), and a
  bit-exact resumption from it (weights, optimizer, RNG states, pass, cursor, examples, partial metrics);
* ``best.pt``: the epoch whose validation metrics rank highest by the task's :meth:`~TrainingTask.selection` and
  :meth:`~TrainingTask.better` (a tie keeps the earlier epoch); optionally ``epoch_<NNN>.pt``, the weights of every
  epoch from ``keep_epochs_from`` on (a task that averages its last epochs' models: devmap's ``--average-last``);
* ``log.jsonl``/``log.csv`` (:class:`~programl.training.logs.EpochLog`), ``curves.png``, the per-epoch line;
* DDP (:class:`~programl.training.distributed.Distributed`): the model wrapped, every process its share of each
  step, metrics summed through the accumulators' public ``all_reduce``, every process stopping together;
* the optional schedule of :class:`~programl.training.schedule.Schedule` (linear warm-up, cosine decay, gradient
  clipping), off by default: with it off the arithmetic is the loop's as it was before these options existed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from programl.exceptions import ProgramlError
from programl.loader import PlannedBatches, make_loader
from programl.training.checkpoint import load_checkpoint, load_initial_weights, save_checkpoint, unwrap
from programl.training.distributed import Distributed, shard
from programl.training.logs import EpochLog, progress
from programl.training.plots import plot_learning_curves
from programl.training.runtime import autocast, compute_threads, seed_everything
from programl.training.schedule import Schedule, lr_factor

__all__ = ["Budget", "Fit", "Schedule", "Trainer", "TrainingTask", "epoch_path", "evaluate", "lr_factor"]

logger = logging.getLogger("programl.training")

#: The training state kept in ``last.pt`` (``extra["state"]``); older dataflow checkpoints hold these keys.
_STATE = ("epoch", "examples", "pass", "cursor", "seconds", "partial")


@dataclass(frozen=True)
class Budget:
    """How long to train.

    Attributes:
        epochs: The number of epochs, each one pass over the training data (when ``examples`` is None).
        examples: Cumulative training examples at the end of each epoch (dataflow's ``--train-examples``); passes
            over the data then run on across epochs, each in a new order.
        total_examples: The examples of the whole schedule (the cosine decay's horizon), when only its first epochs
            are run (``--epochs`` with ``--train-examples``); default: ``examples[-1]``.
        time_limit: Minutes of training (over every resumption of the run), or None.
        time_rule: ``"after"``: stop after the first epoch that ends past the limit; ``"before"``: stop before an
            epoch that, as long as the last one, would end past it (an epoch resumed within: its part after the
            resumption, scaled to the whole epoch).
    """

    epochs: int | None = None
    examples: Sequence[int] | None = None
    total_examples: int | None = None
    time_limit: float | None = None
    time_rule: str = "after"

    @property
    def num_epochs(self) -> int:
        """The epochs of the budget: one per cumulative example count, else ``epochs``."""
        return len(self.examples) if self.examples is not None else int(self.epochs or 0)


class TrainingTask:
    """What the engine asks of a task (subclass it; the methods without a body must be given).

    Attributes:
        train_data: The training examples: an indexable data set of ``Data`` (a :mod:`programl.datasets` data set or
            a view of one, its vocabulary transform set); :meth:`plan` indexes it.
        val_data: The validation examples; :meth:`val_plan` indexes it.
        name: How progress bars and messages name the run (``"dataflow"``, ``"amd fold 3"`` ...).
        init_seed: Seeds the initial weights (:func:`~programl.training.runtime.seed_everything` before
            :meth:`build`).
        curve_metrics: The panels of ``curves.png`` (None: every metric found).
        curve_title: Its title.
        checkpoint_extra: Kept in every checkpoint's ``extra`` (``config``, devmap's ``fold``).
    """

    train_data: Any = None
    val_data: Any = None
    name: str = "training"
    init_seed: int = 0
    curve_metrics: Sequence[str] | None = None
    curve_title: str = ""
    checkpoint_extra: dict[str, Any] = {}

    def build(self, device) -> tuple[Any, Any]:
        """The model (on ``device``) and its optimizer."""
        raise NotImplementedError

    def epoch_seed(self, epoch: int, rank: int) -> int | None:  # noqa: ARG002 - a task that re-seeds uses them
        """A seed for :func:`seed_everything` at the start of ``epoch`` (dropout draws), or None."""
        return None

    def plan(self, pass_index: int) -> list[list[int]]:
        """The training batches of one pass over the data (lists of example indices), in order."""
        raise NotImplementedError

    def new_metrics(self) -> Any:
        """An empty accumulator of training metrics: ``all_reduce(sum_fn)``, ``compute() -> dict`` and
        ``state_dict()`` / ``load_state_dict()`` (:class:`~programl.models.MetricsAccumulator`'s public API); a
        mid-epoch checkpoint keeps its ``state_dict()``, which must hold only tensors and plain values."""
        raise NotImplementedError

    def step(self, model, batch, metrics, **options) -> Any:
        """The forward pass of one collated batch (on the model's device): add it to ``metrics`` and return the loss.
        The same step trains (the engine then minimises the loss) and evaluates (:func:`evaluate`: no gradients, the
        model in eval mode, ``options`` from its caller, such as another number of message-passing steps)."""
        raise NotImplementedError

    def epoch_metrics(self, computed: dict[str, Any]) -> dict[str, Any]:
        """An epoch's training or validation metrics from ``metrics.compute()`` (summed over processes)."""
        return computed

    def val_plan(self) -> list[list[int]]:
        """The validation batches (lists of indices into :attr:`val_data`), in order; each process scores its share
        (:func:`~programl.training.distributed.shard`)."""
        raise NotImplementedError

    def selection(self, val: dict[str, Any]) -> tuple[float, ...]:
        """What ranks an epoch, from its validation metrics (kept in checkpoints as ``best``)."""
        raise NotImplementedError

    def better(self, candidate: tuple[float, ...], best: tuple[float, ...]) -> bool:
        """Whether an epoch of ``candidate`` selection beats the best so far (default: higher, compared as tuples;
        a tie keeps the earlier epoch)."""
        return candidate > best

    def record(self, train: dict[str, Any], val: dict[str, Any]) -> dict[str, Any]:
        """The metric entries of the epoch's log record (``train_*``, ``val_*``)."""
        return {**{f"train_{k}": v for k, v in train.items()}, **{f"val_{k}": v for k, v in val.items()}}

    def epoch_line(self, record: dict[str, Any]) -> str | None:
        """The line the user sees after each epoch (None: none)."""
        return None


@dataclass
class Fit:
    """What :meth:`Trainer.run` ends with: the best epoch and its selection value, the epochs logged, the training
    examples and seconds of the whole run (over resumptions)."""

    best: tuple[float, ...] | None
    best_epoch: int | None
    epochs: int
    examples: int
    seconds: float
    records: list[dict[str, Any]] = field(default_factory=list)


def epoch_path(directory: str | Path, epoch: int) -> Path:
    """Where :class:`Trainer` keeps the weights of ``epoch`` (``keep_epochs_from``): ``epoch_<NNN>.pt``."""
    return Path(directory) / f"epoch_{epoch:03d}.pt"


class Trainer:
    """Train ``task`` in ``directory``: :meth:`start` (the model, and the state of ``last.pt`` when resuming), then
    :meth:`run` (the epochs).

    Args:
        task: The task.
        directory: Where ``last.pt``, ``best.pt``, ``log.jsonl``/``log.csv`` and ``curves.png`` go.
        budget: Epochs or examples, and the time limit.
        dist: This process's place in a DDP job (a single process by default).
        resume: Continue from ``last.pt`` when there is one (False: ``--restart``).
        checkpoint_minutes: Also write ``last.pt`` every so many minutes within an epoch (None: only after epochs).
        schedule: Warm-up, decay and clipping (off by default).
        show: Progress bars and per-epoch lines (main process, not ``-q``).
        bar: ``"batches"``: a bar per epoch over its batches; ``"epochs"``: one bar over the epochs (tasks of many
            short epochs, such as devmap's folds).
        plot_each_epoch: Redraw ``curves.png`` after every epoch (else once, at the end of :meth:`run`).
        init_from: The weights a new run starts from (``--init-from``: fine-tuning, or going on at another
            learning rate): a run's checkpoint, an exported model's ``weights.pt`` or its directory
            (:func:`~programl.training.checkpoint.load_initial_weights`); the optimizer starts anew. A resumed run
            ignores it (its ``last.pt`` rules).
        init_vocabulary: The run's vocabulary, which a ``vocab.csv`` beside the ``init_from`` weights must equal
            (None: not compared).
        workers: Worker processes that read and collate the batches (0: the training process).
        keep_epochs_from: Also save the weights of every epoch from this one on as ``epoch_<NNN>.pt``
            (:func:`epoch_path`; None: none).
    """

    def __init__(
        self,
        task: TrainingTask,
        directory: str | Path,
        budget: Budget,
        *,
        dist: Distributed | None = None,
        resume: bool = True,
        checkpoint_minutes: float | None = None,
        schedule: Schedule | None = None,
        show: bool = True,
        bar: str = "batches",
        plot_each_epoch: bool = True,
        init_from: str | Path | None = None,
        init_vocabulary=None,
        keep_epochs_from: int | None = None,
        workers: int = 0,
    ) -> None:
        self.task = task
        self.directory = Path(directory)
        self.budget = budget
        self.dist = dist or Distributed()
        self.last = self.directory / "last.pt"
        self.resuming = resume and self.last.is_file()
        self.checkpoint_minutes = checkpoint_minutes
        self.schedule = schedule or Schedule()
        self.show = show
        self.bar = bar
        self.plot_each_epoch = plot_each_epoch
        self.init_from = Path(init_from) if init_from else None
        self.init_vocabulary = init_vocabulary
        self.keep_epochs_from = keep_epochs_from
        self.workers = workers
        self.state: dict[str, Any] = {
            "epoch": 0,
            "examples": 0,
            "pass": 0,
            "cursor": 0,
            "seconds": 0.0,
            "partial": None,
            "grad_norms": None,
            "epoch_began": None,  # the run's training seconds when the current epoch began
        }
        self.best: tuple[float, ...] | None = None
        self.best_epoch: int | None = None
        self.model = self.optimizer = self.log = None
        self._base_lrs: list[float] = []
        self._before = 0  # training examples before the current step
        self._planned = None  # the training loader's batch sampler (made in start)
        self._loader = self._val_loader = None

    # -------------------------------------------------------------------------------------------------------------
    # Start

    def start(self) -> Trainer:
        """Seed, build the model and optimizer, read the log and, when resuming, ``last.pt``; nothing is written
        until both were read (a damaged file leaves the run as it was).

        Raises:
            ProgramlError: ``last.pt`` or ``log.jsonl`` is damaged, of another model, or holds no training state.
        """
        seed_everything(self.task.init_seed)
        self.model, self.optimizer = self.task.build(self.dist.device)
        self._base_lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.log = EpochLog(self.directory, enabled=self.dist.is_main, load=self.resuming)
        if self.resuming:
            device = self.dist.device
            self._restore(load_checkpoint(self.last, model=self.model, optimizer=self.optimizer, map_location=device))
            self.log.truncate(self.state["epoch"])
            if self.show:
                logger.info(
                    f"{self.directory}: resuming after {self.state['examples']:,} training examples "
                    f"(epoch {self.state['epoch']})"
                )
        else:
            if self.init_from is not None:
                read = load_initial_weights(
                    self.init_from,
                    model=self.model,
                    map_location=self.dist.device,
                    missing_ok=getattr(unwrap(self.model), "init_from_missing_ok", ()),
                    vocabulary=self.init_vocabulary,
                )
                if self.show:
                    logger.info(f"{self.directory}: starting from the weights of {read}")
            self.log.truncate(0)
        self._planned = PlannedBatches()
        self._loader = make_loader(self.task.train_data, self._planned, self.workers, self.dist.device)
        val_batches = shard(self.task.val_plan(), self.dist.rank, self.dist.world_size)
        self._val_loader = make_loader(self.task.val_data, val_batches, self.workers, self.dist.device)
        return self

    def _restore(self, saved: dict[str, Any]) -> None:
        extra = saved["extra"]
        state = extra.get("state")
        if isinstance(state, dict) and not set(_STATE) - set(state):
            self.state.update(state)
        elif self.budget.examples is not None:  # the position in the passes cannot be derived
            what = f"`programl train {self.task.name}`"
            raise ProgramlError(f"{self.last}: not a checkpoint of {what} (no training state)")
        else:  # a checkpoint written after an epoch, before checkpoints kept the state: passes are epochs
            epoch = saved["epoch"]
            examples = sum(total for e in range(1, epoch + 1) for _, total in self._shares(self.task.plan(e)))
            self.state.update(epoch=epoch, examples=examples, **{"pass": epoch})
        best = extra.get("best")
        if best is None and saved.get("best_metric") is not None:
            best = [saved["best_metric"]]
        self.best = tuple(best) if best is not None else None
        self.best_epoch = saved.get("best_epoch")

    # -------------------------------------------------------------------------------------------------------------
    # Steps

    def _shares(self, plan: list[list[int]]) -> list[tuple[list[int], int]]:
        """An epoch-budget pass: this process's batches (``DistributedSampler``-style shares, :func:`shard`), each
        with the examples of its step over all processes."""
        world = self.dist.world_size
        shares = [shard(plan, rank, world) for rank in range(world)]
        return [(shares[self.dist.rank][i], sum(len(s[i]) for s in shares)) for i in range(len(shares[0]))]

    def _epoch_steps(self, shares: list[tuple[list[int], int]]) -> Iterator[tuple[list[int], dict[str, int]]]:
        """The batches of an epoch (one pass, :meth:`_shares`) from the cursor on, each with the training state after
        it (:meth:`_advance` applies it when the batch is trained)."""
        cursor, examples = self.state["cursor"], self.state["examples"]
        for indices, total in shares[cursor:]:
            before, cursor, examples = examples, cursor + 1, examples + total
            yield indices, {"cursor": cursor, "examples": examples, "before": before}

    def _example_steps(self, target: int) -> Iterator[tuple[list[int], dict[str, int]]]:
        """Batches until the run has seen ``target`` examples, passes running on across epochs, each with the
        training state after it. Every step takes one batch per process from the common order; a pass's tail
        shorter than a step is left out, and a plan of fewer batches than processes is repeated."""
        world = self.dist.world_size
        cursor, examples, pass_index = self.state["cursor"], self.state["examples"], self.state["pass"]
        plan = self.task.plan(pass_index)
        while examples < target:
            if cursor >= len(plan) or (cursor + world > len(plan) >= world):
                pass_index, cursor = pass_index + 1, 0
                plan = self.task.plan(pass_index)
            step = [plan[(cursor + r) % len(plan)] for r in range(world)]
            before, cursor, examples = examples, cursor + world, examples + sum(len(b) for b in step)
            yield step[self.dist.rank], {"cursor": cursor, "examples": examples, "pass": pass_index, "before": before}

    def _advance(self, after: dict[str, int]) -> None:
        """The training state once the step of ``after`` (:meth:`_epoch_steps`, :meth:`_example_steps`) is taken."""
        self._before = after["before"]
        self.state.update({key: value for key, value in after.items() if key != "before"})

    def _progress_fraction(self, epoch: int, steps: int | None) -> float:
        """How far the budget was spent when the current step began (the cosine decay's clock)."""
        if self.budget.examples is not None:
            return self._before / (self.budget.total_examples or self.budget.examples[-1])
        done = (epoch - 1) + (self.state["cursor"] - 1) / max(steps or 1, 1)
        return done / max(self.budget.num_epochs, 1)

    def _optimise(self, loss, epoch: int, steps: int | None) -> None:
        """Backward, the schedule's learning rate and clipping, the optimizer's step."""
        optimizer, schedule = self.optimizer, self.schedule
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if schedule.changes_lr:
            factor = lr_factor(schedule, self.state["examples"], self._progress_fraction(epoch, steps))
            for group, base in zip(optimizer.param_groups, self._base_lrs):
                group["lr"] = base * factor
        if schedule.clip_grad_norm is not None:
            import torch

            norm = float(torch.nn.utils.clip_grad_norm_(unwrap(self.model).parameters(), schedule.clip_grad_norm))
            total, largest, count = self.state["grad_norms"] or (0.0, 0.0, 0)
            self.state["grad_norms"] = (total + norm, max(largest, norm), count + 1)
        optimizer.step()

    # -------------------------------------------------------------------------------------------------------------
    # Checkpoints

    def _save(self, path: Path, began: float, *, optimizer: bool = True, partial=None) -> None:
        state = self.state
        state["seconds"] = time.perf_counter() - began
        extra = {**self.task.checkpoint_extra, "state": {**state, "partial": _state_of(partial)}}
        if self.best is not None:
            extra["best"] = list(self.best)
        save_checkpoint(
            path,
            model=self.model,
            optimizer=self.optimizer if optimizer else None,
            epoch=state["epoch"],
            best_metric=self.best[0] if self.best is not None else None,
            best_epoch=self.best_epoch,
            extra=extra,
        )

    def _plot(self) -> None:
        plot_learning_curves(
            self.log.records,
            self.directory / "curves.png",
            metrics=self.task.curve_metrics,
            splits=("train", "val"),
            title=self.task.curve_title,
            mark_epoch=self.best_epoch,
        )

    # -------------------------------------------------------------------------------------------------------------
    # Run

    def run(self) -> Fit:
        """Train until the budget is spent (from where :meth:`start` left off)."""
        if self.model is None:
            self.start()
        task, dist, state, budget = self.task, self.dist, self.state, self.budget
        ddp_model = dist.wrap(self.model)
        began = time.perf_counter() - state["seconds"]
        last_save = time.perf_counter()
        epochs = range(state["epoch"] + 1, budget.num_epochs + 1)
        if self.bar == "epochs":
            epochs = progress(epochs, len(epochs), task.name, self.show, unit="epoch")
        for epoch in epochs:
            here = time.perf_counter()
            mid_epoch = state["partial"] is not None
            # an epoch's seconds count its part before a resumption too (the checkpoint's time since the epoch began)
            started = here - (self._seconds_into_epoch() if mid_epoch else 0.0)
            if not mid_epoch:
                state["epoch_began"] = here - began
            metrics = task.new_metrics()
            if mid_epoch:
                metrics.load_state_dict(state["partial"])
            share_here = 1.0  # of the epoch, trained by this process
            if not mid_epoch:
                state["grad_norms"] = None
            steps: int | None = None
            target: int | None = None
            records = self.log.records
            began_at = records[-1]["train_examples"] if records else 0  # the run's examples when the epoch began
            if budget.examples is not None:
                target = budget.examples[epoch - 1]
                if mid_epoch:
                    share_here = (target - state["examples"]) / max(target - began_at, 1)
                batches = self._example_steps(target)
                description = f"epoch {epoch}/{budget.num_epochs} (to {target:,} examples)"
            else:
                if not mid_epoch:
                    state["cursor"], state["pass"] = 0, epoch
                    seed = task.epoch_seed(epoch, dist.rank)
                    if seed is not None:  # a resumed run draws as an uninterrupted one
                        seed_everything(seed)
                shares = self._shares(task.plan(epoch))
                steps = len(shares)
                if mid_epoch:
                    share_here = (steps - state["cursor"]) / max(steps, 1)
                batches = self._epoch_steps(shares)
                description = f"epoch {epoch}/{budget.num_epochs}"
            state["partial"] = None
            ddp_model.train()
            shown = self.show and self.bar == "batches"
            self._planned.feed(batches)
            for batch in progress(self._loader, steps, description, shown):
                self._advance(self._planned.take())
                batch = _to(batch, dist.device)
                with autocast(self.dist.device, self.schedule.precision):
                    loss = task.step(ddp_model, batch, metrics)
                self._optimise(loss, epoch, steps)
                minutes = self.checkpoint_minutes
                if dist.is_main and minutes is not None and time.perf_counter() - last_save > 60 * minutes:
                    state["epoch"] = epoch - 1
                    self._save(self.last, began, partial=metrics)
                    last_save = time.perf_counter()
                    if self.show:
                        logger.info(self._checkpoint_line(epoch, steps, target, began_at, started))
            metrics.all_reduce(dist.all_reduce_sum)
            train = task.epoch_metrics(metrics.compute())
            validating = time.perf_counter()
            val = self.validate()
            val_seconds = time.perf_counter() - validating
            state["epoch"] = epoch
            if budget.epochs is not None and budget.examples is None:
                state["cursor"] = 0
            record = self._record(epoch, train, val, started, began, val_seconds)
            candidate = task.selection(val)
            if self.best is None or task.better(candidate, self.best):
                self.best, self.best_epoch = candidate, epoch
                if dist.is_main:
                    self._save(self.directory / "best.pt", began, optimizer=False)
            self.log.append(record)
            if dist.is_main:
                if self.keep_epochs_from is not None and epoch >= self.keep_epochs_from:
                    self._save(epoch_path(self.directory, epoch), began, optimizer=False)
                self._save(self.last, began)
                last_save = time.perf_counter()
                if self.plot_each_epoch:
                    self._plot()
            line = task.epoch_line(record)
            if line and self.show:
                logger.info(line)
            # the next epoch's time, for the "before" rule: this process's pace (a resumed epoch's first part may
            # have run on another device)
            seconds_here = time.perf_counter() - here
            if self._out_of_time(epoch, seconds_here / share_here if share_here > 0 else seconds_here, began):
                break
        # the training time is the checkpoint's (saved at every epoch's end): plotting is not training, and a run
        # resumed after its last epoch reports the time it was trained in, not that plus its own start-up
        seconds = state["seconds"] if dist.is_main else time.perf_counter() - began
        if dist.is_main and not self.plot_each_epoch:
            self._plot()
        return Fit(self.best, self.best_epoch, state["epoch"], state["examples"], seconds, self.log.records)

    def validate(self) -> dict[str, Any]:
        """The validation metrics of the model (:func:`evaluate` over every process's share of the validation
        batches, summed; the same in every process)."""
        metrics = evaluate(
            self.task,
            self.model,
            self._val_loader,
            device=self.dist.device,
            dist=self.dist,
            description="validation",
            show=self.show and self.bar == "batches",
        )
        return self.task.epoch_metrics(metrics.compute())

    def _checkpoint_line(self, epoch: int, steps: int | None, target: int | None, began_at: int, started: float) -> str:
        """Where a checkpoint within an epoch leaves it: how much of the epoch's training is done and about how long
        the rest takes at the epoch's pace so far. The one sign of life in a log without a bar (stderr redirected,
        as under ``nohup``), where an epoch may take an hour."""
        if target is not None:  # an examples budget: the epoch ends at ``target`` examples
            total, unit = target - began_at, "examples"
            done = min(self.state["examples"] - began_at, total)  # the last step may go past the target
        else:
            done, total, unit = self.state["cursor"], steps or 0, "batches"
        seconds = time.perf_counter() - started
        line = f"epoch {epoch}/{self.budget.num_epochs}: last.pt written after {done:,} of {total:,} {unit}"
        if done <= 0 or total <= 0:
            return line
        left = seconds * max(total - done, 0) / done / 60
        return f"{line} ({100 * done / total:.0f} % in {seconds / 60:.0f} min), about {left:.0f} min of training left"

    def _seconds_into_epoch(self) -> float:
        """The training time of the current epoch before this process resumed it: the checkpoint's time less the
        run's time when the epoch began (older checkpoints lack it: the log's rounded time at the last epoch's end)."""
        before = self.state.get("epoch_began")
        if before is None:
            records = self.log.records
            before = float(records[-1].get("elapsed_seconds", 0.0)) if records else 0.0
        return max(self.state["seconds"] - before, 0.0)

    def _record(
        self, epoch: int, train: dict, val: dict, started: float, began: float, val_seconds: float
    ) -> dict[str, Any]:
        record = {"epoch": epoch, "train_examples": self.state["examples"], **self.task.record(train, val)}
        if self.state["grad_norms"] is not None:
            total, largest, count = self.state["grad_norms"]
            record.update(train_grad_norm=total / max(count, 1), train_grad_norm_max=largest)
        now = time.perf_counter()
        # val_seconds: the validation's part of the epoch's seconds (training alone is the difference)
        record.update(
            seconds=round(now - started, 2), elapsed_seconds=round(now - began, 1), val_seconds=round(val_seconds, 2)
        )
        # where the epoch ended (a run can move between a CPU and a GPU; export sums the seconds by device), and
        # on how many threads (the card's CPU-hours when its scores file lacks the run's own result.json)
        record["device"] = str(self.dist.device or "cpu").split(":")[0]
        record["threads"] = compute_threads(self.dist.device or "cpu")
        return record

    def _out_of_time(self, epoch: int, seconds: float, began: float) -> bool:
        """Whether to stop after ``epoch`` for the time limit (every process gets the same answer)."""
        limit = self.budget.time_limit
        elapsed = time.perf_counter() - began
        if self.budget.time_rule == "before":
            over = bool(limit) and elapsed + seconds > 60 * limit
        else:
            over = bool(limit) and elapsed > 60 * limit
        if not self.dist.any(over):
            return False
        if self.dist.is_main:
            if self.budget.time_rule == "before":
                logger.warning(
                    f"stopping after epoch {epoch}: another epoch would pass the time limit of {limit:g} min"
                )
            else:
                logger.warning(f"time limit of {limit:g} min reached after epoch {epoch}")
        return True


def evaluate(
    task: TrainingTask,
    model,
    batches,
    *,
    device=None,
    dist: Distributed | None = None,
    metrics=None,
    description: str = "",
    show: bool = False,
    **options,
) -> Any:
    """The one evaluation loop (validation, the tasks' tests, ``programl evaluate``): ``task.step`` over ``batches``
    with no gradients and the model in eval mode.

    Args:
        task: Its :meth:`~TrainingTask.step` scores a batch (given ``options``) into ``metrics``.
        model: The model (a DDP wrapper is unwrapped: processes may score different numbers of batches).
        batches: The collated batches: a loader (:func:`~programl.loader.make_loader`).
        device: Where the model is.
        dist: Sum the metrics over its processes (None: this process's batches only).
        metrics: The accumulator to add to (default: ``task.new_metrics()``).
        description, show: The progress bar.

    Returns:
        The accumulator (``compute()`` gives the metrics).
    """
    import torch

    model = unwrap(model)
    metrics = task.new_metrics() if metrics is None else metrics
    model.eval()
    with torch.no_grad():
        for batch in progress(batches, _length(batches), description, show):
            task.step(model, _to(batch, device), metrics, **options)
    if dist is not None:
        metrics.all_reduce(dist.all_reduce_sum)
    return metrics


def _to(batch, device):
    """``batch`` on ``device`` (None: where it is)."""
    return batch if device is None else batch.to(device)


def _length(batches) -> int | None:
    try:
        return len(batches)
    except TypeError:
        return None


def _state_of(metrics: Any) -> dict[str, Any] | None:
    """A mid-epoch checkpoint's ``partial`` entry: the metrics' ``state_dict()`` (tensors and plain values, as
    every entry of a checkpoint; :func:`~programl.training.checkpoint.save_checkpoint`), or None after an epoch."""
    return None if metrics is None else metrics.state_dict()
