/* conditional.c — conditional requests; see conditional.h. */
#include "static/conditional.h"

#include <string.h>
#include <time.h>

#include "exchange/exchange.h"
#include "http/http_date.h"
#include "static/file_cache.h"
#include "static/static_conf.h"
#include "static/headers.h"
#include "static/static_file.h"

bool etag_list_match(struct strview hdr, const char *etag, size_t etag_len, bool weak)
{
    struct strview item;
    while (sv_list_next(&hdr, &item)) {
        if (item.len == 1 && item.ptr[0] == '*')
            return true;
        if (item.len > 2 && item.ptr[0] == 'W' && item.ptr[1] == '/') {
            if (!weak)
                continue;
            item.ptr += 2;
            item.len -= 2;
        }
        if (item.len == etag_len && !memcmp(item.ptr, etag, etag_len))
            return true;
    }
    return false;
}

bool if_range_holds(struct strview v, const struct fc_entry *e)
{
    if (v.len && v.ptr[0] == '"')
        return v.len == e->etag_len && !memcmp(v.ptr, e->etag, v.len); /* strong comparison */
    if (v.len > 2 && v.ptr[0] == 'W' && v.ptr[1] == '/')
        return false;
    time_t t;
    return http_date_parse(v.ptr, v.len, &t) == 0 && t == e->st.st_mtim.tv_sec;
}

/* 304: the validators and caching headers of the 200 it stands for, no body. */
static int send_not_modified(struct exchange *ex, const struct fc_entry *e)
{
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 304, ex->date);
    if (static_conf(ex->loc)->etag)
        RESP_HEADER(&r, "ETag", e->etag, e->etag_len);
    RESP_HEADER(&r, "Last-Modified", e->last_modified, 29);
    const char *vary = fc_vary_line(e);
    if (vary)
        resp_add(&r, vary, strlen(vary));
    if (e->dict) /* the stored response's headers are refreshed from the 304's */
        RESP_HEADER(&r, "Use-As-Dictionary", e->dict->header, e->dict->header_len);
    static_add_location_headers(&r, ex->loc);
    if (e->auto_cache_control)
        RESP_HEADER_STR(&r, "Cache-Control", e->auto_cache_control);
    static_add_expires(&r, ex->loc);
    return ex_send(ex, &r, NULL, 0);
}

bool conditional_answered(struct exchange *ex, const struct fc_entry *e,
                          const struct fc_entry *rep, int *rc)
{
    const struct http_request *req = ex->req;
    struct strview im = HTTP_KNOWN(req, H_IF_MATCH);
    struct strview inm = HTTP_KNOWN(req, H_IF_NONE_MATCH);
    time_t t;
    bool failed = false, not_modified = false;
    if (im.ptr) {
        failed = !etag_list_match(im, rep->etag, rep->etag_len, false);
    } else {
        struct strview ius = HTTP_KNOWN(req, H_IF_UNMODIFIED_SINCE);
        failed = ius.ptr && http_date_parse(ius.ptr, ius.len, &t) == 0 &&
                 rep->st.st_mtim.tv_sec > t;
    }
    if (failed) {
        ex->vary |= fc_vary_bits(e); /* which tag failed depends on the representation */
        *rc = ex_error(ex, 412);
        return true;
    }
    if (inm.ptr) {
        not_modified = etag_list_match(inm, rep->etag, rep->etag_len, true);
    } else {
        struct strview ims = HTTP_KNOWN(req, H_IF_MODIFIED_SINCE);
        not_modified = ims.ptr && http_date_parse(ims.ptr, ims.len, &t) == 0 &&
                       rep->st.st_mtim.tv_sec <= t;
    }
    if (not_modified)
        *rc = send_not_modified(ex, rep);
    return not_modified;
}
