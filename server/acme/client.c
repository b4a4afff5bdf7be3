/* client.c — the ACME protocol (RFC 8555) over https.h, for one account (client.h).
 *
 * Requests: every POST is a JWS signed with the account key (the first, newAccount, carries
 * the JWK; the others the account URL, "kid"), with a fresh nonce from the previous reply or
 * newNonce. A badNonce error is retried with the nonce it brought, a bounded number of times.
 * Replies: bodies are bounded, headers copied into fixed fields, JSON read with a depth limit
 * and checked field by field; URLs must be https (http too for a test CA). */
#include "acme/client.h"

#include "acme/certs.h"
#include "acme/https.h"
#include "acme/jws.h"
#include "acme/schedule.h"
#include "base/clock.h"
#include "base/version.h"
#include "log/log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define URL_MAX 1024
#define NONCE_MAX 256
#define HEADER_VALUE_MAX 256
/* A JSON reply (directory, order, authorization) is a few KiB; a certificate chain a few
 * certificates. Anything larger is refused. */
#define JSON_BODY_MAX (64 * 1024)
#define CHAIN_BODY_MAX (128 * 1024)
#define JSON_DEPTH_MAX 10
/* An order authorizes each name once; a CA may list a few more (already valid ones). */
#define AUTHZ_MAX (2 * ACME_MAX_NAMES)
/* badNonce retries of one request (RFC 8555 6.5: clients should retry). */
#define NONCE_RETRIES 16
#define CONNECT_TIMEOUT_S 15L
#define TRANSFER_TIMEOUT_S 60L
/* Polling an authorization or an order: the CA's Retry-After, kept within these bounds, for
 * at most POLL_TOTAL_S in all. */
#define POLL_MIN_MS 500
#define POLL_MAX_S 10
#define POLL_TOTAL_S 300
#define HTTP_OK 200
#define HTTP_CREATED 201
#define HTTP_NO_CONTENT 204
#define HTTP_BAD_REQUEST 400

#define ERR_PREFIX "urn:ietf:params:acme:error:"
#define HTTPS "https://"
#define HTTP "http://"
#define ASCII_DEL 0x7f

struct reply {
    long status;
    char *body;
    size_t len, max;
    bool too_big;
    char nonce[NONCE_MAX];
    char location[URL_MAX];
    char retry_after[HEADER_VALUE_MAX];
};

struct acme_client {
    const struct acme_settings *s;
    const struct client_env *env;
    EVP_PKEY *account;
    char thumbprint[JWS_THUMBPRINT_LEN + 1];
    char new_nonce[URL_MAX], new_account[URL_MAX], new_order[URL_MAX];
    char renewal_info[URL_MAX]; /* ARI; empty when the CA has none */
    char kid[URL_MAX];
    char nonce[NONCE_MAX];
    long retry_after;
    char why[ACME_ERROR_MAX];
};

struct order {
    char url[URL_MAX];
    char finalize[URL_MAX];
    char certificate[URL_MAX];
    char authz[AUTHZ_MAX][URL_MAX];
    size_t n_authz;
};

static int fail(struct acme_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct acme_client *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
    return -1;
}

const char *client_why(const struct acme_client *c)
{
    return c->why;
}

long client_retry_after(const struct acme_client *c)
{
    return c->retry_after;
}

/* ---- transport --------------------------------------------------------------------------- */

static int on_body(void *arg, const char *p, size_t len)
{
    struct reply *r = arg;
    char *b;

    if (r->len + len > r->max) {
        r->too_big = true;
        return -1; /* aborts the transfer */
    }
    b = realloc(r->body, r->len + len + 1);
    if (!b)
        return -1;
    memcpy(b + r->len, p, len);
    r->body = b;
    r->len += len;
    b[r->len] = '\0';
    return 0;
}

/* Copy a header's value into dst when it is that header; an over-long value is dropped,
 * never cut (a cut nonce or URL would only fail later, less clearly). */
static void take_header(const char *field, size_t flen, const char *value, size_t vlen,
                        const char *name, char *dst, size_t cap)
{
    if (flen != strlen(name) || strncasecmp(field, name, flen) != 0 || vlen >= cap)
        return;
    memcpy(dst, value, vlen);
    dst[vlen] = '\0';
}

