#!/usr/bin/env bash
# The checks that need a GPU, in one call on a lent GPU machine (no clang, no internet there): the GPU tests, the
# training-throughput benchmark on CUDA, and the POJ-104 full-protocol run from the data set's processed files.
# Results: docs/results.md.
#
#   tar -C ~/.cache/programl/poj104 -cJf out/device/poj104-data.tar.xz --exclude processed/build processed
#   bash benchmarks/gpu.sh                          # tests and benchmarks only
#   POJ_DATA=out/device/poj104-data.tar.xz POJ_MINUTES=6 bash benchmarks/gpu.sh
#   CHECKS=0 POJ_DATA=... POJ_MINUTES=8 bash benchmarks/gpu.sh   # the same machine again: continue the run only
#   a run begun on a CPU here: benchmarks/gpu_carry.sh RUN_DIR DATA_ROOT packs it and its data as POJ_RUN_FROM, POJ_DATA
#   fine-tuning cycles from the shipped classifyapp model (docs/results.md §7; studies/history/results-history.md §7,
#   "A session-sized cycle"), chained:
#   CHECKS=0 POJ_DATA=... POJ_CYCLES=3 POJ_BEAT=3.54 POJ_MINUTES=9 POJ_ARGS="<the cycle's options>" bash benchmarks/gpu.sh
#
# Inputs (environment): PYTHON (default python3); TMPDIR (default /tmp), the scratch folder of the machine; wheels in
# .whl/, installed into $TMPDIR/site first (protobuf >= 5.29
# for the committed gencode); POJ_DATA, a tar archive (.tar.xz or not) of a POJ-104 data set root's processed files
# (processed/poj104-*.pt and .json, as above: the data of `programl train classifyapp --data-dir ROOT`; 25 MB for
# every program at -O0); POJ_ROOT, the data set root it is unpacked into (default $TMPDIR/poj104-data); POJ_RUN,
# the run directory (default $TMPDIR/poj104: both survive while the machine is warm; a run resumed from another root's
# copy of the same files is the same run); POJ_RUN_FROM, the outputs of an earlier call carried back in (the run
# continues from them; its best.pt may be left out); POJ_MINUTES, this call's training time (default 6: the run stops before an epoch that would
# end past it; `--time-limit` counts a run's time over all its resumptions, so the script adds the time already in
# its last.pt, which for a run begun on a CPU is hours);
# POJ_DEVICE (default cuda); POJ_ARGS, more options (a small model to try the script on a CPU); CHECKS=0 skips the
# tests and benchmarks. POJ_CYCLES=N replaces the one run by a chain of at most N fine-tuning cycles (POJ_ARGS: the
# cycle's options, its --epochs among them): cycle 1 starts from POJ_INIT (default: the shipped classifyapp model),
# each later one from the cycle before it; a cycle whose best validation error (%) is below POJ_BEAT (required: the
# starting model's) is exported (programl export-pretrained, POJ_COMMIT and POJ_NOTE for its card) and becomes the
# next cycle's start and bar; the chain stops at the first cycle that does not beat it, or when fewer minutes are
# left of POJ_MINUTES than the last cycle took.
# Outputs under $OUT (default out/gpu): summary.tar.gz (environment, test and benchmark logs and JSON, the run's
# small files), best.pt, and last.pt in parts of 15 MB (last.pt.part-aa ...), to resume the run elsewhere; with
# POJ_CYCLES, the last exported model instead (classifyapp/: weights.pt, vocab.csv, model.json, MODEL_CARD.md, what
# programl/pretrained/weights/classifyapp holds) and each cycle's small files in the summary (cycle1-log.jsonl ...).
set -u
OUT=${OUT:-out/gpu}
mkdir -p "$OUT/summary"
S=$OUT/summary
PY=${PYTHON:-python3}
TMP=${TMPDIR:-/tmp}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$TMP/site" .whl/*.whl \
        && export PYTHONPATH=$TMP/site:$PYTHONPATH
