/* test_fmt.c — unit tests for server/base/fmt.h: numbers without printf. */
#include "base/fmt.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* fmt_u64 (or fmt_hex_u64) of v is what printf writes for it. */
static bool as_printf(uint64_t v, bool hex)
{
    char got[FMT_U64_MAX + 1], want[32];
    size_t n = hex ? fmt_hex_u64(got, v) : fmt_u64(got, v);
    snprintf(want, sizeof(want), hex ? "%" PRIx64 : "%" PRIu64, v);
    return n == strlen(want) && memcmp(got, want, n) == 0;
}

int main(void)
{
    static const uint64_t values[] = { 0, 1, 9, 10, 99, 100, 4096, 65535, 1000000007,
                                       UINT64_C(1) << 32, UINT64_MAX / 10, UINT64_MAX };
    bool all = true;
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        all = all && as_printf(values[i], false) && as_printf(values[i], true);
    for (uint64_t v = 1; v < UINT64_MAX / 3; v = v * 3 + 1)
        for (uint64_t w = v - 1; w <= v; w++)
            all = all && as_printf(w, false) && as_printf(w, true);
    ok(all, "fmt_u64 and fmt_hex_u64 write what printf's %%" PRIu64 " and %%" PRIx64 " do");
    char buf[FMT_U64_MAX + 2];
    memset(buf, 'x', sizeof(buf));
    ok(fmt_u64(buf, UINT64_MAX) == FMT_U64_MAX && buf[FMT_U64_MAX] == 'x',
       "the largest is FMT_U64_MAX digits, nothing written after them");
    memset(buf, 'x', sizeof(buf));
    ok(fmt_hex_u64(buf, UINT64_MAX) == FMT_HEX_U64_MAX && buf[FMT_HEX_U64_MAX] == 'x',
       "in hex FMT_HEX_U64_MAX digits");
    memset(buf, 'x', sizeof(buf));
    ok(fmt_hex_u64(buf, 0x4000) == 4 && !memcmp(buf, "4000", 4) && fmt_hex_u64(buf, 0) == 1 &&
           buf[0] == '0',
       "a 16 KiB chunk is 4000, an empty one 0");

    char two[3] = { 0 };
    fmt_2digits(two, 7);
    is_str(two, "07", "fmt_2digits: a leading zero");
    fmt_2digits(two, 59);
    is_str(two, "59", "two digits");
    fmt_2digits(two, 2026);
    is_str(two, "26", "only the last two");
    return done_testing();
}
