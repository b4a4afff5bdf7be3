/* client.h — one ACME conversation (RFC 8555 7): the directory, nonces, the account, and an
 * order through to its certificate. Runs on the ACME thread only; https.h underneath.
 *
 * Each step checks what the CA answered before using it (see acme.h) and fails with a reason
 * in c->why; a CA's Retry-After on a failure is kept in c->retry_after for the backoff. */
#ifndef LF_ACME_CLIENT_H
#define LF_ACME_CLIENT_H

#include "acme/acme.h"

#include <openssl/safestack.h>
#include <openssl/x509.h>

/* What the client needs from its thread: a wait that ends early when the thread stops, and
 * where challenge answers go. */
struct client_env {
    /* Wait ms milliseconds; false when the thread is stopping (give up). */
    bool (*wait)(unsigned ms);
    /* true when the thread is stopping (aborts a transfer in flight) */
    bool (*stopping)(void);
    int (*publish)(enum acme_challenge type, const char *name, const char *token,
                   const char *key_authorization);
    void (*withdraw)(enum acme_challenge type, const char *name, const char *token);
};

struct acme_client;

/* A client for s's CA with the account key `account` (taken: the client frees it). NULL when
 * out of memory. */
struct acme_client *client_new(const struct acme_settings *s, const struct client_env *env,
                               EVP_PKEY *account);
void client_free(struct acme_client *c);

/* Order a certificate for s's names: *chain (leaf first, checked) and *key, its new key.
 * `replaces`: the ARI identifier of the certificate it renews, or NULL. 0, or -1 with the
 * reason from client_why() and the CA's Retry-After (seconds, -1: none) from
 * client_retry_after(). */
int client_issue(struct acme_client *c, const char *replaces, STACK_OF(X509) **chain,
                 EVP_PKEY **key);

/* ARI (RFC 9773): the CA's suggested renewal window for `cert` in [*start, *end), and how
 * long until it should be asked again in *poll_s (its Retry-After, or -1). 1 when the CA has
 * none (no renewalInfo in its directory: renew on our own schedule), 0, or -1 with the reason
 * from client_why(). */
int client_renewal_window(struct acme_client *c, X509 *cert, time_t *start, time_t *end,
                          long *poll_s);
const char *client_why(const struct acme_client *c);
long client_retry_after(const struct acme_client *c);

#endif
