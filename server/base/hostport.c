/* hostport.c — see hostport.h. */
#include "base/hostport.h"

#include <string.h>

bool hostport_split(const char *s, size_t len, struct hostport *out)
{
    size_t end;
    out->port = SV_NULL;
    if (len && s[0] == '[') {
        const char *rb = memchr(s, ']', len);
        if (!rb) {
            out->host = (struct strview){ s, len };
            out->name = SV_NULL;
            return false;
        }
        end = (size_t)(rb - s) + 1;
        out->name = (struct strview){ s + 1, end - 2 };
    } else {
        const char *colon = len ? memchr(s, ':', len) : NULL; /* s may be NULL when empty */
        end = colon ? (size_t)(colon - s) : len;
        out->name = (struct strview){ s, end };
    }
    out->host = (struct strview){ s, end };
    if (end == len)
        return true;
    if (s[end] != ':')
        return false;
    out->port = (struct strview){ s + end + 1, len - end - 1 };
    return true;
}
