/* test_http_date.c — unit tests for server/http/http_date.c */
#include "http/http_date.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static int parse(const char *s, time_t *t)
{
    return http_date_parse(s, strlen(s), t);
}

/* Expect s to parse to expected. */
static void parse_ok(const char *s, long long expected)
{
    time_t t = -1;
    int rc = parse(s, &t);

    if (rc != 0) {
        ok(0, "parse \"%s\"", s);
        printf("# got rc %d expected 0\n", rc);
        return;
    }
    ok(t == expected, "parse \"%s\"", s);
    if (t != expected)
        printf("# got %lld expected %lld\n", (long long)t, expected);
}

static void parse_bad(const char *s)
{
    time_t t = 42;
    char name[128];

    snprintf(name, sizeof(name), "reject \"%s\"", s);
    is_int(parse(s, &t), -EINVAL, name);
    if (t != 42)
        ok(0, "rejected parse of \"%s\" left *t untouched", s);
}

static void format_is(long long t, const char *expected)
{
    char out[30];
    char name[96];

    memset(out, 'X', sizeof(out));
    snprintf(name, sizeof(name), "format %lld", t);
    is_int(http_date_format((time_t)t, out), 29, "format returns 29");
    is_str(out, expected, name);
}

/* Format then parse must give back t; also via gmtime_r as an independent check. */
static void round_trips(void)
{
    static const long long samples[] = {
        0, 1, 59, 60, 86399, 86400, 784111777, 951782400 /* 2000-02-29 */, 1000000000,
        1234567890, 1582934400 /* 2020-02-29 */, 1709164800 /* 2024-02-29 */,
        1709251199 /* 2024-02-29 23:59:59 */, 2147483647, 2147483648LL, 4102444800LL,
        4107542400LL /* 2100-03-01 */, -1, -86400, -2208988800LL /* 1900-01-01 */,
        253402300799LL,
    };
    uint64_t seed = 88172645463325252ULL;
    size_t bad = 0, badgm = 0;

    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        char out[30], name[64];
        time_t t = 0;

        http_date_format((time_t)samples[i], out);
        snprintf(name, sizeof(name), "round trip %lld (%s)", samples[i], out);
        ok(parse(out, &t) == 0 && t == samples[i], "%s", name);
    }
    /* 200000 pseudo-random timestamps in 1900..2200, cross-checked against gmtime_r */
    for (int i = 0; i < 200000; i++) {
        char out[30], ref[64];
        time_t t = 0, r;
        struct tm tm;
        static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        r = (time_t)((long long)(seed % 9467107200ULL) - 2208988800LL);
        http_date_format(r, out);
        if (parse(out, &t) != 0 || t != r) {
            if (bad++ < 3)
                printf("# round trip failed for %lld: %s\n", (long long)r, out);
        }
        gmtime_r(&r, &tm);
        snprintf(ref, sizeof(ref), "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday],
                 tm.tm_mday, mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (strcmp(out, ref) != 0) {
            if (badgm++ < 3)
                printf("# %lld: got %s, gmtime_r says %s\n", (long long)r, out, ref);
        }
    }
    is_int(bad, 0, "200000 random timestamps round-trip");
    is_int(badgm, 0, "200000 random timestamps agree with gmtime_r");
}

/* http_date_now: the formatted current second, one copy per thread. */
static void *date_in_thread(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)http_date_now();
}

static void test_date_now(void)
{
    time_t before = time(NULL);
    const char *d = http_date_now();
    time_t after = time(NULL), t = 0;
    ok(d && http_date_parse(d, strlen(d), &t) == 0 && t >= before && t <= after,
       "http_date_now: the current second as an IMF-fixdate");
    ok(http_date_now() == d, "http_date_now: the thread's one cache");
    pthread_t th;
    void *other = NULL;
    ok(pthread_create(&th, NULL, date_in_thread, NULL) == 0 && pthread_join(th, &other) == 0 &&
       other && (uintptr_t)other != (uintptr_t)d, "http_date_now: another thread has its own");
}

