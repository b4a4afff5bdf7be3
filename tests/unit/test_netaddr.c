/* test_netaddr.c — unit tests for the CIDR allow-lists of server/base/netaddr.c (status_allow,
 * trusted_proxies) */
#include "base/hostport.h"
#include "base/netaddr.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct in6_addr a6(const char *s)
{
    return test_addr(s);
}

static bool in(const char *cidr, const char *addr)
{
    struct cidr_list l = { NULL, 0 };
    if (cidr_list_add(&l, cidr) < 0)
        return false;
    struct in6_addr a = a6(addr);
    bool m = cidr_list_match(&l, &a);
    cidr_list_free(&l);
    return m;
}

/* hostport_split of `in`: "ok|host|name|port", NULL fields as "-". */
static const char *split(const char *in)
{
    static char out[256];
    struct hostport hp;
    bool good = hostport_split(in, strlen(in), &hp);
    snprintf(out, sizeof(out), "%s|%.*s|%.*s|%.*s", good ? "ok" : "bad", (int)hp.host.len,
             hp.host.ptr, hp.name.ptr ? (int)hp.name.len : 1, hp.name.ptr ? hp.name.ptr : "-",
             hp.port.ptr ? (int)hp.port.len : 1, hp.port.ptr ? hp.port.ptr : "-");
    return out;
}

static void test_hostport(void)
{
    is_str(split("example.com"), "ok|example.com|example.com|-", "a name alone");
    is_str(split("example.com:8080"), "ok|example.com|example.com|8080", "name:port");
    is_str(split("192.0.2.1:80"), "ok|192.0.2.1|192.0.2.1|80", "IPv4:port");
    is_str(split("host:"), "ok|host|host|", "an empty port is still a port");
    is_str(split(":80"), "ok|||80", "an empty host");
    is_str(split("a:b:c"), "ok|a|a|b:c", "unbracketed: the first ':' ends the host");
    is_str(split("[2001:db8::1]"), "ok|[2001:db8::1]|2001:db8::1|-", "[IPv6]: host keeps brackets");
    is_str(split("[::1]:8443"), "ok|[::1]|::1|8443", "[IPv6]:port");
    is_str(split("[]"), "ok|[]||-", "empty brackets");
    is_str(split("[::1"), "bad|[::1|-|-", "no ']': the whole string is the host, no name");
    is_str(split("["), "bad|[|-|-", "a lone '['");
    is_str(split("[::1]x"), "bad|[::1]|::1|-", "something other than ':' after ']'");
    is_str(split("[::1]x:80"), "bad|[::1]|::1|-", "and no port then");
    is_str(split(""), "ok|||-", "empty");
    struct hostport hp;
    ok(hostport_split(NULL, 0, &hp) && hp.host.len == 0 && !hp.port.ptr, "NULL, 0: empty");
}

static void test_map_v4(void)
{
    struct in_addr v4;
    inet_pton(AF_INET, "192.0.2.33", &v4);
    struct in6_addr m;
    memset(&m, 0xaa, sizeof(m));
    netaddr_map_v4(&v4, &m);
    struct in6_addr want;
    inet_pton(AF_INET6, "::ffff:192.0.2.33", &want);
    ok(!memcmp(&m, &want, sizeof(m)), "netaddr_map_v4: ::ffff:a.b.c.d, every other byte zeroed");
    ok(IN6_IS_ADDR_V4MAPPED(&m), "and IN6_IS_ADDR_V4MAPPED agrees");
    struct in6_addr t;
    ok(netaddr_parse("192.0.2.33", 10, &t) && !memcmp(&m, &t, sizeof(m)),
       "the same as netaddr_parse's");
}

/* A Unix-domain peer: its own address, "unix:", matched by the CIDR "unix:" only. */
static void test_unix_peer(void)
{
    struct in6_addr u, a;
    netaddr_set_unix(&u);
    ok(netaddr_is_unix(&u), "netaddr_set_unix: netaddr_is_unix");
    char buf[64];
    ok(netaddr_format(&u, buf, sizeof(buf)) == 5 && !strcmp(buf, "unix:"), "formatted unix:");
    struct cidr_list l = { 0 };
    ok(cidr_list_add(&l, "unix:") == 0 && cidr_list_match(&l, &u), "the CIDR unix: matches it");
    netaddr_parse("::", 2, &a);
    ok(!cidr_list_match(&l, &a) && !netaddr_is_unix(&a), "and not ::");
    netaddr_parse("100::1", 6, &a);
    ok(!cidr_list_match(&l, &a), "nor another address of 100::/64");
    cidr_list_free(&l);
    l = (struct cidr_list){ 0 };
    ok(cidr_list_add(&l, "::/0") == 0 && cidr_list_match(&l, &u) == true,
       "(::/0 is every address, this one too)");
    cidr_list_free(&l);
}

