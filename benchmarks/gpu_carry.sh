#!/usr/bin/env bash
# Package a POJ-104 run of this machine for `benchmarks/gpu.sh` on a lent GPU machine, which has no clang and no
# internet and so trains from the data set's processed files: POJ_DATA (the processed files, xz) and POJ_RUN_FROM
# (the run's small files and last.pt in 15 MB parts, the layout gpu.sh itself returns), together under the 64 MiB a
# device call carries (about 30 MB of data for every program at -O0, 26 MB of last.pt for the paper's classifier).
# Run it before the device call: the packing costs no device time.
#
#   bash benchmarks/gpu_carry.sh RUN_DIR DATA_ROOT [OUT]        # OUT defaults to out/device
#   bash benchmarks/gpu_carry.sh --kind KIND DATA_ROOT [OUT]     # the data alone, for gpu.sh's POJ_CYCLES (which start
#                                                                # from the shipped model): KIND faithful, -nt, -str
#                                                                # or -nt-str (the shipped classifyapp reads -nt-str)
#   # then on the device (carry: out/device and .whl), with the run's own options in POJ_ARGS so that it resumes:
#   CHECKS=0 POJ_DATA=out/device/poj104-data.tar.xz POJ_RUN_FROM=out/device/run POJ_MINUTES=8 \
#       POJ_ARGS="--epochs 40 ..." bash benchmarks/gpu.sh
#   # and back here: cat OUT/last.pt.part-* > RUN_DIR/last.pt (and the log files of summary.tar.gz), then resume.
#
# The data archive is made once per OUT (delete it when the data set changes, or for a run of the other kind:
# faithful or --numbers-and-types). The run resumes on the GPU as the
# same run because its config.json records the sha256 of the processed files it trained on: resume it here once
# after any change to them, so that config.json names the files being carried.
set -euo pipefail
usage() {
    echo "usage: $0 RUN_DIR DATA_ROOT [OUT]" >&2
    echo "       $0 --kind faithful|-nt|-str|-nt-str DATA_ROOT [OUT]" >&2
    exit 2
}
# A device call carries the working tree (git's tracked and untracked, not ignored, files), the paths it names and
# .whl (the protobuf wheel, where there is one): all together under 64 MiB.
check_fits() {
    du -sh "$@"
    local repo tree
    repo=$(cd "$(dirname "$0")/.." && pwd)
    # (a tracked file deleted from the tree fails du under pipefail; its total stands)
    tree=$(cd "$repo" && { git ls-files -co --exclude-standard -z 2>/dev/null || true; } |
        du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1) || true
    [ ! -d "$repo/.whl" ] || tree=$((${tree:-0} + $(du -sb "$repo/.whl" | cut -f1)))
    du -sbc "$@" | awk -v tree="${tree:-0}" 'END {
        total = $1 + tree
        printf "with the working tree: %.1f of the 64 MiB a device call carries\n", total / 1048576
        if (total > 64 * 1048576) { print "over the 64 MiB a device call carries"; exit 1 } }'
}
RUN=
if [ "${1:-}" = --kind ]; then
    [ $# -ge 3 ] || usage
    case "$2" in
        faithful) KIND= ;;
        -nt | -str | -nt-str) KIND=$2 ;;
        *) usage ;;
    esac
    shift 2
else
    [ $# -ge 2 ] || usage
    RUN=$1
    shift
    for f in "$RUN/config.json" "$RUN/vocab.csv" "$RUN/last.pt"; do
        [ -f "$f" ] || { echo "$0: $f: not found (a run directory of programl train classifyapp?)" >&2; exit 1; }
    done
fi
ROOT=$1
OUT=${2:-out/device}
[ -d "$ROOT/processed" ] || { echo "$0: $ROOT/processed: not found (a POJ-104 data set root?)" >&2; exit 1; }
mkdir -p "$OUT"

# Only the processed files of the run's kind: a --numbers-and-types run reads the -nt files, a --string-bytes run
# the -str files (both: -nt-str), any other run the faithful ones; two kinds together may not fit beside last.pt
# (every program at -O0: the -nt validation file is 7.4 MB of xz, the faithful one 6.7 MB).
[ -z "$RUN" ] || KIND=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["model"]
print(("-nt" if m.get("numbers_and_types") else "") + ("-str" if m.get("string_bytes") else ""))' "$RUN/config.json")
FILES=()
for f in "$ROOT"/processed/*; do
    name=${f##*/}
    case "$name" in
        build) continue ;;
        pre_filter.pt | pre_transform.pt) ;;
        *)
            kind=$(sed -E 's/^poj104-(legacy|[0-9a-f]{12})((-nt)?(-str)?)(-train|-val|-test)?\.(pt|json)$/=\2/' <<<"$name")
            [ "$kind" = "=$KIND" ] || continue
            ;;
    esac
    FILES+=("processed/$name")
done
if [ ! -f "$OUT/poj104-data.tar.xz" ]; then
    tar -C "$ROOT" -cf - "${FILES[@]}" | xz -T0 -6 >"$OUT/poj104-data.tar.xz.part"
    mv "$OUT/poj104-data.tar.xz.part" "$OUT/poj104-data.tar.xz"
fi
if [ -z "$RUN" ]; then
    check_fits "$OUT/poj104-data.tar.xz"
    exit
fi

mkdir -p "$OUT/run"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir "$STAGE/summary"
for f in config.json vocab.csv log.jsonl log.csv; do
    [ ! -f "$RUN/$f" ] || cp "$RUN/$f" "$STAGE/summary/poj104-$f"
done
tar czf "$OUT/run/summary.tar.gz.part" -C "$STAGE" summary
mv "$OUT/run/summary.tar.gz.part" "$OUT/run/summary.tar.gz"
rm -f "$OUT/run/last.pt.part-"*
split -b 15M "$RUN/last.pt" "$OUT/run/last.pt.part-"
check_fits "$OUT/poj104-data.tar.xz" "$OUT/run"
