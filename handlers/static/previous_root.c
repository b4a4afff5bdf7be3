/* previous_root.c — root_grace's lookup in the previous tree; see previous_root.h. */
#include "static/previous_root.h"

#include "base/clock.h"
#include "exchange/exchange.h"
#include "conf/site.h"
#include "static/cache_policy.h"
#include "static/file_cache.h"

struct fc_entry *static_previous_root(struct file_cache *fc, struct exchange *ex,
                                      struct fc_entry *missing)
{
    const struct loc_conf *lc = ex->loc;
    size_t name = ex->path_len; /* the last segment: what cache_policy judges */
    while (name > 0 && ex->path[name - 1] != '/')
        name--;
    /* The grace ends at prev_until to the millisecond, whenever the tick builds the generation
     * that drops the previous tree. */
    if (!lc->prev || ex_status_for_errno(missing->err) != 404 || clock_now_ms() >= lc->prev_until ||
        !cache_name_fingerprinted(ex->path + name, ex->path_len - name))
        return missing;
    struct fc_entry *old = fc_get(fc, lc->prev, ex->path, ex->path_len);
    if (!old)
        return missing;
    if (old->kind != FC_FILE) {
        fc_release(old);
        return missing;
    }
    fc_release(missing);
    return old;
}
