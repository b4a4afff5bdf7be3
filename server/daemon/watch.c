/* watch.c — reload_on_change: inotify in the handle set, reload from the tick; root_follow:
 * the roots looked at from the tick. See watch.h. */
#include "daemon/watch.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "conf/config.h"
#include "conf/handler_conf.h"
#include "lf/handle_set.h"
#include "log/log.h"
#include "conf/site.h"
#include "log/diag.h"

/* On a directory: a name in it created, replaced, written, removed or changed mode. */
#define DIR_MASK (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB | \
                  IN_ONLYDIR)
/* On a file (its symlinks followed): written in place, replaced, removed. */
#define FILE_MASK (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

struct watched {
    char *path;             /* as the configuration names it */
    const char *base;       /* its last component */
    int dir_wd, file_wd;    /* -1: not watched (missing, or no permission) */
    bool pattern;           /* `base` is an `include` pattern: any name it matches counts */
};

/* root_follow: a root and what it resolved to when its generation opened it (site.h). */
struct root_check {
    char *path;
    dev_t dev, data_dev;      /* data_dev 0: no ..data in it */
    ino_t ino, data_ino;
};

struct config_watch {
    struct event_handler eh; /* first member: the inotify fd in the shared handle set */
    struct handle_set *hs;   /* the shared set */
    watch_reload_fn reload;  /* the owner's reload (server_reload), from the tick */
    void *reload_arg;
    /* The table is rebuilt by whichever thread reloads and read by whichever thread drains the
     * descriptor: both hold the lock, briefly (no I/O but inotify_add_watch under it). */
    pthread_mutex_t lock;
    struct watched *files;
    unsigned nfiles;
    char changed[NAME_MAX + PATH_MAX + 16]; /* what the pending burst changed, for the log */
    bool named;             /* `changed` is the burst's first watched file or ..data swap */
    _Atomic int64_t due;    /* monotonic ms at which to reload; 0: nothing pending */
    _Atomic int64_t first;  /* the first event of the pending burst */
    /* root_follow and root_grace (under the lock, rebuilt with the table). */
    struct root_check *roots;
    unsigned nroots;
    int64_t grace_end;      /* the earliest end of a root_grace under way; 0: none */
    /* The tick's own (ONESHOT serialises it): when to look at the roots next, and the wait
     * after that, doubled while what it finds stays the same (a reload that fails). */
    int64_t roots_next, roots_wait;
};

/* The tick's clock (clock.h): the debounce compares times taken by both. */
static int64_t mono_ms(void)
{
    return clock_now_ms();
}

static bool kubelet_name(const char *name)
{
    return name[0] == '.' && name[1] == '.'; /* ..data, ..2026_01_01_00_00_00.123, ..data_tmp */
}

/* Does this event concern a watched file? Records what it named. Caller holds the lock. */
static bool matches(struct config_watch *w, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW) {
        snprintf(w->changed, sizeof(w->changed), "(inotify queue overflow)");
        return true;
    }
    for (unsigned i = 0; i < w->nfiles; i++) {
        const struct watched *f = &w->files[i];
        if (ev->wd == f->file_wd && f->file_wd >= 0 && !(ev->mask & IN_IGNORED)) {
            if (!w->named)
                snprintf(w->changed, sizeof(w->changed), "%s", f->path);
            w->named = true;
            return true;
        }
        if (ev->wd == f->dir_wd && f->dir_wd >= 0 && ev->len &&
            (!strcmp(ev->name, f->base) || kubelet_name(ev->name) ||
             (f->pattern && fnmatch(f->base, ev->name, FNM_PERIOD) == 0))) {
            /* Say the first of the file or the ..data swap, rather than the other names of a
             * kubelet update (its new and old timestamped directories). */
            bool main = !strcmp(ev->name, f->base) || !strcmp(ev->name, "..data");
            if (!w->named)
                snprintf(w->changed, sizeof(w->changed), "%.*s%s%s%s%s",
                         (int)(f->base - f->path), f->path, ev->name, main ? "" : " (for ",
                         main ? "" : f->base, main ? "" : ")");
            w->named |= main;
            return true;
        }
    }
    return false;
}

