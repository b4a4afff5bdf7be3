/* cgi_env.c — CGI/1.1 meta-variables; see cgi_env.h. */
#include "cgi/cgi_env.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostport.h"
#include "base/netaddr.h"
#include "http/http_request.h"

int cgi_env_init(struct cgi_env *env, size_t head_bytes, unsigned nheaders)
{
    memset(env, 0, sizeof(*env));
    env->cap = 2 * head_bytes + 16384;
    env->max = nheaders + 64 + 1;
    env->buf = malloc(env->cap);
    env->vars = calloc(env->max, sizeof(char *));
    if (!env->buf || !env->vars) {
        cgi_env_free(env);
        return -ENOMEM;
    }
    return 0;
}

void cgi_env_free(struct cgi_env *env)
{
    free(env->buf);
    free(env->vars);
    memset(env, 0, sizeof(*env));
}

/* Start a variable: NAME=, returning where its value goes (NULL when full). */
static char *start_var(struct cgi_env *env, const char *name, size_t nlen, size_t vlen)
{
    if (env->n + 1 >= env->max || env->cap - env->len < nlen + vlen + 2) {
        env->overflow = true;
        return NULL;
    }
    char *p = env->buf + env->len;
    env->vars[env->n++] = p;
    env->vars[env->n] = NULL;
    memcpy(p, name, nlen);
    p[nlen] = '=';
    env->len += nlen + 1;
    return p + nlen + 1;
}

static void end_var(struct cgi_env *env, size_t vlen)
{
    env->buf[env->len + vlen] = '\0';
    env->len += vlen + 1;
}

void cgi_env_add(struct cgi_env *env, const char *name, const char *value, size_t vlen)
{
    char *v = start_var(env, name, strlen(name), vlen);
    if (!v)
        return;
    memcpy(v, value, vlen);
    end_var(env, vlen);
}

void cgi_env_add_str(struct cgi_env *env, const char *name, const char *value)
{
    cgi_env_add(env, name, value, strlen(value));
}

const char *cgi_env_get(const struct cgi_env *env, const char *name)
{
    size_t nl = strlen(name);
    for (unsigned i = 0; i < env->n; i++)
        if (!strncmp(env->vars[i], name, nl) && env->vars[i][nl] == '=')
            return env->vars[i] + nl + 1;
    return NULL;
}

char *cgi_format_addr(const struct sockaddr_in6 *sa, char *out, size_t cap)
{
    netaddr_format(&sa->sin6_addr, out, cap);
    return out;
}

/* May a request header become HTTP_<NAME>? Only names made of letters, digits and '-' (so
 * "X_Foo" cannot pose as "X-Foo"), never Proxy (httpoxy: it would become HTTP_PROXY), not
 * Transfer-Encoding (the script gets the body decoded), and not those RFC 3875 4.1.18 says to
 * leave out: the ones already in CONTENT_LENGTH / CONTENT_TYPE and credentials. */
static bool header_passes(struct strview name)
{
    if (name.len == 0)
        return false;
    for (size_t i = 0; i < name.len; i++)
        if (!isalnum((unsigned char)name.ptr[i]) && name.ptr[i] != '-')
            return false;
    return !SV_CASE_EQ(name, "proxy") && !SV_CASE_EQ(name, "content-type") &&
           !SV_CASE_EQ(name, "content-length") && !SV_CASE_EQ(name, "transfer-encoding") &&
           !SV_CASE_EQ(name, "authorization") && !SV_CASE_EQ(name, "proxy-authorization");
}

static void add_headers(struct cgi_env *env, const struct http_request *req)
{
    for (unsigned i = 0; i < req->nheaders; i++) {
        struct strview name = req->headers[i].name;
        if (!header_passes(name))
            continue;
        bool seen = false; /* fields of the same name were joined into the first one */
        for (unsigned j = 0; j < i && !seen; j++)
            seen = sv_case_eq(req->headers[j].name, name.ptr, name.len);
        if (seen)
            continue;
        size_t vlen = 0;
        bool cookie = SV_CASE_EQ(name, "cookie");
        for (unsigned j = i; j < req->nheaders; j++)
            if (sv_case_eq(req->headers[j].name, name.ptr, name.len))
                vlen += req->headers[j].value.len + 2;
        char var[5 + 256];
        if (name.len > 256)
            continue;
        memcpy(var, "HTTP_", 5);
        for (size_t k = 0; k < name.len; k++)
            var[5 + k] = name.ptr[k] == '-' ? '_' : (char)toupper((unsigned char)name.ptr[k]);
        char *v = start_var(env, var, 5 + name.len, vlen);
        if (!v)
            return;
        size_t pos = 0;
        for (unsigned j = i; j < req->nheaders; j++) {
            if (!sv_case_eq(req->headers[j].name, name.ptr, name.len))
                continue;
            if (pos) { /* RFC 3875 4.1.18: one value with the same meaning */
                v[pos++] = cookie ? ';' : ',';
                v[pos++] = ' ';
            }
            memcpy(v + pos, req->headers[j].value.ptr, req->headers[j].value.len);
            pos += req->headers[j].value.len;
        }
        end_var(env, pos);
    }
}

