#!/usr/bin/env bash
# Quick-start test (`make quickstart-test`, the "quickstart" stage of .ci/run).
#
# Proves the README's quick start on a machine that has nothing: a fresh Debian bookworm
# server in a podman container (tools/mkbase.sh --fresh: debootstrap's default variant, the
# host's apt sources), where the commands of the README's quick-start code block run as
# written, in order, as root, each once:
#   - every line before `git clone` (the prerequisites: git and make are not on a fresh server);
#   - the `git clone` line, with one substitution: its repository argument (the first word
#     after `git clone` that is not an option) becomes the path of a `git bundle` of the commit
#     under test (HEAD, with its branch), copied into the container's /tmp. The rest of the line
#     is unchanged; a clone of the bundle is named `lfhttpd` like a clone of the repository;
#   - `make run` in the background: from the host, the URL the quick start gives
#     (`Open <http://…>`) is fetched with the host's curl inside the container's network
#     namespace (nsenter -n), until the first 200, whose body must be the commit's
#     www/index.html; then SIGTERM to make run's process group, and the server's log must show
#     the graceful drain;
#   - `make test`: exit 0 and "N passed, 0 failed" (the full suite, no subset).
# The commands come from README.md of the commit under test (`git show HEAD:README.md`), so the
# stage fails if the README stops saying what a fresh machine needs, and it runs nothing the
# README does not say. What the harness adds around a line: the shell's working directory
# carried from one line to the next (a terminal session's `cd`), `timeout` (every command has a
# deadline from its start), `setsid` (make run in a process group of its own) and the stop.
# No retry anywhere: a failed or timed-out step fails the stage and prints the tail of its log.
#
# The container is as close to a server as podman makes it: the default podman bridge network
# (its own network namespace: no port on the host is taken, and the apt mirror is reached
# through it), `--init` (PID 1 reaps orphaned processes, as systemd does on a server; `sleep`
# as PID 1 would leave them as zombies that still show in /proc) and a 1 GiB /dev/shm (a
# server's is a tmpfs of half its memory; podman's default is 64 MB; headless Chromium was also
# seen to work with 64 MB). Root in the container has podman's default capabilities, enough
# for the tests that switch users.
#
# The clone line's substitution replaces the first word after `git clone` that does not start
# with `-`: options before the repository must be written `--name=value`.
#
# Prints the duration of each step (image, prerequisites, clone, make run to the first 200,
# make test) and the total. Ends with "N passed, N failed" (one check per step); exits non-zero
# if anything failed. Removes its container; keeps the fresh base image (reused when present;
# `podman rmi localhost/lfhttpd-fresh:bookworm` has the next run make it again, upgraded).
set -uo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."

IMAGE=localhost/lfhttpd-fresh:bookworm
C="lfhttpd-qs-$$"
BUNDLE=/tmp/lfhttpd.bundle          # in the container
LINE_TIMEOUT=900                    # s, a foreground line (apt-get, git clone)
RUN_TIMEOUT=1200                    # s, make run: from its start to the first 200
STOP_TIMEOUT=60                     # s, make run: from SIGTERM to its exit
TEST_TIMEOUT=2700                   # s, make test

# ok, bad, note, check, summary (fatal: below, this harness gives up in its own way)
source tests/lib/check.sh
DURATIONS=""
took() { DURATIONS="$DURATIONS, $1 $2 s"; }  # took STEP SECONDS: for the last lines
summary_note() { echo "# durations: ${DURATIONS#, }${DURATIONS:+; }total $((SECONDS - t0)) s"; }
fatal() { # a failure that makes the rest meaningless
    bad "$*"
    give_up
}
give_up() { # after a failed step the next ones cannot run
    note "the steps after this one did not run"
    summary
    exit 1
}
tail_log() { # tail_log FILE [N]: the end of a step's log, indented, long lines cut
    echo "  --- last lines of the log:"
    tail -n "${2:-40}" "$1" | cut -c 1-300 | sed 's/^/  | /'
}

# podman runs rootful (CONTAINERS.md): as root, or again under sudo
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        exec sudo bash "$SELF" "$@"
    fi
    fatal "no container engine: the quick-start test needs root (or sudo) to install and run podman"
fi

