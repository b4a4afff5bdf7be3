/* hostport.h — "host[:port]" as written in a Host header, a Forwarded "for=", a listen address
 * or a probe URL: "example.com", "192.0.2.1:80", "[2001:db8::1]", "[2001:db8::1]:8443".
 *
 * One split for all of them; each caller keeps its own rules about what may follow (a port that
 * must be there, digits only, the host's characters). */
#ifndef LF_HOSTPORT_H
#define LF_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strview.h"

struct hostport {
    struct strview host; /* as written, "[2001:db8::1]" with its brackets; all of the input when
                            a '[' has no ']' */
    struct strview name; /* the host without brackets; .ptr NULL when a '[' has no ']' */
    struct strview port; /* what follows the ':' after the host (maybe empty); SV_NULL: no ':' */
};

/* Split s[0..len): an unbracketed host ends at the first ':', a bracketed one at its ']'.
 * Returns true when the host is followed by ":port" or nothing: false when a '[' has no ']' or
 * its ']' is followed by anything else ("[::1]x"), the fields still filled as described. */
bool hostport_split(const char *s, size_t len, struct hostport *out);

#endif
