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
#include <sys/types.h>

#include "base/strview.h"
#include "conf/handler_conf.h"
#include "conf/site_rules.h"

struct auth_users;
struct handler_ops;

/* root_grace's default: long enough for a page loaded just before a deploy to fetch the lazy
 * chunks it names, short enough that a removed file does not linger (README: deploys). */
#define ROOT_GRACE_DEFAULT_MS (5 * 60 * 1000)

struct header_kv {
    char *name;
    char *value;
    size_t name_len, value_len;
};

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
    struct header_kv *headers; /* add_header */
    int nheaders;
    char *auth_realm;         /* Basic authentication realm; "" = off */
    char *auth_file;          /* its user file */
    char *auth_where;         /* "FILE:LINE" of the auth_basic that set the realm */
    char *handler_where;      /* "FILE:LINE" of the handler directive, for its errors */
    /* Per-client limits (server/client_limits.c). A rule's id names its counts in the limits table:
     * given by site_set_finish() to the block that sets it, shared by the blocks inheriting it. */
    int limit_conn;           /* requests in flight per client; 0 = off; -1 unset */
    uint32_t limit_conn_rule;
    uint64_t limit_req_interval; /* ns between two requests at the rate; 0 = off */
    int limit_req_burst;      /* requests at once; -1 unset */
    uint32_t limit_req_rule;
    /* Deploys by symlink swap (docs/DEPLOYMENT.md): a change of the directory `root` names
     * builds a new generation (root_follow), and for root_grace after it a path the new tree
     * lacks may still come from the previous one. */
    int root_follow;          /* on/off; -1 unset */
    int64_t root_grace;       /* ms; 0 = off; -1 unset */
    /* The handler types' own settings, one block per registered type (handler_conf.h). */
    void *handler_conf[HANDLER_TYPES_MAX];
    /* Site rules (site_rules.h): the block's own rule directives; site_rules_files (a site's
     * base only; -1 unset); a built-in location, which rules never reach. */
    struct conf_rule *conf_rules;
    unsigned nconf_rules;
    int rules_files;
    bool builtin;
    /* Filled by site_rules_finish: the sets this block owns, and what it matches against
     * (rules_on false: nothing, and a request pays one branch). */
    struct rules_set *own_redirects, *own_headers;
    bool rules_on;
    struct loc_rules rules;

    /* Filled at server start-up. */
    struct auth_users *auth_users;
    int root_fd;
    dev_t root_dev;           /* what root_fd is, and what `root`/..data resolved to then: */
    ino_t root_ino;           /* the timer tick compares them with what the path names now */
    dev_t data_dev;           /* a kubelet volume's ..data (0: the root has none) */
    ino_t data_ino;
    /* root_grace: this location with the root of the tree it served before the last switch
     * (a copy sharing every setting; its own root_fd), until prev_until (monotonic ms). */
    struct loc_conf *prev;
    int64_t prev_until;
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
    /* Its `_redirects` and `_headers` (site_rules_files on): their paths, and their rules
     * (NULL when a file does not exist). */
    char *rules_path[2];
    struct rules_set *file_rules[2];
    dev_t rules_dev;          /* the directory the rule files were read from (0: none), */
    ino_t rules_ino;          /* which the generation's root_fd must be: see runtime_build */
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

/* Initialise an unset loc_conf (everything inherits), with the registered handler types'
 * blocks. Returns 0, or -1 out of memory (nothing left allocated). */
int loc_conf_init(struct loc_conf *lc);

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
 * /metrics (metrics). Returns 0 or -1 (message printed). */
int site_add_builtins(struct site_set *ss);
/* Add location `prefix` with `handler` (and `arg`, or NULL) to every site that does not define
 * it itself, the admin site only when `admin` (a handler type's own built-in locations, e.g.
 * the test endpoints'). Returns 0 or -1 (message printed). */
int site_add_builtin(struct site_set *ss, const char *prefix, const char *handler,
                     const char *arg, bool admin);

/* Fill every unset setting from its parent and the built-in defaults. Returns 0, or -1 when
 * out of memory (message printed; the set can still be freed). */
int site_set_finish(struct site_set *ss);
/* After site_set_finish: the mistakes only the complete settings show (auth_basic without
 * auth_basic_user_file; a registered block's loc_check). Prints "FILE:LINE: reason" and returns -1 on the first. */
int site_set_check(const struct site_set *ss);

/* Pick the site for a Host header value (may be empty). */
const struct site *site_select(const struct site_set *ss, struct strview host);
/* Pick the location for a decoded, normalised request path (no query: a '?' is part of a name). */
const struct loc_conf *site_location(const struct site *s, struct strview path);

#endif
