# lfhttpd — build, test and run.
#
#   make                      build build/lfhttpd (release: -O2, hardening)
#   make SANITIZE=thread      build build-tsan/lfhttpd under ThreadSanitizer
#   make SANITIZE=address,undefined   build build-asan/lfhttpd under ASan+UBSan
#   make run                  serve www/ on http://127.0.0.1:8080 in the foreground
#   make test                 install missing Debian packages, build, run every test
#   make deps                 install missing Debian packages (apt-get, only when missing)
#   make bench                lfhttpd side by side with nginx, h2o, lighttpd and bench/ceiling
#                             (11-15 min; BENCH_QUICK=1: a ~1.5-min smoke run): docs/PERFORMANCE.md
#
# llhttp is compiled from Debian's node-llhttp sources (/usr/share/llhttp) into the
# build directory; no third-party source lives in this repository.

CC      ?= gcc
SANITIZE ?=
LLHTTP_SRC ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp

ifeq ($(SANITIZE),)
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
        -Wduplicated-cond -Wlogical-op -Wnull-dereference -Wimplicit-fallthrough
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection -fPIE
ifneq ($(SANITIZE),)
  HARDEN := -fPIE
endif

CPPFLAGS += -D_GNU_SOURCE -Iserver -Ihandlers -I$(LLHTTP_INC)
CFLAGS   += -std=gnu11 $(OPT) -fno-omit-frame-pointer $(HARDEN) $(SANFLAGS) -pthread
LDFLAGS  += -pie -Wl,-z,relro,-z,now,-z,noexecstack $(SANFLAGS) -pthread
LDLIBS   += -lssl -lcrypto -lcrypt

SRCS := $(wildcard server/*.c) $(wildcard handlers/*.c)
OBJS := $(SRCS:%.c=$(BUILD)/obj/%.o)
LIB_OBJS := $(filter-out $(BUILD)/obj/server/main.o,$(OBJS))
LLHTTP_OBJS := $(BUILD)/llhttp/llhttp.o $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run test unit deps clean check-llhttp bench bench-deps
all: $(BUILD)/lfhttpd

check-llhttp:
	@test -f $(LLHTTP_SRC)/llhttp.c || { echo "llhttp sources not found in $(LLHTTP_SRC): run 'make deps' (Debian package node-llhttp)" >&2; exit 2; }

$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c | check-llhttp
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) -fno-omit-frame-pointer -fPIE $(SANFLAGS) -I$(LLHTTP_INC) -w -c $< -o $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

$(BUILD)/liblfhttpd.a: $(LIB_OBJS) $(LLHTTP_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lfhttpd: $(BUILD)/obj/server/main.o $(BUILD)/liblfhttpd.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c tests/unit/test.h $(BUILD)/liblfhttpd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(WARN) -Wno-missing-prototypes $< $(BUILD)/liblfhttpd.a $(LDFLAGS) $(LDLIBS) -o $@

unit: $(UNIT_BINS)

deps:
	@sh tools/deps.sh

run: deps all
	./$(BUILD)/lfhttpd --config conf/lfhttpd.conf --listen 127.0.0.1:8080

test: deps all unit
	@python3 tests/run.py --build $(BUILD)

# The benchmark harness: its own packages (the peers, wrk, valgrind, strace), lfhttpd and the
# ceiling program, then bench/bench.py (BENCH_* variables: docs/PERFORMANCE.md).
bench-deps:
	@sh bench/deps.sh

$(BUILD)/ceiling: bench/ceiling.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) $(HARDEN) -pthread $< -o $@

bench: bench-deps
	@$(MAKE) --no-print-directory all $(BUILD)/ceiling
	BENCH_BUILD=$(BUILD) python3 bench/bench.py

clean:
	rm -rf build build-tsan build-asan

-include $(OBJS:.o=.d)
