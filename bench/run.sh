#!/usr/bin/env bash
# Benchmark of the trace readers. Results: BENCHMARKS.md.
#
#   bench/run.sh [--quick]
#
# Builds the release `libreyolo` (the binary scripts/setup.sh builds; it
# never links libtorch), generates traces with gen-trace
# (100 MB and 1 GB of uncompressed JSON, plain and gzipped, under bench/out/,
# reused while gen-trace is unchanged), and reports as a markdown table:
#   - MB/s (uncompressed bytes / wall seconds, best of $RUNS, pinned to one
#     core with taskset) and peak RSS (/usr/bin/time %M) of
#     `libreyolo profile summary --json <trace>`, plus whether its figures
#     match the generator's ground truth;
#   - the wall time of readers on a profile.json: the reference's
#     tests/fixtures/reference/train_b4/profile.json and one written from the
#     largest generated trace (mean of 20 runs, hyperfine if installed).
#
# --quick   skip the 1 GB traces
# env: RUNS (timed runs per trace, default 3), CORE (core to pin, default 0),
#      CARGO_TARGET_DIR (default target), SEED (default 1)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
for a in "$@"; do
    case $a in
        --quick) quick=1 ;;
        -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/run.sh: unknown argument $a (try --quick)" >&2; exit 2 ;;
    esac
done

