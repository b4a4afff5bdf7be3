/* netaddr.c — client addresses and CIDR lists; see netaddr.h. */
#include "base/netaddr.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_request.h"

bool netaddr_parse(const char *s, size_t len, struct in6_addr *out)
{
    char buf[INET6_ADDRSTRLEN];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) == 1) {
        netaddr_map_v4(&v4, out);
        return true;
    }
    return inet_pton(AF_INET6, buf, out) == 1;
}

size_t netaddr_format(const struct in6_addr *a, char *buf, size_t cap)
{
    if (IN6_IS_ADDR_V4MAPPED(a) && cap >= INET_ADDRSTRLEN) {
        /* By hand: glibc's inet_ntop formats IPv4 with sprintf, about 1,500 instructions (one
         * per access-log line, CGI's REMOTE_ADDR). */
        size_t n = 0;
        for (int i = 12; i < 16; i++) {
            unsigned v = a->s6_addr[i];
            if (i > 12)
                buf[n++] = '.';
            if (v >= 100)
                buf[n++] = (char)('0' + v / 100);
            if (v >= 10)
                buf[n++] = (char)('0' + v / 10 % 10);
            buf[n++] = (char)('0' + v % 10);
        }
        buf[n] = '\0';
        return n;
    }
    if (IN6_IS_ADDR_V4MAPPED(a))
        inet_ntop(AF_INET, &a->s6_addr[12], buf, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, a, buf, (socklen_t)cap);
    return strlen(buf);
}

int cidr_parse(const char *s, struct cidr *out)
{
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    char tmp[INET6_ADDRSTRLEN];
    if (alen == 0 || alen >= sizeof(tmp))
        return -1;
    memcpy(tmp, s, alen);
    tmp[alen] = '\0';
    bool v4 = strchr(tmp, ':') == NULL;
    if (!netaddr_parse(tmp, alen, &out->addr))
        return -1;
    unsigned max = v4 ? 32 : 128, bits = max;
    if (slash) {
        char *end;
        long b = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || b < 0 || b > (long)max)
            return -1;
        bits = (unsigned)b;
    }
    out->bits = v4 ? 96 + bits : bits;
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = out->bits > i * 8 ? out->bits - i * 8 : 0;
        if (keep < 8)
            out->addr.s6_addr[i] &= (uint8_t)(0xff00u >> keep);
    }
    return 0;
}

int cidr_list_add(struct cidr_list *l, const char *s)
{
    struct cidr c;
    if (cidr_parse(s, &c) < 0)
        return -1;
    struct cidr *nv = realloc(l->v, sizeof(*nv) * (l->n + 1));
    if (!nv)
        return -1;
    l->v = nv;
    l->v[l->n++] = c;
    return 0;
}

void cidr_list_free(struct cidr_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

bool cidr_list_match(const struct cidr_list *l, const struct in6_addr *a)
{
    for (unsigned k = 0; k < l->n; k++) {
        const struct cidr *c = &l->v[k];
        unsigned full = c->bits / 8, rest = c->bits % 8;
        if (memcmp(a->s6_addr, c->addr.s6_addr, full))
            continue;
        if (rest && (a->s6_addr[full] & (uint8_t)(0xff00u >> rest)) != c->addr.s6_addr[full])
            continue;
        return true;
    }
    return false;
}


/* One address of a Forwarded "for=" value: 192.0.2.60, "192.0.2.60:80", "[2001:db8::1]:80". */
static bool parse_forwarded_for(struct strview v, struct in6_addr *out)
{
    if (!v.ptr || !v.len)
        return false; /* no for=, or "unknown" / an obfuscated identifier: not an address */
    if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
        v.ptr++;
        v.len -= 2;
    }
    if (v.len && v.ptr[0] == '[') {
        const char *rb = memchr(v.ptr, ']', v.len);
        return rb && netaddr_parse(v.ptr + 1, (size_t)(rb - v.ptr - 1), out);
    }
    const char *colon = memchr(v.ptr, ':', v.len);
    return netaddr_parse(v.ptr, colon ? (size_t)(colon - v.ptr) : v.len, out);
}

/* Extract the for= parameter of one Forwarded element ("for=1.2.3.4;proto=https"). */
static struct strview forwarded_for(struct strview elem)
{
    while (elem.len) {
        const char *semi = memchr(elem.ptr, ';', elem.len);
        struct strview pair = sv_trim((struct strview){ elem.ptr, semi ? (size_t)(semi - elem.ptr) : elem.len });
        if (pair.len > 4 && !strncasecmp(pair.ptr, "for=", 4))
            return sv_trim((struct strview){ pair.ptr + 4, pair.len - 4 });
        if (!semi)
            break;
        elem.len -= (size_t)(semi + 1 - elem.ptr);
        elem.ptr = semi + 1;
    }
    return SV_NULL;
}

/* Walk one header line's list from its right end. Returns false when the walk must stop (an
 * untrusted or malformed entry was reached), true when every entry was a trusted proxy. */
static bool walk_list(const struct cidr_list *trusted, struct strview h, bool fwd,
                      struct in6_addr *out)
{
    size_t end = h.len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && h.ptr[start - 1] != ',')
            start--;
        struct strview item = sv_trim((struct strview){ h.ptr + start, end - start });
        struct in6_addr a;
        bool ok = fwd ? parse_forwarded_for(forwarded_for(item), &a)
                      : netaddr_parse(item.ptr, item.len, &a);
        if (!ok)
            return false;
        *out = a;
        if (!cidr_list_match(trusted, &a))
            return false;
        end = start ? start - 1 : 0;
    }
    return true;
}

void netaddr_real_client(const struct cidr_list *trusted, bool fwd, const struct in6_addr *peer,
                         const struct http_request *req, struct in6_addr *out)
{
    *out = *peer;
    if (!trusted->n || !cidr_list_match(trusted, peer))
        return;
    const char *name = fwd ? "forwarded" : "x-forwarded-for";
    size_t nlen = strlen(name);
    /* Several lines of the same field form one list, in order (RFC 9110 5.3): walk the last
     * line first, each from its right end, each hop having appended what it received from. */
    for (unsigned i = req->nheaders; i-- > 0;) {
        if (!sv_case_eq(req->headers[i].name, name, nlen))
            continue;
        if (!walk_list(trusted, req->headers[i].value, fwd, out))
            return;
    }
}
