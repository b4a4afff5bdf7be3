# lfhttpd container image: built with Debian's packages; the runtime image holds only the
# server, the shared libraries it loads, its configuration and the default site (13.7 MB
# uncompressed; `make container-test` fails it above 20 MB).
#
#   podman build --format docker -t lfhttpd .        # or: docker build -t lfhttpd .
#   podman run -d -p 127.0.0.1:8080:8080 --read-only --cap-drop=ALL -v ./site:/srv/www:ro lfhttpd
#
# --format docker keeps the HEALTHCHECK (podman's default OCI format drops it).
# Paths a user can mount over: /srv/www (the site), /etc/lfhttpd (lfhttpd.conf, mime.types).
# There is no shell in the image: no CGI scripts either (build an image FROM this one with
# the interpreters they need), and the health check is the server itself (lfhttpd --probe).
# `make container-test` builds and runs this image (tests/container/run.sh).

# ---- build stage -------------------------------------------------------------------------
# It runs on the machine that builds (BUILDPLATFORM) and cross-compiles when the image is for
# another architecture (`podman build --platform linux/arm64`, `docker buildx build
# --platform linux/amd64,linux/arm64`): Debian's cross compiler and the target's libraries
# through multiarch, so no step of the build runs under emulation.
# (BuildKit sets BUILDPLATFORM and TARGETARCH itself; podman 4 sets TARGETARCH from
# --platform, and BUILDPLATFORM is given: --build-arg BUILDPLATFORM=linux/amd64.)
ARG BUILDPLATFORM
FROM --platform=$BUILDPLATFORM debian:bookworm-slim AS build
ARG TARGETARCH
RUN set -eu; build=$(dpkg --print-architecture); arch=${TARGETARCH:-$build}; \
    libs="libc6-dev libssl-dev libcrypt-dev zlib1g-dev libbrotli-dev libzstd-dev libsystemd-dev \
          libjson-c-dev"; \
    if [ "$arch" = "$build" ]; then tools="gcc"; \
    else dpkg --add-architecture "$arch"; tools="crossbuild-essential-$arch"; \
         libs=$(for l in $libs; do printf '%s:%s ' "$l" "$arch"; done); fi; \
    apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        make binutils node-llhttp ca-certificates $tools $libs \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY server/ server/
COPY handlers/ handlers/
COPY tools/ tools/
# The Makefile's release build: -O2, -D_FORTIFY_SOURCE=2, -fstack-protector-strong,
# -fstack-clash-protection, -fPIE -pie, -z relro -z now, -z noexecstack, -Werror.
RUN set -eu; build=$(dpkg --print-architecture); arch=${TARGETARCH:-$build}; cross=""; \
    case $arch in "$build") ;; arm64) cross=aarch64-linux-gnu- ;; \
        *) echo "no cross compiler named for $arch" >&2; exit 1 ;; esac; \
    make -j"$(nproc)" CC=${cross}gcc \
 && ${cross}strip build/lfhttpd \
 && readelf -h build/lfhttpd | grep Machine

# The runtime root filesystem in /rootfs: the binary and the libraries it loads, found from
# the binary (tools/image-rootfs.sh); the configuration; the site without its CGI demos
# (there is no /bin/sh to run them). Checked by running the server's -t chrooted into it.
COPY conf/container.conf /rootfs/etc/lfhttpd/lfhttpd.conf
COPY conf/mime.types /rootfs/etc/lfhttpd/mime.types
COPY www/ /rootfs/srv/www/
RUN sh tools/image-rootfs.sh build/lfhttpd /rootfs \
 && mkdir -p /rootfs/etc/ssl/certs \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && rm -rf /rootfs/srv/www/cgi-bin \
 && if [ "${TARGETARCH:-$(dpkg --print-architecture)}" = "$(dpkg --print-architecture)" ]; then \
        chroot /rootfs /usr/local/bin/lfhttpd -t -c /etc/lfhttpd/lfhttpd.conf; fi

# ---- runtime stage: nothing but /rootfs ----------------------------------------------------
FROM scratch
COPY --from=build /rootfs/ /

LABEL org.opencontainers.image.title="lfhttpd" \
      org.opencontainers.image.description="HTTP/1.1 static web server (Leader/Followers)" \
      org.opencontainers.image.licenses="MIT"

# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd. The
# server writes nothing: run it with a read-only root filesystem and no capabilities.
# The public CAs' roots (Debian's ca-certificates, one file): what the ACME client verifies its
# CA's HTTPS against when acme_ca_bundle is not given, as OpenSSL reads SSL_CERT_FILE.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 10001:10001
# 8080 plain HTTP; 8443 for a TLS listener configured in lfhttpd.conf.
EXPOSE 8080 8443
# SIGTERM drains: stop accepting (after drain_delay, if set), finish responses in flight (up
# to drain_timeout), exit 0.
STOPSIGNAL SIGTERM
# The server asks itself: 0 for a 2xx/3xx answer of /readyz, 1 otherwise (503 once a stop
# began). A configuration listening elsewhere needs its own HEALTHCHECK.
HEALTHCHECK --interval=10s --timeout=10s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/lfhttpd", "--probe", "http://127.0.0.1:8080/readyz"]
# The error log (start-up, drain, stop) goes to stderr, the access log to stdout.
ENTRYPOINT ["/usr/local/bin/lfhttpd"]
CMD ["--config", "/etc/lfhttpd/lfhttpd.conf"]
