/* acme.c — the ACME thread: settings, the challenge table, the life cycle of the certificate
 * (reuse, order, store, install, renew, back off) and its status (acme.h).
 *
 * One certificate for the settings' names, stored as NAME.crt (the chain) and NAME.key under
 * the state directory, NAME being the first name; the account key is account.key. */
#include "acme/acme.h"

#include "acme/certs.h"
#include "acme/client.h"
#include "acme/schedule.h"
#include "acme/store.h"
#include "base/clock.h"
#include "http/http_date.h"
#include "log/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ACCOUNT_KEY "account.key"
/* http_date_format()'s 29 characters and the NUL */
#define HTTP_DATE_BUF 30
/* a certificate chain is public; its key (store_save_key) is 0600 */
#define CHAIN_MODE 0644
#define DEFAULT_RETRY_MIN_S 60
#define DEFAULT_RETRY_MAX_S (24 * 3600)
#define DNS_LABEL_MAX 63
#define EMAIL_MAX 254
/* Another process holding the state directory's lock is ordering; it is waited for this long
 * (polled each second), then this attempt counts as failed and is retried later. */
#define LOCK_WAIT_S 120
/* A wait is cut into slices of at most this, so a changed wall clock is noticed. */
#define WAIT_SLICE_S 3600
/* ARI: how often to ask the CA for its renewal window (RFC 9773 4.3: its Retry-After,
 * within these bounds; six hours when it gives none). */
#define ARI_POLL_DEFAULT_S (6 * 3600)
#define ARI_POLL_MIN_S 60
#define ARI_POLL_MAX_S (24 * 3600)
/* Never order again sooner than this after a success, whatever the certificate says. */
#define RENEW_FLOOR_S 60

/* ---- settings ---------------------------------------------------------------------------- */

/* An exact DNS name: letters, digits and hyphens in labels of 1-63, at least two labels. */
static const char *name_check(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];
    size_t len = strlen(name), label = 0, labels = 1, i;

    if (strchr(name, '*'))
        return "wildcard names are not supported (they need DNS-01)";
    if (inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1)
        return "IP addresses are not supported";
    if (len == 0 || len > ACME_NAME_MAX)
        return "a name must have 1 to 253 characters";
    for (i = 0; i < len; i++) {
        char ch = name[i];
        if (ch == '.') {
            if (label == 0 || name[i - 1] == '-')
                return "a name has an empty label or one that ends with '-'";
            label = 0;
            labels++;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
                   || (ch == '-' && label > 0)) {
            if (++label > DNS_LABEL_MAX)
                return "a name has a label longer than 63 characters";
        } else {
            return "a name may hold only letters, digits, '-' and '.' (no leading '-')";
        }
    }
    if (label == 0 || name[len - 1] == '-')
        return "a name ends with '.' or '-'";
    return labels < 2 ? "a name must have at least two labels" : NULL;
}

static bool url_scheme_ok(const char *url, bool test_ca)
{
    return strncmp(url, "https://", strlen("https://")) == 0
           || (test_ca && strncmp(url, "http://", strlen("http://")) == 0);
}

const char *acme_settings_check(const struct acme_settings *s)
{
    size_t i, j;

    if (!s->directory_url || !url_scheme_ok(s->directory_url, s->test_ca))
        return "the directory URL must be https";
    if (!s->state_dir || !*s->state_dir)
        return "a state directory is required";
    if (!s->agree_tos)
        return "the CA's terms of service must be agreed to explicitly";
    if (s->email && (strlen(s->email) > EMAIL_MAX || !strchr(s->email, '@')
                     || strpbrk(s->email, " \t\r\n,:<>\"")))
        return "the contact email is not an address";
    if (s->challenge != ACME_HTTP_01 && s->challenge != ACME_TLS_ALPN_01)
        return "unknown challenge type";
    if (s->n_names == 0 || s->n_names > ACME_MAX_NAMES)
        return "1 to 16 names are required";
    for (i = 0; i < s->n_names; i++) {
        const char *why = s->names[i] ? name_check(s->names[i]) : "a name is missing";
        if (why)
            return why;
        for (j = 0; j < i; j++)
            if (strcasecmp(s->names[i], s->names[j]) == 0)
                return "a name is listed twice";
    }
    if (s->retry_max_s && s->retry_min_s > s->retry_max_s)
        return "the retry minimum is above the maximum";
    return NULL;
}

