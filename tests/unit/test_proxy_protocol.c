/* Unit tests for the PROXY protocol parser. */
#include <arpa/inet.h>
#include <string.h>

#include "base/netaddr.h"
#include "http/proxy_protocol.h"
#include "test.h"

static int parse(const char *s, size_t len, char *addr, size_t cap, unsigned *port)
{
    struct in6_addr a;
    memset(&a, 0, sizeof(a));
    in_port_t p = 0;
    int r = proxy_protocol_parse(s, len, &a, &p);
    netaddr_format(&a, addr, cap);
    *port = p;
    return r;
}

#define V1(s) s, sizeof(s) - 1

int main(void)
{
    char a[64];
    unsigned port;

    const char v1[] = "PROXY TCP4 192.0.2.10 198.51.100.1 56324 443\r\nGET / HTTP/1.1\r\n";
    is_int(parse(V1(v1), a, sizeof(a), &port), (int)(strstr(v1, "\n") - v1) + 1,
           "v1 TCP4 header length");
    is_str(a, "192.0.2.10", "v1 TCP4 source address");
    is_int((int)port, 56324, "v1 TCP4 source port");

    const char v1b[] = "PROXY TCP6 2001:db8::1 2001:db8::2 4711 80\r\n";
    is_int(parse(V1(v1b), a, sizeof(a), &port), (int)sizeof(v1b) - 1, "v1 TCP6 length");
    is_str(a, "2001:db8::1", "v1 TCP6 source");

    is_int(parse(V1("PROXY UNKNOWN\r\n"), a, sizeof(a), &port), 15, "v1 UNKNOWN accepted");
    is_int(parse(V1("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"), a, sizeof(a), &port), 35,
           "v1 UNKNOWN with addresses accepted");

    /* Incomplete input asks for more. */
    is_int(parse(v1, 10, a, sizeof(a), &port), 0, "v1 prefix needs more");
    is_int(parse("PRO", 3, a, sizeof(a), &port), 0, "PRO needs more");
    is_int(parse("\r\n\r\n", 4, a, sizeof(a), &port), 0, "v2 signature prefix needs more");

    /* Invalid. */
    is_int(parse(V1("GET / HTTP/1.1\r\n"), a, sizeof(a), &port), -1, "plain HTTP refused");
    is_int(parse(V1("PROXY TCP4 1.2.3.4 5.6.7.8 80\r\n"), a, sizeof(a), &port), -1, "missing port");
    is_int(parse(V1("PROXY TCP4 1.2.3.4 5.6.7.8 80 99999\r\n"), a, sizeof(a), &port), -1,
           "port out of range");
    is_int(parse(V1("PROXY TCP4 ::1 5.6.7.8 80 81\r\n"), a, sizeof(a), &port), -1,
           "IPv6 address in TCP4");
    is_int(parse(V1("PROXY TCP4 1.2.3.4 5.6.7.8 80 81\n"), a, sizeof(a), &port), -1,
           "LF without CR");
    is_int(parse(V1("PROXY TCP5 1.2.3.4 5.6.7.8 80 81\r\n"), a, sizeof(a), &port), -1,
           "unknown protocol");
    is_int(parse(V1("PROXY TCP4 1.2.3.4 5.6.7.8 080 81\r\n"), a, sizeof(a), &port), -1,
           "leading zero in port");
    char longline[200];
    memset(longline, 'A', sizeof(longline));
    memcpy(longline, "PROXY ", 6);
    is_int(parse(longline, sizeof(longline), a, sizeof(a), &port), -1, "v1 over 107 bytes refused");

    /* Version 2. */
    unsigned char v2[16 + 12 + 8] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49,
                                      0x54, 0x0a, 0x21, 0x11, 0x00, 12 + 8 };
    unsigned char *ad = v2 + 16;
    ad[0] = 203, ad[1] = 0, ad[2] = 113, ad[3] = 7;   /* source 203.0.113.7 */
    ad[4] = 10, ad[5] = 0, ad[6] = 0, ad[7] = 1;      /* destination */
    ad[8] = 0x1f, ad[9] = 0x90;                       /* source port 8080 */
    ad[10] = 0, ad[11] = 80;
    memcpy(ad + 12, "\x03\x00\x04\xde\xad\xbe\xef", 7); /* a TLV to skip */
    is_int(parse((const char *)v2, sizeof(v2) - 1, a, sizeof(a), &port), 0, "v2 truncated");
    is_int(parse((const char *)v2, sizeof(v2), a, sizeof(a), &port), (int)sizeof(v2),
           "v2 TCP4 with TLV length");
    is_str(a, "203.0.113.7", "v2 TCP4 source");
    is_int((int)port, 8080, "v2 TCP4 port");

    unsigned char local[16] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49,
                                0x54, 0x0a, 0x20, 0x00, 0x00, 0x00 };
    is_int(parse((const char *)local, sizeof(local), a, sizeof(a), &port), 16, "v2 LOCAL");
    unsigned char bad[16];
    memcpy(bad, local, 16);
    bad[12] = 0x31;
    is_int(parse((const char *)bad, sizeof(bad), a, sizeof(a), &port), -1, "v2 wrong version");
    memcpy(bad, local, 16);
    bad[12] = 0x21, bad[13] = 0x11, bad[15] = 4;
    unsigned char shortaddr[20];
    memcpy(shortaddr, bad, 16);
    memset(shortaddr + 16, 0, 4);
    is_int(parse((const char *)shortaddr, sizeof(shortaddr), a, sizeof(a), &port), -1,
           "v2 TCP4 with a too-short address block");
    return done_testing();
}
