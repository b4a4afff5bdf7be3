/* netaddr.h — client addresses: formatting and CIDR allow-lists.
 *
 * Connections store their peer as an IPv6 socket address (IPv4 as v4-mapped ::ffff:a.b.c.d),
 * so one representation and one matcher serve logs, CGI's REMOTE_ADDR, trusted proxies and
 * allow-lists. */
#ifndef LF_NETADDR_H
#define LF_NETADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct cidr {
    struct in6_addr addr; /* masked */
    unsigned bits;        /* prefix length in the IPv6 space (IPv4 /n is 96+n) */
};

struct cidr_list {
    struct cidr *v;
    unsigned n;
};

/* Parse "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8", or "unix:" (every Unix-domain peer).
 * Returns 0 or -1. */
int cidr_parse(const char *s, struct cidr *out);
/* Append to a list (start-up only). Returns 0 or -1 (bad value or ENOMEM). */
int cidr_list_add(struct cidr_list *l, const char *s);
void cidr_list_free(struct cidr_list *l);
bool cidr_list_match(const struct cidr_list *l, const struct in6_addr *a);

/* An IPv4 address (4 bytes, network order) as the IPv4-mapped IPv6 address ::ffff:a.b.c.d. */
static inline void netaddr_map_v4(const void *v4, struct in6_addr *out)
{
    memset(out, 0, sizeof(*out));
    out->s6_addr[10] = 0xff;
    out->s6_addr[11] = 0xff;
    memcpy(&out->s6_addr[12], v4, 4);
}

/* A Unix-domain peer has no network address: it is stored as 100:: (RFC 6666's discard-only
 * prefix, which no client can have), formatted "unix:" and matched by the CIDR "unix:". */
static inline void netaddr_set_unix(struct in6_addr *a)
{
    memset(a, 0, sizeof(*a));
    a->s6_addr[0] = 0x01;
}

static inline bool netaddr_is_unix(const struct in6_addr *a)
{
    static const struct in6_addr unix_addr = { .s6_addr = { 0x01 } };
    return !memcmp(a, &unix_addr, sizeof(*a));
}

/* Parse a textual IPv4 or IPv6 address (no port) into v4-mapped/IPv6 form. */
bool netaddr_parse(const char *s, size_t len, struct in6_addr *out);
/* Format an address: IPv4-mapped ones as dotted quads. Returns the length (buf >= 46 bytes). */
size_t netaddr_format(const struct in6_addr *a, char *buf, size_t cap);

#endif
