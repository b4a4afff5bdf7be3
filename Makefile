# lfhttpd — build, test and run.
#
#   make                      build build/lfhttpd (release: -O2, hardening)
#   make SANITIZE=thread      build build-tsan/lfhttpd under ThreadSanitizer
#   make SANITIZE=address,undefined   build build-asan/lfhttpd under ASan+UBSan
#   make run                  install missing build packages, build, serve www/ on
#                             http://127.0.0.1:8080 in the foreground (RUN_LISTEN=ADDR:PORT)
#   make test                 install missing packages, build, run every test
#                             (TESTS=SUBSTRING: only the tests whose name contains it)
#   make deps                 install the missing Debian packages of the build and the tests
#   make install              install into PREFIX (default /usr/local; DESTDIR for staging):
#                             sbin/lfhttpd, share/lfhttpd/www, the man pages, the systemd units
#                             (UNITDIR), /etc/lfhttpd (SYSCONFDIR; an existing file is never
#                             overwritten), /etc/logrotate.d/lfhttpd, /var/log/lfhttpd (LOGDIR)
#   make uninstall            remove what install put there (not a changed configuration, not logs)
#   make man                  the man pages lfhttpd(8) and lfhttpd.conf(5), from README.md, in
#                             build/man/
#   make package              the Debian package (dpkg-buildpackage -b on a copy of the tree;
#                             its test subset runs): build/package/lfhttpd_VERSION_ARCH.deb
#   make package-test         make package, then lintian and checks of the .deb's contents
#                             (tests/package/run.sh)
#   make package-install-test the .deb installed with apt-get in a fresh bookworm container, then
#                             serving the default site (tests/package/container.sh; as root)
#   make container-test       build the container image with podman and test it (as root;
#                             installs podman and makes a local base image when missing)
#   make quickstart-test      the README's quick start, line by line, in a fresh bookworm
#                             container: make run serves, make test passes (as root; podman)
#   make fuzz                 build the libFuzzer harnesses (clang, ASan+UBSan) in build-fuzz/
#   make fuzz-run FUZZ_SECONDS=60   replay tests/fuzz/regression/, then fuzz each harness
#   make soak                 mixed checked traffic, reloads and log rotations for SOAK_SECONDS
#                             (default 600); fails on growth or on any error a client sees
#   make analyze              cppcheck over server/ and handlers/ (tools/analyze.sh; false
#                             positives in tools/cppcheck-suppressions.xml): nothing may be found
#   make arm64-test           cross-build for arm64 (Debian's cross compiler and multiarch
#                             libraries) into build-arm64/, then run its unit tests and the
#                             server under qemu-user (tests/cross/run.sh; installs them as root)
#   make arm64-image-test     the container image for linux/arm64 (podman build --platform),
#                             run under qemu-user (tests/cross/image.sh; as root)
#   make bench                lfhttpd side by side with nginx, h2o, lighttpd and bench/ceiling
#                             (15-20 min; BENCH_QUICK=1: a ~2-min smoke run), then what dcz
#                             saves on a real release (bench/dictionary.py; npm): PERFORMANCE.md
#   make bench-quick          every throughput scenario once against nginx, h2o and lighttpd
#                             (logs off; ~2.5 min on 2 cores), then the ratio table: lfhttpd, the
#                             best peer, ratio, p99 and CPU per request (BENCH_DURATION=3 s)
#
# llhttp is compiled from Debian's node-llhttp sources (/usr/share/llhttp) into the
# build directory; no third-party source lives in this repository.

# ---- Goals that install packages: two passes -----------------------------------------------
# GNU make reads a directory once and keeps what it saw, so a make that installs packages
# cannot build from them: /usr/share/llhttp did not exist when it looked, and the rule for
# build/llhttp/%.o no longer matches once the install has made it ("No rule to make target").
# So a goal listed in DEPS_GOALS only installs what its DEPS_SETS name (tools/deps.sh), then
# starts make again with the same goals and variables; that second make sees the machine as
# it is after the install. A new goal that needs packages goes into DEPS_GOALS (and its sets
# into DEPS_SETS); `deps` as a prerequisite is refused below, so it cannot be forgotten.
DEPS_GOALS := run test fuzz fuzz-run container-test quickstart-test bench bench-quick install \
              man package \
              package-test package-install-test soak arm64-test arm64-image-test analyze
