/* test_accept_encoding.c — unit tests for handlers/compress/accept_encoding.c: what a client's
 * Accept-Encoding (RFC 9110 12.5.3) accepts, in thousandths. */
#include "compress/accept_encoding.h"
#include "test.h"

#include <string.h>

static struct accept_enc parse(const char *hdr)
{
    struct accept_enc ae;
    compress_accept_parse(hdr ? (struct strview){ hdr, strlen(hdr) } : SV_NULL, &ae);
    return ae;
}

/* Expect q-values br, zstd, gzip and identity for `hdr`. */
static void expect(const char *hdr, int br, int zstd, int gzip, int identity)
{
    struct accept_enc ae = parse(hdr);
    bool pass = ae.q[CODING_BR] == br && ae.q[CODING_ZSTD] == zstd &&
                ae.q[CODING_GZIP] == gzip && ae.identity == identity;
    ok(pass, "Accept-Encoding: %s", hdr ? hdr : "(absent)");
    if (!pass)
        printf("# got br %d zstd %d gzip %d identity %d, expected %d %d %d %d\n",
               ae.q[CODING_BR], ae.q[CODING_ZSTD], ae.q[CODING_GZIP], ae.identity, br, zstd,
               gzip, identity);
}

static int q(const char *params)
{
    return accept_parse_q(params, params + strlen(params));
}

int main(void)
{
    /* No header, or an empty one: identity only (unlisted identity is 1: acceptable). */
    expect(NULL, 0, 0, 0, 1);
    expect("", 0, 0, 0, 1);
    /* Listed codings at q=1; identity acceptable but below them. */
    expect("gzip, deflate, br", 1000, 0, 1000, 1);
    expect("br;q=1.0, gzip;q=0.8, *;q=0.1", 1000, 100, 800, 1);
    expect("zstd, gzip;q=0.5", 0, 1000, 500, 1);
    /* Case, spaces around parameters, x-gzip as gzip. */
    expect("GZIP ; Q=0.5, Br", 1000, 0, 500, 1);
    expect("x-gzip", 0, 0, 1000, 1);
    /* The star: every coding not listed; *;q=0 excludes unlisted identity too. */
    expect("*", 1000, 1000, 1000, 1);
    expect("br, *;q=0", 1000, 0, 0, 0);
    expect("identity;q=0, gzip", 0, 0, 1000, 0);
    expect("identity;q=0.5, br;q=0.2", 200, 0, 0, 500);
    /* A malformed q drops that element only. */
    expect("br;q=2, gzip", 0, 0, 1000, 1);
    expect("br;q=abc, zstd;q=0.3", 0, 300, 0, 1);

    /* q-values: three decimals at most, 0 to 1. */
    is_int(q(";q=0.5"), 500, "q=0.5");
    is_int(q(";q=1"), 1000, "q=1");
    is_int(q(";q=1.000"), 1000, "q=1.000");
    is_int(q(";q=0.001"), 1, "q=0.001");
    is_int(q(";q=0"), 0, "q=0");
    is_int(q(""), 1000, "no q: 1");
    is_int(q(";level=1"), 1000, "another parameter: 1");
    is_int(q(";q=1.5"), -1, "q above 1 is malformed");
    is_int(q(";q=2"), -1, "q=2 is malformed");
    is_int(q(";q="), -1, "an empty q is malformed");
    is_int(q(";q=0.5x"), -1, "trailing garbage is malformed");
    return done_testing();
}
