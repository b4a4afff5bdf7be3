/* handler_conf.h — the configuration a handler type owns, registered from above.
 *
 * The core's directive table (directives.c) holds the core's directives only. A handler type
 * (static files, compression, CGI, the built-ins) declares its own directives and settings
 * blocks in its own files, in a struct handler_conf_ops, and the daemon hands every one over
 * at start-up (handlers_register_conf, handlers/registry.c) before the first configuration is
 * read: conf/ never names a handler. Each registered type gets a slot: a settings block of
 * its own in every struct loc_conf (lc->handler_conf[slot]: per location, inherited like the
 * core's settings) and in struct config (cfg->handler_conf[slot]: process-wide). Its
 * directives' offsets are offsets into those blocks (IN_TOP directives: the process-wide
 * block; the others: the location's). */
#ifndef LF_HANDLER_CONF_H
#define LF_HANDLER_CONF_H

#include <stddef.h>

/* Slots for handler types: in a location's and a configuration's settings (here), in a
 * runtime (runtime.h), in the server (server.h) and in the handler registry
 * (handlers/registry.h). */
#define HANDLER_TYPES_MAX 8

struct config;
struct directive;
struct loc_conf;

struct handler_conf_ops {
    const char *name;                   /* for messages */
    unsigned *slot;                     /* where conf_register writes the type's slot */
    const struct directive *directives; /* the type's directives, and how many */
    size_t ndirectives;

    /* Per-location settings (optional: loc_size 0). init: everything unset (the block is
     * zeroed first). defaults: the built-in defaults, pointing at static storage only (the
     * block is never freed through loc_free). merge: fill what `blk` leaves unset from its
     * parent's; 0, or -1 out of memory (blk stays freeable). admin: the admin site's own
     * settings, which inherit nothing that could refuse or change a probe. free: what the
     * block owns (not the block). */
    size_t loc_size;
    void (*loc_init)(void *blk);
    void (*loc_defaults)(void *blk);
    int (*loc_merge)(void *blk, const void *parent);
    /* check (optional): once inherited, with the location's core settings `lc` beside: a
     * mistake only the complete settings show (one block's value with another's it inherits),
     * and what the block derives from them (e.g. from lc->root); 0, or -1 after printing
     * "FILE:LINE: reason". */
    int (*loc_check)(void *blk, const struct loc_conf *lc);
    void (*loc_admin)(void *blk);
    void (*loc_free)(void *blk);

    /* Process-wide settings (optional: top_size 0). init: the defaults (the block is zeroed
     * first; 0, or -1 out of memory); free: what it owns. */
    size_t top_size;
    int (*top_init)(void *blk);
    void (*top_free)(void *blk);
    /* After the file and the command line, before inheritance (optional): e.g. add built-in
     * locations. Returns 0 or -1 (message printed). */
    int (*finish)(struct config *cfg, const void *top);
    /* The files its process-wide settings name that a change of should reload the
     * configuration under reload_on_change (optional): fn(path) for each (the static type's
     * mime_types). */
    void (*watch_files)(const void *top, void (*fn)(const char *path, void *arg), void *arg);
};

/* Register a handler type's configuration (idempotent: a type registered already keeps its
 * slot). Returns its slot, or -1 when every slot is taken. Not thread-safe: at start-up. */
int conf_register(const struct handler_conf_ops *ops);

/* The registered directive called `name`, or NULL. */
const struct directive *conf_directive_find(const char *name);
/* The settings block a directive's offset points into (registered directives only): NULL for
 * a core directive. */
void *conf_directive_block(const struct directive *d, struct config *cfg, struct loc_conf *lc);
/* Every registered type's directives, in registration order: call fn for each table. */
void conf_directive_tables(void (*fn)(const struct directive *table, size_t n, void *arg),
                           void *arg);

/* For site.c and config.c: a location's blocks (init: allocate and set unset; 0 or -1 out of
 * memory, nothing left allocated), the built-in defaults (into initialised blocks, freed with
 * conf_loc_defaults_free), inheritance, the check of the complete settings, the admin site's
 * settings, freeing; a configuration's
 * process-wide blocks, and the types' finish(). */
int conf_loc_init(struct loc_conf *lc);
void conf_loc_defaults(struct loc_conf *lc);
void conf_loc_defaults_free(struct loc_conf *lc);
int conf_loc_merge(struct loc_conf *lc, const struct loc_conf *parent);
int conf_loc_check(const struct loc_conf *lc);
void conf_loc_admin(struct loc_conf *lc);
void conf_loc_free(struct loc_conf *lc);
int conf_top_init(struct config *cfg);
void conf_top_free(struct config *cfg);
int conf_finish(struct config *cfg);
/* Every registered type's watch_files(): the files of `cfg` the config watch follows besides
 * the core's (daemon/watch.c). */
void conf_watch_files(const struct config *cfg, void (*fn)(const char *path, void *arg),
                      void *arg);

#endif
