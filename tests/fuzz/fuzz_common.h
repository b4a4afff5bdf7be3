/* fuzz_common.h — shared pieces of the libFuzzer harnesses (tests/fuzz/).
 *
 * Header-only on purpose: each harness is one translation unit linked against liblfhttpd.a. */
#ifndef LF_FUZZ_COMMON_H
#define LF_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "daemon/setup.h"

/* Abort with a message: libFuzzer records the input as a crash. */
#define FZ_CHECK(cond)                                                                     \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* Deterministic split points: the input's first bytes seed the generator, so the fuzzer
 * mutates where a stream is cut as well as what it contains. */
struct fz_rng {
    uint64_t s;
};

static inline uint32_t fz_next(struct fz_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 16);
}

/* A chunk length in 1..max, biased towards small pieces (1-byte reads are where split-point
 * bugs live) but sometimes whole. */
static inline size_t fz_chunk(struct fz_rng *r, size_t max)
{
    if (max <= 1)
        return max;
    uint32_t v = fz_next(r);
    switch (v & 3) {
    case 0:
        return 1;
    case 1:
        return 1 + (v >> 2) % (max < 16 ? max : 16);
    case 2:
        return 1 + (v >> 2) % max;
    default:
        return max;
    }
}

/* Default configuration (as with no file and no flags), with `root` as document root. */
static inline void fz_config(struct config *cfg, const char *root)
{
    char a0[] = "lfhttpd", a1[] = "--root", a2[PATH_MAX];
    snprintf(a2, sizeof(a2), "%s", root);
    char *argv[] = { a0, a1, a2, NULL };
    daemon_setup_conf(); /* the handler types' directives, as main() does */
    if (config_from_args(cfg, 3, argv) != CONFIG_OK)
        abort();
}

/* Configuration byte: with bit 0 set, small limits, so that 413/414/431 are reachable from
 * short inputs. */
static inline void fz_limits(struct config *cfg, uint8_t sel)
{
    if (sel & 1) {
        cfg->http.max_head_size = 1024;
        cfg->http.max_headers = 8;
        cfg->http.max_uri_length = 64;
        cfg->http.max_body_size = 100;
    } else {
        cfg->http.max_head_size = 16 * 1024;
        cfg->http.max_headers = 100;
        cfg->http.max_uri_length = 8 * 1024;
        cfg->http.max_body_size = 1024 * 1024;
    }
}

#endif