/* ---- the thread's state ------------------------------------------------------------------ */

struct challenge {
    bool used;
    enum acme_challenge type;
    char name[ACME_NAME_MAX + 1];
    char token[ACME_TOKEN_MAX + 1];
    char key_auth[ACME_KEYAUTH_MAX + 1];
};

static struct {
    struct acme_settings s;
    struct acme_hooks h;
    pthread_t thread;
    bool running;
    /* lock guards stop, renew and the status below; cond wakes the thread's waits */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop, renew;
    struct acme_name_status status; /* the same for every name: one certificate */
    /* the HTTP-01 table: read by request threads, its own lock so they never wait for the
     * status or the thread's waits */
    pthread_mutex_t tab_lock;
    struct challenge tab[ACME_MAX_NAMES];
    /* thread-only */
    struct acme_client *client;
    time_t installed_not_after; /* 0: nothing installed */
    unsigned char installed_md[SHA256_DIGEST_LENGTH];
    unsigned attempt;
} A = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .tab_lock = PTHREAD_MUTEX_INITIALIZER,
};

static bool stopping(void)
{
    bool s;

    pthread_mutex_lock(&A.lock);
    s = A.stop;
    pthread_mutex_unlock(&A.lock);
    return s;
}

/* Wait ms or until stop (or renew, when `for_renew`); false when stopping. */
static bool wait_ms(unsigned ms, bool for_renew)
{
    struct timespec ts = clock_deadline_ts(ms);
    bool stop;

    pthread_mutex_lock(&A.lock);
    while (!A.stop && !(for_renew && A.renew))
        if (pthread_cond_timedwait(&A.cond, &A.lock, &ts) == ETIMEDOUT)
            break;
    stop = A.stop;
    pthread_mutex_unlock(&A.lock);
    return !stop;
}

static bool client_wait(unsigned ms)
{
    return wait_ms(ms, false);
}

/* ---- challenges -------------------------------------------------------------------------- */

