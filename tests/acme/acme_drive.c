/* acme_drive.c — drives server/acme/ against a test CA, for tests/integration/test_acme.py.
 *
 *   acme_drive --directory URL --state DIR --challenge http-01|tls-alpn-01
 *              --http-port N --tls-port N [--ca-bundle FILE] [--email ADDR] [--test-ca]
 *              [--renew] [--timeout S] NAME...
 *
 * Plays the server's part: answers HTTP-01 on 127.0.0.1:http-port from acme_http01_lookup()
 * and TLS-ALPN-01 on 127.0.0.1:tls-port with the certificate the alpn_publish hook gave, and
 * counts installs (a port of 0: no responder there). Exits 0 once a certificate is installed
 * (with --renew: once a second one is, after acme_renew_now()), 1 when the timeout passes
 * first, 2 on bad arguments. Prints
 * "installed CHAIN KEY" per install and "orders=N failures=N ... http01_served=N
 * alpn_served=N last_error=..." at the end. */
#include "acme/acme.h"
#include "log/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_MAX 4096
#define IO_TIMEOUT_S 5
#define BACKLOG 16
#define DEFAULT_TIMEOUT_S 120
#define ACME_TLS_ALPN "acme-tls/1"
#define SETTLE_POLL_NS 20000000L

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned installs;
    unsigned http01_served, alpn_served; /* validations answered with a 200 / a handshake */
    char name[ACME_NAME_MAX + 1];
    X509 *cert;
    EVP_PKEY *key;
} D = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static int listen_on(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0
        || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, BACKLOG) < 0) {
        fprintf(stderr, "acme_drive: port %d: %s\n", port, strerror(errno));
        exit(2);
    }
    return fd;
}

