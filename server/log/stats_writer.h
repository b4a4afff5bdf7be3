/* stats_writer.h — where the status page's JSON and the Prometheus exposition are written.
 *
 * The core writes its own counters; each handler type writes its own through its stats() hook
 * (exchange/handler.h), so the status and metrics handlers never name another type's
 * counters. One writer per answer, in memory: either a fixed buffer that truncates (JSON, sent
 * from the stack) or a growing one (the exposition, whose labelled series have no fixed
 * count). */
#ifndef LF_STATS_WRITER_H
#define LF_STATS_WRITER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum stats_format {
    STATS_JSON,       /* members of the status object: `"name":{...},` each */
    STATS_PROMETHEUS, /* text exposition format 0.0.4: # HELP, # TYPE, samples */
};

struct stats_writer {
    enum stats_format format;
    char *buf;
    size_t len, cap;
    bool grow;        /* buf is malloc'ed: grow it (else: truncate at cap) */
    bool failed;      /* out of memory while growing */
};

/* Append formatted text. */
__attribute__((format(printf, 2, 3))) void stats_printf(struct stats_writer *w,
                                                        const char *fmt, ...);
__attribute__((format(printf, 2, 0))) void stats_vprintf(struct stats_writer *w,
                                                         const char *fmt, va_list ap);
/* One unlabelled sample with its HELP and TYPE lines (Prometheus). */
void stats_metric(struct stats_writer *w, const char *name, const char *type, const char *help,
                  unsigned long long v);

#endif