static void schedule(struct config_watch *w, int64_t now)
{
    int64_t first = atomic_load(&w->first);
    if (!first) {
        atomic_store(&w->first, now);
        first = now;
    }
    int64_t due = now + WATCH_QUIET_MS;
    if (due > first + WATCH_MAX_WAIT_MS)
        due = first + WATCH_MAX_WAIT_MS;
    atomic_store(&w->due, due);
}

static void on_inotify(struct event_handler *eh, uint32_t events, struct worker *wk)
{
    struct config_watch *w = (struct config_watch *)eh;
    (void)events;
    (void)wk;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool hit = false;
    /* A bounded amount per event: if more is queued, the re-armed handle fires again. */
    int round;
    for (round = 0; round < 8; round++) {
        ssize_t n = read(eh->fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        pthread_mutex_lock(&w->lock);
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            hit |= matches(w, ev);
            p += sizeof(*ev) + ev->len;
        }
        pthread_mutex_unlock(&w->lock);
    }
    if (hit)
        schedule(w, mono_ms());
    if (round == 8)
        hs_more(w->hs, eh, EPOLLIN); /* edge mode: not read to empty */
    hs_rearm(w->hs, eh, EPOLLIN);
}

static const struct event_handler_ops inotify_ops = { .handle_event = on_inotify };

struct config_watch *watch_new(struct handle_set *hs, watch_reload_fn reload, void *arg)
{
    struct config_watch *w = calloc(1, sizeof(*w));
    if (!w) {
        diag("lfhttpd: out of memory\n");
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    w->hs = hs;
    w->reload = reload;
    w->reload_arg = arg;
    w->eh.ops = &inotify_ops;
    w->eh.fd = -1; /* made by the first configuration that turns reload_on_change on */
    w->roots_wait = WATCH_ROOT_MS;
    return w;
}

/* The inotify handle, made once: inotify instances are a per-user resource (128 by default),
 * not to be spent by servers that watch nothing. Caller holds the lock. */
static int inotify_handle(struct config_watch *w, char *err, size_t errcap)
{
    if (w->eh.fd >= 0)
        return 0;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errcap, "inotify: %s", strerror(errno));
        return -1;
    }
    w->eh.fd = fd;
    int rc = hs_add(w->hs, &w->eh, EPOLLIN);
    if (rc < 0) {
        snprintf(err, errcap, "inotify: epoll: %s", strerror(-rc));
        close(fd);
        w->eh.fd = -1;
        return -1;
    }
    return 0;
}

/* Add `path` to the new table (once); a pattern watches its directory for the names it
 * matches (a file of conf.d/ added, replaced or removed). */
static void add_entry(struct config_watch *w, struct watched **files, unsigned *n, unsigned *cap,
                      const char *path, bool pattern)
{
    if (!path || !path[0])
        return;
    for (unsigned i = 0; i < *n; i++)
        if (!strcmp((*files)[i].path, path))
            return;
    if (*n == *cap) {
        unsigned ncap = *cap ? *cap * 2 : 16;
        struct watched *nf = realloc(*files, ncap * sizeof(*nf));
        if (!nf)
            return;
        *files = nf;
        *cap = ncap;
    }
    struct watched *f = &(*files)[*n];
    f->path = strdup(path);
    if (!f->path)
        return;
    const char *slash = strrchr(f->path, '/');
    f->base = slash ? slash + 1 : f->path;
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == f->path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - f->path), f->path);
    /* The same directory or file (inode) as before gives the same watch descriptor back, so
     * nothing queued for it is lost while the table is rebuilt. */
    f->dir_wd = inotify_add_watch(w->eh.fd, dir, DIR_MASK);
    if (f->dir_wd < 0)
        log_warn("reload_on_change: cannot watch directory %s: %s", dir, strerror(errno));
    f->file_wd = pattern ? -1 : inotify_add_watch(w->eh.fd, path, FILE_MASK);
    f->pattern = pattern;
    (*n)++;
}

static void add(struct config_watch *w, struct watched **files, unsigned *n, unsigned *cap,
                const char *path)
{
    add_entry(w, files, n, cap, path, false);
}

/* conf_watch_files()'s callback: add(). */
struct watch_add {
    struct config_watch *w;
    struct watched **files;
    unsigned *n, *cap;
};

