/* conditional.h — conditional requests (RFC 9110 13): entity-tag lists (pure:
 * tests/unit/test_etag.c), If-Range, and the preconditions of a GET or HEAD (conditional.c). */
#ifndef LF_CONDITIONAL_H
#define LF_CONDITIONAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strview.h"

struct exchange;
struct fc_entry;

/* Does the entity-tag list `hdr` match `etag` (`etag_len` bytes, with its quotes)? Weak
 * comparison ignores W/; strong comparison never matches a weak tag. "*" matches any current
 * representation. */
bool etag_list_match(struct strview hdr, const char *etag, size_t etag_len, bool weak);
/* Does If-Range (an entity-tag or an HTTP-date) still hold for `e`? (RFC 9110 13.1.5) */
bool if_range_holds(struct strview v, const struct fc_entry *e);
/* Evaluate If-Match, If-Unmodified-Since, If-None-Match and If-Modified-Since for `rep`, in
 * RFC 9110 13.2.2 order. Returns true when that answered the request (412 or 304; *rc is
 * ex_send's result), false when the request goes on. */
bool conditional_answered(struct exchange *ex, const struct fc_entry *e,
                          const struct fc_entry *rep, int *rc);

#endif