int main(void)
{
    char out[30];
    time_t t = 0;

    /* RFC 9110 5.6.7 examples */
    parse_ok("Sun, 06 Nov 1994 08:49:37 GMT", 784111777);
    parse_ok("Sunday, 06-Nov-94 08:49:37 GMT", 784111777);
    parse_ok("Sun Nov  6 08:49:37 1994", 784111777);
    parse_ok("Sun Nov 06 08:49:37 1994", 784111777);
    parse_ok("Thu Feb 29 12:00:00 2024", 1709208000);
    parse_ok("Wednesday, 09-Sep-09 01:46:40 GMT", 1252460800);
    parse_ok("Thu, 01 Jan 1970 00:00:00 GMT", 0);
    parse_ok("Tue, 19 Jan 2038 03:14:07 GMT", 2147483647);
    parse_ok("Fri, 01 Jan 2100 00:00:00 GMT", 4102444800LL);
    parse_ok("Thu, 29 Feb 2024 00:00:00 GMT", 1709164800);
    parse_ok("Tue, 29 Feb 2000 00:00:00 GMT", 951782400);
    parse_ok("Wed, 31 Dec 1969 23:59:59 GMT", -1);
    parse_ok("Sat, 31 Dec 2016 23:59:60 GMT", 1483228800); /* leap second */
    parse_ok("Mon, 06 Nov 1994 08:49:37 GMT", 784111777);  /* weekday not cross-checked */

    format_is(784111777, "Sun, 06 Nov 1994 08:49:37 GMT");
    format_is(0, "Thu, 01 Jan 1970 00:00:00 GMT");
    format_is(1000000000, "Sun, 09 Sep 2001 01:46:40 GMT");
    format_is(2147483647, "Tue, 19 Jan 2038 03:14:07 GMT");
    format_is(4102444800LL, "Fri, 01 Jan 2100 00:00:00 GMT");
    format_is(1709164800, "Thu, 29 Feb 2024 00:00:00 GMT");
    format_is(4107456000LL, "Sun, 28 Feb 2100 00:00:00 GMT");
    format_is(4107542400LL, "Mon, 01 Mar 2100 00:00:00 GMT");
    format_is(-1, "Wed, 31 Dec 1969 23:59:59 GMT");
    format_is(-62167219200LL, "Sat, 01 Jan 0000 00:00:00 GMT");
    format_is(-62167219201LL, "Sat, 01 Jan 0000 00:00:00 GMT");
    format_is(253402300799LL, "Fri, 31 Dec 9999 23:59:59 GMT");
    format_is(253402300800LL, "Fri, 31 Dec 9999 23:59:59 GMT");
    format_is(INT64_MAX, "Fri, 31 Dec 9999 23:59:59 GMT");
    format_is(INT64_MIN, "Sat, 01 Jan 0000 00:00:00 GMT");

    /* RFC 850 two-digit years: within 50 years of now */
    ok(parse("Friday, 01-Jan-99 00:00:00 GMT", &t) == 0 && t == 915148800,
       "RFC 850 year 99 -> 1999");
    ok(parse("Tuesday, 01-Jan-30 00:00:00 GMT", &t) == 0 && t == 1893456000,
       "RFC 850 year 30 -> 2030");

    round_trips();

    /* rejects */
    parse_bad("");
    parse_bad("Sun, 06 Xyz 1994 08:49:37 GMT");
    parse_bad("Sun, 06 nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:37 UTC");
    parse_bad("Sun, 06 Nov 1994 08:49:37");
    parse_bad("Sun, 06 Nov 1994 08:49:37 GMT ");
    parse_bad("Sun, 06 Nov 1994 08:49:37 GMTX");
    parse_bad("Sun, 06 Nov 1994 25:00:00 GMT");
    parse_bad("Sun, 06 Nov 1994 24:00:00 GMT");
    parse_bad("Sun, 06 Nov 1994 08:60:00 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:61 GMT");
    parse_bad("Sun, 30 Feb 2024 00:00:00 GMT");
    parse_bad("Sun, 29 Feb 2023 00:00:00 GMT");
    parse_bad("Sun, 29 Feb 2100 00:00:00 GMT");
    parse_bad("Sun, 31 Apr 2024 00:00:00 GMT");
    parse_bad("Sun, 00 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 32 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 6 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 94 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 8:49:37 GMT");
    parse_bad("Sun,  06 Nov 1994 08:49:37 GMT");
    parse_bad("Xyz, 06 Nov 1994 08:49:37 GMT");
    parse_bad("Sun, 06 Nov 1994 08:49:37 GM");
    parse_bad("Sun, 06 Nov 1994 08-49-37 GMT");
    parse_bad("Sun, 0x Nov 1994 08:49:37 GMT");
    parse_bad("Sun, +6 Nov 1994 08:49:37 GMT");
    parse_bad("Sunday, 06-Nov-94 08:49:37 UTC");
    parse_bad("Sunday, 06-Nov-1994 08:49:37 GMT");
    parse_bad("Sunday, 06 Nov 94 08:49:37 GMT");
    parse_bad("Sundae, 06-Nov-94 08:49:37 GMT");
    parse_bad("Sunday, 31-Nov-94 08:49:37 GMT");
    parse_bad("Sunday, 06-Nov-94 08:49:37 GMT junk");
    parse_bad("Sun Nov  6 08:49:37 1994 ");
    parse_bad("Sun Nov 6 08:49:37 1994");
    parse_bad("Sun Nov  6 08:49:37 94");
    parse_bad("Sun Nov  0 08:49:37 1994");
    parse_bad("Sun Nov 31 08:49:37 1994");
    parse_bad("Sun Nov  6 08:49:37 1994 GMT");
    parse_bad("Sun Nov  6 23:59:99 1994");
    is_int(parse("Sun, 06 Nov 1994 08:49:37 GMT\r\n", &t), -EINVAL, "reject trailing CRLF");

    /* truncation: every proper prefix of a valid date fails, and nothing past len is read */
    {
        static const char *const valid[] = {
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        };
        size_t bad = 0;

        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(valid[i]);

            for (size_t k = 0; k < n; k++) {
                char buf[40];

                /* copy only the prefix into an exact-size heap-free buffer at its end */
                memcpy(buf + sizeof(buf) - k, valid[i], k);
                if (http_date_parse(buf + sizeof(buf) - k, k, &t) != -EINVAL)
                    bad++;
            }
        }
        is_int(bad, 0, "every truncated prefix is rejected");
    }

    is_int(http_date_format(784111777, out), 29, "format length");
    is_int(strlen(out), 29, "formatted string is 29 chars");
    test_date_now();
    return done_testing();
}