static int accept_one(int lfd)
{
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

/* ---- HTTP-01 ------------------------------------------------------------------------------ */

static void http01_answer(int fd)
{
    char req[REQUEST_MAX + 1], body[ACME_KEYAUTH_MAX + 1], head[256];
    size_t len = 0, plen = strlen(ACME_HTTP01_PREFIX);
    ssize_t n = 0, k;
    const char *path, *end;

    while (len < REQUEST_MAX && (k = read(fd, req + len, REQUEST_MAX - len)) > 0) {
        len += (size_t)k;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    req[len] = '\0';
    path = strncmp(req, "GET ", 4) == 0 ? req + 4 : NULL;
    end = path ? strchr(path, ' ') : NULL;
    if (end && (size_t)(end - path) > plen && strncmp(path, ACME_HTTP01_PREFIX, plen) == 0)
        n = acme_http01_lookup(path + plen, (size_t)(end - path) - plen, body, sizeof(body));
    else
        n = -1;
    if (n < 0) {
        snprintf(head, sizeof(head), "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                     "Connection: close\r\n\r\n");
        n = 0;
    } else {
        snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                     "Content-Length: %zd\r\nConnection: close\r\n\r\n", n);
        pthread_mutex_lock(&D.lock);
        D.http01_served++;
        pthread_mutex_unlock(&D.lock);
    }
    if (write(fd, head, strlen(head)) < 0 || (n > 0 && write(fd, body, (size_t)n) < 0))
        fprintf(stderr, "acme_drive: http-01 write: %s\n", strerror(errno));
}

/* accept() until the listener is shut down (then it fails with EINVAL). */
static int next_client(int lfd)
{
    int fd;

    while ((fd = accept_one(lfd)) < 0 && errno != EINVAL)
        ;
    return fd;
}

static void *http01_thread(void *arg)
{
    int lfd = *(int *)arg, fd;

    while ((fd = next_client(lfd)) >= 0) {
        http01_answer(fd);
        close(fd);
    }
    return NULL;
}

/* ---- TLS-ALPN-01 -------------------------------------------------------------------------- */

/* Only "acme-tls/1" is spoken here (RFC 8737 4: a validation handshake offers only it). */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg)
{
    static const unsigned char want[] = "\x0a" ACME_TLS_ALPN;
    unsigned char *sel;

    (void)ssl, (void)arg;
    if (SSL_select_next_proto(&sel, outlen, want, sizeof(want) - 1, in, inlen)
        != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

/* The published certificate for the SNI name, or a failed handshake. */
static int on_sni(SSL *ssl, int *alert, void *arg)
{
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    int rc = SSL_TLSEXT_ERR_ALERT_FATAL;

    (void)arg;
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    pthread_mutex_lock(&D.lock);
    if (name && D.cert && strcasecmp(name, D.name) == 0 && SSL_use_certificate(ssl, D.cert) == 1
        && SSL_use_PrivateKey(ssl, D.key) == 1)
        rc = SSL_TLSEXT_ERR_OK;
    pthread_mutex_unlock(&D.lock);
    return rc;
}

static void *alpn_thread(void *arg)
{
    int lfd = *(int *)arg, fd;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
    SSL_CTX_set_tlsext_servername_callback(ctx, on_sni);
    while ((fd = next_client(lfd)) >= 0) {
        SSL *ssl = SSL_new(ctx);
        if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_accept(ssl) == 1) {
            pthread_mutex_lock(&D.lock);
            D.alpn_served++;
            pthread_mutex_unlock(&D.lock);
            SSL_shutdown(ssl);
        }
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
    }
    SSL_CTX_free(ctx);
    return NULL;
}

/* ---- hooks -------------------------------------------------------------------------------- */

static int alpn_publish(void *arg, const char *name, X509 *cert, EVP_PKEY *key)
{
    (void)arg;
    pthread_mutex_lock(&D.lock);
    X509_free(D.cert);
    EVP_PKEY_free(D.key);
    X509_up_ref(cert);
    EVP_PKEY_up_ref(key);
    D.cert = cert;
    D.key = key;
    snprintf(D.name, sizeof(D.name), "%s", name);
    pthread_mutex_unlock(&D.lock);
    return 0;
}

static void alpn_withdraw(void *arg, const char *name)
{
    (void)arg;
    pthread_mutex_lock(&D.lock);
    if (strcasecmp(name, D.name) == 0) {
        X509_free(D.cert);
        EVP_PKEY_free(D.key);
        D.cert = NULL;
        D.key = NULL;
        D.name[0] = '\0';
    }
    pthread_mutex_unlock(&D.lock);
}

static int install(void *arg, const char *const *names, size_t n, const char *chain,
                   const char *key)
{
    (void)arg, (void)names, (void)n;
    printf("installed %s %s\n", chain, key);
    fflush(stdout);
    pthread_mutex_lock(&D.lock);
    D.installs++;
    pthread_cond_broadcast(&D.cond);
    pthread_mutex_unlock(&D.lock);
    return 0;
}

/* Wait until `want` installs happened; false at the deadline. */
static bool wait_installs(unsigned want, time_t deadline)
{
    struct timespec ts = {.tv_sec = deadline};
    bool ok;

    pthread_mutex_lock(&D.lock);
    while (D.installs < want)
        if (pthread_cond_timedwait(&D.cond, &D.lock, &ts) == ETIMEDOUT)
            break;
    ok = D.installs >= want;
    pthread_mutex_unlock(&D.lock);
    return ok;
}

/* Wait until the attempt that installed is over (what it does after the install, such as
 * asking for ARI, is part of what is tested); false at the deadline. */
static bool settle(time_t deadline)
{
    struct acme_name_status st;
    const struct timespec pause = {.tv_nsec = SETTLE_POLL_NS};

    for (;;) {
        acme_status(&st, 1);
        if (!st.in_progress)
            return true;
        if (time(NULL) >= deadline)
            return false;
        nanosleep(&pause, NULL);
    }
}

/* ---- main --------------------------------------------------------------------------------- */

struct args {
    struct acme_settings s;
    int http_port, tls_port, timeout;
    bool renew;
};

static void usage(void)
{
    fprintf(stderr, "usage: acme_drive --directory URL --state DIR --challenge http-01|tls-alpn-01"
                    " --http-port N --tls-port N [--ca-bundle FILE] [--email ADDR] [--test-ca]"
                    " [--renew] [--timeout S] NAME...\n");
    exit(2);
}

static void parse(int argc, char **argv, struct args *a)
{
    int i;

    a->timeout = DEFAULT_TIMEOUT_S;
    a->s.agree_tos = true;
    a->s.retry_min_s = 1;
    a->s.retry_max_s = 4;
    for (i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--renew") == 0 || strcmp(o, "--test-ca") == 0) {
            *(o[2] == 'r' ? &a->renew : &a->s.test_ca) = true;
            continue;
        }
        if (strncmp(o, "--", 2) != 0) {
            if (a->s.n_names == ACME_MAX_NAMES)
                usage();
            a->s.names[a->s.n_names++] = o;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (strcmp(o, "--directory") == 0)
            a->s.directory_url = v;
        else if (strcmp(o, "--state") == 0)
            a->s.state_dir = v;
        else if (strcmp(o, "--ca-bundle") == 0)
            a->s.ca_bundle = v;
        else if (strcmp(o, "--email") == 0)
            a->s.email = v;
        else if (strcmp(o, "--challenge") == 0)
            a->s.challenge = strcmp(v, "tls-alpn-01") == 0 ? ACME_TLS_ALPN_01 : ACME_HTTP_01;
        else if (strcmp(o, "--http-port") == 0)
            a->http_port = atoi(v);
        else if (strcmp(o, "--tls-port") == 0)
            a->tls_port = atoi(v);
        else if (strcmp(o, "--timeout") == 0)
            a->timeout = atoi(v);
        else
            usage();
    }
}

int main(int argc, char **argv)
{
    static const struct acme_hooks hooks = {
        .alpn_publish = alpn_publish, .alpn_withdraw = alpn_withdraw, .install = install};
    struct acme_name_status st;
    struct args a = {0};
    pthread_t t1, t2;
    int hfd, tfd;
    bool ok;

    parse(argc, argv, &a);
    signal(SIGPIPE, SIG_IGN); /* as the server does: a peer that hung up is EPIPE */
    log_init(LOG_DEBUG, 2);
    /* port 0: no responder (a second process that must find the first one's certificate) */
    hfd = a.http_port > 0 ? listen_on(a.http_port) : -1;
    tfd = a.tls_port > 0 ? listen_on(a.tls_port) : -1;
    if ((hfd >= 0 && pthread_create(&t1, NULL, http01_thread, &hfd) != 0)
        || (tfd >= 0 && pthread_create(&t2, NULL, alpn_thread, &tfd) != 0)
        || acme_start(&a.s, &hooks) < 0)
        return 2;
    ok = wait_installs(1, time(NULL) + a.timeout) && settle(time(NULL) + a.timeout);
    if (ok && a.renew) {
        acme_renew_now();
        ok = wait_installs(D.installs + 1, time(NULL) + a.timeout)
             && settle(time(NULL) + a.timeout);
    }
    acme_stop(); /* then the status is final */
    acme_status(&st, 1);
    /* the responders end before OpenSSL's exit handlers free what they use */
    if (hfd >= 0 && shutdown(hfd, SHUT_RDWR) == 0)
        pthread_join(t1, NULL);
    if (tfd >= 0 && shutdown(tfd, SHUT_RDWR) == 0)
        pthread_join(t2, NULL);
    alpn_withdraw(NULL, D.name);
    pthread_mutex_lock(&D.lock);
    printf("orders=%u failures=%u not_after=%lld last_ok=%d http01_served=%u alpn_served=%u "
           "last_error=%s\n", st.orders, st.failures, (long long)st.not_after, st.last_ok,
           D.http01_served, D.alpn_served, st.last_error);
    pthread_mutex_unlock(&D.lock);
    fflush(stdout);
    return ok ? 0 : 1;
}
