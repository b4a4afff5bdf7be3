/* http_date.h — HTTP-date formatting and parsing (RFC 9110 section 5.6.7).
 *
 * Pure functions: no allocation, no locale, no global state; safe from any thread. Except
 * http_date_now, which keeps one per-thread cache of the current second's date.
 */
#ifndef LFHTTPD_HTTP_DATE_H
#define LFHTTPD_HTTP_DATE_H

#include <stddef.h>
#include <time.h>

/* Length of an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT". */
#define HTTP_DATE_LEN 29

/* Format t as an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT", into out, NUL-terminated.
 * Thread-safe and locale-independent. Times outside years 0000..9999 are clamped to that range
 * (the format has exactly four year digits). Returns HTTP_DATE_LEN (29). */
size_t http_date_format(time_t t, char out[30]);

/* The current time as an IMF-fixdate, for a response's Date header: the calling thread's own
 * copy, valid until that thread's next call in a later second (and at most while the thread
 * lives). Costs a time() (vDSO) and a compare per call (inline: once per response), and a
 * format per second per thread (http_date_refresh). */
struct http_date_cache {
    time_t sec;
    char text[HTTP_DATE_LEN + 1];
};
extern _Thread_local struct http_date_cache http_date_cache;
const char *http_date_refresh(time_t now);

static inline const char *http_date_now(void)
{
    time_t now = time(NULL);
    return now == http_date_cache.sec ? http_date_cache.text : http_date_refresh(now);
}

/* Parse an HTTP-date s/len (not NUL-terminated): an IMF-fixdate, or one of the obsolete forms
 * RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994").
 * Strict: exact field widths and separators, case-sensitive names, "GMT" required (except in
 * the asctime form, which has no zone), hour 00-23, minute 00-59, second 00-60 (a leap second
 * counts as :00 of the next minute), day valid for its month and year. The weekday must be a
 * valid name but is not checked against the date. A two-digit RFC 850 year is taken as the
 * year with those last two digits that is not more than 50 years in the future (RFC 9110).
 * Returns 0 and sets *t, or -EINVAL (leaving *t untouched). */
int http_date_parse(const char *s, size_t len, time_t *t);

#endif /* LFHTTPD_HTTP_DATE_H */