static void on_header(void *arg, const char *f, size_t flen, const char *v, size_t vlen)
{
    struct reply *r = arg;

    take_header(f, flen, v, vlen, "Replay-Nonce", r->nonce, sizeof(r->nonce));
    take_header(f, flen, v, vlen, "Location", r->location, sizeof(r->location));
    take_header(f, flen, v, vlen, "Retry-After", r->retry_after, sizeof(r->retry_after));
}

static void reply_reset(struct reply *r, size_t max)
{
    free(r->body);
    memset(r, 0, sizeof(*r));
    r->max = max;
}

static void reply_free(struct reply *r)
{
    free(r->body);
    r->body = NULL;
}

/* Whether a URL from the CA may be followed: https (http for a test CA), bounded, printable. */
static bool url_ok(const struct acme_client *c, const char *url)
{
    size_t i, len = url ? strlen(url) : 0;

    if (len == 0 || len >= URL_MAX)
        return false;
    for (i = 0; i < len; i++)
        if ((unsigned char)url[i] <= ' ' || (unsigned char)url[i] >= ASCII_DEL)
            return false;
    return strncmp(url, HTTPS, strlen(HTTPS)) == 0
           || (c->s->test_ca && strncmp(url, HTTP, strlen(HTTP)) == 0);
}

/* One exchange: GET (body NULL), HEAD (head), or POST of a JWS. */
static int transfer(struct acme_client *c, const char *url, const char *body, bool head,
                    const char *accept, struct reply *r)
{
    char hdrs[2 * HEADER_VALUE_MAX], err[URL_MAX];
    const struct https_reply_ops ops = { .arg = r, .header = on_header, .body = on_body };

    snprintf(hdrs, sizeof(hdrs), "User-Agent: lfhttpd/%s (acme)\r\nAccept: %s\r\n%s",
             LFHTTPD_VERSION, accept, body ? "Content-Type: application/jose+json\r\n" : "");
    const struct https_request rq = {
        .url = url,
        .method = body ? "POST" : head ? "HEAD" : "GET",
        .headers = hdrs,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .ca_bundle = c->s->ca_bundle,
        .allow_http = c->s->test_ca,
        .connect_ms = CONNECT_TIMEOUT_S * CLOCK_MS_PER_S,
        .total_ms = TRANSFER_TIMEOUT_S * CLOCK_MS_PER_S,
        .stopping = c->env->stopping,
    };
    if (https_exchange(&rq, &ops, &r->status, err, sizeof(err)) < 0)
        return fail(c, "%s: %s", url, r->too_big ? "reply too large" : err);
    r->too_big = false;
    return 0;
}

/* ---- JSON -------------------------------------------------------------------------------- */

/* The reply's body as a JSON object (depth-limited, all of it consumed), or NULL. */
static json_object *reply_json(struct acme_client *c, const struct reply *r, const char *what)
{
    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH_MAX);
    json_object *j = NULL;

    if (tok && r->body && r->len <= INT32_MAX) {
        j = json_tokener_parse_ex(tok, r->body, (int)r->len);
        /* one object and nothing after it: trailing bytes mean the reply is not what the
         * CA meant to send (or not from the CA) */
        if (j && (json_tokener_get_error(tok) != json_tokener_success
                  || json_tokener_get_parse_end(tok) != r->len
                  || !json_object_is_type(j, json_type_object))) {
            json_object_put(j);
            j = NULL;
        }
    }
    json_tokener_free(tok);
    if (!j)
        fail(c, "%s: the CA's reply is not a JSON object", what);
    return j;
}

/* A string member of at most max bytes, or NULL (missing, not a string, too long). */
static const char *jstr(json_object *o, const char *key, size_t max)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)
        || (size_t)json_object_get_string_len(v) > max)
        return NULL;
    return json_object_get_string(v);
}

/* A URL member, checked, copied into dst[URL_MAX]. */
static int jurl(struct acme_client *c, json_object *o, const char *key, char *dst)
{
    const char *u = jstr(o, key, URL_MAX - 1);

    if (!u || !url_ok(c, u))
        return fail(c, "the CA's \"%s\" is missing or not an acceptable URL", key);
    memcpy(dst, u, strlen(u) + 1);
    return 0;
}