fi
RUN=${POJ_RUN:-$TMP/poj104}

if [ "${CHECKS:-1}" != 0 ]; then
    {
        date -u
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
        $PY -c "import sys, torch, torch_geometric, google.protobuf as pb, numpy
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda,
      'pyg', torch_geometric.__version__, 'protobuf', pb.__version__, 'numpy', numpy.__version__)"
        nproc
    } 2>&1 | tee "$S/env.txt"

    # 1. the GPU tests (and the device-dependent ones: --device auto picks the GPU here)
    timeout 300 $PY -m pytest -q -p no:cacheprovider -o addopts="-ra --import-mode=importlib" \
        tests/models/test_dataflow.py tests/models/test_graph_classifier.py tests/training/test_training.py \
        "tests/tasks/test_classifyapp.py::test_training_from_processed_files_alone_on_the_default_device" \
        >"$S/pytest.txt" 2>&1
    tail -4 "$S/pytest.txt"

    # 2. training throughput on CUDA (benchmarks/train.py: 10,000-node batches, T=30)
    for model in ggnn rgcn pyg-gated; do  # pyg-gated: PyG's GatedGraphConv on the same batches (the reference point of the layer's speed)
        timeout 150 $PY benchmarks/train.py --device cuda --model $model --batches 20 --warmup 3 \
            -o "$S/train-$model.json" >"$S/train-$model.txt" 2>&1
        tail -3 "$S/train-$model.txt"
    done
fi

