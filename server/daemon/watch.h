/* watch.h — `reload_on_change on`: reload the configuration when a file it depends on changes.
 *
 * One inotify descriptor, registered in the shared handle set like the signalfd: whichever
 * pool thread leads when it becomes readable drains it (non-blocking, a bounded amount per
 * event) and only notes that a reload is due. The reload itself runs from the timer tick once
 * the changes have settled (debounced: WATCH_QUIET_MS after the last event, at most
 * WATCH_MAX_WAIT_MS after the first), and is the same atomic reload as SIGHUP (the owner's
 * callback: server_reload, so this file never reaches back into server.c): a file with an error keeps the running generation and the error log says
 * FILE:LINE: reason.
 *
 * Why a handle and not a poll from the tick: the tick would have to read the descriptor every
 * 250 ms whether anything changed or not, and the handle set already is the place where the
 * pool learns that a descriptor has something to say; the debounce needs a clock, which the
 * tick has. Neither side ever blocks: the descriptor is non-blocking and reads stop at EAGAIN.
 *
 * Watched: the configuration file and every file it names (mime_types, certificates and
 * keys, tls_passphrase_file, tls_session_ticket_key_file, auth_basic_user_file), each through
 * its directory (events naming the file, or any name starting with "..": the kubelet updates a
 * ConfigMap or Secret volume by writing a new `..TIMESTAMP` directory and renaming a `..data`
 * symlink over the old one) and through the file itself (symlinks followed, so an edit of the
 * target in place is seen too). The watches are rebuilt after every reload attempt.
 *
 * root_follow (on by default, with or without reload_on_change): the roots are looked at from
 * the tick, once a second (a stat of each root path, and of its `..data` if it has one), not
 * watched: a swap may rename any component of the path (`current -> releases/N`, a parent
 * directory), which would need a watch on the parent of every component, rebuilt as the
 * links change; the stat follows the whole path as the root's open did. A root that names
 * another directory than its generation opened reloads (the same reload), and so does the end
 * of a root_grace (the generation built then no longer holds the previous tree). */
#ifndef LF_WATCH_H
#define LF_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct config_watch;
struct handle_set;

/* The reload to run when a change has settled; `why` names it in the log. */
typedef void (*watch_reload_fn)(void *arg, const char *why);

#define WATCH_QUIET_MS 300
#define WATCH_MAX_WAIT_MS 2000
/* root_follow: how often the tick looks at the roots (one stat each, two for a kubelet volume:
 * a switch is served within about this long), and the longest wait after failed reloads. */
#define WATCH_ROOT_MS 1000
#define WATCH_ROOT_BACKOFF_MS 60000

/* The watcher; its inotify handle is made (and added to `hs`, the shared handle set) by the
 * first configuration with reload_on_change on. NULL when out of memory (message printed). */
struct config_watch *watch_new(struct handle_set *hs, watch_reload_fn reload, void *arg);
/* Watch what `cfg` names if it has reload_on_change on, nothing otherwise. Called after start-up
 * and after every reload attempt (with the configuration then running). Returns 0, or -1 with
 * a reason in `err` when reload_on_change is on but inotify cannot be had (nothing watched). */
int watch_update(struct config_watch *w, const struct config *cfg, char *err, size_t errcap);
/* From the timer tick: reload if a change has settled. */
void watch_tick(struct config_watch *w, int64_t now);
void watch_free(struct config_watch *w);

#endif
