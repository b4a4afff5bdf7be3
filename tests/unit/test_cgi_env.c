/* test_cgi_env.c — unit tests for handlers/cgi/cgi_env.c (RFC 3875 meta-variables) */
#include "cgi/cgi_env.h"
#include "http/http_request.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void addr(struct sockaddr_in6 *sa, const char *v4, unsigned port)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons((uint16_t)port);
    sa->sin6_addr.s6_addr[10] = sa->sin6_addr.s6_addr[11] = 0xff;
    inet_pton(AF_INET, v4, &sa->sin6_addr.s6_addr[12]);
}

static void header(struct http_request *req, const char *name, const char *value)
{
    req->headers[req->nheaders++] =
        (struct http_header){ { name, strlen(name) }, { value, strlen(value) } };
}

static const char pass[][64] = { "PATH", "LFHTTPD_TEST_PASSED", "LFHTTPD_TEST_UNSET" };

static void build(struct cgi_env *env, struct http_request *req, const char *path_info,
                  bool https)
{
    struct cgi_env_info info = {
        .req = req,
        .query = req->query, /* the exchange passes the request's unless a rule rewrote it */
        .script_name = SV("/cgi-bin/env"),
        .path_info = { path_info, strlen(path_info) },
        .document_root = "/srv/www",
        .script_filename = "/srv/www/cgi-bin/env",
        .server_software = "lfhttpd/9",
        .https = https,
        .pass = pass,
        .npass = 3,
    };
    addr(&info.local, "192.0.2.1", 8080);
    addr(&info.peer, "198.51.100.7", 40000);
    ok(cgi_env_init(env, 4096, req->nheaders) == 0, "init");
    ok(cgi_env_build(env, &info) == 0, "build");
}

static void test_post(void)
{
    static struct http_request req;
    memset(&req, 0, sizeof(req));
    req.method = HTTP_POST;
    req.method_name = SV("POST");
    req.http_major = 1;
    req.http_minor = 1;
    req.target = SV("/cgi-bin/env/a%20b?x=1&y");
    req.query = SV("x=1&y");
    req.host = SV("Example.test:8443");
    req.has_body = true;
    req.content_length = 42;
    header(&req, "Host", "Example.test:8443");
    header(&req, "Content-Type", "text/plain");
    header(&req, "Content-Length", "42");
    header(&req, "X-Multi", "one");
    header(&req, "x-multi", "two");
    header(&req, "Cookie", "a=1");
    header(&req, "Cookie", "b=2");
    header(&req, "Proxy", "http://evil/");
    header(&req, "Authorization", "Basic eA==");
    header(&req, "X_Under", "no");
    header(&req, "Accept-Language", "en");
    header(&req, "Transfer-Encoding", "chunked");

    setenv("LFHTTPD_TEST_PASSED", "yes", 1);
    setenv("LFHTTPD_TEST_SECRET", "no", 1);
    unsetenv("LFHTTPD_TEST_UNSET");
    struct cgi_env env;
    build(&env, &req, "/a b", false);
    is_str(cgi_env_get(&env, "GATEWAY_INTERFACE"), "CGI/1.1", "GATEWAY_INTERFACE");
    is_str(cgi_env_get(&env, "SERVER_SOFTWARE"), "lfhttpd/9", "SERVER_SOFTWARE");
    is_str(cgi_env_get(&env, "SERVER_NAME"), "Example.test", "SERVER_NAME: Host without port");
    is_str(cgi_env_get(&env, "SERVER_ADDR"), "192.0.2.1", "SERVER_ADDR");
    is_str(cgi_env_get(&env, "SERVER_PORT"), "8080", "SERVER_PORT: the local port");
    is_str(cgi_env_get(&env, "SERVER_PROTOCOL"), "HTTP/1.1", "SERVER_PROTOCOL");
    is_str(cgi_env_get(&env, "REQUEST_METHOD"), "POST", "REQUEST_METHOD");
    is_str(cgi_env_get(&env, "REQUEST_URI"), "/cgi-bin/env/a%20b?x=1&y", "REQUEST_URI");
    is_str(cgi_env_get(&env, "QUERY_STRING"), "x=1&y", "QUERY_STRING (raw)");
    is_str(cgi_env_get(&env, "SCRIPT_NAME"), "/cgi-bin/env", "SCRIPT_NAME");
    is_str(cgi_env_get(&env, "PATH_INFO"), "/a b", "PATH_INFO (decoded)");
    is_str(cgi_env_get(&env, "PATH_TRANSLATED"), "/srv/www/a b", "PATH_TRANSLATED");
    is_str(cgi_env_get(&env, "CONTENT_LENGTH"), "42", "CONTENT_LENGTH");
    is_str(cgi_env_get(&env, "CONTENT_TYPE"), "text/plain", "CONTENT_TYPE");
    is_str(cgi_env_get(&env, "REMOTE_ADDR"), "198.51.100.7", "REMOTE_ADDR");
    is_str(cgi_env_get(&env, "REMOTE_PORT"), "40000", "REMOTE_PORT");
    is_str(cgi_env_get(&env, "HTTPS"), NULL, "HTTPS unset without TLS");
    is_str(cgi_env_get(&env, "AUTH_TYPE"), NULL, "no AUTH_TYPE without authentication");
    is_str(cgi_env_get(&env, "REMOTE_USER"), NULL, "no REMOTE_USER without authentication");
    is_str(cgi_env_get(&env, "REQUEST_SCHEME"), "http", "REQUEST_SCHEME");
    is_str(cgi_env_get(&env, "HTTP_HOST"), "Example.test:8443", "HTTP_HOST");
    is_str(cgi_env_get(&env, "HTTP_X_MULTI"), "one, two", "repeated fields joined with ', '");
    is_str(cgi_env_get(&env, "HTTP_COOKIE"), "a=1; b=2", "cookies joined with '; '");
    is_str(cgi_env_get(&env, "HTTP_ACCEPT_LANGUAGE"), "en", "'-' becomes '_'");
    is_str(cgi_env_get(&env, "HTTP_PROXY"), NULL, "no HTTP_PROXY (httpoxy)");
    is_str(cgi_env_get(&env, "HTTP_AUTHORIZATION"), NULL, "no credentials");
    is_str(cgi_env_get(&env, "HTTP_CONTENT_TYPE"), NULL, "no HTTP_CONTENT_TYPE");
    is_str(cgi_env_get(&env, "HTTP_CONTENT_LENGTH"), NULL, "no HTTP_CONTENT_LENGTH");
    is_str(cgi_env_get(&env, "HTTP_X_UNDER"), NULL, "no header with '_' in its name");
    is_str(cgi_env_get(&env, "HTTP_TRANSFER_ENCODING"), NULL, "no HTTP_TRANSFER_ENCODING");
    is_str(cgi_env_get(&env, "LFHTTPD_TEST_PASSED"), "yes", "an allow-listed variable");
    is_str(cgi_env_get(&env, "LFHTTPD_TEST_SECRET"), NULL, "nothing else of the environment");
    is_str(cgi_env_get(&env, "LFHTTPD_TEST_UNSET"), NULL, "an allow-listed unset variable");
    ok(cgi_env_get(&env, "PATH") != NULL, "PATH");
    ok(env.vars[env.n] == NULL, "envp is NULL-terminated");
    int multi = 0;
    for (unsigned i = 0; i < env.n; i++)
        multi += !strncmp(env.vars[i], "HTTP_X_MULTI=", 13);
    is_int(multi, 1, "one variable for repeated fields");
    cgi_env_free(&env);
}