# A chain of fine-tuning cycles (POJ_CYCLES; the header says what it does) on the data set root $1.
run_cycles() {
    local from=${POJ_INIT:-programl/pretrained/weights/classifyapp} beat=${POJ_BEAT:?POJ_BEAT: the validation error (%) to beat}
    local end took=0 k run val start
    end=$(awk "BEGIN { print int($(date +%s) + 60 * ${POJ_MINUTES:-6}) }")
    for k in $(seq 1 "$POJ_CYCLES"); do
        if [ $(($(date +%s) + took)) -gt "$end" ]; then
            echo "cycle $k: not started (the last cycle took ${took} s; fewer are left)" | tee -a "$S/cycles.txt"
            break
        fi
        run=$RUN-cycle$k
        start=$(date +%s)
        timeout "$((end - start + 180))" $PY -m programl train classifyapp --data-dir "$1" --run-dir "$run" \
            --device "${POJ_DEVICE:-cuda}" --checkpoint-minutes 2 --init-from "$from" \
            --time-limit "$(awk "BEGIN { print ($end - $start) / 60 }")" ${POJ_ARGS:-} >"$S/cycle$k.txt" 2>&1
        took=$(($(date +%s) - start))
        tail -c 1500 "$S/cycle$k.txt"
        for f in config.json log.jsonl log.csv result.json curves.png; do
            [ -f "$run/$f" ] && cp "$run/$f" "$S/cycle$k-$f"
        done
        val=$($PY -c "import json, sys
print(min(100 * json.loads(line)['val_error'] for line in open(sys.argv[1])))" "$run/log.jsonl") || val=
        if [ -z "$val" ] || ! awk "BEGIN { exit !($val < $beat) }"; then
            echo "cycle $k: validation error ${val:-none} %, not below $beat %: the chain stops" | tee -a "$S/cycles.txt"
            break
        fi
        rm -rf "$OUT/classifyapp"
        $PY -m programl export-pretrained "$run" classifyapp -o "$OUT" --commit "${POJ_COMMIT:-unknown}" \
            --compute-note "${POJ_NOTE:-A fine-tuning cycle on a lent GPU.} (Cycle $k of a chain of benchmarks/gpu.sh.)" \
            >>"$S/cycles.txt" 2>&1 || { echo "cycle $k: export failed" | tee -a "$S/cycles.txt"; break; }
        echo "cycle $k: validation error $val %, below $beat %: exported (${took} s)" | tee -a "$S/cycles.txt"
        from=$OUT/classifyapp beat=$val
    done
}

# 3. POJ-104 at the full protocol from the data set's processed files: first where one training step spends its
# time, then the run (programl train classifyapp, the paper's classifier, 25 epochs)
if [ -n "${POJ_DATA:-}" ]; then
    ROOT=${POJ_ROOT:-$TMP/poj104-data}  # kept while the machine is warm: a second call skips this
    if [ ! -d "$ROOT/processed" ]; then
        rm -rf "$ROOT.part" && mkdir -p "$ROOT.part" "$ROOT"
        case "$POJ_DATA" in
            *.xz) xz -T0 -dc "$POJ_DATA" | tar x -C "$ROOT.part" ;;
            *) tar xf "$POJ_DATA" -C "$ROOT.part" ;;
        esac && mv "$ROOT.part/processed" "$ROOT/processed"
        rm -rf "$ROOT.part"
    fi
    if [ "${CHECKS:-1}" != 0 ]; then
        timeout 240 $PY studies/classifyapp_step.py --data-dir "$ROOT" --device "${POJ_DEVICE:-cuda}" --profile \
            -o "$S/classifyapp-step.json" >"$S/classifyapp-step.txt" 2>&1
        head -9 "$S/classifyapp-step.txt"
    fi
    if [ -n "${POJ_CYCLES:-}" ]; then
        run_cycles "$ROOT"
    else
        if [ -n "${POJ_RUN_FROM:-}" ] && [ ! -f "$RUN/last.pt" ]; then  # what an earlier call of this script returned
            FROM=$(mktemp -d) && mkdir -p "$RUN" && tar xzf "$POJ_RUN_FROM/summary.tar.gz" -C "$FROM"
            for f in "$FROM"/summary/poj104-*; do cp "$f" "$RUN/${f#"$FROM"/summary/poj104-}"; done
            # best.pt may stay behind (the carried tree has 64 MiB: the data and last.pt fill most of it): the best
            # epoch's score is in last.pt, and best.pt is written again when a later epoch beats it
            [ ! -f "$POJ_RUN_FROM/best.pt" ] || cp "$POJ_RUN_FROM/best.pt" "$RUN/"
            cat "$POJ_RUN_FROM"/last.pt.part-* >"$RUN/last.pt"
        fi
        TRAINED=0  # minutes the run has trained before this call
        if [ -f "$RUN/last.pt" ]; then
            TRAINED=$($PY -c "import sys; from programl.training import load_checkpoint
print(load_checkpoint(sys.argv[1], restore_rng=False)['extra']['state']['seconds'] / 60)" "$RUN/last.pt") || TRAINED=0
        fi
        # the run records the sha256 of its processed files: it resumes as the same run on the machine they came from
        timeout "$(awk "BEGIN { print int(60 * ${POJ_MINUTES:-6}) + 180 }")" $PY -m programl train classifyapp \
            --data-dir "$ROOT" --run-dir "$RUN" --epochs 25 --device "${POJ_DEVICE:-cuda}" --checkpoint-minutes 2 \
            --time-limit "$(awk "BEGIN { print $TRAINED + ${POJ_MINUTES:-6} }")" ${POJ_ARGS:-} >"$S/poj104.txt" 2>&1
        tail -c 3000 "$S/poj104.txt"
        for f in config.json vocab.csv log.jsonl log.csv result.json curves.png confusion.png; do
            [ -f "$RUN/$f" ] && cp "$RUN/$f" "$S/poj104-$f"
        done
        [ -f "$RUN/best.pt" ] && cp "$RUN/best.pt" "$OUT/best.pt"
        [ -f "$RUN/last.pt" ] && split -b 15M "$RUN/last.pt" "$OUT/last.pt.part-"
    fi
fi
tar czf "$OUT/summary.tar.gz" -C "$OUT" summary && rm -r "$S"
ls -la "$OUT"