target=${CARGO_TARGET_DIR:-target}
runs=${RUNS:-3}
core=${CORE:-0}
seed=${SEED:-1}
out=bench/out
mkdir -p "$out"
command -v taskset >/dev/null || { echo "bench/run.sh needs taskset (util-linux)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench/run.sh needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }

echo "building the release binary..." >&2
cargo build --release -p libreyolo -p libreyolo-bench >&2
bin=$target/release/libreyolo
gen=$target/release/gen-trace
write_profile=$target/release/write-profile

# A trace of the given size, generated unless an up-to-date one is there.
make_trace() { # size gzip(0|1)
    local f=$out/trace-$1.json
    [ "$2" = 1 ] && f=$f.gz
    if [ ! -s "$f" ] || [ ! -s "$f.expect.json" ] || [ "$f.expect.json" -ot "$gen" ] || ! grep -q "\"seed\": $seed," "$f.expect.json"; then
        if [ "$2" = 1 ]; then
            "$gen" --size "$1" --seed "$seed" --out "$f" --gzip >&2
        else
            "$gen" --size "$1" --seed "$seed" --out "$f" >&2
        fi
    fi
    echo "$f"
}

# First integer after "key": in a JSON file.
json_int() { grep -o "\"$2\": *[0-9]*" "$1" | head -1 | grep -o '[0-9]*$'; }
json_num() { grep -o "\"$2\": *[0-9.e+-]*" "$1" | head -1 | sed 's/.*: *//'; }
now_ns() { date +%s%N; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
sizes=(100MB)
[ "$quick" = 1 ] || sizes+=(1GB)

rows=()
for size in "${sizes[@]}"; do
    for gz in 0 1; do
        f=$(make_trace "$size" "$gz")
        truth=$f.expect.json
        bytes=$(json_int "$truth" bytes)
        best=""
        best_cpu=""
        rss_max=0
        for _ in $(seq "$runs"); do
            t0=$(now_ns)
            /usr/bin/time -f '%M %U %S' -o "$out/rss.txt" taskset -c "$core" "$bin" profile summary --json "$f" >"$out/summary.json"
            t1=$(now_ns)
            ns=$((t1 - t0))
            read -r rss user sys <"$out/rss.txt"
            cpu_ns=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", (u + s) * 1e9 }')
            [ -z "$best" ] || [ "$ns" -lt "$best" ] && best=$ns
            [ -z "$best_cpu" ] || [ "$cpu_ns" -lt "$best_cpu" ] && best_cpu=$cpu_ns
            [ "$rss" -gt "$rss_max" ] && rss_max=$rss
        done
        # The analysis must agree with the generator on what it read.
        want_steps=$(json_int "$truth" steps)
        got_steps=$(json_int "$out/summary.json" real_steps)
        want_k=$(json_num "$truth" kernels_per_step)
        got_k=$(json_num "$out/summary.json" kernels_per_step)
        if [ "$want_steps" = "$got_steps" ] && awk -v a="$want_k" -v b="$got_k" 'BEGIN { exit !((a - b) < 0.006 && (b - a) < 0.006) }'; then
            check="yes ($got_steps steps, $got_k kernels/step)"
        else
            check="**NO**: steps $got_steps vs $want_steps, kernels/step $got_k vs $want_k"
        fi
        file_mb=$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", b / 1e6 }')
        row=$(awk -v b="$bytes" -v ns="$best" -v cpu="$best_cpu" -v kb="$rss_max" -v name="$(basename "$f")" -v fmb="$file_mb" -v chk="$check" \
            'BEGIN { printf "| %s | %.1f | %s | %.3f | **%.0f** | %.0f | %.1f | %s |", name, b / 1e6, fmb, ns / 1e9, (b / 1e6) / (ns / 1e9), (b / 1e6) / (cpu / 1e9), kb / 1024, chk }')
        rows+=("$row")
        echo "$row" >&2
    done
done

# Readers on profile.json: the reference's, and one made from our largest trace.
biggest=${sizes[-1]}
gen_profile=$out/profile-$biggest.json
if [ ! -s "$gen_profile" ] || [ "$gen_profile" -ot "$out/trace-$biggest.json" ] || [ "$gen_profile" -ot "$bin" ]; then
    echo "writing $gen_profile from trace-$biggest.json..." >&2
    "$write_profile" "$out/trace-$biggest.json" "$gen_profile"
fi
ref_profile=tests/fixtures/reference/train_b4/profile.json
profiles=()
[ -s "$ref_profile" ] && profiles+=("$ref_profile") || echo "note: $ref_profile not found, skipped" >&2
profiles+=("$gen_profile")

time_reader() { # label, command...; prints "mean_ms stddev_ms"
    if command -v hyperfine >/dev/null; then
        hyperfine -N --runs 20 --warmup 3 --style none --export-json "$out/hf.json" "$*" >/dev/null 2>&1
        awk '/"mean"/ { gsub(/[,"]/, ""); m = $2 } /"stddev"/ { gsub(/[,"]/, ""); s = $2 } /"min"/ { gsub(/[,"]/, ""); lo = $2 } END { printf "%.2f %.2f %.2f hyperfine\n", m * 1e3, s * 1e3, lo * 1e3 }' "$out/hf.json"
    else
        local sum=0 sq=0 lo=0 i t0 t1 d
        for i in $(seq 3); do "$@" >/dev/null; done
        for i in $(seq 20); do
            t0=$(now_ns); "$@" >/dev/null; t1=$(now_ns)
            d=$((t1 - t0)); sum=$((sum + d)); sq=$((sq + d / 1000 * (d / 1000)))
            if [ "$lo" = 0 ] || [ "$d" -lt "$lo" ]; then lo=$d; fi
        done
        awk -v s="$sum" -v q="$sq" -v lo="$lo" 'BEGIN { m = s / 20 / 1e6; v = q / 20 / 1e6 - m * m; if (v < 0) v = 0; printf "%.2f %.2f %.2f loop\n", m, sqrt(v), lo / 1e6 }'
    fi
}

reader_rows=()
for p in "${profiles[@]}"; do
    kb=$(awk -v b="$(stat -c %s "$p")" 'BEGIN { printf "%.0f", b / 1024 }')
    for reader in "summary" "summary --json" "kernels --top 20" "phases"; do
        # shellcheck disable=SC2086
        read -r mean sd lo how < <(time_reader "$bin" profile $reader "$p")
        row="| \`profile $reader\` | $p | $kb | **$mean** | $sd | $lo | 20 ($how) |"
        reader_rows+=("$row")
        echo "$row" >&2
    done
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
ram=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
echo
echo "Machine: $(nproc) cores ($cpu), $ram RAM; $(uname -sr); $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted src changes')."
echo
echo "\`profile summary --json <trace>\`, pinned to core $core (\`taskset -c $core\`), best of $runs runs; MB/s counts uncompressed JSON bytes, over wall time and over user+system CPU time (the latter is less disturbed by other load on a shared machine). Load average at the start: $load."
echo
echo "| trace | JSON MB | file MB | wall s | MB/s (1 core, wall) | MB/s (CPU time) | peak RSS MB | figures = ground truth |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Readers on a profile.json, mean of 20 runs after 3 warm-up runs (not pinned):"
echo
echo "| reader | input | KiB | mean ms | σ ms | min ms | runs |"
echo "|---|---|---:|---:|---:|---:|---|"
printf '%s\n' "${reader_rows[@]}"