static void test_get_v6_no_host(void)
{
    static struct http_request req;
    memset(&req, 0, sizeof(req));
    req.method = HTTP_GET;
    req.method_name = SV("GET");
    req.http_major = 1;
    req.http_minor = 0;
    req.target = SV("/cgi-bin/env");
    struct cgi_env env;
    struct cgi_env_info info = {
        .req = &req, .script_name = SV("/cgi-bin/env"), .document_root = "/r",
        .script_filename = "/r/cgi-bin/env", .server_software = "x", .https = true,
        .remote_user = SV("ann"),
    };
    info.local.sin6_family = AF_INET6;
    info.local.sin6_port = htons(80);
    inet_pton(AF_INET6, "2001:db8::1", &info.local.sin6_addr);
    info.peer = info.local;
    ok(cgi_env_init(&env, 100, 0) == 0 && cgi_env_build(&env, &info) == 0, "build");
    is_str(cgi_env_get(&env, "SERVER_NAME"), "[2001:db8::1]", "SERVER_NAME from an IPv6 address");
    is_str(cgi_env_get(&env, "SERVER_PROTOCOL"), "HTTP/1.0", "HTTP/1.0");
    is_str(cgi_env_get(&env, "QUERY_STRING"), "", "QUERY_STRING empty, not missing");
    is_str(cgi_env_get(&env, "PATH_INFO"), NULL, "no PATH_INFO");
    is_str(cgi_env_get(&env, "PATH_TRANSLATED"), NULL, "no PATH_TRANSLATED");
    is_str(cgi_env_get(&env, "CONTENT_LENGTH"), NULL, "no CONTENT_LENGTH without a body");
    is_str(cgi_env_get(&env, "HTTPS"), "on", "HTTPS=on with TLS");
    is_str(cgi_env_get(&env, "AUTH_TYPE"), "Basic", "AUTH_TYPE after Basic authentication");
    is_str(cgi_env_get(&env, "REMOTE_USER"), "ann", "REMOTE_USER");
    is_str(cgi_env_get(&env, "REQUEST_SCHEME"), "https", "REQUEST_SCHEME with TLS");
    cgi_env_free(&env);
}

static void test_overflow(void)
{
    static struct http_request req;
    memset(&req, 0, sizeof(req));
    req.method_name = SV("GET");
    req.target = SV("/");
    static char big[40000];
    memset(big, 'v', sizeof(big) - 1);
    header(&req, "X-Big", big);
    struct cgi_env env;
    struct cgi_env_info info = { .req = &req, .script_name = SV("/x"), .document_root = "/",
                                 .script_filename = "/x", .server_software = "x" };
    ok(cgi_env_init(&env, 10, 1) == 0, "small init");
    ok(cgi_env_build(&env, &info) == -ENOSPC && env.overflow, "too large: -ENOSPC, not overrun");
    ok(env.vars[env.n] == NULL, "still NULL-terminated");
    cgi_env_free(&env);
}

int main(void)
{
    test_post();
    test_get_v6_no_host();
    test_overflow();
    return test_done();
}
