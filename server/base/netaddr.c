/* netaddr.c — client addresses and CIDR lists; see netaddr.h. */
#include "base/netaddr.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

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
    else if (netaddr_is_unix(a) && cap > 5)
        memcpy(buf, "unix:", 6);
    else
        inet_ntop(AF_INET6, a, buf, (socklen_t)cap);
    return strlen(buf);
}

int cidr_parse(const char *s, struct cidr *out)
{
    if (!strcmp(s, "unix:")) {
        netaddr_set_unix(&out->addr);
        out->bits = 128;
        return 0;
    }
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