/* An error reply: the problem document's type and detail (RFC 7807), and its Retry-After. */
static int fail_reply(struct acme_client *c, const struct reply *r, const char *what)
{
    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH_MAX);
    json_object *j = tok && r->body ? json_tokener_parse_ex(tok, r->body, (int)r->len) : NULL;
    const char *type = j && json_object_is_type(j, json_type_object) ? jstr(j, "type", 128)
                                                                     : NULL;
    const char *detail = type ? jstr(j, "detail", 256) : NULL;
    long ra = schedule_retry_after(r->retry_after, time(NULL), INT32_MAX);

    if (ra >= 0)
        c->retry_after = ra;
    fail(c, "%s: HTTP %ld%s%s%s%s", what, r->status, type ? " " : "", type ? type : "",
         detail ? ": " : "", detail ? detail : "");
    json_object_put(j);
    json_tokener_free(tok);
    return -1;
}

static bool is_bad_nonce(const struct reply *r)
{
    json_object *j;
    const char *type;
    bool bad;

    if (r->status != HTTP_BAD_REQUEST || !r->body)
        return false;
    j = json_tokener_parse(r->body);
    type = j && json_object_is_type(j, json_type_object) ? jstr(j, "type", 128) : NULL;
    bad = type && strcmp(type, ERR_PREFIX "badNonce") == 0;
    json_object_put(j);
    return bad;
}

/* ---- requests ---------------------------------------------------------------------------- */

