#!/bin/sh
# Run the libFuzzer harnesses: tools/fuzz.sh BUILD_DIR SECONDS HARNESS...
#
# For each harness:
#   1. replay: every input in tests/fuzz/regression/HARNESS/ (minimised crashers kept forever)
#      and tests/fuzz/corpus/HARNESS/ (the seeds) runs once; any crash fails;
#   2. fuzz:   SECONDS of fuzzing, starting from the seeds and the regression inputs. New
#      corpus entries go to BUILD_DIR/corpus/HARNESS (kept between runs, never into the
#      repository); a crash is written to BUILD_DIR/artifacts/ and fails the run.
# Prints "N passed, N failed" last (one check per step and harness); exits 1 on a failure.
set -u
build=$1
seconds=$2
shift 2
pass=0
fail=0
for h in "$@"; do
    bin="$build/fuzz/$h"
    seeds="tests/fuzz/corpus/$h"
    regress="tests/fuzz/regression/$h"
    work="$build/corpus/$h"
    mkdir -p "$work" "$build/artifacts" "$regress"
    opts="-artifact_prefix=$build/artifacts/$h- -timeout=10 -rss_limit_mb=2048 -print_final_stats=1"

    echo "=== $h: replay $(ls "$regress" | wc -l) regression input(s) and $(ls "$seeds" | wc -l) seed(s)"
    if "$bin" $opts -runs=0 "$regress" "$seeds" >"$build/$h-replay.log" 2>&1; then
        pass=$((pass + 1))
        grep -E "^#[0-9]+.*DONE" "$build/$h-replay.log" | tail -n 1
    else
        fail=$((fail + 1))
        tail -n 60 "$build/$h-replay.log"
        echo "=== $h: replay FAILED"
    fi

    echo "=== $h: fuzzing for $seconds s"
    if "$bin" $opts -max_total_time="$seconds" "$work" "$seeds" "$regress" \
        >"$build/$h-fuzz.log" 2>&1; then
        pass=$((pass + 1))
        grep -E "^#[0-9]+.*DONE" "$build/$h-fuzz.log" | tail -n 1
        grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss)" \
            "$build/$h-fuzz.log"
    else
        fail=$((fail + 1))
        tail -n 80 "$build/$h-fuzz.log"
        echo "=== $h: fuzzing FAILED; the input is in $build/artifacts/ (minimise it with"
        echo "    $bin -minimize_crash=1 -runs=10000 FILE, then add it to $regress/)"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
