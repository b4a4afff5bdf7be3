/* test_range.c — unit tests for handlers/static/range.c: Range headers (RFC 9110 14.1.2)
 * against a representation's size. */
#include "static/range.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

/* Parse `hdr` against `size` bytes; `want` lists the expected ranges as "first-last,..." (""
 * for none), `n` the expected result. */
static void expect(const char *hdr, uint64_t size, int n, const char *want)
{
    struct range rg[RANGE_MAX];
    int got = range_parse((struct strview){ hdr, strlen(hdr) }, size, rg);
    char text[512] = "";
    size_t len = 0;
    for (int i = 0; i < got && len < sizeof(text); i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%llu-%llu", i ? "," : "",
                                (unsigned long long)rg[i].first,
                                (unsigned long long)rg[i].last);
    bool pass = got == n && !strcmp(text, want);
    ok(pass, "Range: %s (size %llu)", hdr, (unsigned long long)size);
    if (!pass)
        printf("# got %d \"%s\", expected %d \"%s\"\n", got, text, n, want);
}

int main(void)
{
    /* Single ranges: first-last, open-ended, suffix; clamped to the size. */
    expect("bytes=0-99", 1000, 1, "0-99");
    expect("bytes=500-", 1000, 1, "500-999");
    expect("bytes=-100", 1000, 1, "900-999");
    expect("bytes=900-2000", 1000, 1, "900-999");
    expect("bytes=-5000", 1000, 1, "0-999");
    expect("BYTES=0-0", 10, 1, "0-0");
    expect("bytes= 1 - 2 ", 10, 1, "1-2");
    /* Several: kept in request order; overlapping and adjacent ones coalesced. */
    expect("bytes=0-9,20-29", 100, 2, "0-9,20-29");
    expect("bytes=20-29,0-9", 100, 2, "20-29,0-9");
    expect("bytes=0-9,5-14", 100, 1, "0-14");
    expect("bytes=0-9,10-19", 100, 1, "0-19");
    expect("bytes=50-59,0-9,8-52", 100, 1, "0-59");
    /* Unsatisfiable: 0 (416) when no spec is; the others are dropped. */
    expect("bytes=1000-", 1000, 0, "");
    expect("bytes=-0", 1000, 0, "");
    expect("bytes=0-0", 0, 0, "");
    expect("bytes=2000-3000,0-1", 1000, 1, "0-1");
    /* Ignored (-1): another unit, malformed, decreasing, too many specs, overflow. */
    expect("items=0-1", 1000, -1, "");
    expect("bytes=", 1000, -1, "");
    expect("bytes=-", 1000, -1, "");
    expect("bytes=abc", 1000, -1, "");
    expect("bytes=5-1", 1000, -1, "");
    expect("bytes=1-x", 1000, -1, "");
    expect("bytes=99999999999999999999-", 1000, -1, "");
    char many[256] = "bytes=0-0";
    for (int i = 1; i <= RANGE_MAX; i++) {
        size_t l = strlen(many);
        snprintf(many + l, sizeof(many) - l, ",%d-%d", 2 * i, 2 * i);
    }
    expect(many, 1000, -1, "");
    return done_testing();
}
