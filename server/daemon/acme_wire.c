/* acme_wire.c — the ACME thread's life in the daemon and its hooks; see acme_wire.h. */
#include "daemon/acme_wire.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "acme/acme.h"
#include "conf/runtime.h"
#include "log/log.h"
#include "net/tls.h"

/* The settings the thread runs with: copies that outlive the configuration they came from.
 * acme_start keeps pointers into them, and acme_status() reads the names through those from
 * any thread even after acme_stop, until the next acme_start replaces them under its lock: so
 * a restart writes the other of two copies, never the one that may still be read. */
struct wire_settings {
    struct config_acme conf;
    char names[ACME_MAX_NAMES][ACME_NAME_MAX + 1];
    struct acme_settings s;
};
static struct {
    bool running;
    unsigned cur; /* buf[cur]: what the thread runs (or last ran) with */
    struct wire_settings buf[2];
} W;

static int hook_install(void *arg, const char *const *names, size_t n, const char *chain,
                        const char *key)
{
    (void)arg;
    char err[PATH_MAX + 128];
    if (tls_managed_install(chain, key, err, sizeof(err)) < 0) {
        log_error("acme: %s: cannot load the certificate: %s", n ? names[0] : "?", err);
        return -1;
    }
    log_notice("acme: %s%s: certificate installed (%s)", n ? names[0] : "?",
               n > 1 ? " and the other names" : "", chain);
    return 0;
}

static int hook_alpn_publish(void *arg, const char *name, X509 *cert, EVP_PKEY *key)
{
    (void)arg;
    return tls_alpn_publish(name, cert, key);
}

static void hook_alpn_withdraw(void *arg, const char *name)
{
    (void)arg;
    tls_alpn_withdraw(name);
}

static const struct acme_hooks hooks = {
    .install = hook_install,
    .alpn_publish = hook_alpn_publish,
    .alpn_withdraw = hook_alpn_withdraw,
};

/* A configured certificate claims the name: it wins, ACME leaves the name alone. */
static bool claimed(const char *name, void *arg)
{
    const struct runtime *rt = arg;
    if (!tls_ctx_claims(rt->tls, name))
        return false;
    log_notice("acme: %s: served by its configured certificate (tls_certificate), not by ACME",
               name);
    return true;
}

static bool same_settings(const struct acme_settings *a, const struct acme_settings *b)
{
#define SAME_STR(f) ((!a->f && !b->f) || (a->f && b->f && !strcmp(a->f, b->f)))
    if (!SAME_STR(directory_url) || !SAME_STR(state_dir) || !SAME_STR(email) ||
        !SAME_STR(ca_bundle) || a->agree_tos != b->agree_tos || a->challenge != b->challenge ||
        a->n_names != b->n_names)
        return false;
#undef SAME_STR
    for (size_t i = 0; i < a->n_names; i++)
        if (strcasecmp(a->names[i], b->names[i]))
            return false;
    return true;
}

/* Copy `s` (views into a configuration) into the copy not in use, and use it. */
static const struct acme_settings *keep_settings(const struct config *cfg,
                                                 const struct acme_settings *s)
{
    W.cur ^= 1;
    struct wire_settings *k = &W.buf[W.cur];
    k->conf = cfg->acme;
    k->s = *s;
    k->s.directory_url = k->conf.directory;
    k->s.state_dir = k->conf.state_dir;
    k->s.email = k->conf.email;
    k->s.ca_bundle = s->ca_bundle ? k->conf.ca_bundle : NULL;
    for (size_t i = 0; i < s->n_names; i++) {
        snprintf(k->names[i], sizeof(k->names[i]), "%s", s->names[i]);
        k->s.names[i] = k->names[i];
    }
    return &k->s;
}

int acme_wire_apply(const struct runtime *rt, const char *why)
{
    struct acme_settings s = { .n_names = 0 };
    if (rt->cfg.acme.line && rt->tls)
        config_acme_settings(&rt->cfg, &s, claimed, (void *)(uintptr_t)rt);
    if (W.running && s.n_names && same_settings(&s, &W.buf[W.cur].s))
        return 0; /* unchanged: the thread, its certificate and its schedule go on */
    if (W.running) {
        acme_stop();
        W.running = false;
        log_notice("%s: acme: stopped (its settings changed)", why);
    }
    if (!s.n_names) {
        tls_managed_names(NULL, 0);
        return 0;
    }
    const struct acme_settings *k = keep_settings(&rt->cfg, &s);
    if (tls_managed_names(k->names, k->n_names) < 0 || acme_start(k, &hooks) < 0) {
        log_error("%s: acme: not started; its names have no certificate", why);
        return -1;
    }
    W.running = true;
    log_notice("%s: acme: managing %zu name(s) from %s, %s challenge, state in %s", why,
               k->n_names, k->directory_url,
               k->challenge == ACME_HTTP_01 ? "http-01" : "tls-alpn-01", k->state_dir);
    return 0;
}

void acme_wire_stop(void)
{
    if (W.running)
        acme_stop();
    W.running = false;
    tls_managed_clear();
}

void acme_wire_renew(void)
{
    /* (the TLS store's count, not W: a reload_on_change may be changing W on the tick) */
    if (!tls_managed_count()) {
        log_notice("SIGUSR2: no ACME certificate to renew");
        return;
    }
    log_notice("SIGUSR2: renewing the ACME certificate now");
    acme_renew_now();
}

void acme_wire_summary(char *out, size_t size)
{
    struct acme_name_status st;
    out[0] = '\0';
    /* (the TLS store's count, not W: this runs on the timer tick, W on the reloading thread) */
    if (!tls_managed_count() || acme_status(&st, 1) == 0 || st.last_ok || !st.last_attempt)
        return;
    snprintf(out, size, "; acme: renewal failing for %s (%s)", st.name, st.last_error);
}
