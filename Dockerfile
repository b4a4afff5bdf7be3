# lfhttpd container image: build with Debian's packages, run on debian:bookworm-slim.
#
#   podman build --format docker -t lfhttpd .        # or: docker build -t lfhttpd .
#   podman run -d -p 127.0.0.1:8080:8080 -v ./site:/srv/www:ro lfhttpd
#
# --format docker keeps the HEALTHCHECK (podman's default OCI format drops it).
# Paths a user can mount over: /srv/www (the site), /etc/lfhttpd (lfhttpd.conf, mime.types).
# `make container-test` builds and runs this image (tests/container/run.sh).

# ---- build stage -------------------------------------------------------------------------
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc make libc6-dev node-llhttp libssl-dev libcrypt-dev zlib1g-dev libbrotli-dev \
        libzstd-dev libsystemd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY server/ server/
COPY handlers/ handlers/
COPY tools/ tools/
COPY conf/ conf/
COPY www/ www/
# The Makefile's release build: -O2, -D_FORTIFY_SOURCE=2, -fstack-protector-strong,
# -fstack-clash-protection, -fPIE -pie, -z relro -z now, -z noexecstack, -Werror.
RUN make -j"$(nproc)" \
 && strip build/lfhttpd \
 && build/lfhttpd --version

# ---- runtime stage -----------------------------------------------------------------------
FROM debian:bookworm-slim

# The path HEALTHCHECK requests: the built-in /healthz, 200 while serving and 503 once a
# graceful stop began (handlers/builtin_status.c). It can also be set per container:
# `-e LFHTTPD_HEALTHCHECK_PATH=/`.
ARG HEALTHCHECK_PATH=/healthz

# libssl3 and libbrotli1 (libcrypt1, zlib1g, libzstd1, libsystemd0 and bash are in the base
# image already; named here so that the image says what the binary links).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libssl3 \
        libbrotli1 zlib1g libzstd1 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 lfhttpd \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin lfhttpd

COPY --from=build /src/build/lfhttpd /usr/local/bin/lfhttpd
COPY tools/healthcheck.sh /usr/local/bin/lfhttpd-healthcheck
COPY conf/container.conf /etc/lfhttpd/lfhttpd.conf
COPY conf/mime.types /etc/lfhttpd/mime.types
COPY www/ /srv/www/
# Owned by root and read-only for the server: it needs no write access anywhere.
RUN lfhttpd -t -c /etc/lfhttpd/lfhttpd.conf

ENV LFHTTPD_HEALTHCHECK_PATH=${HEALTHCHECK_PATH}
LABEL org.opencontainers.image.title="lfhttpd" \
      org.opencontainers.image.description="HTTP/1.1 static web server (Leader/Followers)" \
      org.opencontainers.image.licenses="MIT"

# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
# 8080 plain HTTP; 8443 for a TLS listener configured in lfhttpd.conf.
EXPOSE 8080 8443
# SIGTERM drains: stop accepting, finish responses in flight (up to drain_timeout), exit 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["lfhttpd-healthcheck"]
# The error log (start-up, drain, stop) goes to stderr; nothing is written inside the image.
ENTRYPOINT ["lfhttpd"]
CMD ["--config", "/etc/lfhttpd/lfhttpd.conf"]
