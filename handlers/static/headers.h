/* headers.h — the header fields a static answer takes from its location's settings. */
#ifndef LF_STATIC_HEADERS_H
#define LF_STATIC_HEADERS_H

struct loc_conf;
struct response;

/* Per-request headers: Expires (relative to now). */
void static_add_expires(struct response *r, const struct loc_conf *lc);
/* Location headers (add_header, Cache-Control) for answers not built from a cache entry. */
void static_add_location_headers(struct response *r, const struct loc_conf *lc);

#endif