static int publish_alpn(const char *name, const char *key_auth)
{
    X509 *cert;
    EVP_PKEY *key;
    int rc;

    if (!A.h.alpn_publish || certs_alpn_cert(name, key_auth, &cert, &key) < 0)
        return -1;
    rc = A.h.alpn_publish(A.h.arg, name, cert, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    return rc;
}

static int challenge_publish(enum acme_challenge type, const char *name, const char *token,
                             const char *key_auth)
{
    struct challenge *free_slot = NULL;
    size_t i;

    pthread_mutex_lock(&A.tab_lock);
    for (i = 0; i < ACME_MAX_NAMES && !free_slot; i++)
        if (!A.tab[i].used)
            free_slot = &A.tab[i];
    if (free_slot) {
        free_slot->type = type;
        snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
        snprintf(free_slot->token, sizeof(free_slot->token), "%s", token);
        snprintf(free_slot->key_auth, sizeof(free_slot->key_auth), "%s", key_auth);
        /* a TLS-ALPN-01 entry is kept (for withdrawal) but never served over HTTP */
        free_slot->used = true;
    }
    pthread_mutex_unlock(&A.tab_lock);
    if (!free_slot)
        return -1;
    if (type == ACME_TLS_ALPN_01 && publish_alpn(name, key_auth) < 0) {
        pthread_mutex_lock(&A.tab_lock);
        free_slot->used = false; /* the caller withdraws only what was published */
        pthread_mutex_unlock(&A.tab_lock);
        return -1;
    }
    if (type == ACME_HTTP_01 && A.h.http01_publish)
        A.h.http01_publish(A.h.arg, token, key_auth);
    return 0;
}

static void challenge_withdraw(enum acme_challenge type, const char *name, const char *token)
{
    size_t i;

    pthread_mutex_lock(&A.tab_lock);
    for (i = 0; i < ACME_MAX_NAMES; i++)
        if (A.tab[i].used && A.tab[i].type == type && strcmp(A.tab[i].token, token) == 0)
            A.tab[i].used = false;
    pthread_mutex_unlock(&A.tab_lock);
    if (type == ACME_TLS_ALPN_01 && A.h.alpn_withdraw)
        A.h.alpn_withdraw(A.h.arg, name);
    else if (type == ACME_HTTP_01 && A.h.http01_withdraw)
        A.h.http01_withdraw(A.h.arg, token);
}

/* Withdraw whatever is still published (a stop in the middle of a validation). */
static void challenges_clear(void)
{
    struct challenge left[ACME_MAX_NAMES];
    size_t i;

    pthread_mutex_lock(&A.tab_lock);
    memcpy(left, A.tab, sizeof(left));
    pthread_mutex_unlock(&A.tab_lock);
    for (i = 0; i < ACME_MAX_NAMES; i++)
        if (left[i].used)
            challenge_withdraw(left[i].type, left[i].name, left[i].token);
}

ssize_t acme_http01_lookup(const char *token, size_t len, char *out, size_t cap)
{
    ssize_t n = -1;
    size_t i;

    if (len == 0 || len > ACME_TOKEN_MAX)
        return -1;
    pthread_mutex_lock(&A.tab_lock);
    for (i = 0; i < ACME_MAX_NAMES && n < 0; i++) {
        const struct challenge *c = &A.tab[i];
        if (c->used && c->type == ACME_HTTP_01 && strlen(c->token) == len
            && memcmp(c->token, token, len) == 0 && strlen(c->key_auth) < cap) {
            n = (ssize_t)strlen(c->key_auth);
            memcpy(out, c->key_auth, (size_t)n + 1);
        }
    }
    pthread_mutex_unlock(&A.tab_lock);
    return n;
}

static const struct client_env ENV = {
    .wait = client_wait,
    .stopping = stopping,
    .publish = challenge_publish,
    .withdraw = challenge_withdraw,
};

/* ---- status ------------------------------------------------------------------------------ */

size_t acme_status(struct acme_name_status *out, size_t max)
{
    size_t i;

    pthread_mutex_lock(&A.lock);
    for (i = 0; i < A.s.n_names && i < max; i++) {
        out[i] = A.status;
        snprintf(out[i].name, sizeof(out[i].name), "%s", A.s.names[i]);
    }
    i = A.s.n_names;
    pthread_mutex_unlock(&A.lock);
    return i;
}

/* Record an attempt's outcome (why: NULL on success) and when the next one is due. */
static void status_set(const char *why, time_t now, time_t next)
{
    pthread_mutex_lock(&A.lock);
    A.status.last_attempt = now;
    A.status.last_ok = why == NULL;
    snprintf(A.status.last_error, sizeof(A.status.last_error), "%s", why ? why : "");
    A.status.next_attempt = next;
    A.status.failures += why != NULL;
    if (!why)
        A.status.not_after = A.installed_not_after;
    pthread_mutex_unlock(&A.lock);
}

/* The next attempt after a success: the renewal time, never sooner than RENEW_FLOOR_S. */
static time_t next_after_success(time_t renew_at, time_t now)
{
    return renew_at > now + RENEW_FLOOR_S ? renew_at : now + RENEW_FLOOR_S;
}

/* ---- one attempt ------------------------------------------------------------------------- */

struct attempt {
    char why[ACME_ERROR_MAX];
    long retry_after; /* the CA's, seconds; -1: none */
    bool ordered;
    time_t renew_at;
    time_t ari_poll_at;              /* when to ask the CA's ARI again; 0: not asked */
    char replaces[ACME_ARI_ID_MAX]; /* the stored certificate's ARI identifier, or "" */
};

static void ari_check(struct attempt *at, X509 *leaf, time_t now);

static int attempt_fail(struct attempt *at, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int attempt_fail(struct attempt *at, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(at->why, sizeof(at->why), fmt, ap);
    va_end(ap);
    return -1;
}

/* NAME.crt or NAME.key: the certificate's files, NAME its first name. */
static void cert_file(char *out, size_t cap, const char *ext, bool full_path)
{
    snprintf(out, cap, "%s%s%s.%s", full_path ? A.s.state_dir : "", full_path ? "/" : "",
             A.s.names[0], ext);
}

/* Hand the stored pair (leaf first) to the server, unless it already has this certificate.
 * The status says so first: whoever the hook wakes reads a status that includes it. */
static int install(struct attempt *at, X509 *leaf)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    char crt[PATH_MAX], key[PATH_MAX];
    time_t nb, na, now = time(NULL);
    unsigned int mdlen = sizeof(md);

    if (certs_validity(leaf, &nb, &na) < 0 || !X509_digest(leaf, EVP_sha256(), md, &mdlen))
        return attempt_fail(at, "the certificate's validity is unreadable");
    at->renew_at = schedule_renew_at(nb, na);
    if (A.installed_not_after && memcmp(md, A.installed_md, sizeof(md)) == 0)
        return 0;
    cert_file(crt, sizeof(crt), "crt", true);
    cert_file(key, sizeof(key), "key", true);
    A.installed_not_after = na;
    status_set(NULL, now, next_after_success(at->renew_at, now));
    if (A.h.install && A.h.install(A.h.arg, A.s.names, A.s.n_names, crt, key) < 0) {
        A.installed_not_after = 0;
        return attempt_fail(at, "the server did not take the certificate");
    }
    memcpy(A.installed_md, md, sizeof(md));
    return 0;
}

/* The stored certificate: installed when it is good for our names and not yet installed.
 * 1: no renewal due yet; 0: none, or due (order one); -1: it could not be installed. */
static int use_stored(struct attempt *at, time_t now)
{
    char name[NAME_MAX + 1], why[ACME_ERROR_MAX];
    STACK_OF(X509) *chain = NULL;
    EVP_PKEY *key = NULL;
    char *pem = NULL;
    size_t len;
    int err, rc = 0;

    cert_file(name, sizeof(name), "crt", false);
    err = store_read(A.s.state_dir, name, &pem, &len);
    if (err == 0) {
        chain = certs_chain_parse(pem, len);
        cert_file(name, sizeof(name), "key", false);
        key = store_load_key(A.s.state_dir, name, &err);
    }
    if (err == -ENOENT && !pem)
        goto out;
    /* A corrupt, truncated or mismatched pair is ordered anew, never installed. */
    if (!chain || !key
        || certs_chain_check(chain, key, A.s.names, A.s.n_names, now, why, sizeof(why)) < 0) {
        log_warn("acme: %s: the stored certificate is not usable (%s); ordering a new one",
                 A.s.names[0], !chain ? "not a certificate chain" : !key ? "no usable key" : why);
        goto out;
    }
    rc = install(at, sk_X509_value(chain, 0)) < 0 ? -1 : 0;
    if (certs_ari_id(sk_X509_value(chain, 0), at->replaces, sizeof(at->replaces)) < 0)
        at->replaces[0] = '\0';
    if (rc == 0 && now < at->renew_at)
        ari_check(at, sk_X509_value(chain, 0), now);
    if (rc == 0 && now < at->renew_at) {
        log_info("acme: %s: the stored certificate is good until its renewal", A.s.names[0]);
        rc = 1;
    }
out:
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    free(pem);
    return rc;
}

/* The account key: stored once, reused; a corrupt one is never silently replaced (the account
 * would be lost with it). */
static EVP_PKEY *account_key(struct attempt *at)
{
    EVP_PKEY *key;
    int err;

    key = store_load_key(A.s.state_dir, ACCOUNT_KEY, &err);
    if (key || err != -ENOENT) {
        if (!key)
            attempt_fail(at, "%s/%s: %s", A.s.state_dir, ACCOUNT_KEY,
                         err == -EINVAL ? "not a private key (remove it to register anew)"
                                        : strerror(-err));
        return key;
    }
    key = certs_key_new();
    if (!key || (err = store_save_key(A.s.state_dir, ACCOUNT_KEY, key)) < 0) {
        attempt_fail(at, "cannot store the account key: %s", key ? strerror(-err) : "no key");
        EVP_PKEY_free(key);
        return NULL;
    }
    log_notice("acme: new account key %s/%s", A.s.state_dir, ACCOUNT_KEY);
    return key;
}

/* Store the new key and chain (the key first: a crash between the two leaves a pair that
 * does not match, which use_stored() refuses), then install them. */
static int keep(struct attempt *at, STACK_OF(X509) *chain, EVP_PKEY *key)
{
    char name[NAME_MAX + 1];
    size_t len;
    char *pem = certs_chain_pem(chain, &len);
    int err = pem ? 0 : -ENOMEM;

    cert_file(name, sizeof(name), "key", false);
    if (err == 0)
        err = store_save_key(A.s.state_dir, name, key);
    cert_file(name, sizeof(name), "crt", false);
    if (err == 0)
        err = store_write(A.s.state_dir, name, pem, len, CHAIN_MODE);
    free(pem);
    if (err < 0)
        return attempt_fail(at, "cannot store the certificate: %s", strerror(-err));
    return install(at, sk_X509_value(chain, 0));
}

static int ensure_client(struct attempt *at)
{
    EVP_PKEY *acct;

    if (A.client)
        return 0;
    if ((acct = account_key(at)) == NULL)
        return -1;
    if ((A.client = client_new(&A.s, &ENV, acct)) == NULL)
        return attempt_fail(at, "cannot start the ACME client");
    return 0;
}

/* ARI (RFC 9773): a CA that knows better (a revocation coming, a shorter lifetime) may ask
 * for an earlier renewal; never a later one than our own two thirds. Any failure here only
 * leaves our own schedule. */
static void ari_check(struct attempt *at, X509 *leaf, time_t now)
{
    time_t start, end, pick;
    long poll = -1;
    uint32_t rnd = 0;
    int rc;

    if (ensure_client(at) < 0) {
        log_info("acme: %s: no renewal information: %s", A.s.names[0], at->why);
        at->why[0] = '\0';
        return;
    }
    rc = client_renewal_window(A.client, leaf, &start, &end, &poll);
    if (rc == 1)
        return;
    at->ari_poll_at = now + (poll < 0 ? ARI_POLL_DEFAULT_S
                             : poll < ARI_POLL_MIN_S ? ARI_POLL_MIN_S
                             : poll > ARI_POLL_MAX_S ? ARI_POLL_MAX_S : poll);
    if (rc < 0) {
        log_info("acme: %s: %s; renewal on our own schedule", A.s.names[0],
                 client_why(A.client));
        return;
    }
    if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
        rnd = (uint32_t)now;
    pick = schedule_in_window(start, end, rnd);
    if (pick < at->renew_at) {
        log_notice("acme: %s: the CA suggests renewing by %lld s from now", A.s.names[0],
                   (long long)(pick - now));
        at->renew_at = pick;
    }
}

static int order(struct attempt *at)
{
    /* = NULL: cppcheck reads a bare "STACK_OF(X509) *chain;" as a multiplication */
    STACK_OF(X509) *chain = NULL;
    EVP_PKEY *key = NULL;
    int rc;

    if (ensure_client(at) < 0)
        return -1;
    at->ordered = true;
    pthread_mutex_lock(&A.lock);
    A.status.orders++;
    pthread_mutex_unlock(&A.lock);
    if (client_issue(A.client, at->replaces[0] ? at->replaces : NULL, &chain, &key) < 0) {
        at->retry_after = client_retry_after(A.client);
        return attempt_fail(at, "%s", client_why(A.client));
    }
    rc = keep(at, chain, key);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    return rc;
}

/* Under the state directory's lock: reuse the stored certificate, or order one. */
static int attempt(struct attempt *at, bool force)
{
    int lock, waited, rc;

    for (waited = 0; (lock = store_trylock(A.s.state_dir)) == -EWOULDBLOCK; waited++)
        if (waited >= LOCK_WAIT_S || !wait_ms(CLOCK_MS_PER_S, false))
            return attempt_fail(at, "%s is locked by another process", A.s.state_dir);
    if (lock < 0)
        return attempt_fail(at, "%s: cannot lock: %s", A.s.state_dir, strerror(-lock));
    rc = use_stored(at, time(NULL));
    if (rc == 0 || (rc == 1 && force))
        rc = order(at);
    else if (rc == 1)
        rc = 0;
    store_unlock(lock);
    return rc;
}

/* ---- the thread -------------------------------------------------------------------------- */

/* When to try again after a failure: the backoff, or the CA's Retry-After when later. */
static unsigned retry_delay(const struct attempt *at)
{
    unsigned min_s = A.s.retry_min_s ? A.s.retry_min_s : DEFAULT_RETRY_MIN_S;
    unsigned max_s = A.s.retry_max_s ? A.s.retry_max_s : DEFAULT_RETRY_MAX_S;
    uint32_t rnd = 0;
    unsigned d;

    if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
        rnd = (uint32_t)time(NULL);
    d = schedule_backoff(A.attempt++, min_s, max_s, rnd);
    if (at->retry_after > (long)d)
        d = at->retry_after > (long)max_s ? max_s : (unsigned)at->retry_after;
    return d;
}

static void set_in_progress(bool on)
{
    pthread_mutex_lock(&A.lock);
    A.status.in_progress = on;
    pthread_mutex_unlock(&A.lock);
}

/* One attempt and its outcome in the status; false when it failed. */
static bool run_attempt(bool force)
{
    struct attempt at = {.retry_after = -1};
    time_t now, next;
    int rc;

    set_in_progress(true);
    rc = attempt(&at, force);
    set_in_progress(false);
    if (rc == 0) {
        now = time(NULL);
        A.attempt = 0;
        next = next_after_success(at.renew_at, now);
        if (at.ari_poll_at && at.ari_poll_at < next)
            next = at.ari_poll_at;
        if (at.ordered) {
            char until[HTTP_DATE_BUF], renew[HTTP_DATE_BUF];
            http_date_format(A.installed_not_after, until);
            http_date_format(next, renew);
            log_notice("acme: %s: new certificate installed, valid until %s, renewal at %s",
                       A.s.names[0], until, renew);
        }
        status_set(NULL, now, next);
        return true;
    }
    if (stopping())
        return false;
    now = time(NULL);
    next = now + retry_delay(&at);
    /* once per attempt: the backoff keeps this rare */
    log_warn("acme: %s: %s; next attempt in %lld s", A.s.names[0], at.why,
             (long long)(next - now));
    status_set(at.why, now, next);
    return false;
}

static void *acme_main(void *arg)
{
    bool asked, forced = false;
    time_t now, next;

    (void)arg;
    for (;;) {
        pthread_mutex_lock(&A.lock);
        asked = A.renew;
        A.renew = false;
        next = A.status.next_attempt;
        pthread_mutex_unlock(&A.lock);
        now = time(NULL);
        if (!asked && now < next) {
            time_t d = next - now > WAIT_SLICE_S ? WAIT_SLICE_S : next - now;
            if (!wait_ms((unsigned)d * CLOCK_MS_PER_S, true))
                break;
            continue;
        }
        if (stopping())
            break;
        /* A renewal asked for stays asked for until one succeeds: its retries (after the
         * backoff like any other) must not settle for the certificate it was to replace. */
        forced = !run_attempt(asked || forced) && (asked || forced);
    }
    challenges_clear();
    return NULL;
}

int acme_start(const struct acme_settings *s, const struct acme_hooks *h)
{
    const char *why = A.running ? "already started" : acme_settings_check(s);
    pthread_condattr_t ca;
    int err;

    if (why) {
        log_error("acme: %s", why);
        return -1;
    }
    if ((err = store_init(s->state_dir)) < 0) {
        log_error("acme: %s: %s", s->state_dir, strerror(-err));
        return -1;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    err = pthread_cond_init(&A.cond, &ca);
    pthread_condattr_destroy(&ca);
    if (err != 0)
        goto fail;
    /* under the lock: a status page may read it while an earlier run's numbers go */
    pthread_mutex_lock(&A.lock);
    A.s = *s;
    A.h = *h;
    A.stop = A.renew = false;
    memset(&A.status, 0, sizeof(A.status));
    pthread_mutex_unlock(&A.lock);
    A.installed_not_after = 0;
    A.attempt = 0;
    if ((err = pthread_create(&A.thread, NULL, acme_main, NULL)) != 0)
        goto fail_cond;
    pthread_mutex_lock(&A.lock); /* acme_renew_now() reads it from any thread */
    A.running = true;
    pthread_mutex_unlock(&A.lock);
    return 0;

fail_cond:
    pthread_cond_destroy(&A.cond);
fail:
    log_error("acme: cannot start its thread: %s", strerror(err));
    return -1;
}

void acme_stop(void)
{
    if (!A.running)
        return;
    pthread_mutex_lock(&A.lock);
    A.stop = true;
    pthread_cond_broadcast(&A.cond);
    pthread_mutex_unlock(&A.lock);
    pthread_join(A.thread, NULL);
    client_free(A.client);
    A.client = NULL;
    pthread_mutex_lock(&A.lock);
    A.running = false;
    pthread_mutex_unlock(&A.lock);
    pthread_cond_destroy(&A.cond);
}

void acme_renew_now(void)
{
    pthread_mutex_lock(&A.lock);
    A.renew = true;
    if (A.running)
        pthread_cond_broadcast(&A.cond);
    pthread_mutex_unlock(&A.lock);
}
