/* real_client.c — the client behind trusted proxies; see real_client.h. */
#include "http/real_client.h"

#include <string.h>
#include <strings.h>

#include "base/strview.h"
#include "http/http_request.h"

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
        size_t plen = semi ? (size_t)(semi - elem.ptr) : elem.len;
        struct strview pair = sv_trim((struct strview){ elem.ptr, plen });
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

void http_real_client(const struct cidr_list *trusted, bool fwd, const struct in6_addr *peer,
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
