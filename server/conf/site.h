/* site.h — sites (virtual hosts) and locations: the per-path configuration.
 *
 * A configuration has at least one site: the top level of the file (and the command line) is
 * the default site; `server NAME... { }` blocks add name-based virtual hosts; `location PREFIX
 * { }` and `location *.EXT { }` blocks inside either refine settings by path. Every setting left
 * unset inherits: location <- its site <- the top level <- built-in default. After loading,
 * every struct loc_conf is complete (no "unset" left) and immutable.
 *
 * A request is matched to a site by its Host (case-insensitive, port and trailing dot
 * ignored; exact names, then the longest `*.suffix` wildcard, then the default site), then to a
 * location: extension locations first (in file order), then the longest matching prefix, else
 * the site's own settings. */
#ifndef LF_SITE_H
#define LF_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strview.h"

#define SITE_MAX_INDEX 8
/* On-the-fly compression: the codings, in the order of enum fc_encoding (file_cache.h). */
#define SITE_NCODINGS 3

struct auth_users;
struct handler_ops;

struct header_kv {
    char *name;
    char *value;
    size_t name_len, value_len;
};

struct error_page {
    int status;
    char *path;               /* URL path under the location's root, e.g. /404.html */
};

enum symlinks_policy { SYMLINKS_OFF = 0, SYMLINKS_INSIDE = 1, SYMLINKS_ANY = 2 };

struct loc_conf {
    /* What the location matches (both NULL for a site's own settings). */
    char *prefix;
    size_t prefix_len;
    char *ext;                /* ".css" for `location *.css` */
    size_t ext_len;

    /* Settings; -1 / NULL while unset during loading. */
    char *handler;            /* handler type name (handlers/registry.c); default "static" */
    char *handler_arg;
    char *root;
    char index[SITE_MAX_INDEX][64];
    int nindex;
    int listing;              /* directory listings */
    int hidden_files;         /* 1: serve dot-files; 0: 404 */
    int symlinks;             /* enum symlinks_policy */
    int precompressed;        /* serve x.br / x.zst / x.gz beside x */
    int etag;
    char *spa_fallback;       /* "" = off */
    struct header_kv *headers;
    int nheaders;
    char *cache_control;      /* "" = off */
    int64_t expires;          /* seconds; -1 = off; -2 unset */
    struct error_page *error_pages;
    int nerror_pages;
    char *default_type;
    char *auth_realm;         /* Basic authentication realm; "" = off */
    char *auth_file;          /* its user file */
    char *auth_where;         /* "FILE:LINE" of the auth_basic that set the realm */
    char *handler_where;      /* "FILE:LINE" of the handler directive, for its errors */
    /* Compression of static files on the fly (handlers/compress.c). */
    int compress;             /* on|off */
    char **compress_types;    /* media-type patterns: text/html, text/ANY, application/ANY+json */
    int ncompress_types;      /* -1 unset */
    int64_t compress_min_size;/* bytes; -1 unset */
    int compress_level[SITE_NCODINGS]; /* br, zstd, gzip; -1 unset */
    char *compress_cache_dir; /* "" = off (variants kept in memory only) */
    int64_t compress_cache_size; /* bytes; -1 unset */
    /* Per-client limits (server/client_limits.c). A rule's id names its counts in the limits table:
     * given by site_set_finish() to the block that sets it, shared by the blocks inheriting it. */
    int limit_conn;           /* requests in flight per client; 0 = off; -1 unset */
    uint32_t limit_conn_rule;
    uint64_t limit_req_interval; /* ns between two requests at the rate; 0 = off */
    int limit_req_burst;      /* requests at once; -1 unset */
    uint32_t limit_req_rule;
    int compress_dynamic;     /* on|off: streamed responses (CGI, test endpoints), gzip/zstd */

    /* Filled at server start-up. */
    struct auth_users *auth_users;
    int root_fd;
    const struct handler_ops *ops;
    void *instance;
};

struct site {
    char **names;             /* lower-case; "*.example.com" wildcards */
    unsigned nnames;
    bool is_default;
    bool is_admin;            /* admin_listen's: the built-ins only, never chosen by Host */
    uint8_t mx_slot;          /* its `vhost` label (metrics.h), set when a generation is built */
    struct loc_conf base;
    struct loc_conf *locs;
    unsigned nlocs;
};

struct site_set {
    struct site *sites;       /* sites[0]: the top level */
    unsigned nsites;
    unsigned default_site;
    unsigned admin_site;      /* 0: none (admin_listen not used) */
};

/* Start a set with the top-level site. Returns 0 or -ENOMEM. */
int site_set_init(struct site_set *ss);
void site_set_free(struct site_set *ss);

/* Initialise an unset loc_conf (everything inherits). */
void loc_conf_init(struct loc_conf *lc);

/* Add a `server NAME... {` block / a `location MATCH {` block. Return the new object or NULL
 * (after printing "WHERE: reason"). */
struct site *site_add_server(struct site_set *ss, const char *where, char **names, int nnames);
struct loc_conf *site_add_location(struct site *s, const char *where, const char *match);

/* Add the site of the admin_listen listeners: the built-in locations only (added by
 * site_add_builtins), none of the top level's settings that could refuse a probe or a scrape
 * (authentication, limits, error pages). Returns 0, or -1 out of memory (message printed). */
int site_add_admin(struct site_set *ss);

/* Add the built-in locations to every site that does not define them itself: /healthz
 * (handler health), /livez (health live), /readyz (health ready), /server-status (status),
 * /metrics (metrics), and `test_prefix` (handler test) unless it is "". Returns 0 or -1
 * (message printed). */
int site_add_builtins(struct site_set *ss, const char *test_prefix);

/* Fill every unset setting from its parent and the built-in defaults. Returns 0, or -1 when
 * out of memory (message printed; the set can still be freed). */
int site_set_finish(struct site_set *ss);
/* After site_set_finish: the mistakes only the complete settings show (auth_basic without
 * auth_basic_user_file). Prints "FILE:LINE: reason" and returns -1 on the first. */
int site_set_check(const struct site_set *ss);

/* Pick the site for a Host header value (may be empty). */
const struct site *site_select(const struct site_set *ss, struct strview host);
/* Pick the location for a (raw) request path. */
const struct loc_conf *site_location(const struct site *s, struct strview path);

#endif
