/* builtin_acme.c — what the built-in handlers show of automatic certificates (acme/acme.h):
 * /readyz's reason while a managed name has no certificate yet, the status page's "acme" list
 * and the lfhttpd_acme_* metrics. Each reads acme_status(): a copy taken under the ACME
 * client's short mutex, never waiting for its thread. */
#include <stdio.h>
#include <string.h>

#include "acme/acme.h"
#include "base/json.h"
#include "builtin/builtin.h"
#include "conf/config.h"
#include "log/stats_writer.h"
#include "net/tls.h"

/* The managed names' status; none when this generation has no `acme on`, or ACME manages no
 * name (a reload turned it off: the client's status still shows its last run). */
static size_t names(const struct config *cfg, struct acme_name_status st[ACME_MAX_NAMES])
{
    if (!cfg->acme.line || !tls_managed_count())
        return 0;
    size_t n = acme_status(st, ACME_MAX_NAMES);
    return n < ACME_MAX_NAMES ? n : ACME_MAX_NAMES;
}

size_t builtin_acme_waiting(const struct config *cfg, char *out, size_t cap)
{
    struct acme_name_status st[ACME_MAX_NAMES];
    size_t n = names(cfg, st);
    /* the status says a certificate is there a moment before the TLS listener has it */
    bool served = n && tls_managed_installed();
    for (size_t i = 0; i < n; i++)
        if (!st[i].not_after || !served) {
            int len = snprintf(out, cap, "acme: waiting for a certificate for %s\n", st[i].name);
            return len < 0 ? 0 : (size_t)len < cap ? (size_t)len : cap - 1;
        }
    return 0;
}

void builtin_acme_json(const struct config *cfg, struct stats_writer *o)
{
    struct acme_name_status st[ACME_MAX_NAMES];
    size_t n = names(cfg, st);
    stats_printf(o, "\"acme\":[");
    for (size_t i = 0; i < n; i++) {
        const struct acme_name_status *s = &st[i];
        stats_printf(o, "%s{\"name\":\"%s\",\"not_after\":%lld,\"last_attempt\":%lld,"
                        "\"last_ok\":%s,\"next_attempt\":%lld,\"in_progress\":%s,\"orders\":%u,"
                        "\"failures\":%u,\"last_error\":\"",
                     i ? "," : "", s->name, (long long)s->not_after, (long long)s->last_attempt,
                     s->last_ok ? "true" : "false", (long long)s->next_attempt,
                     s->in_progress ? "true" : "false", s->orders, s->failures);
        json_escape_append(o->buf, o->cap, &o->len, s->last_error, strlen(s->last_error));
        stats_printf(o, "\"}");
    }
    stats_printf(o, "],");
}

void builtin_acme_metrics(const struct config *cfg, struct stats_writer *o)
{
    struct acme_name_status st[ACME_MAX_NAMES];
    size_t n = names(cfg, st);
    if (!n)
        return;
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        { "lfhttpd_acme_certificate_not_after_seconds", "gauge",
          "When the managed name's certificate expires (Unix time); 0: none yet." },
        { "lfhttpd_acme_last_attempt_seconds", "gauge",
          "When the last ACME attempt (check or order) for the name ended (Unix time)." },
        { "lfhttpd_acme_last_attempt_success", "gauge",
          "1 when the last ACME attempt for the name succeeded." },
        { "lfhttpd_acme_orders_total", "counter", "Certificate orders placed for the name." },
        { "lfhttpd_acme_failures_total", "counter", "Failed ACME attempts for the name." },
    };
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        stats_printf(o, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name, fam[f].help, fam[f].name,
                     fam[f].type);
        for (size_t i = 0; i < n; i++) {
            const struct acme_name_status *s = &st[i];
            long long v = f == 0 ? (long long)s->not_after
                          : f == 1 ? (long long)s->last_attempt
                          : f == 2 ? (long long)(s->last_attempt && s->last_ok)
                          : f == 3 ? (long long)s->orders
                                   : (long long)s->failures;
            stats_printf(o, "%s{name=\"%s\"} %lld\n", fam[f].name, s->name, v);
        }
    }
}
