/* static_file.c — GET/HEAD of files under the document root.
 *
 * The request path is percent-decoded and normalised (path.c) and then opened relative to the
 * root's directory fd with openat2(RESOLVE_BENEATH), so neither "..", nor an encoded
 * separator, nor a symlink can reach outside the root: the kernel refuses any resolution that
 * would leave it. Files are answered with sendfile (or one writev for small files) by the
 * exchange; nothing here blocks on a peer. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handler.h"
#include "http_date.h"
#include "http_exchange.h"
#include "log.h"
#include "mime.h"
#include "path.h"
#include "server.h"

#define DEFAULT_TYPE "application/octet-stream"

struct static_files {
    struct server *srv;
};

/* openat2 is missing in some sandboxes (seccomp profiles answer ENOSYS or EPERM). */
static _Atomic int openat2_missing;

/* Fallback as strict as RESOLVE_BENEATH: walk the (already normalised, ".."-free) path one
 * component at a time and follow no symlink at all. */
static int open_walk(int root_fd, const char *rel, int flags)
{
    char comp[4096];
    int dir = root_fd;
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len >= sizeof(comp)) {
            if (dir != root_fd)
                close(dir);
            return -ENAMETOOLONG;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        bool last = !slash || slash[1] == '\0';
        int fd = openat(dir, comp, last ? flags | O_NOFOLLOW : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        if (dir != root_fd)
            close(dir);
        if (fd < 0)
            return err == ELOOP ? -EXDEV : -err;
        if (last)
            return fd;
        dir = fd;
        p = slash + 1;
    }
}

/* Open `rel` (relative, no leading '/', "." for the root) strictly beneath the root. */
static int open_beneath(int root_fd, const char *rel)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK; /* O_NONBLOCK: never hang on a FIFO */
    if (!atomic_load_explicit(&openat2_missing, memory_order_relaxed)) {
        struct open_how how = { .flags = (uint64_t)flags,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
        long fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
        if (fd >= 0)
            return (int)fd;
        if (errno != ENOSYS && errno != EPERM)
            return -errno;
        if (!atomic_exchange(&openat2_missing, 1))
            log_warn("openat2 unavailable (%s): symlinks will not be followed", strerror(errno));
    }
    return open_walk(root_fd, rel, flags);
}

static int errno_to_status(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EXDEV: /* resolution would leave the root (e.g. a symlink pointing outside) */
    case ELOOP:
    case ENAMETOOLONG:
        return 404;
    case EACCES:
    case EPERM:
        return 403;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        return 503;
    default:
        return 500;
    }
}

static void *static_create(struct server *srv, const char *arg, char *err, size_t errlen)
{
    (void)arg;
    struct static_files *sf = calloc(1, sizeof(*sf));
    if (!sf) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sf->srv = srv;
    return sf;
}

static void static_destroy(void *inst)
{
    free(inst);
}

/* 301 to the directory URL with a trailing slash. The Location is relative (path and query
 * only), so a server behind a proxy never leaks its own host and port. */
static int redirect_to_dir(struct http_exchange *ex)
{
    const struct http_request *req = ex->req;
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 301, ex->date);
    resp_add(&r, "Location: ", 10);
    resp_add(&r, req->path.ptr, req->path.len);
    resp_add(&r, "/", 1);
    if (req->query.ptr) {
        resp_add(&r, "?", 1);
        resp_add(&r, req->query.ptr, req->query.len);
    }
    resp_add(&r, "\r\nContent-Type: text/html; charset=utf-8\r\n", 42);
    char page[256];
    size_t n = http_error_page(301, page, sizeof(page));
    return ex_send(ex, &r, page, n) < 0 ? -1 : 0;
}

static int send_file(struct http_exchange *ex, const char *name, size_t namelen, int fd,
                     const struct stat *st)
{
    const char *type = mime_lookup(ex->srv->mime, name, namelen);
    if (!type)
        type = DEFAULT_TYPE;
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), 200, ex->date);
    RESP_HEADER_STR(&r, "Content-Type", type);
    char lm[32];
    http_date_format(st->st_mtim.tv_sec, lm);
    RESP_HEADER(&r, "Last-Modified", lm, 29);
    char etag[64];
    int n = snprintf(etag, sizeof(etag), "\"%llx-%llx-%llx\"", (unsigned long long)st->st_ino,
                     (unsigned long long)st->st_size,
                     (unsigned long long)st->st_mtim.tv_sec * 1000000000ULL +
                         (unsigned long long)st->st_mtim.tv_nsec);
    RESP_HEADER(&r, "ETag", etag, (size_t)n);
    return ex_send_file(ex, &r, fd, 0, (size_t)st->st_size) < 0 ? -1 : 0;
}

static int static_handle(void *inst, struct http_exchange *ex)
{
    struct static_files *sf = inst;
    const struct http_request *req = ex->req;
    const struct config *cfg = &sf->srv->cfg;

    if (req->method == HTTP_OPTIONS) {
        char head[RESP_HEAD_MAX];
        struct response r;
        resp_begin(&r, head, sizeof(head), 204, ex->date);
        resp_add(&r, "Allow: GET, HEAD, OPTIONS\r\n", 27);
        return ex_send(ex, &r, NULL, 0) < 0 ? -1 : 0;
    }
    if (req->method != HTTP_GET && req->method != HTTP_HEAD)
        return 405;

    char path[4096];
    size_t plen;
    int rc = path_normalize(req->path.ptr, req->path.len, path, sizeof(path), &plen);
    if (rc == -ENAMETOOLONG)
        return 414;
    if (rc < 0)
        return 400;
    if (path_has_hidden_segment(path, plen))
        return 404;

    const char *rel = plen > 1 ? path + 1 : ".";
    int fd = open_beneath(sf->srv->root_fd, rel);
    if (fd < 0)
        return errno_to_status(-fd);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return 500;
    }
    if (S_ISREG(st.st_mode))
        return send_file(ex, path, plen, fd, &st);
    close(fd);
    if (!S_ISDIR(st.st_mode))
        return 403;
    if (path[plen - 1] != '/')
        return redirect_to_dir(ex);

    /* A directory URL: the first index file that exists. */
    for (unsigned i = 0; i < cfg->nindex; i++) {
        size_t ilen = strlen(cfg->index[i]);
        if (plen + ilen >= sizeof(path))
            return 414;
        memcpy(path + plen, cfg->index[i], ilen + 1);
        fd = open_beneath(sf->srv->root_fd, path + 1);
        if (fd == -ENOENT)
            continue;
        if (fd < 0)
            return errno_to_status(-fd);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            continue;
        }
        return send_file(ex, path, plen + ilen, fd, &st);
    }
    return 403; /* a directory without an index file; listings are off */
}

const struct handler_ops static_file_handler = {
    .name = "static",
    .create = static_create,
    .handle = static_handle,
    .destroy = static_destroy,
};