static void keep_nonce(struct acme_client *c, const struct reply *r)
{
    /* RFC 8555 6.5.1: a nonce is base64url; anything else is not sent back. */
    if (r->nonce[0] && strspn(r->nonce, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789-_") == strlen(r->nonce))
        memcpy(c->nonce, r->nonce, sizeof(c->nonce));
}

static int fetch_nonce(struct acme_client *c)
{
    struct reply r = {0};
    int rc;

    reply_reset(&r, JSON_BODY_MAX);
    rc = transfer(c, c->new_nonce, NULL, true, "*/*", &r);
    if (rc == 0 && r.status != HTTP_OK && r.status != HTTP_NO_CONTENT)
        rc = fail_reply(c, &r, "newNonce");
    if (rc == 0) {
        keep_nonce(c, &r);
        if (!c->nonce[0])
            rc = fail(c, "newNonce: no usable Replay-Nonce");
    }
    reply_free(&r);
    return rc;
}

/* POST a JWS of payload (NULL: POST-as-GET) to url; the reply in r, whatever its status. */
static int post(struct acme_client *c, const char *url, const char *payload, const char *accept,
                size_t max, struct reply *r)
{
    int attempt;

    for (attempt = 0; attempt < NONCE_RETRIES; attempt++) {
        char *jws;
        int rc;

        if (!c->nonce[0] && fetch_nonce(c) < 0)
            return -1;
        jws = jws_build(c->account, c->kid[0] ? c->kid : NULL, c->nonce, url, payload);
        c->nonce[0] = '\0'; /* a nonce is good for one request */
        if (!jws)
            return fail(c, "cannot sign a request");
        reply_reset(r, max);
        rc = transfer(c, url, jws, false, accept, r);
        free(jws);
        if (rc < 0)
            return -1;
        keep_nonce(c, r);
        if (!is_bad_nonce(r))
            return 0;
        log_debug("acme: %s: badNonce, retrying with the new nonce", url);
    }
    return fail(c, "%s: the CA refused %d nonces in a row", url, NONCE_RETRIES);
}

/* POST, expecting one of two statuses and a JSON object. */
static json_object *post_json(struct acme_client *c, const char *url, const char *payload,
                              long want, struct reply *r, const char *what)
{
    if (post(c, url, payload, "application/json", JSON_BODY_MAX, r) < 0)
        return NULL;
    if (r->status != want && r->status != HTTP_OK) {
        fail_reply(c, r, what);
        return NULL;
    }
    return reply_json(c, r, what);
}

static int directory(struct acme_client *c)
{
    struct reply r = {0};
    json_object *j = NULL;
    int rc;

    reply_reset(&r, JSON_BODY_MAX);
    rc = transfer(c, c->s->directory_url, NULL, false, "application/json", &r);
    if (rc == 0 && r.status != HTTP_OK)
        rc = fail_reply(c, &r, "directory");
    if (rc == 0 && (j = reply_json(c, &r, "directory")) == NULL)
        rc = -1;
    if (rc == 0 && (jurl(c, j, "newNonce", c->new_nonce) < 0
                    || jurl(c, j, "newAccount", c->new_account) < 0
                    || jurl(c, j, "newOrder", c->new_order) < 0))
        rc = -1;
    c->renewal_info[0] = '\0';
    if (rc == 0 && json_object_object_get_ex(j, "renewalInfo", NULL)
        && jurl(c, j, "renewalInfo", c->renewal_info) < 0)
        rc = -1;
    if (rc < 0)
        c->new_order[0] = '\0'; /* fetch it again next time */
    json_object_put(j);
    reply_free(&r);
    return rc;
}

/* newAccount (RFC 8555 7.3): for a key the CA knows, it answers with the existing account, so
 * the same call registers and finds again. The account URL becomes the kid of what follows. */
static int account(struct acme_client *c)
{
    json_object *p = json_object_new_object(), *contact, *j = NULL;
    struct reply r = {0};
    char mailto[ACME_NAME_MAX + 16];
    const char *status;
    int rc = -1;

    if (!p)
        return fail(c, "out of memory");
    json_object_object_add(p, "termsOfServiceAgreed", json_object_new_boolean(c->s->agree_tos));
    if (c->s->email) {
        snprintf(mailto, sizeof(mailto), "mailto:%s", c->s->email);
        contact = json_object_new_array();
        json_object_array_add(contact, json_object_new_string(mailto));
        json_object_object_add(p, "contact", contact);
    }
    j = post_json(c, c->new_account,
                  json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), HTTP_CREATED, &r,
                  "newAccount");
    if (!j)
        goto out;
    status = jstr(j, "status", 32);
    if (!status || strcmp(status, "valid") != 0) {
        fail(c, "newAccount: the account is %s", status ? status : "of no status");
        goto out;
    }
    if (!url_ok(c, r.location)) {
        fail(c, "newAccount: no acceptable account URL (Location)");
        goto out;
    }
    memcpy(c->kid, r.location, sizeof(c->kid));
    rc = 0;
out:
    json_object_put(j);
    json_object_put(p);
    reply_free(&r);
    return rc;
}

/* ---- orders ------------------------------------------------------------------------------ */

static const char *const CHALLENGE_TYPE[] = {
    [ACME_HTTP_01] = "http-01",
    [ACME_TLS_ALPN_01] = "tls-alpn-01",
};

/* Wait before polling again: the CA's Retry-After within bounds. false: stopping or too long. */
static bool poll_wait(struct acme_client *c, const struct reply *r, time_t deadline)
{
    long s = schedule_retry_after(r->retry_after, time(NULL), POLL_MAX_S);
    unsigned ms = s > 0 ? (unsigned)s * CLOCK_MS_PER_S : POLL_MIN_MS;

    if (time(NULL) + (time_t)(ms / CLOCK_MS_PER_S) > deadline) {
        fail(c, "the CA took longer than %d s", POLL_TOTAL_S);
        return false;
    }
    if (!c->env->wait(ms)) {
        fail(c, "stopped");
        return false;
    }
    return true;
}

static int new_order(struct acme_client *c, const char *replaces, struct order *o)
{
    json_object *p = json_object_new_object(), *ids = json_object_new_array(), *j = NULL, *a;
    struct reply r = {0};
    const char *status;
    size_t i;
    int rc = -1;

    if (!p || !ids) {
        json_object_put(p), json_object_put(ids);
        return fail(c, "out of memory");
    }
    for (i = 0; i < c->s->n_names; i++) {
        json_object *id = json_object_new_object();
        json_object_object_add(id, "type", json_object_new_string("dns"));
        json_object_object_add(id, "value", json_object_new_string(c->s->names[i]));
        json_object_array_add(ids, id);
    }
    json_object_object_add(p, "identifiers", ids);
    /* RFC 9773 5: which certificate this order renews, for a CA that speaks ARI */
    if (replaces && c->renewal_info[0])
        json_object_object_add(p, "replaces", json_object_new_string(replaces));
    j = post_json(c, c->new_order, json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
                  HTTP_CREATED, &r, "newOrder");
    if (!j)
        goto out;
    status = jstr(j, "status", 32);
    if (!url_ok(c, r.location) || !status
        || (strcmp(status, "pending") != 0 && strcmp(status, "ready") != 0)) {
        fail(c, "newOrder: no order URL, or the order is %s", status ? status : "of no status");
        goto out;
    }
    memcpy(o->url, r.location, sizeof(o->url));
    if (jurl(c, j, "finalize", o->finalize) < 0)
        goto out;
    if (!json_object_object_get_ex(j, "authorizations", &a)
        || !json_object_is_type(a, json_type_array) || json_object_array_length(a) == 0
        || json_object_array_length(a) > AUTHZ_MAX) {
        fail(c, "newOrder: no list of authorizations, or too long a one");
        goto out;
    }
    for (o->n_authz = 0; o->n_authz < json_object_array_length(a); o->n_authz++) {
        const char *u = json_object_get_string(json_object_array_get_idx(a, o->n_authz));
        if (!json_object_is_type(json_object_array_get_idx(a, o->n_authz), json_type_string)
            || !url_ok(c, u)) {
            fail(c, "newOrder: an authorization URL is not acceptable");
            goto out;
        }
        memcpy(o->authz[o->n_authz], u, strlen(u) + 1);
    }
    rc = 0;
out:
    json_object_put(j);
    json_object_put(p);
    reply_free(&r);
    return rc;
}

/* Whether `name` is one the order asked for (an authorization for another one is the CA's
 * mistake, or an attack: never answered). */
static bool our_name(const struct acme_client *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->s->n_names; i++)
        if (strcasecmp(c->s->names[i], name) == 0)
            return true;
    return false;
}

