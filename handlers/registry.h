/* registry.h — the registry of handler types (registry.c): the one place that names them all.
 * Only the daemon (server/daemon/) calls it: it sits above every handler folder, and no handler
 * calls back into it (a handler that needs the others' counters, the status page, gets them
 * through the server's view: exchange/server_view.h). */
#ifndef LF_REGISTRY_H
#define LF_REGISTRY_H

#include "exchange/handler.h"

struct runtime;
struct server;
struct stats_writer;

/* Slots in the server and in a runtime: one per registered handler type, HANDLER_TYPES_MAX
 * (conf/handler_conf.h) of them. */

/* Hand every type's configuration (directives, settings blocks) to conf/ and the check of
 * `handler NAME`: once, at start-up, before a configuration is read. */
void handlers_register_conf(void);
/* The handler type configuration calls `name` (NULL when unknown), and its slot. */
const struct handler_ops *handler_lookup(const char *name, unsigned *slot);
/* Build every type's per-generation state for `rt`. Prints one line and returns -1 on failure
 * (what was built is freed with the runtime). */
int handlers_generation_init(struct server *srv, struct runtime *rt);
/* Every type's stats(), in registry order (the server view's handler_stats hook). */
void handlers_stats(struct server *srv, const struct runtime *rt, struct stats_writer *w);
/* At exit, after the pool has stopped: stop(), before the connections are freed ... */
void handlers_stop(struct server *srv);
/* ... and release(), at the very end. */
void handlers_release(struct server *srv);

#endif
