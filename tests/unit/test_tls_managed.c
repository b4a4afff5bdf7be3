/* test_tls_managed.c — unit tests for the TLS store's run-time part (server/net/tls.c): ACME's
 * managed certificate chosen by SNI for its names only, refused cleanly before there is one,
 * swapped by tls_managed_install; and the TLS-ALPN-01 challenge certificate (RFC 8737) given
 * only to a handshake that offers acme-tls/1 for a name with a published challenge, which is
 * then marked for closing. Handshakes run in memory over a socketpair. */
#include "acme/certs.h"
#include "net/tls.h"
#include "test.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct result {
    bool ok;           /* both ends finished the handshake */
    bool acme;         /* the server marked it a TLS-ALPN-01 validation */
    char alpn[32];     /* what the client sees selected; "" none */
    X509 *peer;        /* the certificate the client got (owned) */
};

/* One handshake: a client offering `alpn` (wire format) for `sni`. */
static struct result handshake(struct tls_ctx *t, const char *sni, const char *alpn,
                               size_t alpn_len)
{
    struct result r = { .ok = false };
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        return r;
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    SSL *c = SSL_new(cctx), *s = tls_ssl_new(t, sv[1]);
    SSL_set_fd(c, sv[0]);
    SSL_set_connect_state(c);
    char host[256]; /* the macro casts away const */
    snprintf(host, sizeof(host), "%s", sni);
    SSL_set_tlsext_host_name(c, host);
    SSL_set_alpn_protos(c, (const unsigned char *)alpn, (unsigned)alpn_len);
    bool cdone = false, sdone = false, failed = false;
    for (int i = 0; i < 1000 && !(cdone && sdone) && !failed; i++) {
        int rc;
        if (!cdone && (rc = SSL_do_handshake(c)) != 1) {
            int e = SSL_get_error(c, rc);
            failed = e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
        } else {
            cdone = true;
        }
        if (!sdone && (rc = SSL_do_handshake(s)) != 1) {
            int e = SSL_get_error(s, rc);
            failed |= e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
        } else {
            sdone = true;
        }
    }
    r.ok = cdone && sdone && !failed;
    r.acme = tls_ssl_acme_challenge(s);
    const unsigned char *sel;
    unsigned len;
    SSL_get0_alpn_selected(c, &sel, &len);
    snprintf(r.alpn, sizeof(r.alpn), "%.*s", (int)len, sel ? (const char *)sel : "");
    r.peer = r.ok ? SSL_get1_peer_certificate(c) : NULL;
    ERR_clear_error();
    SSL_free(c);
    SSL_CTX_free(cctx);
    tls_ssl_free(s);
    close(sv[0]);
    close(sv[1]);
    return r;
}

#define ACME_ALPN "\x0a" "acme-tls/1"
#define HTTP_ALPN "\x08" "http/1.1"

static void write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    if (cert)
        PEM_write_X509(f, cert);
    else
        PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
}

int main(void)
{
    static const char *const names[] = { "a.acme.test" };
    struct tls_settings ts = { .certs = NULL, .ncerts = 0, .passphrase_file = "",
                               .session_cache = 0, .session_timeout = 300000,
                               .ticket_rotation = 0, .ticket_key_file = "",
                               .config_file = NULL };
    struct tls_ctx *t = tls_ctx_create(&ts);
    ok(t != NULL, "a context without a certificate of its own");
    if (!t)
        return done_testing();
    is_int(tls_managed_names(names, 1), 0, "one managed name");
    is_int(tls_managed_count(), 1, "counted");

    struct result r = handshake(t, "a.acme.test", HTTP_ALPN, sizeof(HTTP_ALPN) - 1);
    ok(!r.ok && !r.acme, "before a certificate: the handshake is refused");
    ok(!tls_managed_installed(), "nothing installed");

    X509 *chall = NULL, *cert = NULL;
    EVP_PKEY *chall_key = NULL, *key = NULL;
    is_int(certs_alpn_cert("a.acme.test", "token.thumb", &chall, &chall_key), 0, "challenge");
    is_int(tls_alpn_publish("a.acme.test", chall, chall_key), 0, "published");
    r = handshake(t, "a.acme.test", ACME_ALPN, sizeof(ACME_ALPN) - 1);
    ok(r.ok && r.acme, "acme-tls/1 for the name: answered, marked for closing");
    is_str(r.alpn, "acme-tls/1", "acme-tls/1 selected");
    ok(r.peer && X509_cmp(r.peer, chall) == 0, "with the challenge certificate");
    X509_free(r.peer);
    r = handshake(t, "a.acme.test", HTTP_ALPN, sizeof(HTTP_ALPN) - 1);
    ok(!r.ok && !r.acme, "http/1.1 for the name meanwhile: still no certificate");
    r = handshake(t, "b.acme.test", ACME_ALPN, sizeof(ACME_ALPN) - 1);
    ok(!r.acme, "acme-tls/1 for another name: no challenge");

    /* the issued certificate (any pair for the name serves here) */
    is_int(certs_alpn_cert("a.acme.test", "other", &cert, &key), 0, "a certificate");
    char dir[] = "/tmp/test_tls_managed.XXXXXX", crt[64], kf[64], err[256] = "";
    ok(mkdtemp(dir) != NULL, "temporary directory");
    snprintf(crt, sizeof(crt), "%s/c.pem", dir);
    snprintf(kf, sizeof(kf), "%s/k.pem", dir);
    write_pem(crt, cert, NULL);
    write_pem(kf, NULL, key);
    is_int(tls_managed_install(crt, kf, err, sizeof(err)), 0, "installed");
    ok(tls_managed_installed(), "installed, says the store");
    r = handshake(t, "a.acme.test", HTTP_ALPN, sizeof(HTTP_ALPN) - 1);
    ok(r.ok && !r.acme, "http/1.1 for the name: served");
    is_str(r.alpn, "http/1.1", "http/1.1 selected");
    ok(r.peer && X509_cmp(r.peer, cert) == 0, "with the installed certificate");
    X509_free(r.peer);
    r = handshake(t, "A.ACME.TEST", HTTP_ALPN, sizeof(HTTP_ALPN) - 1);
    ok(r.ok, "names match without regard to case");
    X509_free(r.peer);

    tls_alpn_withdraw("a.acme.test");
    r = handshake(t, "a.acme.test", ACME_ALPN, sizeof(ACME_ALPN) - 1);
    ok(!r.acme && strcmp(r.alpn, "acme-tls/1") != 0,
       "withdrawn: acme-tls/1 is never selected outside a validation");
    X509_free(r.peer);

    is_int(tls_managed_install("/nonexistent", kf, err, sizeof(err)), -1, "a missing chain");
    ok(strstr(err, "/nonexistent: No such file") != NULL, "says why: %s", err);
    r = handshake(t, "a.acme.test", HTTP_ALPN, sizeof(HTTP_ALPN) - 1);
    ok(r.ok && r.peer && X509_cmp(r.peer, cert) == 0, "a failed install keeps the certificate");
    X509_free(r.peer);

    static const char *const others[] = { "c.acme.test" };
    tls_managed_names(others, 1);
    ok(!tls_managed_installed(), "other names: the certificate for the old ones goes");
    tls_managed_clear();
    is_int(tls_managed_count(), 0, "cleared");

    unlink(crt);
    unlink(kf);
    rmdir(dir);
    X509_free(chall);
    X509_free(cert);
    EVP_PKEY_free(chall_key);
    EVP_PKEY_free(key);
    tls_ctx_unref(t);
    return done_testing();
}
