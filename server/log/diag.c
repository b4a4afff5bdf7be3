/* diag.c — configuration messages; see diag.h. */
#include "log/diag.h"

#include "log/log.h"

#include <stdarg.h>
#include <stdio.h>
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

bool diag_hiding(void)
{
    return nsecrets != 0;
}

/* The longest secret that starts at p (NULL: none). */
static const struct diag_secret *secret_at(const char *p, size_t left)
{
    const struct diag_secret *best = NULL;
    for (unsigned i = 0; i < nsecrets; i++) {
        const struct diag_secret *s = &secrets[i];
        if (s->vlen && s->vlen <= left && (!best || s->vlen > best->vlen) &&
            !memcmp(p, s->value, s->vlen))
            best = s;
    }
    return best;
}

size_t diag_scrub(const char *msg, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; i < len && o + 1 < cap;) {
        const struct diag_secret *s = nsecrets ? secret_at(msg + i, len - i) : NULL;
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
