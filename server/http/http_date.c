/* http_date.c — HTTP-date formatting and parsing (RFC 9110 section 5.6.7).
 *
 * Calendar arithmetic uses Howard Hinnant's days_from_civil / civil_from_days algorithms
 * (proleptic Gregorian calendar), so no libc time or locale function is needed except time()
 * for the RFC 850 two-digit-year rule.
 */
#include "http/http_date.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/fmt.h"

/* 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z */
#define HTTP_DATE_MIN_T (-62167219200LL)
#define HTTP_DATE_MAX_T 253402300799LL

static const char http_date_wday[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const http_date_wday_long[7] = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
};
static const char http_date_month[12][4] = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
static int64_t http_date_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* Inverse of http_date_days_from_civil. */
static void http_date_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool http_date_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned http_date_days_in_month(int64_t y, unsigned m)
{
    static const unsigned char days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    return m == 2 && http_date_is_leap(y) ? 29 : days[m - 1];
}

size_t http_date_format(time_t t, char out[30])
{
    int64_t secs = (int64_t)t, days, y;
    unsigned sod, m, d, wday;

    if (secs < HTTP_DATE_MIN_T)
        secs = HTTP_DATE_MIN_T;
    if (secs > HTTP_DATE_MAX_T)
        secs = HTTP_DATE_MAX_T;
    days = secs / 86400;
    if (secs % 86400 < 0)
        days--;
    sod = (unsigned)(secs - days * 86400);
    http_date_civil_from_days(days, &y, &m, &d);
    wday = (unsigned)(((days + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */

    /* "Sun, 06 Nov 1994 08:49:37 GMT" */
    memcpy(out, http_date_wday[wday], 3);
    memcpy(out + 3, ", ", 2);
    fmt_2digits(out + 5, d);
    out[7] = ' ';
    memcpy(out + 8, http_date_month[m - 1], 3);
    out[11] = ' ';
    fmt_2digits(out + 12, (unsigned)(y / 100));
    fmt_2digits(out + 14, (unsigned)(y % 100));
    out[16] = ' ';
    fmt_2digits(out + 17, sod / 3600);
    out[19] = ':';
    fmt_2digits(out + 20, sod / 60 % 60);
    out[22] = ':';
    fmt_2digits(out + 23, sod % 60);
    memcpy(out + 25, " GMT", 5); /* includes the NUL */
    return HTTP_DATE_LEN;
}

/* Parse exactly n decimal digits at s into *v. */
static bool http_date_digits(const char *s, size_t n, unsigned *v)
{
    unsigned r = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        r = r * 10 + (unsigned)(s[i] - '0');
    }
    *v = r;
    return true;
}

/* Month number 1..12 of the three-letter name at s, or 0. */
static unsigned http_date_parse_month(const char *s)
{
    for (unsigned i = 0; i < 12; i++) {
        if (memcmp(s, http_date_month[i], 3) == 0)
            return i + 1;
    }
    return 0;
}

static bool http_date_is_wday(const char *s)
{
    for (unsigned i = 0; i < 7; i++) {
        if (memcmp(s, http_date_wday[i], 3) == 0)
            return true;
    }
    return false;
}

/* Length of the long weekday name at the start of s/len ("Sunday"..), or 0. */
static size_t http_date_wday_long_len(const char *s, size_t len)
{
    for (unsigned i = 0; i < 7; i++) {
        size_t n = strlen(http_date_wday_long[i]);

        if (len >= n && memcmp(s, http_date_wday_long[i], n) == 0)
            return n;
    }
    return 0;
}

/* Parse "HH:MM:SS" at s into seconds of day. */
static bool http_date_parse_time(const char *s, unsigned *sod)
{
    unsigned h, m, sec;

    if (!http_date_digits(s, 2, &h) || s[2] != ':' || !http_date_digits(s + 3, 2, &m) ||
        s[5] != ':' || !http_date_digits(s + 6, 2, &sec))
        return false;
    if (h > 23 || m > 59 || sec > 60)
        return false;
    *sod = h * 3600 + m * 60 + sec;
    return true;
}

/* Combine validated fields; checks the day against the month. */
static int http_date_make(int64_t y, unsigned mon, unsigned day, unsigned sod, time_t *t)
{
    int64_t secs;

    if (mon < 1 || mon > 12 || day < 1 || day > http_date_days_in_month(y, mon))
        return -EINVAL;
    secs = http_date_days_from_civil(y, mon, day) * 86400 + sod;
    if ((int64_t)(time_t)secs != secs)
        return -EINVAL;
    *t = (time_t)secs;
    return 0;
}

/* RFC 9110: a two-digit year more than 50 years in the future is the most recent past year
 * with the same last two digits. */
static int64_t http_date_expand_year(unsigned yy)
{
    int64_t now_y, y, days = (int64_t)time(NULL) / 86400;
    unsigned m, d;

    http_date_civil_from_days(days, &now_y, &m, &d);
    y = now_y - now_y % 100 + yy;
    if (y > now_y + 50)
        y -= 100;
    return y;
}

/* "Sun, 06 Nov 1994 08:49:37 GMT" */
static int http_date_parse_imf(const char *s, time_t *t)
{
    unsigned day, year, sod, mon;

    if (!http_date_is_wday(s) || memcmp(s + 3, ", ", 2) != 0 ||
        !http_date_digits(s + 5, 2, &day) || s[7] != ' ' ||
        (mon = http_date_parse_month(s + 8)) == 0 || s[11] != ' ' ||
        !http_date_digits(s + 12, 4, &year) || s[16] != ' ' ||
        !http_date_parse_time(s + 17, &sod) || memcmp(s + 25, " GMT", 4) != 0)
        return -EINVAL;
    return http_date_make(year, mon, day, sod, t);
}

/* "Sunday, 06-Nov-94 08:49:37 GMT" (s points after the weekday name) */
static int http_date_parse_rfc850(const char *s, time_t *t)
{
    unsigned day, yy, sod, mon;

    if (memcmp(s, ", ", 2) != 0 || !http_date_digits(s + 2, 2, &day) || s[4] != '-' ||
        (mon = http_date_parse_month(s + 5)) == 0 || s[8] != '-' ||
        !http_date_digits(s + 9, 2, &yy) || s[11] != ' ' || !http_date_parse_time(s + 12, &sod) ||
        memcmp(s + 20, " GMT", 4) != 0)
        return -EINVAL;
    return http_date_make(http_date_expand_year(yy), mon, day, sod, t);
}

/* "Sun Nov  6 08:49:37 1994" */
static int http_date_parse_asctime(const char *s, time_t *t)
{
    unsigned day, year, sod, mon;

    if (!http_date_is_wday(s) || s[3] != ' ' || (mon = http_date_parse_month(s + 4)) == 0 ||
        s[7] != ' ' || s[19] != ' ' || !http_date_parse_time(s + 11, &sod) || s[10] != ' ' ||
        !http_date_digits(s + 20, 4, &year))
        return -EINVAL;
    if (s[8] == ' ') {
        if (!http_date_digits(s + 9, 1, &day))
            return -EINVAL;
    } else if (!http_date_digits(s + 8, 2, &day)) {
        return -EINVAL;
    }
    return http_date_make(year, mon, day, sod, t);
}

int http_date_parse(const char *s, size_t len, time_t *t)
{
    size_t n;

    if (len == 29 && s[3] == ',')
        return http_date_parse_imf(s, t);
    if (len == 24 && s[3] == ' ')
        return http_date_parse_asctime(s, t);
    n = http_date_wday_long_len(s, len);
    if (n > 0 && len == n + 24)
        return http_date_parse_rfc850(s + n, t);
    return -EINVAL;
}

_Thread_local struct http_date_cache http_date_cache;

/* A new second on this thread: no lock and nothing shared. */
const char *http_date_refresh(time_t now)
{
    http_date_format(now, http_date_cache.text);
    http_date_cache.sec = now;
    return http_date_cache.text;
}
