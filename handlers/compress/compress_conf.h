/* compress_conf.h — the compression settings: its directives (compress, compress_types,
 * compress_min_size, compress_level, compress_cache_dir, compress_cache_size,
 * compress_dictionary, compress_dynamic, compress_dynamic_max) and its blocks (conf/handler_conf.h): one per
 * location, inherited, and one process-wide. */
#ifndef LF_COMPRESS_CONF_H
#define LF_COMPRESS_CONF_H

#include <stdint.h>

#include "compress/coding.h"
#include "compress/dictionary.h"
#include "conf/config.h"

/* A location's settings; -1 / NULL while unset during loading. */
struct compress_conf {
    int compress;             /* on|off: static files on the fly */
    char **types;             /* media-type patterns: text/html, text/ANY, application/ANY+json */
    int ntypes;               /* -1 unset */
    int64_t min_size;         /* bytes; -1 unset */
    int level[CODING_COUNT]; /* br, zstd, gzip; -1 unset */
    char *cache_dir;          /* "" = off (variants kept in memory only) */
    int64_t cache_size;       /* bytes; -1 unset */
    int dynamic;              /* on|off: streamed responses (CGI, test endpoints), gzip/zstd */
    /* compress_dictionary: the patterns whose files are announced as dictionaries
     * (Use-As-Dictionary) and compressed against their old versions (dcz). */
    struct dict_pattern *dicts;
    int ndicts;               /* -1 unset */
    char *dicts_where;        /* FILE:LINE of the first, for the errors of a generation */
};

/* Patterns one location may declare. */
#define COMPRESS_DICTIONARIES_MAX 16

/* The process-wide settings. */
struct compress_top {
    unsigned dynamic_max;     /* streamed responses compressed at once; more: identity */
};

extern const struct handler_conf_ops compress_conf_ops;
extern unsigned compress_conf_slot;

static inline const struct compress_conf *compress_conf(const struct loc_conf *lc)
{
    return lc->handler_conf[compress_conf_slot];
}

/* The compress_dictionary pattern of `lc` that covers `path` (normalised, len bytes), or
 * NULL: no pattern there, none matches, or `compress off` there (dcz is made on the fly).
 * The first pattern written wins. */
const struct dict_pattern *compress_dictionary_for(const struct loc_conf *lc, const char *path,
                                                   size_t len);

static inline const struct compress_top *compress_top(const struct config *cfg)
{
    return cfg->handler_conf[compress_conf_slot];
}

#endif