TMP=$(mktemp -d /tmp/lfhttpd-qs.XXXXXX)
RUN_PID=""
cleanup() {
    [ -z "$RUN_PID" ] || kill "$RUN_PID" 2>/dev/null
    podman rm -f -t 0 "$C" >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the commit under test and the README's quick start --------------------------------------
COMMIT=$(git rev-parse HEAD) || fatal "not a git checkout"
BRANCH=$(git symbolic-ref -q --short HEAD)
note "testing commit $COMMIT${BRANCH:+ ($BRANCH)}"
if [ -n "$(git status --porcelain)" ]; then
    note "the working tree has changes that are not committed: this stage tests the commit"
    note "$COMMIT, not them"
fi
git show "$COMMIT:README.md" >"$TMP/README.md" || fatal "no README.md in $COMMIT"
git show "$COMMIT:www/index.html" >"$TMP/index.html" || fatal "no www/index.html in $COMMIT"

# The "## Quick start" section, and its first indented code block: one command per line.
awk '/^## / { sec = ($0 ~ /^## Quick start[[:space:]]*$/); next } sec' "$TMP/README.md" \
    >"$TMP/section.md"
awk '/^    [^ ]/ { print substr($0, 5); block = 1; next }
     block && /[^[:space:]]/ { exit }' "$TMP/section.md" >"$TMP/commands"
URL=$(grep -oE '<http://[^>]+>' "$TMP/section.md" | head -n 1 | tr -d '<>')
mapfile -t LINES <"$TMP/commands"
cmd_of() { # the command part of a line: no comment, no leading or trailing blanks
    local c=${1%%#*}
    c=${c#"${c%%[![:space:]]*}"}
    echo "${c%"${c##*[![:space:]]}"}"
}
clone_at="" run_at="" test_at=""
for i in "${!LINES[@]}"; do
    c=$(cmd_of "${LINES[$i]}")
    case $c in
    "git clone "*) [ -n "$clone_at" ] || clone_at=$i ;;
    "make run" | "make run "*) [ -n "$run_at" ] || run_at=$i ;;
    "make test" | "make test "*) [ -n "$test_at" ] || test_at=$i ;;
    esac
done
note "README quick start (${#LINES[@]} lines):"
sed 's/^/#     /' "$TMP/commands"
missing=""
[ -n "$clone_at" ] || missing="$missing, a 'git clone' line"
[ -n "$run_at" ] || missing="$missing, a 'make run' line"
[ -n "$test_at" ] || missing="$missing, a 'make test' line"
[ -n "$URL" ] || missing="$missing, the URL to open (<http://…>)"
[ -n "$missing" ] && fatal "README.md's quick start has no${missing#,}"
if [ "$clone_at" -gt "$run_at" ] || [ "$run_at" -gt "$test_at" ]; then
    fatal "README.md's quick start: git clone, make run and make test are not in that order"
fi
ok "README.md's quick start has a clone line, make run, make test and the URL $URL"

# ---- 1. image: podman, its settings, the fresh bookworm server image -------------------------
s=$SECONDS
bash tools/podman-setup.sh fresh 2>"$TMP/setup.err" || fatal "$(cat "$TMP/setup.err")"
git bundle create "$TMP/lfhttpd.bundle" HEAD $BRANCH 2>"$TMP/bundle.err" \
    || fatal "git bundle: $(cat "$TMP/bundle.err")"
if ! podman run -d --name "$C" --init --shm-size=1g "$IMAGE" sleep infinity >"$TMP/run.err" 2>&1 \
        || ! podman cp "$TMP/lfhttpd.bundle" "$C:$BUNDLE" >>"$TMP/run.err" 2>&1; then
    cat "$TMP/run.err"
    fatal "could not start a container from $IMAGE"
fi
CPID=$(podman inspect --format '{{.State.Pid}}' "$C")
echo /root >"$TMP/cwd0"
podman cp "$TMP/cwd0" "$C:/tmp/.quickstart-cwd" >/dev/null 2>&1 || fatal "podman cp failed"
ok "image: podman ready, a container from $IMAGE running ($((SECONDS - s)) s)"
took image $((SECONDS - s))

# A foreground line, as the README says it, in the working directory the previous line left.
# exec_line TIMEOUT LINE LOG: the exit status of the line (124: timed out)
exec_line() {
    podman exec "$C" timeout -k 10 "$1" bash -c 'cd "$(cat /tmp/.quickstart-cwd)" || exit 1
'"$2"'
rc=$?
pwd >/tmp/.quickstart-cwd
exit $rc' >"$3" 2>&1 </dev/null
}
step_line() { # step_line NAME LINE TIMEOUT: one foreground line, one check
    local name=$1 line=$2 limit=$3 s=$SECONDS rc log="$TMP/step.log"
    exec_line "$limit" "$line" "$log"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "$name ($((SECONDS - s)) s): $line"
        return 0
    fi
    [ "$rc" -eq 124 ] && rc="timed out after $limit s" || rc="exit $rc"
    bad "$name ($rc, $((SECONDS - s)) s): $line"
    tail_log "$log"
    return 1
}

# ---- 2. prerequisites and the clone ----------------------------------------------------------
s=$SECONDS
for ((i = 0; i < clone_at; i++)); do
    step_line "prerequisites" "${LINES[$i]}" "$LINE_TIMEOUT" || give_up
done
took prerequisites $((SECONDS - s))

line=$(sed -E 's#^(git clone( +-[^ ]+)*) +[^ -][^ ]*#\1 '"$BUNDLE"'#' <<<"${LINES[$clone_at]}")
note "the clone line, with the bundle of $COMMIT for the repository: $line"
s=$SECONDS
step_line "clone" "$line" "$LINE_TIMEOUT" || give_up
took clone $((SECONDS - s))
head=$(podman exec "$C" bash -c 'cd "$(cat /tmp/.quickstart-cwd)" && git rev-parse HEAD' 2>&1)
[ "$head" = "$COMMIT" ] || fatal "after the clone line the shell is not in a clone of $COMMIT ($head)"
for ((i = clone_at + 1; i < run_at; i++)); do
    step_line "before make run" "${LINES[$i]}" "$LINE_TIMEOUT" || give_up
done

# ---- 3. make run: the default site, then SIGTERM ---------------------------------------------
line=${LINES[$run_at]}
s=$SECONDS
podman exec "$C" setsid -w bash -c 'echo $$ >/tmp/.quickstart-run.pgid
cd "$(cat /tmp/.quickstart-cwd)" || exit 1
'"$line" >"$TMP/make-run.log" 2>&1 </dev/null &
RUN_PID=$!
code="" served=""
while [ $((SECONDS - s)) -lt "$RUN_TIMEOUT" ] && kill -0 "$RUN_PID" 2>/dev/null; do
    code=$(nsenter -t "$CPID" -n curl -s -o "$TMP/body" -w '%{http_code}' --max-time 5 "$URL")
    if [ "$code" = 200 ]; then
        served=$((SECONDS - s))
        break
    fi
    sleep 0.5
done
if [ -z "$served" ]; then
    if kill -0 "$RUN_PID" 2>/dev/null; then
        bad "make run: no 200 from $URL within $RUN_TIMEOUT s (last status ${code:-none}): $line"
    else
        wait "$RUN_PID"
        bad "make run exited ($?) before $URL answered 200 ($((SECONDS - s)) s): $line"
    fi
    tail_log "$TMP/make-run.log"
    give_up
fi
ok "make run to the first 200 from $URL ($served s): $line"
took "make run to the first 200" "$served"
if cmp -s "$TMP/body" "$TMP/index.html"; then
    ok "GET $URL is www/index.html of $COMMIT, byte for byte"
else
    bad "GET $URL is not www/index.html of $COMMIT ($(wc -c <"$TMP/body") bytes)"
fi

pgid=$(podman exec "$C" cat /tmp/.quickstart-run.pgid)
podman exec "$C" bash -c 'kill -TERM -- "-$1"' _ "$pgid"
s=$SECONDS
while [ $((SECONDS - s)) -lt "$STOP_TIMEOUT" ] && kill -0 "$RUN_PID" 2>/dev/null; do
    sleep 0.2
done
if kill -0 "$RUN_PID" 2>/dev/null; then
    podman exec "$C" bash -c 'kill -KILL -- "-$1"' _ "$pgid"
    bad "make run still running $STOP_TIMEOUT s after SIGTERM to its process group"
    tail_log "$TMP/make-run.log"
else
    wait "$RUN_PID"
    RUN_PID=""
    if grep -q "SIGTERM received: shutting down gracefully" "$TMP/make-run.log" \
            && grep -q "draining:" "$TMP/make-run.log" && grep -q "\] stopped" "$TMP/make-run.log"; then
        ok "SIGTERM to make run's process group: the server drained and stopped ($((SECONDS - s)) s)"
    else
        bad "SIGTERM to make run's process group: no drain in the server's log"
        tail_log "$TMP/make-run.log"
    fi
fi

for ((i = run_at + 1; i < test_at; i++)); do
    step_line "before make test" "${LINES[$i]}" "$LINE_TIMEOUT" || give_up
done

# ---- 4. make test ----------------------------------------------------------------------------
line=${LINES[$test_at]}
s=$SECONDS
exec_line "$TEST_TIMEOUT" "$line" "$TMP/make-test.log"
rc=$?
dur=$((SECONDS - s))
took "make test" "$dur"
summ=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/make-test.log" | tail -n 1)
if [ "$rc" -eq 0 ] && [[ "$summ" =~ ^[1-9][0-9]*\ passed,\ 0\ failed ]]; then
    ok "make test ($dur s): $summ"
else
    [ "$rc" -eq 124 ] && rc="timed out after $TEST_TIMEOUT s" || rc="exit $rc"
    bad "make test ($rc, $dur s): ${summ:-no summary line}"
    # the failures (make test names them again above its summary line; details: the tail)
    grep -E '^(FAILED|ERROR) ' "$TMP/make-test.log" | head -n 200 | sed 's/^/  | /'
    tail_log "$TMP/make-test.log" 60
fi
for ((i = test_at + 1; i < ${#LINES[@]}; i++)); do
    step_line "after make test" "${LINES[$i]}" "$LINE_TIMEOUT"
done

summary
