/* previous_root.c — root_grace's lookup in the previous tree; see previous_root.h. */
#include "static/previous_root.h"

#include "base/clock.h"
#include "exchange/exchange.h"
#include "conf/site.h"
#include "static/file_cache.h"

#define HASH_MIN 8
#define HASH_MAX 64
#define HASH_TOKENS_BACK 2 /* app.HASH.js, main.HASH.chunk.js */

static bool hash_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Is path[start, end) a hash: HASH_MIN to HASH_MAX of [A-Za-z0-9_] with a digit? */
static bool hash_token(const char *path, size_t start, size_t end)
{
    if (end - start < HASH_MIN || end - start > HASH_MAX)
        return false;
    bool digit = false;
    for (size_t i = start; i < end; i++) {
        if (!hash_char(path[i]))
            return false;
        digit |= path[i] >= '0' && path[i] <= '9';
    }
    return digit;
}

bool static_name_hashed(const char *path, size_t len)
{
    size_t name = len;
    while (name > 0 && path[name - 1] != '/')
        name--;
    size_t end = len; /* the extension's dot: a name without one has no hash beside it */
    while (end > name && path[end - 1] != '.')
        end--;
    if (end <= name + 1)
        return false;
    end--;
    /* The token before the extension, or the one before a dotted word (.chunk.js, .min.js). */
    for (int k = 0; k < HASH_TOKENS_BACK; k++) {
        size_t start = end;
        while (start > name && path[start - 1] != '.' && path[start - 1] != '-')
            start--;
        if (start == name) /* the stem itself: a name, not a hash beside one */
            return false;
        if (hash_token(path, start, end))
            return true;
        if (path[start - 1] != '.')
            return false;
        end = start - 1;
    }
    return false;
}

struct fc_entry *static_previous_root(struct file_cache *fc, struct exchange *ex,
                                      struct fc_entry *missing)
{
    const struct loc_conf *lc = ex->loc;
    /* The grace ends at prev_until to the millisecond, whenever the tick builds the generation
     * that drops the previous tree. */
    if (!lc->prev || ex_status_for_errno(missing->err) != 404 || clock_now_ms() >= lc->prev_until ||
        !static_name_hashed(ex->path, ex->path_len))
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
