#!/usr/bin/env bash
# One data-flow analysis of issue 11's campaign, from data to shipped model, in one command that can be run again
# after any interruption (every step resumes; docs/runs.md, "Issue 11").
#
#   scripts/dataflow_campaign.sh ANALYSIS [DATA_DIR] [RUN_ROOT]
#
# 1. builds DeepDataFlow-22 in DATA_DIR (default data/ddf22; SIZE=N for a --size N build, empty: all 104,534 inputs),
#    resuming a partial build (some inputs never compile: the build then exits 1 with its data set complete);
# 2. trains the faithful typed GGNN (SPEC §6.1: T=30, DDF-30, 10,000-node batches) on both cores (--threads 2: as
#    fast as DDP on two processes, docs/results.md §4) with the optimiser settings of docs/results.md §5 (LR,
#    WARMUP, CLIP), to the example budgets of SCHEDULE, stopping after the first epoch past TIME_LIMIT minutes
#    (then testing the best checkpoint), checkpointing every 5 minutes (RUN_ROOT/ANALYSIS; rerun = resume);
# 3. installs the best checkpoint as the pretrained model ANALYSIS (programl export-pretrained --force);
# 4. prints the results table of every run under RUN_ROOT (scripts/dataflow_results_table.py).
#
# Settings by environment: PROGRAML (.venv/bin/programl), PYTHON (.venv/bin/python), SHARED (../shared/data),
# SIZE, LR, WARMUP, CLIP, SCHEDULE, TIME_LIMIT, JOBS (2), EXPORT_DIR (the package's programl/models/weights).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
    sed -n "2,19p" "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
ANALYSIS=$1
DATA=${2:-data/ddf22}
RUNS=${3:-runs/campaign}
PROGRAML=${PROGRAML:-.venv/bin/programl}
PYTHON=${PYTHON:-.venv/bin/python}
SHARED=${SHARED:-../shared/data}
SIZE=${SIZE:-}
LR=${LR:-5e-4}
WARMUP=${WARMUP:-2500}
CLIP=${CLIP:-1}
SCHEDULE=${SCHEDULE:-10000 20000 50000 100000 150000 200000 300000 400000 500000}
TIME_LIMIT=${TIME_LIMIT:-0}
JOBS=${JOBS:-2}
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

limit=()
if [ "$TIME_LIMIT" != 0 ]; then limit=(--time-limit "$TIME_LIMIT"); fi
say "train $ANALYSIS: lr $LR, warm-up $WARMUP examples, clip $CLIP, budgets $SCHEDULE"
# shellcheck disable=SC2086  # SCHEDULE is a list of numbers
"$PROGRAML" train dataflow --analysis "$ANALYSIS" --dataset "$DATA" --run-dir "$RUNS/$ANALYSIS" --threads "$JOBS" \
    --lr "$LR" --warmup-examples "$WARMUP" --clip-grad-norm "$CLIP" --train-examples $SCHEDULE \
    "${limit[@]}" --checkpoint-minutes 5 --test-steps 30 60 200 --test-examples 0 1000 500 -q

say "export the best checkpoint as the pretrained model '$ANALYSIS'"
"$PROGRAML" export-pretrained "$RUNS/$ANALYSIS" "$ANALYSIS" ${EXPORT_DIR:+-o "$EXPORT_DIR"} --force --commit "$(git rev-parse --short HEAD)"

say "results"
"$PYTHON" scripts/dataflow_results_table.py "$RUNS"/*/
