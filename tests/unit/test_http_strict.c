/* test_http_strict.c — unit tests for server/http/http_strict.c */
#include "http/http_strict.h"
#include "test.h"

#include <string.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static void test_obs_fold(void)
{
    ok(!http_has_obs_fold(S("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), "no fold");
    ok(http_has_obs_fold(S("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n")), "fold with SP");
    ok(http_has_obs_fold(S("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n")), "fold with HTAB");
    ok(http_has_obs_fold(S("GET / HTTP/1.1\r\nX:\r\n 3\r\n\r\n")), "fold after empty value");
    ok(!http_has_obs_fold(S("X: a\r\n")), "LF at the end");
    ok(!http_has_obs_fold(S("")), "empty");
    ok(!http_has_obs_fold(S("a b\tc")), "whitespace without LF");
}

static void test_host(void)
{
    static const char *const good[] = { "", "example.com", "example.com:8080", "a:", "127.0.0.1",
                                        "[::1]", "[::1]:80", "[2001:db8::1.2.3.4]:1",
                                        "a_b-c.~d", "%41%62", "!$&'()*+,;=" };
    for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ok(http_host_valid(good[i], strlen(good[i])), "host valid: \"%s\"", good[i]);
    static const char *const bad[] = { "a b", "a/b", "a@b", "u:p@h", "a:b:c", "a:8x", "[::1",
                                       "::1", "[]", "[::1]x", "[::1]:x", "a\\b", "a?b", "a#b",
                                       "%4", "%zz", "a:80:", "h\t", "[v1.x]", "[::1%25eth0]" };
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ok(!http_host_valid(bad[i], strlen(bad[i])), "host invalid: \"%s\"", bad[i]);
    ok(!http_host_valid(S("a\0b")), "host with NUL invalid");
}

static void test_version(void)
{
    is_int(http_version_error_status(S("GET / HTTP/1.2\r\n")), 505, "HTTP/1.2 -> 505");
    is_int(http_version_error_status(S("GET / HTTP/2.0\r\nHost: x\r\n")), 505, "HTTP/2.0 -> 505");
    is_int(http_version_error_status(S("GET / HTTP/9.9\n")), 505, "HTTP/9.9 (LF) -> 505");
    is_int(http_version_error_status(S("GET / HTTP/0.9")), 505, "HTTP/0.9 incomplete -> 505");
    is_int(http_version_error_status(S("GET / HTTP/1.1 \r\n")), 400, "trailing space -> 400");
    is_int(http_version_error_status(S("GET / HTTP/11.1\r\n")), 400, "HTTP/11.1 -> 400");
    is_int(http_version_error_status(S("GET / HTTP/1.x\r\n")), 400, "HTTP/1.x -> 400");
    is_int(http_version_error_status(S("GET / HTTP/1\r\n")), 400, "HTTP/1 -> 400");
    is_int(http_version_error_status(S("GET / http/1.1\r\n")), 400, "lower case -> 400");
    is_int(http_version_error_status(S("PRI * HTTP/1.1\r\n")), 400, "supported version -> 400");
    is_int(http_version_error_status(S("")), 400, "empty -> 400");
    is_int(http_version_error_status(S("HTTP/1.2")), 400, "no method or target -> 400");
}

static void test_token_and_value(void)
{
    ok(http_token_valid(S("Content-Type")), "a field name is a token");
    ok(http_token_valid(S("!#$%&'*+-.^_`|~09azAZ")), "every tchar");
    ok(!http_token_valid(S("")), "empty is not a token");
    ok(!http_token_valid(S("a b")) && !http_token_valid(S("a:b")) && !http_token_valid(S("a/b")),
       "SP, ':' and '/' are not tchar");
    ok(!http_token_valid(S("a\0b")), "nor NUL");
    ok(!http_token_valid(S("caf\xc3\xa9")), "nor bytes from 0x80");
    int n = 0;
    for (int c = 0; c < 256; c++)
        n += http_is_tchar((unsigned char)c);
    is_int(n, 26 + 26 + 10 + 15, "77 tchar in all");

    ok(http_field_value_valid(S("text/html; charset=utf-8")), "a plain value");
    ok(http_field_value_valid(S("a\tb")), "HTAB is allowed");
    ok(http_field_value_valid(S("caf\xc3\xa9")), "obs-text passes");
    ok(http_field_value_valid(S("")), "empty is a value");
    ok(!http_field_value_valid(S("a\rb")) && !http_field_value_valid(S("a\nb")), "no CR or LF");
    ok(!http_field_value_valid(S("a\0b")), "no NUL");
    ok(!http_field_value_valid(S("a\x7f")), "no DEL");
}

int main(void)
{
    test_obs_fold();
    test_host();
    test_version();
    test_token_and_value();
    return done_testing();
}