int cgi_env_build(struct cgi_env *env, const struct cgi_env_info *in)
{
    const struct http_request *req = in->req;
    char tmp[INET6_ADDRSTRLEN + 8], num[24];

    cgi_env_add_str(env, "GATEWAY_INTERFACE", "CGI/1.1");
    cgi_env_add_str(env, "SERVER_SOFTWARE", in->server_software);
    /* SERVER_NAME: the Host the client asked for (without its port), else our address. */
    struct hostport hp;
    hostport_split(req->host.ptr, req->host.len, &hp);
    struct strview host = hp.host;
    cgi_format_addr(&in->local, tmp, sizeof(tmp));
    if (host.len) {
        cgi_env_add(env, "SERVER_NAME", host.ptr, host.len);
    } else if (IN6_IS_ADDR_V4MAPPED(&in->local.sin6_addr)) {
        cgi_env_add_str(env, "SERVER_NAME", tmp);
    } else {
        char v6[sizeof(tmp) + 2];
        snprintf(v6, sizeof(v6), "[%s]", tmp);
        cgi_env_add_str(env, "SERVER_NAME", v6);
    }
    cgi_env_add_str(env, "SERVER_ADDR", tmp);
    snprintf(num, sizeof(num), "%u", ntohs(in->local.sin6_port));
    cgi_env_add_str(env, "SERVER_PORT", num);
    snprintf(num, sizeof(num), "HTTP/%u.%u", req->http_major, req->http_minor);
    cgi_env_add_str(env, "SERVER_PROTOCOL", num);
    cgi_env_add(env, "REQUEST_METHOD", req->method_name.ptr, req->method_name.len);
    cgi_env_add(env, "REQUEST_URI", req->target.ptr, req->target.len);
    cgi_env_add(env, "QUERY_STRING", in->query.ptr ? in->query.ptr : "", in->query.len);
    cgi_env_add(env, "SCRIPT_NAME", in->script_name.ptr, in->script_name.len);
    cgi_env_add_str(env, "SCRIPT_FILENAME", in->script_filename);
    cgi_env_add_str(env, "DOCUMENT_ROOT", in->document_root);
    if (in->path_info.len) {
        cgi_env_add(env, "PATH_INFO", in->path_info.ptr, in->path_info.len);
        /* The server's mapping of PATH_INFO as if it were a URL path (RFC 3875 4.1.6). */
        size_t rl = strlen(in->document_root);
        char *v = start_var(env, "PATH_TRANSLATED", 15, rl + in->path_info.len);
        if (v) {
            memcpy(v, in->document_root, rl);
            memcpy(v + rl, in->path_info.ptr, in->path_info.len);
            end_var(env, rl + in->path_info.len);
        }
    }
    if (req->has_body && !req->chunked) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)req->content_length);
        cgi_env_add_str(env, "CONTENT_LENGTH", num);
    }
    struct strview ct = HTTP_HEADER(req, "content-type");
    if (ct.ptr)
        cgi_env_add(env, "CONTENT_TYPE", ct.ptr, ct.len);
    cgi_format_addr(&in->peer, tmp, sizeof(tmp));
    cgi_env_add_str(env, "REMOTE_ADDR", tmp);
    snprintf(num, sizeof(num), "%u", ntohs(in->peer.sin6_port));
    cgi_env_add_str(env, "REMOTE_PORT", num);
    if (in->remote_user.len) { /* RFC 3875 4.1.1 and 4.1.11 */
        cgi_env_add_str(env, "AUTH_TYPE", "Basic");
        cgi_env_add(env, "REMOTE_USER", in->remote_user.ptr, in->remote_user.len);
    }
    cgi_env_add_str(env, "REQUEST_SCHEME", in->https ? "https" : "http");
    if (in->https)
        cgi_env_add_str(env, "HTTPS", "on");
    cgi_env_add_str(env, "REDIRECT_STATUS", "200"); /* php-cgi's force-cgi-redirect check */
    add_headers(env, req);
    for (unsigned i = 0; i < in->npass; i++) {
        const char *v = getenv(in->pass[i]);
        if (!v && !strcmp(in->pass[i], "PATH"))
            v = "/usr/local/bin:/usr/bin:/bin";
        if (v)
            cgi_env_add_str(env, in->pass[i], v);
    }
    return env->overflow ? -ENOSPC : 0;
}
