#!/usr/bin/env bash
# One data-flow analysis of issue 11's campaign, from data to shipped model, in one command that can be run again
# after any interruption (every step resumes; studies/runs.md, "Issue 11").
#
#   studies/dataflow_campaign.sh ANALYSIS [DATA_DIR] [RUN_ROOT]
#
# 1. builds DeepDataFlow-22 in DATA_DIR (default data/ddf22; SIZE=N for a --size N build, empty: all 104,534 inputs),
#    resuming a partial build (some inputs never compile: the build then exits 1 with its data set complete);
# 2. converts the analysis's splits to the memory-mapped PyG form with JOBS workers (once; training alone would
#    convert with one, inside its time limit), then trains the faithful typed GGNN (SPEC §6.1: T=30, DDF-30, scored
#    in 10,000-node batches) on both cores (--threads 2: as fast as DDP on two processes, studies/history/results-history.md §4) with
#    the optimiser settings chosen in studies/history/results-history.md §5
#    (LR 1e-3, WARMUP 2500 examples, CLIP 1, BATCH_NODES 2500; LR_DECAY cosine decays the rate to 0 at the last
#    budget; validation and test at 10,000-node batches), to the example budgets of SCHEDULE, stopping after the
#    first epoch past TIME_LIMIT minutes (then testing the best checkpoint), checkpointing every 5 minutes
#    (RUN_ROOT/ANALYSIS; rerun = resume);
# 3. installs the best checkpoint as the pretrained model ANALYSIS (programl export-pretrained --force);
# 4. prints the results table of every finished run under RUN_ROOT (studies/dataflow_results_table.py; a run that was
#    stopped has no result.json and is left out).
#
# Settings by environment: PROGRAML (.venv/bin/programl), PYTHON (.venv/bin/python), SHARED (../shared/data),
# SIZE, LR, WARMUP, CLIP, LR_DECAY (off), BATCH_NODES, SCHEDULE, TIME_LIMIT, JOBS (2), EXPORT_DIR (default: the
# package's programl/pretrained/weights), DDP=1 (train as JOBS torchrun processes of one thread each instead of one
# process).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
    sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0" >&2  # the comment block above
    exit 2
fi
ANALYSIS=$1
DATA=${2:-data/ddf22}
RUNS=${3:-runs/campaign}
PROGRAML=${PROGRAML:-.venv/bin/programl}
PYTHON=${PYTHON:-.venv/bin/python}
SHARED=${SHARED:-../shared/data}
SIZE=${SIZE:-}
LR=${LR:-1e-3}
WARMUP=${WARMUP:-2500}
CLIP=${CLIP:-1}
LR_DECAY=${LR_DECAY:-off}
SCHEDULE=${SCHEDULE:-10000 20000 50000 100000 150000 200000 300000 400000 500000}
TIME_LIMIT=${TIME_LIMIT:-0}
JOBS=${JOBS:-2}
BATCH_NODES=${BATCH_NODES:-2500}
DDP=${DDP:-0}
EXPORT_DIR=${EXPORT_DIR:-}

say() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

say "data: $DATA${SIZE:+ (--size $SIZE)}"
status=0
"$PROGRAML" dataset build --recipe datasets/deepdataflow22/recipe.json --data "$SHARED" "$DATA" \
    ${SIZE:+--size "$SIZE"} -j "$JOBS" -q || status=$?
if [ "$status" -gt 1 ] || [ ! -f "$DATA/dataset.json" ]; then
    echo "dataflow_campaign: the data set build failed (exit $status); rerun to resume it" >&2
    exit 1
fi

say "convert the $ANALYSIS splits to the PyG form (-j $JOBS; once)"
"$PROGRAML" dataset prepare "$DATA" --analysis "$ANALYSIS" -j "$JOBS" -q

limit=()
if [ "$TIME_LIMIT" != 0 ]; then limit=(--time-limit "$TIME_LIMIT"); fi
say "train $ANALYSIS: lr $LR, warm-up $WARMUP examples, decay $LR_DECAY, clip $CLIP, $BATCH_NODES-node batches, budgets $SCHEDULE"
# shellcheck disable=SC2086  # SCHEDULE is a list of numbers
train=("$PROGRAML" train dataflow --threads "$JOBS")
if [ "$DDP" = 1 ]; then
    train=("$PYTHON" -m torch.distributed.run --standalone --nproc_per_node "$JOBS" -m programl.tasks.dataflow train
        --threads 1)
fi
"${train[@]}" --analysis "$ANALYSIS" --dataset "$DATA" --run-dir "$RUNS/$ANALYSIS" \
    --batch-nodes "$BATCH_NODES" --lr "$LR" --warmup-examples "$WARMUP" --lr-decay "$LR_DECAY" \
    --clip-grad-norm "$CLIP" --train-examples $SCHEDULE \
    "${limit[@]}" --checkpoint-minutes 5 --test-steps 30 60 200 --test-examples 0 1000 500 -q

say "export the best checkpoint as the pretrained model '$ANALYSIS'"
"$PROGRAML" export-pretrained "$RUNS/$ANALYSIS" "$ANALYSIS" ${EXPORT_DIR:+-o "$EXPORT_DIR"} --force --commit "$(git rev-parse --short HEAD)"

say "results"
finished=("$RUNS"/*/result.json)
"$PYTHON" studies/dataflow_results_table.py "${finished[@]%/result.json}"
