/* root_switch.c — root_follow's identities and root_grace's previous tree; see root_switch.h. */
#include "daemon/root_switch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/runtime.h"
#include "conf/site.h"
#include "log/diag.h"
#include "log/log.h"

/* The name a kubelet gives the symlink it renames over to publish a ConfigMap's new payload. */
#define KUBELET_DATA "..data"

void root_identify(struct loc_conf *lc)
{
    struct stat st;
    lc->root_dev = 0;
    lc->root_ino = 0;
    lc->data_dev = 0;
    lc->data_ino = 0;
    if (lc->root_fd < 0 || fstat(lc->root_fd, &st) < 0)
        return;
    lc->root_dev = st.st_dev;
    lc->root_ino = st.st_ino;
    if (fstatat(lc->root_fd, KUBELET_DATA, &st, 0) == 0) {
        lc->data_dev = st.st_dev;
        lc->data_ino = st.st_ino;
    }
}

/* The previous generation's location with the root `root`, or NULL. */
static const struct loc_conf *find_root(const struct runtime *prev, const char *root)
{
    const struct site_set *ss = &prev->cfg.sites;
    for (unsigned i = 0; i < ss->nsites; i++)
        for (unsigned j = 0; j <= ss->sites[i].nlocs; j++) {
            const struct loc_conf *o = j == 0 ? &ss->sites[i].base : &ss->sites[i].locs[j - 1];
            if (o->root_fd >= 0 && o->root && !strcmp(o->root, root))
                return o;
        }
    return NULL;
}

/* "root /srv/current -> releases/42: switched (generation 7)": the link's new target as it
 * reads (the kubelet's ..data, else the root itself when it is a symlink, else its real path). */
static void log_switch(const struct loc_conf *lc, bool data, unsigned generation)
{
    char link[PATH_MAX + sizeof(KUBELET_DATA) + 1], to[PATH_MAX];
    snprintf(link, sizeof(link), "%s%s%s", lc->root, data ? "/" : "", data ? KUBELET_DATA : "");
    ssize_t n = readlink(link, to, sizeof(to) - 1);
    if (n < 0) {
        char proc[32];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", lc->root_fd);
        n = readlink(proc, to, sizeof(to) - 1);
    }
    to[n < 0 ? 0 : n] = '\0';
    log_notice("root %s -> %s: switched (generation %u)", link, n < 0 ? "?" : to, generation);
}

/* lc->prev: `lc` on the tree of `fd` (duplicated), until `until`. */
static int keep_previous(struct loc_conf *lc, int fd, int64_t until)
{
    struct loc_conf *p = malloc(sizeof(*p));
    if (!p) {
        diag("lfhttpd: root_grace: out of memory\n");
        return -1;
    }
    *p = *lc; /* every setting shared, nothing owned but the fd */
    p->prev = NULL;
    p->instance = NULL;
    p->root_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (p->root_fd < 0) {
        diag("lfhttpd: root_grace: %s: %s\n", lc->root, strerror(errno));
        free(p);
        return -1;
    }
    lc->prev = p;
    lc->prev_until = until;
    return 0;
}

int root_carry(const struct runtime *prev, struct loc_conf *lc, bool first, unsigned generation,
               int64_t now)
{
    const struct loc_conf *old = prev ? find_root(prev, lc->root) : NULL;
    if (!old)
        return 0;
    bool data = old->data_dev != lc->data_dev || old->data_ino != lc->data_ino;
    bool tree = old->root_dev != lc->root_dev || old->root_ino != lc->root_ino;
    if ((tree || data) && first)
        log_switch(lc, data && !tree, generation);
    if (lc->root_grace <= 0)
        return 0;
    /* A kubelet volume's root stays the same directory and the kubelet deletes the previous
     * payload: there is no previous tree to keep. */
    if (tree)
        return keep_previous(lc, old->root_fd, now + lc->root_grace);
    /* The same tree (a reload for another reason): the grace under way goes on, to its end. */
    if (old->prev && now < old->prev_until)
        return keep_previous(lc, old->prev->root_fd, old->prev_until);
    return 0;
}

void root_release(struct loc_conf *lc)
{
    if (!lc->prev)
        return;
    close(lc->prev->root_fd);
    free(lc->prev);
    lc->prev = NULL;
}