static void add_cb(const char *path, void *arg)
{
    struct watch_add *a = arg;
    add(a->w, a->files, a->n, a->cap, path);
}

static bool wd_used(const struct watched *files, unsigned n, int wd)
{
    for (unsigned i = 0; i < n; i++)
        if (files[i].dir_wd == wd || files[i].file_wd == wd)
            return true;
    return false;
}

/* ---- root_follow: the roots, looked at from the tick ------------------------------------------ */

static void roots_clear(struct config_watch *w)
{
    for (unsigned i = 0; i < w->nroots; i++)
        free(w->roots[i].path);
    free(w->roots);
    w->roots = NULL;
    w->nroots = 0;
    w->grace_end = 0;
}

/* One entry per root with root_follow on (its first location's), in `roots` of room `cap`. */
static void root_add(struct root_check *roots, unsigned *n, unsigned cap, const struct loc_conf *lc)
{
    if (!lc->root_follow || lc->root_fd < 0 || !lc->root || *n == cap)
        return;
    for (unsigned i = 0; i < *n; i++)
        if (!strcmp(roots[i].path, lc->root))
            return;
    struct root_check *r = &roots[*n];
    r->path = strdup(lc->root);
    if (!r->path)
        return;
    r->dev = lc->root_dev;
    r->ino = lc->root_ino;
    r->data_dev = lc->data_dev;
    r->data_ino = lc->data_ino;
    (*n)++;
}

/* The roots of the running configuration, and the end of the first root_grace under way.
 * Caller holds the lock. */
static void roots_update(struct config_watch *w, const struct config *cfg)
{
    roots_clear(w);
    const struct site_set *ss = &cfg->sites;
    unsigned cap = 0;
    for (unsigned i = 0; i < ss->nsites; i++)
        cap += ss->sites[i].nlocs + 1;
    w->roots = calloc(cap, sizeof(*w->roots));
    if (!w->roots) {
        log_error("root_follow: out of memory; root changes are not looked for");
        return;
    }
    for (unsigned i = 0; i < ss->nsites; i++)
        for (unsigned j = 0; j <= ss->sites[i].nlocs; j++) {
            const struct loc_conf *lc = j ? &ss->sites[i].locs[j - 1] : &ss->sites[i].base;
            root_add(w->roots, &w->nroots, cap, lc);
            if (lc->prev && (!w->grace_end || lc->prev_until < w->grace_end))
                w->grace_end = lc->prev_until;
        }
}

/* Does `path` name something else than (dev, ino) now? A path that cannot be looked at (a
 * deploy between removing and making its link) is not a change: the next look decides. */
static bool moved(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;
    return stat(path, &st) == 0 && (st.st_dev != dev || st.st_ino != ino);
}

enum root_finding { ROOTS_SAME = 0, ROOTS_SWITCHED, ROOTS_GRACE_OVER };

/* A root (or its ..data) that names another directory than its generation opened (named in
 * `what`), or a root_grace over at `now`. Caller holds the lock. */
static enum root_finding roots_changed(struct config_watch *w, int64_t now, char *what,
                                       size_t cap)
{
    for (unsigned i = 0; i < w->nroots; i++) {
        const struct root_check *r = &w->roots[i];
        char data[PATH_MAX];
        bool kubelet = r->data_dev &&
                       snprintf(data, sizeof(data), "%s/..data", r->path) < (int)sizeof(data);
        if (moved(r->path, r->dev, r->ino) || (kubelet && moved(data, r->data_dev, r->data_ino))) {
            snprintf(what, cap, "root_follow: %s now names another directory", r->path);
            return ROOTS_SWITCHED;
        }
    }
    if (w->grace_end && now >= w->grace_end) {
        snprintf(what, cap, "root_grace: over, the previous tree is let go");
        return ROOTS_GRACE_OVER;
    }
    return ROOTS_SAME;
}

/* From the tick, every WATCH_ROOT_MS: a new generation when a root was switched or a grace is
 * over. The same finding again at the next look (the reload failed) waits twice as long. */
