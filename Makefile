# lfhttpd — build, test and run.
#
#   make                      build build/lfhttpd (release: -O2, hardening)
#   make SANITIZE=thread      build build-tsan/lfhttpd under ThreadSanitizer
#   make SANITIZE=address,undefined   build build-asan/lfhttpd under ASan+UBSan
#   make run                  serve www/ on http://127.0.0.1:8080 in the foreground
#   make test                 install missing Debian packages, build, run every test
#   make deps                 install missing Debian packages (apt-get, only when missing)
#
# llhttp is compiled from Debian's node-llhttp sources (/usr/share/llhttp) into the
# build directory; no third-party source lives in this repository.

CC      ?= gcc
SANITIZE ?=
LLHTTP_SRC ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp
# llhttp's strict mode: the loose parser takes "\r<any byte>" for a line end (so a bare CR can
# end a head or a chunk-size line: request smuggling), accepts whitespace inside and before field
# names and raw bytes >= 0x80 and HTAB in the request-target. RFC 9112 requires rejecting all of
# these (2.2, 5.1, 3.2). Strict mode changes nothing that a conforming client sends.
LLHTTP_DEFS := -DLLHTTP_STRICT_MODE=1

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

CPPFLAGS += -D_GNU_SOURCE $(LLHTTP_DEFS) -Iserver -Ihandlers -I$(LLHTTP_INC)
CFLAGS   += -std=gnu11 $(OPT) -fno-omit-frame-pointer $(HARDEN) $(SANFLAGS) -pthread
LDFLAGS  += -pie -Wl,-z,relro,-z,now,-z,noexecstack $(SANFLAGS) -pthread
LDLIBS   += -lssl -lcrypto -lcrypt

SRCS := $(wildcard server/*.c) $(wildcard handlers/*.c)
OBJS := $(SRCS:%.c=$(BUILD)/obj/%.o)
LIB_OBJS := $(filter-out $(BUILD)/obj/server/main.o,$(OBJS))
LLHTTP_OBJS := $(BUILD)/llhttp/llhttp.o $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run test unit deps clean check-llhttp
all: $(BUILD)/lfhttpd

check-llhttp:
	@test -f $(LLHTTP_SRC)/llhttp.c || { echo "llhttp sources not found in $(LLHTTP_SRC): run 'make deps' (Debian package node-llhttp)" >&2; exit 2; }

$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c Makefile | check-llhttp
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPT) -fno-omit-frame-pointer -fPIE $(SANFLAGS) $(LLHTTP_DEFS) -I$(LLHTTP_INC) -w -c $< -o $@

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

clean:
	rm -rf build build-tsan build-asan

-include $(OBJS:.o=.d)