DEPS_SETS  := build \
    $(if $(filter test fuzz-run container-test quickstart-test soak,$(MAKECMDGOALS)),test) \
    $(if $(filter package package-test package-install-test,$(MAKECMDGOALS)),package) \
    $(if $(filter fuzz fuzz-run,$(MAKECMDGOALS)),fuzz) \
    $(if $(filter bench bench-quick,$(MAKECMDGOALS)),bench) \
    $(if $(filter analyze,$(MAKECMDGOALS)),analyze) \
    $(if $(filter arm64-test arm64-image-test,$(MAKECMDGOALS)),arm64)

ifneq ($(filter $(DEPS_GOALS),$(MAKECMDGOALS)),)
ifndef LFHTTPD_DEPS_DONE
# The first pass: every goal waits for the install and the second make, then does nothing.
.PHONY: $(MAKECMDGOALS) deps-then-make
$(MAKECMDGOALS): deps-then-make
	@:
deps-then-make:
	@sh tools/deps.sh $(DEPS_SETS)
	@$(MAKE) --no-print-directory LFHTTPD_DEPS_DONE=1 $(MAKECMDGOALS)
LFHTTPD_FIRST_PASS := 1
endif
endif

ifndef LFHTTPD_FIRST_PASS
CC      ?= gcc
SANITIZE ?=
LLHTTP_SRC ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp
# llhttp's strict mode: the loose parser takes "\r<any byte>" for a line end (so a bare CR can
# end a head or a chunk-size line: request smuggling), accepts whitespace inside and before field
# names and raw bytes >= 0x80 and HTAB in the request-target. RFC 9112 requires rejecting all of
# these (2.2, 5.1, 3.2). Strict mode changes nothing that a conforming client sends.
LLHTTP_DEFS := -DLLHTTP_STRICT_MODE=1

ifeq ($(FUZZ),1)
  # libFuzzer harnesses (tests/fuzz/): clang; the library is instrumented for coverage
  # (fuzzer-no-link), only the harness binaries link libFuzzer's main. Carry buffers are not
  # cached, so that ASan sees every use after release.
  CC    := clang
  BUILD ?= build-fuzz
  OPT   ?= -O1 -g
  SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
  CPPFLAGS += -DCARRY_CACHE=0
else ifeq ($(SANITIZE),)
  BUILD ?= build
  OPT   ?= -O2 -g
  SANFLAGS :=
else ifeq ($(SANITIZE),thread)
  BUILD ?= build-tsan
  OPT   ?= -O1 -g
  SANFLAGS := -fsanitize=thread
else
  BUILD ?= build-asan
  OPT   ?= -O1 -g
  SANFLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wundef -Wvla -Wpointer-arith -Wwrite-strings -Wcast-qual \
        -Wnull-dereference
ifneq ($(FUZZ),1)
  # gcc only (clang 14 lacks the first two and does not read /* fall through */ comments)
  WARN += -Wduplicated-cond -Wlogical-op -Wimplicit-fallthrough
endif
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection -fPIE
ifneq ($(SANITIZE)$(FUZZ),)
  HARDEN := -fPIE
endif

CPPFLAGS += -D_GNU_SOURCE $(LLHTTP_DEFS) -Iserver -Ihandlers -I$(LLHTTP_INC)
CFLAGS   += -std=gnu11 $(OPT) -fno-omit-frame-pointer $(HARDEN) $(SANFLAGS) -pthread
LDFLAGS  += -pie -Wl,-z,relro,-z,now,-z,noexecstack $(SANFLAGS) -pthread
LDLIBS   += -lssl -lcrypto -lcrypt -lz -lbrotlienc -lzstd -lsystemd -ljson-c

