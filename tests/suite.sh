#!/bin/sh
# The whole suite as `make test` runs it (docs/TESTING.md):
#
#   tests/suite.sh [--build DIR] [--concurrency MODEL] [--tests SUBSTRING[,SUBSTRING...]]
#
# 1. the C unit tests, DIR/tests/test_* (TAP programs), with prove, two at a time, each bounded
#    by the per-test timeout (60 s, x3 for a sanitizer build: DIR's name has "san");
# 2. the integration tests and the tests of the tooling (tests/integration, tests/tooling) with
#    pytest, a file per worker, two at a time (pytest-xdist); tests/conftest.py adds --build and
#    --concurrency, the fixtures and the checks after each test.
# --tests: only the unit tests whose name unit/test_x contains one of the substrings, and the
# pytest tests they select with -k (A,B: "A or B"; FILE.py::NAME: "FILE.py and NAME").
#
# The failed tests are named again at the end (FAILED lines: prove's failed programs, pytest's
# short summary), then the last line is "N passed, N failed": prove's count of TAP tests and
# pytest's JUnit XML report (DIR/pytest.xml, kept: every test's time), added. Exit status 1 if
# anything failed.
set -u
cd "$(dirname "$0")/.."
BUILD=build
CONCURRENCY=""
TESTS=""
PYTHON=${PYTHON:-/usr/bin/python3}    # Debian's: python3-pytest and the decoders are its modules
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    *) echo "suite.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case $(basename "$BUILD") in *san*) scale=3 ;; *) scale=1 ;; esac
timeout=$((60 * scale))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# keep going after the first report, so that all of them reach stderr
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

selected() {    # selected NAME: TESTS is empty, or one of its parts is in NAME
    [ -z "$TESTS" ] && return 0
    echo "$TESTS" | tr ',' '\n' | while IFS= read -r part; do
        [ -n "$part" ] && case $1 in *"$part"*) echo yes; break ;; esac
    done | grep -q yes
}

passed=0
failed=0

# ---- 1. unit tests ------------------------------------------------------------------------
units=""
for b in "$BUILD"/tests/test_*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    selected "unit/$(basename "$b")" && units="$units $b"
done
if [ -n "$units" ]; then
    echo "=== unit tests (prove)"
    # --failures --comments: a failed test's `not ok` line and the diagnostics after it shown
    # shellcheck disable=SC2086
    prove -j 2 --failures --comments --exec "timeout -k 10 $timeout" $units 2>&1 |
        tee "$out/prove.log"
    # "Files=17, Tests=1004, ...": every TAP test; the summary report lists each program that
    # failed: "(Wstat: 256 (exited 1) Tests: 30 Failed: 2)"; one that failed without a
    # `not ok` (a crash, a timeout, a bad plan) counts as one failure.
    total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$out/prove.log" | tail -n 1)
    awk '/^Test Summary Report/ { on = 1; next }
         on && /\(Wstat: / { n = $0; sub(/.*Failed: /, "", n); sub(/\).*/, "", n); print $1, n + 0 }' \
        "$out/prove.log" > "$out/unit-failed"
    subtests=$(awk '{ s += $2 } END { print s + 0 }' "$out/unit-failed")
    ufail=$(awk '{ s += ($2 > 0 ? $2 : 1) } END { print s + 0 }' "$out/unit-failed")
    while read -r prog n; do
        echo "FAILED unit/$(basename "$prog"): $([ "$n" -gt 0 ] && echo "$n not ok" ||
            echo "exit status or plan (no not ok)"); its output above"
    done < "$out/unit-failed" >> "$out/recap"
    if [ -z "$total" ]; then
        echo "FAILED unit tests: prove printed no summary" | tee -a "$out/recap"
        ufail=$((ufail + 1)); total=0
    fi
    upass=$((total - subtests))
    passed=$((passed + upass))
    failed=$((failed + ufail))
fi

# ---- 2. integration and tooling tests -----------------------------------------------------
only_units=""
if [ -n "$TESTS" ]; then
    only_units=yes
    for part in $(echo "$TESTS" | tr ',' ' '); do
        case $part in unit/*) ;; *) only_units="" ;; esac
    done
fi
if [ -z "$only_units" ]; then
    echo "=== integration tests (pytest)"
    set -- --build="$BUILD" -n 2 --dist loadfile -vv -rfE --junitxml="$BUILD/pytest.xml"
    [ -z "$CONCURRENCY" ] || set -- "$@" --concurrency="$CONCURRENCY"
    if [ -n "$TESTS" ]; then
        expr=$(echo "$TESTS" | awk -F, '{ for (i = 1; i <= NF; i++) if ($i != "") {
                   p = $i; gsub(/::/, " and ", p); e = e (e == "" ? "" : " or ") "(" p ")" }
               print e }')
        set -- "$@" -k "$expr"
    fi
    rm -f "$BUILD/pytest.xml"     # its report (the times of every test): kept after the run
    # CI=1: pytest writes each failure's message whole in its short summary (not cut to the
    # width of a terminal), and whole assertion diffs: the log is read, not a screen
    CI=1 "$PYTHON" -m pytest "$@" 2>&1 | tee "$out/pytest.log"
    if [ -s "$BUILD/pytest.xml" ]; then
        # testcases; a <failure> or an <error> (setup, teardown, collection) fails one
        counts=$("$PYTHON" - "$BUILD/pytest.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
p = f = 0
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        f += 1
    elif case.find("skipped") is None:
        p += 1
print(p, f)
EOF
)
        [ -n "$counts" ] || counts="0 1"    # an unreadable report: one failure, said above
        passed=$((passed + ${counts% *}))
        failed=$((failed + ${counts#* }))
    else
        echo "FAILED integration tests: pytest wrote no report" | tee -a "$out/recap"
        failed=$((failed + 1))
    fi
fi

if [ "$failed" -ne 0 ]; then
    # A long log is read from its end (a CI page shows its tail): say there what failed.
    echo "=== what failed (details above):"
    cat "$out/recap" 2>/dev/null
    grep -E '^(FAILED|ERROR) tests/' "$out/pytest.log" 2>/dev/null
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
