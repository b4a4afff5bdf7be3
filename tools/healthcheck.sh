#!/bin/bash
# lfhttpd-healthcheck [PATH] — the container image's HEALTHCHECK (installed there as
# /usr/local/bin/lfhttpd-healthcheck). Exit 0 when `GET PATH` on 127.0.0.1 answers 200,
# 1 otherwise. Needs only bash (its /dev/tcp), so the image carries no curl or wget.
#
# PATH defaults to $LFHTTPD_HEALTHCHECK_PATH (set by the Dockerfile), then /healthz;
# the port is $LFHTTPD_HEALTHCHECK_PORT, default 8080.
set -u
path=${1:-${LFHTTPD_HEALTHCHECK_PATH:-/healthz}}
port=${LFHTTPD_HEALTHCHECK_PORT:-8080}

if ! { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
    echo "unhealthy: cannot connect to 127.0.0.1:$port" >&2
    exit 1
fi
printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: lfhttpd-healthcheck\r\nConnection: close\r\n\r\n' \
    "$path" >&3
if ! IFS= read -r -t 5 status <&3; then
    echo "unhealthy: no response to GET $path" >&2
    exit 1
fi
exec 3<&-
status=${status%$'\r'}
case $status in
    "HTTP/1."[01]" 200 "*) exit 0 ;;
esac
echo "unhealthy: GET $path: $status" >&2
exit 1
