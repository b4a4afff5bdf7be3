/* test_hex.c — unit tests for server/base/hex.h: digits of both cases, decoding, chunk sizes. */
#include "base/hex.h"
#include "test.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool formats_as(uint64_t v, const char *want)
{
    char out[HEX_U64_MAX + 1];
    size_t n = hex_format_u64(v, out);
    return n == strlen(want) && memcmp(out, want, n) == 0;
}

int main(void)
{
    char lo[17] = { 0 }, up[17] = { 0 };
    for (unsigned v = 0; v < 16; v++) {
        lo[v] = hex_lower(v);
        up[v] = hex_upper(v);
    }
    is_str(lo, "0123456789abcdef", "lowercase digits");
    is_str(up, "0123456789ABCDEF", "uppercase digits");
    ok(hex_lower(0xab) == 'b' && hex_upper(0x1f0) == '0', "only the low four bits count");

    bool all = true;
    for (int c = 0; c < 256; c++) {
        int want = c >= '0' && c <= '9' ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
        if (hex_value((unsigned char)c) != want || hex_is_digit((unsigned char)c) != (want >= 0)) {
            printf("# byte 0x%02x: %d\n", c, hex_value((unsigned char)c));
            all = false;
        }
    }
    ok(all, "hex_value and hex_is_digit agree with the definition on every byte");
    for (unsigned v = 0; v < 16; v++)
        all = all && hex_value((unsigned char)hex_lower(v)) == (int)v &&
              hex_value((unsigned char)hex_upper(v)) == (int)v;
    ok(all, "every digit decodes back to its value");

    ok(hex_pair("41") == 0x41 && hex_pair("fF") == 0xff && hex_pair("00") == 0, "hex_pair");
    ok(hex_pair("4g") == -1 && hex_pair("g4") == -1 && hex_pair("4") == -1,
       "hex_pair: -1 unless both are digits (the NUL is not one)");
    ok(formats_as(0, "0"), "0 is \"0\"");
    ok(formats_as(1, "1"), "1");
    ok(formats_as(15, "f"), "15 is f");
    ok(formats_as(16, "10"), "16 is 10");
    ok(formats_as(0x4000, "4000"), "a 16 KiB chunk");
    ok(formats_as(0xdeadbeef, "deadbeef"), "lowercase, no leading zeros");
    ok(formats_as(UINT64_MAX, "ffffffffffffffff"), "the largest fills HEX_U64_MAX");
    char buf[HEX_U64_MAX + 2];
    memset(buf, 'x', sizeof(buf));
    size_t n = hex_format_u64(0x123, buf);
    ok(n == 3 && buf[3] == 'x', "nothing written past the digits");
    return done_testing();
}
