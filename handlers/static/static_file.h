/* static_file.h — what the static file handler's files share (static_file.c, conditional.c,
 * range.c, listing.c, representation.c); not an interface for other handlers. */
#ifndef LF_STATIC_FILE_H
#define LF_STATIC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "exchange/exchange.h"

struct exchange;
struct fc_entry;
struct file_cache;
struct loc_conf;
struct otf_loc;
struct response;

/* An instance: one location. */
struct static_files {
    const struct loc_conf *lc;
    struct file_cache *fc;      /* its generation's */
    struct otf_loc *cl;         /* NULL: no compression on the fly here */
};

/* Pick the representation of `e` (representation.c): a variant the client accepts (a sibling
 * the user made, else one compressed on the fly: *otf), or the file. NULL when none is
 * acceptable (406). */
struct fc_entry *static_representation(struct static_files *sf, struct exchange *ex,
                                      struct fc_entry *e, bool *otf);

/* Where a request leads under clean_urls and trailing_slash (clean_urls.c): an entry to answer
 * with, or a redirect to the canonical URL. */
struct static_route {
    size_t to_len;              /* > 0: answer 301 to to[0..to_len) and the query */
    bool to_slash;              /* with a '/' after it */
    char to[EX_PATH_MAX + 8];
};
/* The entry for ex->path (held: fc_release it), or NULL with `rt->to_len` set for a redirect,
 * or NULL with to_len 0 when out of memory. */
struct fc_entry *static_route(struct static_files *sf, struct exchange *ex,
                              struct static_route *rt);
/* Is the request a navigation — a page a person asked for — rather than a fetch of a script,
 * a style or data (clean_urls.c)? The SPA fallback answers navigations only. */
bool static_is_navigation(const struct exchange *ex);

/* An HTML (or JSON, for Accept: application/json) listing of the directory ex->path, written
 * into an anonymous file and sent from it (listing.c). */
int static_list_directory(struct exchange *ex);

#endif
