/* static_conf.h — the static file handler's settings: its directives (index, directory_listing,
 * hidden_files, follow_symlinks, precompressed, etag, spa_fallback, cache_control, expires,
 * error_page, default_type) and its block in every location (conf/handler_conf.h), inherited
 * location <- site <- top level <- the defaults here. */
#ifndef LF_STATIC_CONF_H
#define LF_STATIC_CONF_H

#include <stdint.h>

#include "conf/site.h"

#define STATIC_MAX_INDEX 8

enum symlinks_policy { SYMLINKS_OFF = 0, SYMLINKS_INSIDE = 1, SYMLINKS_ANY = 2 };

struct error_page {
    int status;
    char *path;               /* URL path under the location's root, e.g. /404.html */
};

/* A location's settings; -1 / NULL while unset during loading. */
struct static_conf {
    char index[STATIC_MAX_INDEX][64];
    int nindex;
    int listing;              /* directory listings */
    int hidden_files;         /* 1: serve dot-files; 0: 404 */
    int symlinks;             /* enum symlinks_policy */
    int precompressed;        /* serve x.br / x.zst / x.gz beside x */
    int etag;
    char *spa_fallback;       /* "" = off */
    char *cache_control;      /* "" = off */
    int64_t expires;          /* seconds; -1 = off; -2 unset */
    struct error_page *error_pages;
    int nerror_pages;
    char *default_type;
};

extern const struct handler_conf_ops static_conf_ops;
extern unsigned static_conf_slot;

/* A location's static settings (complete once the configuration is loaded). */
static inline const struct static_conf *static_conf(const struct loc_conf *lc)
{
    return lc->handler_conf[static_conf_slot];
}

#endif
