# The checks of the shell harnesses (tests/container/run.sh, tests/package/run.sh,
# tests/package/container.sh, tests/quickstart/run.sh, tests/cross/run.sh, tests/cross/image.sh):
# sourced by bash.
#
#   ok TEXT / bad TEXT     one passed / failed check: "ok   - TEXT" / "FAIL - TEXT"
#   note TEXT              "# TEXT", not a check
#   check TEXT COMMAND...  ok when COMMAND succeeds, else bad
#   summary                the last line, "N passed, N failed (S s)"; false if anything failed
#                          (a harness may define summary_note: it prints just before that line)
#   fatal TEXT             a failure that makes the rest meaningless: bad, summary, exit 1
#   free_port              a loopback TCP port no socket holds now, outside the kernel's
#                          ephemeral range (lib.server.free_port, the suite's one: a port
#                          from bind(0), closed again, is the next client socket's to take)
# shellcheck shell=bash
CHECK_LIB=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
pass=0
fail=0
t0=$SECONDS
ok()   { pass=$((pass + 1)); echo "ok   - $*"; }
bad()  { fail=$((fail + 1)); echo "FAIL - $*"; }
note() { echo "# $*"; }
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
summary() {
    if declare -F summary_note >/dev/null; then summary_note; fi
    echo "$pass passed, $fail failed ($((SECONDS - t0)) s)"
    [ "$fail" -eq 0 ]
}
fatal() {
    bad "$*"
    summary
    exit 1
}
free_port() {
    PYTHONPATH="$CHECK_LIB/.." python3 -c 'from lib.server import free_port; print(free_port())'
}
