/* compress.c — which responses are compressed: the location's settings against a response's
 * type and size; see compress.h. */
#include "compress/compress.h"

#include <string.h>
#include <strings.h>

#include "compress/compress_conf.h"

/* Does media type `t` (`n` bytes, lower-case or not) match pattern `p` (lower-case, at most one
 * '*', which matches any run of characters but '/')? */
static bool type_matches(const char *p, const char *t, size_t n)
{
    const char *star = strchr(p, '*');
    if (!star)
        return strlen(p) == n && !strncasecmp(p, t, n);
    size_t pre = (size_t)(star - p), suf = strlen(star + 1);
    if (n < pre + suf || strncasecmp(p, t, pre) || strncasecmp(star + 1, t + n - suf, suf))
        return false;
    return !memchr(t + pre, '/', n - pre - suf);
}

bool compress_type_ok(const struct loc_conf *lc, const char *type, size_t len)
{
    size_t n = 0; /* the media type without its parameters */
    while (n < len && type[n] != ';' && type[n] != ' ' && type[n] != '\t')
        n++;
    const struct compress_conf *cc = compress_conf(lc);
    for (int i = 0; i < cc->ntypes; i++)
        if (type_matches(cc->types[i], type, n))
            return true;
    return false;
}

bool compress_eligible(const struct loc_conf *lc, const char *type, uint64_t size)
{
    const struct compress_conf *cc = compress_conf(lc);
    if (!cc->compress || size == 0 || size < (uint64_t)cc->min_size ||
        size > COMPRESS_MAX_INPUT || !type)
        return false;
    return compress_type_ok(lc, type, strlen(type));
}
