#!/bin/sh
# Static analysis of server/ and handlers/ with cppcheck (make analyze; a stage of .ci/run).
#
#   tools/analyze.sh [BUILD]        (BUILD: where cppcheck keeps its cache; default build)
#
# The checks: warning (undefined behaviour, leaks, uninitialised reads, bad format strings...),
# portability and performance, with the preprocessor set as the Makefile compiles (-D_GNU_SOURCE,
# llhttp's strict mode, -Iserver -Ihandlers). Not `style`: it asks for matters of taste the code
# decides otherwise (a variable's scope, const on every pointer). A finding is fixed in the
# code; a false positive is suppressed in tools/cppcheck-suppressions.xml, narrowed to one
# check, one file and one symbol, with the reason beside it.
#
# Every finding is printed as a `FAIL FILE:LINE: severity(id): message` line; the last line is
# `N passed, N failed`: the source files without a finding, and those with one. Exit 1 if any.
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LLHTTP_INC=${LLHTTP_INC:-/usr/share/include/llhttp}
command -v cppcheck >/dev/null || {
    echo "analyze: cppcheck is missing (make analyze installs it)" >&2
    echo "0 passed, 1 failed"
    exit 1
}
mkdir -p "$BUILD/analyze"
out="$BUILD/analyze/findings.txt"
cppcheck --quiet -j 2 --cppcheck-build-dir="$BUILD/analyze" --std=c11 --inconclusive \
    --enable=warning,portability,performance \
    -D_GNU_SOURCE -DLLHTTP_STRICT_MODE=1 -Iserver -Ihandlers -I"$LLHTTP_INC" \
    --suppress=missingIncludeSystem --suppress-xml=tools/cppcheck-suppressions.xml \
    --template='{file}:{line}: {severity}({id}): {message}' \
    server handlers 2> "$out" || true
sed 's/^/FAIL /' "$out"
files=$(find server handlers -name '*.c' | wc -l)
bad=$(cut -d: -f1 "$out" | sort -u | grep -c . || true)      # a header counts as a file too
bad_c=$(cut -d: -f1 "$out" | sort -u | grep -c '\.c$' || true)
echo "cppcheck $(cppcheck --version | sed 's/^Cppcheck //'): $(wc -l < "$out") finding(s), $files files"
echo "$((files - bad_c)) passed, $bad failed"
[ "$bad" -eq 0 ]