static void roots_tick(struct config_watch *w, int64_t now)
{
    if (now < w->roots_next || pthread_mutex_trylock(&w->lock) != 0)
        return; /* (a reload is rebuilding the table: the next tick looks) */
    char what[PATH_MAX + 64];
    enum root_finding f = roots_changed(w, now, what, sizeof(what));
    pthread_mutex_unlock(&w->lock);
    if (f == ROOTS_SAME) {
        w->roots_wait = WATCH_ROOT_MS;
        w->roots_next = now + WATCH_ROOT_MS;
        return;
    }
    w->roots_next = now + w->roots_wait;
    w->roots_wait = w->roots_wait * 2 > WATCH_ROOT_BACKOFF_MS ? WATCH_ROOT_BACKOFF_MS
                                                               : w->roots_wait * 2;
    log_notice("%s: building a new generation", what);
    w->reload(w->reload_arg, f == ROOTS_SWITCHED ? "root_follow" : "root_grace");
}

int watch_update(struct config_watch *w, const struct config *cfg, char *err, size_t errcap)
{
    if (!w)
        return 0;
    struct watched *files = NULL;
    unsigned n = 0, cap = 0;
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    roots_update(w, cfg);
    if (cfg->reload_on_change && (rc = inotify_handle(w, err, errcap)) == 0) {
        add(w, &files, &n, &cap, cfg->config_file);
        for (unsigned i = 0; i < cfg->nconf_files; i++)
            add_entry(w, &files, &n, &cap, cfg->conf_files[i], cfg->conf_file_glob[i]);
        struct watch_add wa = { w, &files, &n, &cap };
        conf_watch_files(cfg, add_cb, &wa); /* the handler types' (the MIME table) */
        for (unsigned i = 0; i < cfg->ncerts; i++) {
            add(w, &files, &n, &cap, cfg->certs[i].cert);
            add(w, &files, &n, &cap, cfg->certs[i].key);
        }
        add(w, &files, &n, &cap, cfg->tls_passphrase_file);
        add(w, &files, &n, &cap, cfg->tls_ticket_key_file);
        for (unsigned s = 0; s < cfg->sites.nsites; s++) {
            const struct site *site = &cfg->sites.sites[s];
            add(w, &files, &n, &cap, site->base.auth_file);
            add(w, &files, &n, &cap, site_rules_file(site, false)); /* `_redirects`: */
            add(w, &files, &n, &cap, site_rules_file(site, true));  /* even when missing */
            for (unsigned l = 0; l < site->nlocs; l++)
                add(w, &files, &n, &cap, site->locs[l].auth_file);
        }
    }
    /* Drop the watches nothing needs any more. */
    for (unsigned i = 0; i < w->nfiles; i++) {
        struct watched *f = &w->files[i];
        int wds[2] = { f->dir_wd, f->file_wd };
        for (int k = 0; k < 2; k++)
            if (wds[k] >= 0 && !wd_used(files, n, wds[k]) && !wd_used(w->files, i, wds[k]))
                inotify_rm_watch(w->eh.fd, wds[k]);
        free(f->path);
    }
    free(w->files);
    w->files = files;
    w->nfiles = n;
    pthread_mutex_unlock(&w->lock);
    if (n)
        log_info("reload_on_change: watching %u file(s) and their directories", n);
    return rc;
}

void watch_tick(struct config_watch *w, int64_t now)
{
    if (!w)
        return;
    roots_tick(w, now);
    int64_t due = atomic_load(&w->due);
    if (!due || now < due)
        return;
    /* An event after this exchange schedules another reload, which reads the files again. */
    atomic_store(&w->first, 0);
    if (!atomic_compare_exchange_strong(&w->due, &due, 0))
        return;
    char what[sizeof(w->changed)];
    pthread_mutex_lock(&w->lock);
    memcpy(what, w->changed, sizeof(what));
    w->named = false;
    pthread_mutex_unlock(&w->lock);
    log_notice("reload_on_change: %s changed: reloading the configuration", what);
    w->reload(w->reload_arg, "reload_on_change");
}

void watch_free(struct config_watch *w)
{
    if (!w)
        return;
    if (w->eh.fd >= 0)
        close(w->eh.fd);
    for (unsigned i = 0; i < w->nfiles; i++)
        free(w->files[i].path);
    free(w->files);
    roots_clear(w);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
