# Shared by the bench scripts (sourced): timing with peak RSS, and the
# verdict on two folders of outputs.

# best_of RUNS CPUS CMD...: runs CMD RUNS times pinned to CPUS (taskset),
# stdout to $BEST_OF_OUT (default /dev/null), stderr dropped; prints the
# best wall time in seconds and the largest peak RSS in KiB.
# BEST_OF_WARM=FILE reads FILE into the page cache before each run: on the
# benchmark machines the kernel pages out file pages left alone for ~6 s
# (DAMON's `pageout` scheme), so a trace read after another one's runs
# came partly from disk (BENCHMARKS.md, "the page cache").
best_of() {
    local runs=$1 cpus=$2 best= rss=0 t0 t1 wall r f
    shift 2
    f=$(mktemp)
    for _ in $(seq 1 "$runs"); do
        [ -z "${BEST_OF_WARM:-}" ] || cat "$BEST_OF_WARM" > /dev/null
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%M" -o "$f" taskset -c "$cpus" "$@" > "${BEST_OF_OUT:-/dev/null}" 2> /dev/null
        t1=$EPOCHREALTIME
        wall=$(echo "$t1 - $t0" | bc -l)
        if [ -z "$best" ] || (( $(echo "$wall < $best" | bc -l) )); then best=$wall; fi
        r=$(tail -1 "$f")
        (( r > rss )) && rss=$r
    done
    rm -f "$f"
    echo "$best $rss"
}

# same_outputs NAME BEFORE AFTER: whether two folders of outputs are the
# same byte for byte, said as NAME; returns 1 (and lists the files that
# differ) unless they are.
same_outputs() {
    local n
    n=$(find "$2" -type f | wc -l)
    if diff -rq "$2" "$3"; then
        echo "$1: $n outputs, all byte-identical" >&2
    else
        echo "$1: outputs differ (of $n)" >&2
        return 1
    fi
}