int main(void)
{
    test_unix_peer();
    struct cidr c;
    ok(in("127.0.0.0/8", "127.0.0.1"), "127.0.0.1 in 127/8");
    ok(in("127.0.0.0/8", "127.255.1.2"), "127.255.1.2 in 127/8");
    ok(!in("127.0.0.0/8", "128.0.0.1"), "128.0.0.1 not in 127/8");
    ok(in("10.1.2.3", "10.1.2.3"), "a single IPv4 address");
    ok(!in("10.1.2.3", "10.1.2.4"), "a single IPv4 address, other");
    ok(in("10.1.2.3/24", "10.1.2.200"), "host bits are masked");
    ok(in("::1", "::1"), "::1");
    ok(!in("::1", "::2"), "::2 is not ::1");
    ok(!in("::1", "127.0.0.1"), "::1 is not 127.0.0.1");
    ok(in("2001:db8::/32", "2001:db8:ffff::1"), "IPv6 prefix");
    ok(!in("2001:db8::/33", "2001:db8:8000::1"), "IPv6 prefix, odd length");
    ok(in("0.0.0.0/0", "203.0.113.9"), "every IPv4 address");
    ok(!in("0.0.0.0/0", "2001:db8::1"), "0/0 is IPv4 only");
    ok(in("::/0", "2001:db8::1"), "::/0 every IPv6 (and mapped) address");
    ok(in("192.168.0.0/23", "192.168.1.255"), "/23");
    ok(!in("192.168.0.0/23", "192.168.2.0"), "/23 upper bound");
    ok(cidr_parse("1.2.3.4/33", &c) < 0, "IPv4 prefix > 32");
    ok(cidr_parse("::/129", &c) < 0, "IPv6 prefix > 128");
    ok(cidr_parse("1.2.3/8", &c) < 0, "not an address");
    ok(cidr_parse("1.2.3.4/", &c) < 0, "empty prefix");
    ok(cidr_parse("1.2.3.4/x", &c) < 0, "bad prefix");
    ok(cidr_parse("", &c) < 0, "empty");
    struct cidr_list list = { NULL, 0 };
    ok(cidr_list_add(&list, "127.0.0.0/8") == 0 && cidr_list_add(&list, "::1") == 0,
       "the default status_allow");
    struct in6_addr a = a6("::1"), b = a6("127.0.0.2"), d = a6("192.0.2.1");
    ok(cidr_list_match(&list, &a) && cidr_list_match(&list, &b) && !cidr_list_match(&list, &d),
       "the default loopback list");
    cidr_list_free(&list);
    ok(!cidr_list_match(&list, &a), "an empty list matches nothing");

    /* netaddr_format writes IPv4 by hand: the same text as inet_ntop, for every octet value */
    char got[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];
    int same = 1;
    for (unsigned v = 0; v < 256; v++) {
        char text[32];
        snprintf(text, sizeof(text), "%u.%u.%u.%u", v, 255 - v, v / 10, v % 100);
        struct in6_addr m = a6(text);
        size_t n = netaddr_format(&m, got, sizeof(got));
        inet_ntop(AF_INET, &m.s6_addr[12], want, sizeof(want));
        if (strcmp(got, want) || n != strlen(want)) {
            printf("# netaddr_format: '%s' for '%s'\n", got, want);
            same = 0;
        }
    }
    ok(same, "IPv4 formatted as inet_ntop does, length returned");
    struct in6_addr z = a6("0.0.0.0"), f = a6("255.255.255.255"), six = a6("2001:db8::1");
    netaddr_format(&z, got, sizeof(got));
    is_str(got, "0.0.0.0", "0.0.0.0");
    netaddr_format(&f, got, sizeof(got));
    is_str(got, "255.255.255.255", "255.255.255.255");
    netaddr_format(&six, got, sizeof(got));
    is_str(got, "2001:db8::1", "IPv6 still by inet_ntop");
    test_hostport();
    test_map_v4();
    return test_done();
}
