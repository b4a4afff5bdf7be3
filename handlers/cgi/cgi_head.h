/* cgi_head.h — parsing the header section a CGI script writes (RFC 3875 section 6).
 *
 * Pure; unit-tested (tests/unit/test_cgi_head.c). The script's lines may end in LF or CRLF;
 * the section ends at the first empty line. Every field is checked here, so nothing a script
 * writes can inject a header or break the response's framing: names must be tokens, values
 * must not contain control characters (other than HTAB), folded lines are refused, and the
 * server's own framing and connection headers are dropped (Connection, Keep-Alive,
 * Transfer-Encoding, TE, Trailer, Upgrade, Proxy-Connection, and Date/Server, which the
 * server sends itself). */
#ifndef LF_CGI_HEAD_H
#define LF_CGI_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/strview.h"

#define CGI_HEAD_MAX_FIELDS 64

struct cgi_head {
    int status;                     /* Status: NNN, 0 when absent */
    struct strview content_type;    /* ptr NULL when absent */
    struct strview location;
    int64_t content_length;         /* -1 when absent */
    unsigned nfields;               /* other fields, passed to the client */
    struct strview name[CGI_HEAD_MAX_FIELDS], value[CGI_HEAD_MAX_FIELDS];
    size_t head_len;                /* bytes up to and including the empty line */
};

/* Parse buf[0..len). Returns 1 (complete: h filled, the body starts at buf + h->head_len), 0
 * (incomplete: no empty line yet), or -1 (malformed: *why says how). Views point into buf. */
int cgi_parse_head(const char *buf, size_t len, struct cgi_head *h, const char **why);

#endif
