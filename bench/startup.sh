#!/usr/bin/env bash
# Start-up cost of the binary users run: `libreyolo --help` and a reader
# (`profile summary`) on a profile.json, as wall time (median of $RUNS) and
# peak RSS (/usr/bin/time %M), for one or more binaries side by side (e.g.
# before / after a change), alternating so load hits them alike. Prints the
# machine's load average before and after.
#
#   bench/startup.sh [BIN...]      default: target/release/libreyolo
#
# env: RUNS (default 20), PROFILE (default: LibreYOLO 1.6's inference
#      profile in capture/parity/)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x /usr/bin/time ] || { echo "bench/startup.sh needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
runs=${RUNS:-20}
profile=${PROFILE:-capture/parity/libreyolo16_infer_b1_profile.json}
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("${CARGO_TARGET_DIR:-target}/release/libreyolo")

measure() { # bin args... → "wall_ms rss_kb": wall from bash's clock (GNU time's is 10 ms coarse), RSS from a second run under time
    local t0 t1
    t0=$EPOCHREALTIME
    "$@" > /dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$tmp/one" "$@" > /dev/null 2>&1 || true
    echo "$(echo "($t1 - $t0) * 1000" | bc -l) $(tail -1 "$tmp/one")"  # time notes a non-zero exit first
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $runs runs each"
for r in $(seq 1 "$runs"); do
    for i in "${!bins[@]}"; do
        measure "${bins[$i]}" --help >> "$tmp/$i.help"
        measure "${bins[$i]}" profile summary "$profile" >> "$tmp/$i.summary"
    done
done
echo
echo "| binary | size | \`--help\` wall (median) | \`--help\` peak RSS | \`summary profile.json\` wall (median) | peak RSS |"
echo "|---|---:|---:|---:|---:|---:|"
for i in "${!bins[@]}"; do
    b=${bins[$i]}
    size=$(du -m --apparent-size "$b" | cut -f1)
    hw=$(cut -d' ' -f1 "$tmp/$i.help" | median)
    hr=$(cut -d' ' -f2 "$tmp/$i.help" | sort -n | tail -1)
    sw=$(cut -d' ' -f1 "$tmp/$i.summary" | median)
    sr=$(cut -d' ' -f2 "$tmp/$i.summary" | sort -n | tail -1)
    printf '| %s | %s MB | %.1f ms | %.1f MB | %.1f ms | %.1f MB |\n' "$b" "$size" "$hw" "$(echo "$hr/1024" | bc -l)" "$sw" "$(echo "$sr/1024" | bc -l)"
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
