/* proxy_protocol.c — see proxy_protocol.h. Specification:
 * https://www.haproxy.org/download/2.8/doc/proxy-protocol.txt */
#include "http/proxy_protocol.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/netaddr.h"

static const char v2_sig[12] = "\r\n\r\n\0\r\nQUIT\n";

#define V1_MAX 107
#define V2_MAX_LEN 2048 /* addresses plus TLVs we are willing to skip */

static int parse_port(const char *s, size_t len, in_port_t *out)
{
    if (len == 0 || len > 5 || (len > 1 && s[0] == '0'))
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return -1;
    *out = (in_port_t)v;
    return 0;
}

static int parse_v1(const char *data, size_t len, struct in6_addr *addr, in_port_t *port)
{
    const char *end = memchr(data, '\n', len < V1_MAX ? len : V1_MAX);
    if (!end)
        return len >= V1_MAX ? -1 : 0;
    if (end == data || end[-1] != '\r')
        return -1;
    size_t hlen = (size_t)(end - data) + 1;
    /* "PROXY" SP proto SP src SP dst SP sport SP dport CRLF, or "PROXY UNKNOWN..." */
    const char *f[6];
    size_t fl[6];
    int n = 0;
    const char *p = data, *stop = end - 1;
    while (p < stop && n < 6) {
        const char *sp = memchr(p, ' ', (size_t)(stop - p));
        const char *e = sp ? sp : stop;
        f[n] = p;
        fl[n++] = (size_t)(e - p);
        p = sp ? sp + 1 : stop;
    }
    if (n < 2 || fl[0] != 5 || memcmp(f[0], "PROXY", 5))
        return -1;
    if (fl[1] == 7 && !memcmp(f[1], "UNKNOWN", 7))
        return (int)hlen;
    if (n != 6 || p != stop || fl[1] != 4 || (memcmp(f[1], "TCP4", 4) && memcmp(f[1], "TCP6", 4)))
        return -1;
    bool v6 = f[1][3] == '6';
    if (fl[2] >= INET6_ADDRSTRLEN || (!v6 && memchr(f[2], ':', fl[2])) || (v6 && !memchr(f[2], ':', fl[2])))
        return -1;
    struct in6_addr a, d;
    in_port_t sp, dp;
    if (!netaddr_parse(f[2], fl[2], &a) || !netaddr_parse(f[3], fl[3], &d) ||
        parse_port(f[4], fl[4], &sp) < 0 || parse_port(f[5], fl[5], &dp) < 0)
        return -1;
    *addr = a;
    *port = sp;
    return (int)hlen;
}

static int parse_v2(const unsigned char *d, size_t len, struct in6_addr *addr, in_port_t *port)
{
    if (len < 16)
        return 0;
    unsigned ver_cmd = d[12], fam = d[13];
    size_t alen = (size_t)d[14] << 8 | d[15];
    if ((ver_cmd >> 4) != 2 || (ver_cmd & 15) > 1 || alen > V2_MAX_LEN)
        return -1;
    if (len < 16 + alen)
        return 0;
    if ((ver_cmd & 15) == 0) /* LOCAL: a health check from the proxy itself */
        return (int)(16 + alen);
    const unsigned char *a = d + 16;
    switch (fam) {
    case 0x11: /* TCP over IPv4 */
    case 0x12: /* UDP over IPv4 */
        if (alen < 12)
            return -1;
        netaddr_map_v4(a, addr);
        *port = (in_port_t)(a[8] << 8 | a[9]);
        break;
    case 0x21: /* TCP over IPv6 */
    case 0x22:
        if (alen < 36)
            return -1;
        memcpy(addr, a, 16);
        *port = (in_port_t)(a[32] << 8 | a[33]);
        break;
    case 0x00: /* UNSPEC */
        break;
    default:
        if ((fam >> 4) > 3 || (fam & 15) > 2)
            return -1;
        break; /* AF_UNIX: keep the peer */
    }
    return (int)(16 + alen);
}

int proxy_protocol_parse(const char *data, size_t len, struct in6_addr *addr, in_port_t *port)
{
    if (len == 0)
        return 0;
    size_t cmp = len < sizeof(v2_sig) ? len : sizeof(v2_sig);
    if (!memcmp(data, v2_sig, cmp))
        return len < sizeof(v2_sig) ? 0 : parse_v2((const unsigned char *)data, len, addr, port);
    cmp = len < 6 ? len : 6;
    if (memcmp(data, "PROXY ", cmp))
        return -1;
    return len < 6 ? 0 : parse_v1(data, len, addr, port);
}
