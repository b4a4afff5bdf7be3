/* stats_writer.c — see stats_writer.h. */
#include "log/stats_writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void stats_vprintf(struct stats_writer *w, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
    if (n > 0 && (size_t)n >= w->cap - w->len && w->grow && !w->failed) {
        size_t cap = w->cap * 2 > w->len + (size_t)n + 1 ? w->cap * 2 : w->len + (size_t)n + 1;
        char *b = realloc(w->buf, cap);
        if (!b) {
            w->failed = true;
        } else {
            w->buf = b;
            w->cap = cap;
            n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, again);
        }
    }
    va_end(again);
    if (n > 0)
        w->len = (size_t)n >= w->cap - w->len ? w->cap - 1 : w->len + (size_t)n;
}

void stats_printf(struct stats_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    stats_vprintf(w, fmt, ap);
    va_end(ap);
}

void stats_metric(struct stats_writer *w, const char *name, const char *type, const char *help,
                  unsigned long long v)
{
    stats_printf(w, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}
