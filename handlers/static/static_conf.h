/* static_conf.h — the static file handler's settings: its directives (index, directory_listing,
 * hidden_files, follow_symlinks, precompressed, etag, spa_fallback, cache_control, expires,
 * error_page, default_type, clean_urls, trailing_slash, cache_policy) and its block in every
 * location (conf/handler_conf.h), inherited location <- site <- top level <- the defaults
 * here; and its process-wide block (mime_types, file_cache_entries, file_cache_size,
 * file_cache_valid). */
#ifndef LF_STATIC_CONF_H
#define LF_STATIC_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "conf/site.h"

#define STATIC_MAX_INDEX 8

enum symlinks_policy { SYMLINKS_OFF = 0, SYMLINKS_INSIDE = 1, SYMLINKS_ANY = 2 };
/* clean_urls: off; on (a path also finds PATH.html and PATH/index.html); redirect (on, and
 * /x.html and /x/index.html answer 301 to their clean URL, as Cloudflare Pages does). */
enum clean_urls { CLEAN_OFF = 0, CLEAN_ON = 1, CLEAN_REDIRECT = 2 };
/* trailing_slash: keep (a directory's URL gets its slash, nothing else moves), add (every
 * clean URL ends in '/'), remove (no clean URL ends in '/'). */
enum trailing_slash { SLASH_KEEP = 0, SLASH_ADD = 1, SLASH_REMOVE = 2 };

struct error_page {
    int status;
    char *path;               /* URL path under the location's root, e.g. /404.html */
};

/* The process-wide settings: one per configuration. */
struct static_top {
    char mime_file[PATH_MAX];  /* mime_types: "" = the built-in table only */
    unsigned file_cache_entries;
    size_t file_cache_size;    /* bytes of cached content and headers */
    unsigned file_cache_valid; /* ms between revalidations of an entry */
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
    int clean_urls;           /* enum clean_urls */
    int trailing_slash;       /* enum trailing_slash */
    int cache_policy;         /* 1: auto (cache_policy.h); 0: off */
};

extern const struct handler_conf_ops static_conf_ops;
/* The handler type (static_file.c), for the registry (handlers/registry.c). */
struct handler_ops;
extern const struct handler_ops static_file_handler;
extern unsigned static_conf_slot;

/* A location's static settings (complete once the configuration is loaded). */
static inline const struct static_conf *static_conf(const struct loc_conf *lc)
{
    return lc->handler_conf[static_conf_slot];
}

/* The process-wide static settings of a configuration. */
static inline const struct static_top *static_top(const struct config *cfg)
{
    return cfg->handler_conf[static_conf_slot];
}

#endif
