/* test_hex.c — unit tests for server/base/hex.h: digits of both cases, and decoding. */
#include "base/hex.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

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

    /* Percent-encoding: the unreserved bytes stay, and the caller's; the rest is %XX. */
    bool keeps = true;
    for (int c = 0; c < 256; c++) {
        bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        keeps = keeps && hex_pct_keeps((unsigned char)c, "") == unreserved &&
                hex_pct_keeps((unsigned char)c, "/@") == (unreserved || c == '/' || c == '@');
    }
    ok(keeps, "hex_pct_keeps: the unreserved bytes and the caller's, never the NUL");
    char esc[4] = "";
    hex_pct(0xe9, esc);
    is_str(esc, "%E9", "hex_pct: upper-case digits");
    hex_pct(' ', esc);
    is_str(esc, "%20", "hex_pct: a space");
    return done_testing();
}
