/* diag.c — configuration messages; see diag.h. */
#include "log/diag.h"

#include "log/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIAG_LINE_MAX 2048 /* one message, before and after its secrets are replaced */

static __thread const struct diag_secret *secrets;
static __thread unsigned nsecrets;

void diag_secrets(const struct diag_secret *s, unsigned n)
{
    secrets = n ? s : NULL;
    nsecrets = s ? n : 0;
}

void diag_forget(const struct diag_secret *s)
{
    if (s && secrets == s)
        diag_secrets(NULL, 0);
}

/* The values published process-wide (diag_publish): one block, the array and then the
 * strings; replaced whole under the lock, read under it. npublished lets a line skip the lock
 * when nothing is published. */
static pthread_mutex_t published_lock = PTHREAD_MUTEX_INITIALIZER;
static struct diag_secret *published;
static unsigned npublished_locked;
static atomic_uint npublished;

#define RUNTIME_MIN_LEN 4 /* shorter values are left alone on runtime lines (diag.h) */

static bool word_byte(unsigned char c) /* a letter or digit (ASCII: no locale) */
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The longest of list[0..n) that starts at msg[i] (NULL: none). runtime: the process-wide rule
 * (diag.h): the bytes on either side must not be letters or digits. */
static const struct diag_secret *secret_at(const struct diag_secret *list, unsigned n,
                                           bool runtime, const char *msg, size_t i, size_t len)
{
    const struct diag_secret *best = NULL;
    if (runtime && i > 0 && word_byte((unsigned char)msg[i - 1]))
        return NULL;
    for (unsigned k = 0; k < n; k++) {
        const struct diag_secret *s = &list[k];
        if (!s->vlen || s->vlen > len - i || (best && s->vlen <= best->vlen) ||
            memcmp(msg + i, s->value, s->vlen))
            continue;
        if (runtime && i + s->vlen < len && word_byte((unsigned char)msg[i + s->vlen]))
            continue;
        best = s;
    }
    return best;
}

static size_t scrub(const struct diag_secret *list, unsigned n, bool runtime, const char *msg,
                    size_t len, char *out, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; i < len && o + 1 < cap;) {
        const struct diag_secret *s = n ? secret_at(list, n, runtime, msg, i, len) : NULL;
        if (!s) {
            out[o++] = msg[i++];
            continue;
        }
        /* The reference whole or not at all: a cut one could still be read as a value. */
        if (o + s->wlen + 1 > cap)
            break;
        memcpy(out + o, s->written, s->wlen);
        o += s->wlen;
        i += s->vlen;
    }
    out[o] = '\0';
    return o;
}

size_t diag_scrub(const char *msg, size_t len, char *out, size_t cap)
{
    return scrub(secrets, nsecrets, false, msg, len, out, cap);
}

/* Is s[i] to be hidden on runtime lines: long enough, and no shown value is the same? */
static bool published_rule(const struct diag_secret *s, unsigned n, unsigned i)
{
    if (s[i].vlen < RUNTIME_MIN_LEN)
        return false;
    for (unsigned k = 0; k < n; k++)
        if (s[k].shown && s[k].vlen == s[i].vlen && !memcmp(s[k].value, s[i].value, s[i].vlen))
            return false;
    return true;
}

void diag_publish(const struct diag_secret *s, unsigned n)
{
    size_t size = 0;
    unsigned keep = 0;
    for (unsigned i = 0; i < n; i++)
        if (published_rule(s, n, i)) {
            size += sizeof(*s) + s[i].wlen + s[i].vlen;
            keep++;
        }
    struct diag_secret *copy = keep ? malloc(size) : NULL;
    if (keep && !copy) {
        /* Keep the previous values rather than none: they are likely the same names. */
        log_msg(LOG_ERROR, "out of memory: the new configuration's values from the "
                           "environment are not hidden on the error log");
        return;
    }
    char *text = copy ? (char *)(copy + keep) : NULL;
    for (unsigned i = 0, k = 0; i < n && copy; i++) {
        if (!published_rule(s, n, i))
            continue;
        memcpy(text, s[i].written, s[i].wlen);
        memcpy(text + s[i].wlen, s[i].value, s[i].vlen);
        copy[k++] = (struct diag_secret){ text, s[i].wlen, text + s[i].wlen, s[i].vlen, false };
        text += s[i].wlen + s[i].vlen;
    }
    pthread_mutex_lock(&published_lock);
    struct diag_secret *old = published;
    published = copy;
    npublished_locked = keep;
    atomic_store_explicit(&npublished, keep, memory_order_relaxed);
    pthread_mutex_unlock(&published_lock);
    free(old);
}

bool diag_scrubbing(void)
{
    return nsecrets || atomic_load_explicit(&npublished, memory_order_relaxed);
}

size_t diag_scrub_line(const char *msg, size_t len, char *out, size_t cap)
{
    if (nsecrets) /* this thread reads a configuration: its rule, every value */
        return scrub(secrets, nsecrets, false, msg, len, out, cap);
    pthread_mutex_lock(&published_lock);
    size_t n = scrub(published, npublished_locked, true, msg, len, out, cap);
    pthread_mutex_unlock(&published_lock);
    return n;
}

void diag(const char *fmt, ...)
{
    char raw[DIAG_LINE_MAX], line[DIAG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = diag_scrub(raw, (size_t)n < sizeof(raw) ? (size_t)n : sizeof(raw) - 1, line,
                            sizeof(line));
    if (len && line[len - 1] == '\n')
        len--;
    if (log_is_open())
        log_msg(LOG_ERROR, "%.*s", (int)len, line);
    else
        fprintf(stderr, "%.*s\n", (int)len, line);
}
