/* headers.c — the header fields a static answer takes from its location's settings; see
 * headers.h. The answers built from a cache entry carry them in the entry's header block
 * (file_cache.c); these are for the others: 304s, ranges, listings, error pages. */
#include "static/headers.h"

#include <stdint.h>
#include <time.h>

#include "exchange/exchange.h"
#include "http/http_date.h"
#include "http/http_response.h"
#include "static/static_conf.h"

void static_add_expires(struct response *r, const struct loc_conf *lc)
{
    int64_t expires = static_conf(lc)->expires;
    if (expires >= 0) {
        char d[32];
        http_date_format(time(NULL) + expires, d);
        RESP_HEADER(r, "Expires", d, 29);
    }
}

void static_add_location_headers(struct response *r, const struct loc_conf *lc)
{
    const char *cache_control = static_conf(lc)->cache_control;
    if (cache_control[0])
        RESP_HEADER_STR(r, "Cache-Control", cache_control);
    ex_add_location_headers(r, lc);
}