SRCS := $(wildcard server/*/*.c) $(wildcard handlers/*.c handlers/*/*.c)
# Assembler files: data embedded at build time (handlers/builtin/status_html.S: status.html).
ASM_SRCS := $(wildcard handlers/*/*.S)
OBJS := $(SRCS:%.c=$(BUILD)/obj/%.o) $(ASM_SRCS:%.S=$(BUILD)/obj/%.o)
LIB_OBJS := $(filter-out $(BUILD)/obj/server/daemon/main.o,$(OBJS))
LLHTTP_OBJS := $(BUILD)/llhttp/llhttp.o $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

FUZZERS := fuzz_request fuzz_connection fuzz_config fuzz_rules
FUZZ_SECONDS ?= 60

.PHONY: all run test unit deps clean check-llhttp fuzz fuzz-bins fuzz-run container-test \
        quickstart-test bench bench-quick install uninstall man package package-test \
        package-install-test soak
all: $(BUILD)/lfhttpd

check-llhttp:
	@test -f $(LLHTTP_SRC)/llhttp.c || { echo "llhttp sources not found in $(LLHTTP_SRC): run 'make deps' (Debian package node-llhttp)" >&2; exit 2; }

$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c Makefile | check-llhttp
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) -fno-omit-frame-pointer -fPIE $(SANFLAGS) $(LLHTTP_DEFS) -I$(LLHTTP_INC) -w -c $< -o $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

# .incbin reads its file relative to the directory make runs in (the top of the tree).
$(BUILD)/obj/%.o: %.S
	@mkdir -p $(@D)
	$(CC) -c $< -o $@
$(BUILD)/obj/handlers/builtin/status_html.o: handlers/builtin/status.html

$(BUILD)/liblfhttpd.a: $(LIB_OBJS) $(LLHTTP_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lfhttpd: $(BUILD)/obj/server/daemon/main.o $(BUILD)/liblfhttpd.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c tests/unit/test.h tests/unit/alloc_count.h $(BUILD)/liblfhttpd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(WARN) -Wno-missing-prototypes $< $(BUILD)/liblfhttpd.a $(LDFLAGS) $(LDLIBS) -o $@

# test_client_limits counts every allocation the library makes (none may follow the table's);
# test_rules too (matching and expanding a rule allocate nothing). tests/unit/alloc_count.h.
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc
$(BUILD)/tests/test_client_limits: private LDFLAGS += $(ALLOC_WRAP)
$(BUILD)/tests/test_rules: private LDFLAGS += $(ALLOC_WRAP)

# tests/acme/acme_drive: drives server/acme/ against the test CA (tests/integration/test_acme.py)
$(BUILD)/tests/acme_drive: tests/acme/acme_drive.c $(BUILD)/liblfhttpd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $< $(BUILD)/liblfhttpd.a $(LDFLAGS) $(LDLIBS) -o $@

unit: $(UNIT_BINS) $(BUILD)/tests/acme_drive

# `make deps` installs what the build and the tests need. As a prerequisite it would install
# too late for the make that runs it (see the top): list the goal in DEPS_GOALS instead.
deps:
ifeq ($(filter deps,$(MAKECMDGOALS)),)
	@echo "Makefile: a goal needs 'deps' as a prerequisite; list it in DEPS_GOALS instead" >&2; exit 2
endif
	@sh tools/deps.sh build test

# Fuzzing: `make fuzz` builds build-fuzz/fuzz/<harness>; `make fuzz-run` replays every
# regression input and seed, then fuzzes each harness for FUZZ_SECONDS (tools/fuzz.sh).
fuzz:
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-bins

fuzz-bins: $(FUZZERS:%=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(BUILD)/liblfhttpd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/fuzz $(CFLAGS) $(WARN) -Wno-missing-prototypes -fsanitize=fuzzer $< $(BUILD)/liblfhttpd.a $(LDFLAGS) $(LDLIBS) -o $@

fuzz-run:
	@$(MAKE) --no-print-directory FUZZ=1 fuzz-bins
	@sh tools/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZERS)

RUN_LISTEN ?= 127.0.0.1:8080
run: all
	./$(BUILD)/lfhttpd --config conf/lfhttpd.conf --listen $(RUN_LISTEN)

# CONCURRENCY=half-sync-half-async|reuseport|leader-followers-edge runs the suite under that
# strategy; TESTS=NAME only the tests whose name contains NAME (A,B: either): the unit tests
# named unit/test_x (run by prove), the others selected with pytest -k NAME (tests/suite.sh).
# With TESTS, only the unit tests it selects are built.
comma := ,
TEST_UNITS := $(if $(TESTS),$(foreach b,$(UNIT_BINS),$(if $(strip $(foreach t,$(subst $(comma), ,$(TESTS)),$(findstring $(t),unit/$(notdir $(b))))),$(b))),$(UNIT_BINS))
test: all $(TEST_UNITS) $(BUILD)/fault/libfault.so $(BUILD)/tests/acme_drive
	@sh tests/suite.sh --build $(BUILD) $(if $(CONCURRENCY),--concurrency $(CONCURRENCY)) \
	    $(if $(TESTS),--tests '$(TESTS)')

container-test:
	@bash tests/container/run.sh

# Static analysis: its last line is "N passed, N failed" (source files without a finding, and
# those with one), as .ci/run reads it.
.PHONY: analyze
analyze:
	@LLHTTP_INC=$(LLHTTP_INC) sh tools/analyze.sh $(BUILD)

quickstart-test:
	@bash tests/quickstart/run.sh

# arm64: the same sources and flags with Debian's cross compiler; what it builds runs here
# under qemu-user (tests/cross/run.sh). ARM64_BUILD is its build directory.
ARM64_BUILD ?= build-arm64
.PHONY: arm64-test
arm64-test:
	@$(MAKE) --no-print-directory CC=aarch64-linux-gnu-gcc BUILD=$(ARM64_BUILD) \
	    $(ARM64_BUILD)/lfhttpd unit
	@bash tests/cross/run.sh $(ARM64_BUILD)

# The container image for linux/arm64 from the same Dockerfile (its build stage cross-compiles),
# run under qemu-user through the kernel's binfmt handler (tests/cross/image.sh; as root).
.PHONY: arm64-image-test
arm64-image-test:
	@bash tests/cross/image.sh

# The soak (tests/soak.py): samples and a summary in $(BUILD)/soak/; the last line is
# "N passed, N failed", one per check.
SOAK_SECONDS ?= 600
soak: all
	@PYTHONPATH=tests python3 tests/soak.py --build $(BUILD) --seconds $(SOAK_SECONDS)

# The benchmark harness: its own packages (the peers, wrk, valgrind, strace), lfhttpd and the
# ceiling program, then bench/bench.py (BENCH_* variables: docs/PERFORMANCE.md).
$(BUILD)/ceiling: bench/ceiling.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) $(HARDEN) -pthread $< -o $@

# bench/alloccount.c: an LD_PRELOAD allocation counter (the strategies phase)
$(BUILD)/alloccount.so: bench/alloccount.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -fPIC -shared $< -o $@

# bench/lfcosts.c: the primitives of the Leader/Followers hand-off (docs/PERFORMANCE.md,
# "Past two cores"): make build/lfcosts && build/lfcosts
$(BUILD)/lfcosts: bench/lfcosts.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -pthread $< -o $@

# tests/fault/fault.c: the LD_PRELOAD fault injector of the fault tests (tests/lib/fault.py).
# Not instrumented: it forwards to whatever comes next (libc, or a sanitizer's interceptors).
$(BUILD)/fault/libfault.so: tests/fault/fault.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARN) -fPIC -shared $< -ldl -o $@

bench: all $(BUILD)/ceiling $(BUILD)/alloccount.so
	BENCH_BUILD=$(BUILD) python3 bench/bench.py
	python3 bench/dictionary.py

# One round of every throughput scenario against every peer, logs off: the ratio table
# (docs/PERFORMANCE.md, "Running it"). BENCH_* variables given to make or in the environment
# override these.
BENCH_QUICK_ENV := BENCH_QUICK=1 BENCH_PHASES=throughput BENCH_ROUNDS=$${BENCH_ROUNDS:-1} BENCH_LOGS=0 \
    BENCH_DURATION=$${BENCH_DURATION:-3} BENCH_SERVERS=$${BENCH_SERVERS:-lfhttpd,nginx,h2o,lighttpd} \
    BENCH_OUT=$${BENCH_OUT:-$(BUILD)/bench-quick}
bench-quick: all
	$(BENCH_QUICK_ENV) BENCH_BUILD=$(BUILD) python3 bench/bench.py

# ---- Installing -------------------------------------------------------------------------------
# The paths written into the installed configuration, units, logrotate snippet and man pages.
# DESTDIR only prefixes where files are copied (staging, packages), never those paths.
PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
SYSCONFDIR ?= /etc
LOGDIR     ?= /var/log/lfhttpd
UNITDIR    ?= $(PREFIX)/lib/systemd/system
# The account the service runs as (the package creates lfhttpd; make install users create it).
SERVICE_USER  ?= lfhttpd
SERVICE_GROUP ?= lfhttpd
DIST := $(BUILD)/dist
SUBST := sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
             -e 's|@DATADIR@|$(DATADIR)|g' -e 's|@LOGDIR@|$(LOGDIR)|g' -e 's|@UNITDIR@|$(UNITDIR)|g' \
             -e 's|@SERVICE_USER@|$(SERVICE_USER)|g' -e 's|@SERVICE_GROUP@|$(SERVICE_GROUP)|g'
# The default site: www/ without the CGI demos (the installed configuration runs no CGI).
SITE_FILES = $(shell find www -path www/cgi-bin -prune -o -type f -print)

# Everything whose text holds an installation path, made again on every call (the paths are
# variables of this call): build/dist/.
man:
	@rm -rf $(DIST) && mkdir -p $(DIST) $(BUILD)/man
	@for page in lfhttpd.8 lfhttpd.conf.5; do \
	    python3 tools/mkman.py README.md man/$$page.in $(DIST)/$$page.mdoc && \
	    $(SUBST) $(DIST)/$$page.mdoc > $(BUILD)/man/$$page && \
	    cp $(BUILD)/man/$$page $(DIST)/$$page || exit 1; \
	done
	@$(SUBST) conf/system.conf.in > $(DIST)/lfhttpd.conf
	@$(SUBST) deploy/systemd/lfhttpd.service.in > $(DIST)/lfhttpd.service
	@$(SUBST) deploy/logrotate/lfhttpd.in > $(DIST)/logrotate

install: all man
	install -D -m 755 $(BUILD)/lfhttpd $(DESTDIR)$(SBINDIR)/lfhttpd
	@for f in $(SITE_FILES); do \
	    install -D -m 644 $$f $(DESTDIR)$(DATADIR)/lfhttpd/$$f || exit 1; \
	done
	install -D -m 644 $(DIST)/lfhttpd.8 $(DESTDIR)$(MANDIR)/man8/lfhttpd.8
	install -D -m 644 $(DIST)/lfhttpd.conf.5 $(DESTDIR)$(MANDIR)/man5/lfhttpd.conf.5
	install -D -m 644 $(DIST)/lfhttpd.service $(DESTDIR)$(UNITDIR)/lfhttpd.service
	install -D -m 644 deploy/systemd/lfhttpd.socket $(DESTDIR)$(UNITDIR)/lfhttpd.socket
	install -D -m 644 $(DIST)/logrotate $(DESTDIR)$(SYSCONFDIR)/logrotate.d/lfhttpd
	install -d -m 755 $(DESTDIR)$(LOGDIR)
	@# The configuration: an existing file is the administrator's, never overwritten.
	@for f in lfhttpd.conf:$(DIST)/lfhttpd.conf mime.types:conf/mime.types; do \
	    dest=$(DESTDIR)$(SYSCONFDIR)/lfhttpd/$${f%%:*}; \
	    if [ -e $$dest ]; then echo "install: kept $$dest (the new one is $${f#*:})"; \
	    else echo "install -D -m 644 $${f#*:} $$dest"; install -D -m 644 $${f#*:} $$dest || exit 1; fi; \
	done

# Removes what install put there; a configuration file is removed only when unchanged, logs
# never.
uninstall: man
	rm -f $(DESTDIR)$(SBINDIR)/lfhttpd
	rm -rf $(DESTDIR)$(DATADIR)/lfhttpd
	rm -f $(DESTDIR)$(MANDIR)/man8/lfhttpd.8 $(DESTDIR)$(MANDIR)/man5/lfhttpd.conf.5
	rm -f $(DESTDIR)$(UNITDIR)/lfhttpd.service $(DESTDIR)$(UNITDIR)/lfhttpd.socket
	rm -f $(DESTDIR)$(SYSCONFDIR)/logrotate.d/lfhttpd
	@for f in lfhttpd.conf:$(DIST)/lfhttpd.conf mime.types:conf/mime.types; do \
	    dest=$(DESTDIR)$(SYSCONFDIR)/lfhttpd/$${f%%:*}; \
	    if [ -e $$dest ] && ! cmp -s $$dest $${f#*:}; then echo "uninstall: kept $$dest (changed)"; \
	    else rm -f $$dest; fi; \
	done
	@rmdir $(DESTDIR)$(SYSCONFDIR)/lfhttpd $(DESTDIR)$(LOGDIR) 2>/dev/null || true

# The Debian package (debian/): built from a copy of the tree, so that neither dh clean nor
# dpkg-buildpackage's output next to the source touch this one.
package:
	@bash tests/package/build.sh build/package

package-test:
	@bash tests/package/run.sh

package-install-test:
	@bash tests/package/container.sh

clean:
	rm -rf build build-tsan build-asan build-fuzz

-include $(OBJS:.o=.d)

endif # LFHTTPD_FIRST_PASS
