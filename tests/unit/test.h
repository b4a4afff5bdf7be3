/* test.h — tiny header-only TAP test helper for lfhttpd unit tests.
 *
 * Each test binary is one process, so the static counters below are fine.
 *
 *   ok(cond, fmt, ...)                 pass if cond is true
 *   is_int(got, expected, name)        compare two integers (as long long)
 *   is_str(got, expected, name)        compare two C strings (NULL-safe)
 *   is_mem(ptr, len, expected, name)   compare len bytes at ptr with a C string
 *   return done_testing();             print "1..N"; exit status 1 if anything failed
 *
 * Output: "ok N - desc" / "not ok N - desc", followed on failure by a
 * "# got ... expected ..." diagnostic line.
 */
#ifndef LFHTTPD_TEST_H
#define LFHTTPD_TEST_H

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int test_count;
static int test_failed;

static bool test_report(bool pass, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0), unused));
static bool test_report(bool pass, const char *fmt, va_list ap)
{
    test_count++;
    if (!pass)
        test_failed++;
    printf("%sok %d - ", pass ? "" : "not ", test_count);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    return pass;
}

static bool test_ok(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static bool test_ok(bool pass, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    pass = test_report(pass, fmt, ap);
    va_end(ap);
    return pass;
}

#define ok(cond, ...) test_ok((cond) ? true : false, __VA_ARGS__)

static bool test_diag_str(const char *what, const char *s, size_t len, bool null)
    __attribute__((unused));
/* Print a (possibly binary) string as a quoted, escaped value. */
static bool test_diag_str(const char *what, const char *s, size_t len, bool null)
{
    printf(" %s ", what);
    if (null) {
        printf("NULL");
        return true;
    }
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    return true;
}

static bool test_is_int(long long got, long long expected, const char *name)
    __attribute__((unused));
static bool test_is_int(long long got, long long expected, const char *name)
{
    bool pass = test_ok(got == expected, "%s", name);

    if (!pass)
        printf("# got %lld expected %lld\n", got, expected);
    return pass;
}

static bool test_is_str(const char *got, const char *expected, const char *name)
    __attribute__((unused));
static bool test_is_str(const char *got, const char *expected, const char *name)
{
    bool pass;

    if (got == NULL || expected == NULL)
        pass = got == expected;
    else
        pass = strcmp(got, expected) == 0;
    test_ok(pass, "%s", name);
    if (!pass) {
        putchar('#');
        test_diag_str("got", got, got ? strlen(got) : 0, got == NULL);
        test_diag_str("expected", expected, expected ? strlen(expected) : 0, expected == NULL);
        putchar('\n');
    }
    return pass;
}

static bool test_is_mem(const void *ptr, size_t len, const char *expected, const char *name)
    __attribute__((unused));
static bool test_is_mem(const void *ptr, size_t len, const char *expected, const char *name)
{
    size_t elen = expected ? strlen(expected) : 0;
    bool pass;

    if (ptr == NULL || expected == NULL)
        pass = ptr == NULL && expected == NULL;
    else
        pass = len == elen && memcmp(ptr, expected, len) == 0;
    test_ok(pass, "%s", name);
    if (!pass) {
        putchar('#');
        test_diag_str("got", ptr, len, ptr == NULL);
        test_diag_str("expected", expected, elen, expected == NULL);
        putchar('\n');
    }
    return pass;
}

#define is_int(a, b, name) test_is_int((long long)(a), (long long)(b), (name))
#define is_str(a, b, name) test_is_str((a), (b), (name))
#define is_mem(ptr, len, expected, name) test_is_mem((ptr), (len), (expected), (name))

static int test_done(void) __attribute__((unused));
static int test_done(void)
{
    printf("1..%d\n", test_count);
    if (test_failed)
        printf("# failed %d of %d tests\n", test_failed, test_count);
    fflush(stdout);
    return test_failed ? 1 : 0;
}

/* An address as the server keys it: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), or IPv6. */
static inline struct in6_addr test_addr(const char *s)
{
    struct in6_addr a;
    memset(&a, 0, sizeof(a));
    struct in_addr v4;
    if (inet_pton(AF_INET, s, &v4) == 1) {
        a.s6_addr[10] = a.s6_addr[11] = 0xff;
        memcpy(&a.s6_addr[12], &v4, 4);
    } else {
        inet_pton(AF_INET6, s, &a);
    }
    return a;
}

#define done_testing() test_done()

#endif /* LFHTTPD_TEST_H */
