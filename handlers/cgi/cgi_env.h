/* cgi_env.h — the CGI/1.1 (RFC 3875) environment of a script, built from a request.
 *
 * Pure: no global state, no I/O except getenv() of the allow-listed names; unit-tested
 * (tests/unit/test_cgi_env.c). The environment holds only meta-variables and the names the
 * configuration passes through (`cgi_env_pass`, default PATH): nothing else of the server's
 * own environment reaches a script. */
#ifndef LF_CGI_ENV_H
#define LF_CGI_ENV_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strview.h"

struct http_request;

struct cgi_env {
    char *buf;          /* "NAME=value\0" strings */
    size_t len, cap;
    char **vars;        /* pointers into buf, NULL-terminated: execve's envp */
    unsigned n, max;
    bool overflow;      /* something did not fit: the environment is incomplete */
};

/* What the request alone does not say. Strings are NUL-terminated unless a length is given. */
struct cgi_env_info {
    const struct http_request *req;
    struct strview query;           /* QUERY_STRING: the request's, or a site rule's rewrite's */
    struct strview script_name;     /* URL path of the script (decoded, normalised) */
    struct strview path_info;       /* the decoded rest of the path after it, or empty */
    const char *document_root;      /* absolute */
    const char *script_filename;    /* absolute file name of the script */
    const char *server_software;    /* "lfhttpd/0.1.0" */
    struct sockaddr_in6 local;      /* the connection's local address (v4-mapped for IPv4) */
    struct sockaddr_in6 peer;
    bool https;
    struct strview remote_user;     /* set when the server authenticated the client (Basic) */
    const char (*pass)[64];         /* names of server environment variables to pass */
    unsigned npass;
};

/* Allocate an environment with room for a request of `head_bytes` and `nheaders` headers. */
int cgi_env_init(struct cgi_env *env, size_t head_bytes, unsigned nheaders);
void cgi_env_free(struct cgi_env *env);
/* Add NAME=value (value of `vlen` bytes). */
void cgi_env_add(struct cgi_env *env, const char *name, const char *value, size_t vlen);
void cgi_env_add_str(struct cgi_env *env, const char *name, const char *value);
/* Add every meta-variable for `info` (all but CONTENT_LENGTH of a chunked body, which the
 * caller adds once the body has been read). Returns 0, or -ENOSPC when something did not
 * fit. */
int cgi_env_build(struct cgi_env *env, const struct cgi_env_info *info);
/* The value of NAME in env, or NULL (for tests). */
const char *cgi_env_get(const struct cgi_env *env, const char *name);

/* Format the address of `sa` (IPv4 for v4-mapped) into out; returns out. */
char *cgi_format_addr(const struct sockaddr_in6 *sa, char *out, size_t cap);

#endif