/* The challenge of our type in an authorization: its URL and token. */
static int pick_challenge(struct acme_client *c, json_object *authz, char *url, char *token)
{
    json_object *list, *ch;
    const char *type = CHALLENGE_TYPE[c->s->challenge], *t;
    size_t i;

    if (!json_object_object_get_ex(authz, "challenges", &list)
        || !json_object_is_type(list, json_type_array))
        return fail(c, "authorization: no list of challenges");
    for (i = 0; i < json_object_array_length(list); i++) {
        ch = json_object_array_get_idx(list, i);
        if (!json_object_is_type(ch, json_type_object) || !(t = jstr(ch, "type", 32))
            || strcmp(t, type) != 0)
            continue;
        t = jstr(ch, "token", ACME_TOKEN_MAX);
        /* RFC 8555 8.3: base64url only, which also makes it safe in a path and a file name */
        if (!t || !*t || strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789-_") != strlen(t))
            return fail(c, "authorization: the %s token is missing or malformed", type);
        memcpy(token, t, strlen(t) + 1);
        return jurl(c, ch, "url", url);
    }
    return fail(c, "authorization: the CA offers no %s challenge", type);
}

/* The detail of the first challenge error of an invalid authorization, for the log. */
static void authz_failure(struct acme_client *c, json_object *authz, const char *name)
{
    json_object *list, *err;
    const char *detail = NULL;
    size_t i;

    if (json_object_object_get_ex(authz, "challenges", &list)
        && json_object_is_type(list, json_type_array))
        for (i = 0; !detail && i < json_object_array_length(list); i++)
            if (json_object_object_get_ex(json_object_array_get_idx(list, i), "error", &err)
                && json_object_is_type(err, json_type_object))
                detail = jstr(err, "detail", 256);
    fail(c, "%s: validation failed%s%s", name, detail ? ": " : "", detail ? detail : "");
}

/* POST-as-GET url until its "status" is `done` (*ok), while it is `waiting` (or `waiting2`).
 * The last object read (for why it failed, when !*ok), or NULL. */
static json_object *poll_until(struct acme_client *c, const char *url, const char *waiting,
                               const char *waiting2, const char *done, const char *what,
                               bool *ok)
{
    time_t deadline = time(NULL) + POLL_TOTAL_S;
    struct reply r = {0};
    json_object *j = NULL;
    const char *status;

    *ok = false;
    for (;;) {
        j = post_json(c, url, NULL, HTTP_OK, &r, what);
        if (!j)
            break;
        status = jstr(j, "status", 32);
        if (status && strcmp(status, done) == 0) {
            *ok = true;
            break;
        }
        if (!status || (strcmp(status, waiting) != 0 && strcmp(status, waiting2) != 0)) {
            fail(c, "%s: status %s", what, status ? status : "missing");
            break; /* the caller reads the object for why */
        }
        json_object_put(j);
        j = NULL;
        if (!poll_wait(c, &r, deadline))
            break;
    }
    reply_free(&r);
    return j;
}

/* One authorization: nothing to do when valid; else answer our challenge and wait for it. */
static int authorize(struct acme_client *c, const char *url)
{
    char key_auth[ACME_KEYAUTH_MAX + 1], name[ACME_NAME_MAX + 1], token[ACME_TOKEN_MAX + 1];
    char chall[URL_MAX];
    json_object *j, *id, *done = NULL, *p = NULL;
    struct reply r = {0};
    const char *status, *value;
    bool ok;
    int rc = -1;

    j = post_json(c, url, NULL, HTTP_OK, &r, "authorization");
    if (!j)
        goto out;
    status = jstr(j, "status", 32);
    value = json_object_object_get_ex(j, "identifier", &id)
                    && json_object_is_type(id, json_type_object)
                ? jstr(id, "value", ACME_NAME_MAX)
                : NULL;
    if (!value || !our_name(c, value) || !status) {
        fail(c, "authorization: for no name of ours");
        goto out;
    }
    memcpy(name, value, strlen(value) + 1);
    if (strcmp(status, "valid") == 0) {
        rc = 0; /* a recent validation the CA still honours */
        goto out;
    }
    if (strcmp(status, "pending") != 0) {
        fail(c, "authorization for %s: %s", name, status);
        goto out;
    }
    if (pick_challenge(c, j, chall, token) < 0
        || jws_key_authorization(token, c->thumbprint, key_auth, sizeof(key_auth)) < 0
        || c->env->publish(c->s->challenge, name, token, key_auth) < 0) {
        if (!c->why[0])
            fail(c, "%s: cannot publish the challenge", name);
        goto out;
    }
    /* RFC 8555 7.5.1: an empty object says "ready, validate now" */
    reply_free(&r);
    p = post_json(c, chall, "{}", HTTP_OK, &r, "challenge");
    done = p ? poll_until(c, url, "pending", "pending", "valid", "authorization", &ok) : NULL;
    if (done && ok)
        rc = 0;
    else if (done)
        authz_failure(c, done, name);
    c->env->withdraw(c->s->challenge, name, token);
out:
    json_object_put(done);
    json_object_put(p);
    json_object_put(j);
    reply_free(&r);
    return rc;
}

/* Finalize with a CSR for a new key (RFC 8555 7.4), then wait for the certificate's URL. */
static int finalize(struct acme_client *c, struct order *o, EVP_PKEY *key)
{
    json_object *j, *p = json_object_new_object();
    unsigned char *der = NULL;
    char *csr = NULL;
    struct reply r = {0};
    bool ok = false;
    int len, rc = -1;

    j = poll_until(c, o->url, "pending", "pending", "ready", "order", &ok);
    json_object_put(j);
    if (!ok || !p)
        goto out;
    len = certs_csr_der(key, c->s->names, c->s->n_names, &der);
    if (len < 0 || (csr = malloc(B64URL_LEN((size_t)len) + 1)) == NULL
        || b64url_encode(der, (size_t)len, csr, B64URL_LEN((size_t)len) + 1) < 0) {
        fail(c, "cannot make the CSR");
        goto out;
    }
    json_object_object_add(p, "csr", json_object_new_string(csr));
    j = post_json(c, o->finalize, json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
                  HTTP_OK, &r, "finalize");
    json_object_put(j);
    if (!j)
        goto out;
    j = poll_until(c, o->url, "processing", "ready", "valid", "order", &ok);
    if (ok && jurl(c, j, "certificate", o->certificate) == 0)
        rc = 0;
    json_object_put(j);
out:
    OPENSSL_free(der);
    free(csr);
    json_object_put(p);
    reply_free(&r);
    return rc;
}

static STACK_OF(X509) *download(struct acme_client *c, const struct order *o)
{
    STACK_OF(X509) *chain = NULL;
    struct reply r = {0};

    if (post(c, o->certificate, NULL, "application/pem-certificate-chain", CHAIN_BODY_MAX, &r)
        == 0) {
        if (r.status != HTTP_OK)
            fail_reply(c, &r, "certificate");
        else if ((chain = certs_chain_parse(r.body ? r.body : "", r.len)) == NULL)
            fail(c, "certificate: the download is not a PEM certificate chain");
    }
    reply_free(&r);
    return chain;
}

static int issue(struct acme_client *c, const char *replaces, struct order *o,
                 STACK_OF(X509) **chain, EVP_PKEY *key)
{
    size_t i;

    if (!c->new_order[0] && directory(c) < 0)
        return -1;
    if (!c->kid[0] && account(c) < 0)
        return -1;
    if (new_order(c, replaces, o) < 0)
        return -1;
    log_info("acme: order %s for %s%s", o->url, c->s->names[0], c->s->n_names > 1 ? ", ..." : "");
    for (i = 0; i < o->n_authz; i++)
        if (authorize(c, o->authz[i]) < 0)
            return -1;
    if (finalize(c, o, key) < 0 || (*chain = download(c, o)) == NULL)
        return -1;
    if (certs_chain_check(*chain, key, c->s->names, c->s->n_names, time(NULL), c->why,
                          sizeof(c->why))
        < 0) {
        sk_X509_pop_free(*chain, X509_free);
        *chain = NULL;
        return -1;
    }
    return 0;
}

int client_issue(struct acme_client *c, const char *replaces, STACK_OF(X509) **chain,
                 EVP_PKEY **key)
{
    struct order *o = calloc(1, sizeof(*o));
    EVP_PKEY *k = certs_key_new();
    int rc = -1;

    c->why[0] = '\0';
    c->retry_after = -1;
    *chain = NULL;
    if (!o || !k)
        fail(c, "out of memory");
    else
        rc = issue(c, replaces, o, chain, k);
    if (rc < 0) {
        /* Start over next time: the directory may have moved, the CA may have forgotten the
         * account (newAccount finds it again for the same key). */
        c->new_order[0] = '\0';
        c->kid[0] = '\0';
        EVP_PKEY_free(k);
        k = NULL;
    }
    *key = k;
    free(o);
    return rc;
}

/* The window of a renewalInfo reply: {"suggestedWindow": {"start": T, "end": T}}. */
static int parse_window(struct acme_client *c, json_object *j, time_t *start, time_t *end)
{
    json_object *w;
    const char *a, *b;

    if (!json_object_object_get_ex(j, "suggestedWindow", &w)
        || !json_object_is_type(w, json_type_object) || !(a = jstr(w, "start", 64))
        || !(b = jstr(w, "end", 64)) || schedule_rfc3339(a, start) < 0
        || schedule_rfc3339(b, end) < 0 || *end <= *start)
        return fail(c, "renewalInfo: no valid suggestedWindow");
    return 0;
}

int client_renewal_window(struct acme_client *c, X509 *cert, time_t *start, time_t *end,
                          long *poll_s)
{
    char id[ACME_ARI_ID_MAX], url[URL_MAX + ACME_ARI_ID_MAX + 1];
    struct reply r = {0};
    json_object *j = NULL;
    int rc;

    c->why[0] = '\0';
    *poll_s = -1;
    if (!c->new_order[0] && directory(c) < 0)
        return -1;
    if (!c->renewal_info[0])
        return 1;
    if (certs_ari_id(cert, id, sizeof(id)) < 0)
        return fail(c, "renewalInfo: the certificate has no Authority Key Identifier");
    /* RFC 9773 4.1: the identifier is a path segment under renewalInfo (a plain GET) */
    snprintf(url, sizeof(url), "%s%s%s", c->renewal_info,
             c->renewal_info[strlen(c->renewal_info) - 1] == '/' ? "" : "/", id);
    reply_reset(&r, JSON_BODY_MAX);
    rc = transfer(c, url, NULL, false, "application/json", &r);
    if (rc == 0 && r.status != HTTP_OK)
        rc = fail_reply(c, &r, "renewalInfo");
    if (rc == 0 && ((j = reply_json(c, &r, "renewalInfo")) == NULL
                    || parse_window(c, j, start, end) < 0))
        rc = -1;
    if (rc == 0)
        *poll_s = schedule_retry_after(r.retry_after, time(NULL), INT32_MAX);
    json_object_put(j);
    reply_free(&r);
    return rc;
}

struct acme_client *client_new(const struct acme_settings *s, const struct client_env *env,
                               EVP_PKEY *account)
{
    struct acme_client *c = calloc(1, sizeof(*c));

    if (!c || jws_thumbprint(account, c->thumbprint) < 0) {
        free(c);
        EVP_PKEY_free(account);
        return NULL;
    }
    c->s = s;
    c->env = env;
    c->account = account;
    c->retry_after = -1;
    return c;
}

void client_free(struct acme_client *c)
{
    if (!c)
        return;
    EVP_PKEY_free(c->account);
    free(c);
}
