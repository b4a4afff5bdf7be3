/* cgi.c — CGI/1.1 (RFC 3875) programs, without a pool thread ever waiting for one.
 *
 * A request for a script is resolved beneath the location's directory (the same
 * openat2(RESOLVE_BENEATH) open as static files) to an open regular, executable file, and its
 * environment is built (meta-variables only, cgi_env.c). The handler defers the exchange; a
 * chunked body is collected first (RFC 3875 wants CONTENT_LENGTH), then the exchange is held
 * (ex_hold) and handed to a spawner thread, which starts the script with posix_spawn() from the
 * descriptor that was checked (/proc/self/fd/3, so what was checked is what runs), in its own
 * process group and directory, registers what the exchange must watch, and releases it back
 * to the pool (ex_release). From then on everything happens through the exchange, on its
 * owner, one event at a time:
 *
 *   stdin   the pipe to the script (body bytes; watched only while some wait for room);
 *   stdout  the script's output: its header section, then the body, streamed to the client;
 *   stderr  copied to the error log line by line;
 *   pidfd   the script's exit: reaped at once, so no zombie is left;
 *   timer   a timerfd for cgi_timeout: kill the process group.
 *
 * Backpressure both ways: while the pipe to the script is full the job stops taking the
 * client's body (ex_want_body false: the bytes stay in the socket); while the client's socket
 * is full, stdout is not watched until writable() says the client drained it.
 *
 * The exchange ends when the response is complete and every descriptor is closed (the script
 * has exited and been reaped): the connection then goes on with keep-alive, pipelining, an
 * internal redirect (a local Location) or a close. The job is the exchange's state and has one
 * owner at a time, like the exchange (exchange.h): no lock, no reference count. A connection
 * that closes first aborts the job: its process group is killed and reaped by the spawner,
 * whose threads are the one place a blocking wait is allowed (a documented departure from
 * "every handle in the handle set": starting and reaping a process are blocking calls).
 *
 * This file is the exchange's side; the spawner's is spawner.c (cgi_job.h: what they share). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/carry.h"
#include "cgi/cgi_conf.h"
#include "cgi/cgi_job.h"
#include "cgi/cgi_env.h"
#include "cgi/cgi_head.h"
#include "exchange/exchange.h"
#include "static/file_cache.h"
#include "static/static_conf.h"
#include "exchange/handler.h"
#include "log/log.h"
#include "http/path.h"
#include "conf/runtime.h"
#include "conf/site.h"
#include "base/version.h"

/* ---- the job's descriptors -------------------------------------------------------------------- */

static void watch_close(struct cgi_job *job, int k)
{
    struct ex_watch *w = &job->w[k];
    if (w->fd < 0)
        return;
    if (job->ex)
        ex_unwatch(job->ex, w);
    close(w->fd);
    w->fd = -1;
}

static void kill_group(struct cgi_job *job)
{
    if (job->pid > 0)
        kill(-job->pid, SIGKILL); /* not reaped yet, so the group cannot be someone else's */
}

static void job_free(struct cgi_job *job)
{
    for (int k = 0; k < W_COUNT; k++)
        watch_close(job, k);
    if (job->pid > 0) {
        kill_group(job);
        cgi_reap_later(job->g, job->pid);
    }
    if (job->script_fd >= 0)
        close(job->script_fd);
    if (job->own_dir_fd)
        close(job->dir_fd);
    if (job->body_fd >= 0)
        close(job->body_fd);
    cgi_env_free(&job->env);
    carry_put(job->stdin_buf);
    carry_put(job->hdr);
    if (job->ex)
        job->ex->state = NULL;
    free(job);
}

/* The job is over when the response is complete and every descriptor is closed; it then
 * frees itself, and the exchange ends. */
static void job_maybe_done(struct cgi_job *job)
{
    if (!job->body_done)
        return;
    watch_close(job, W_STDIN);  /* the response is out: the rest of the body is not the */
    watch_close(job, W_STDOUT); /* script's any more, nor what it still writes */
    carry_put(job->stdin_buf);
    job->stdin_buf = NULL;
    if (job->body_to_stdin) {
        job->body_to_stdin = false;
        ex_want_body(job->ex, false); /* the connection discards the rest of the body */
    }
    if (job->pid <= 0 && job->w[W_STDERR].fd < 0) {
        watch_close(job, W_TIMER);
        job_free(job);
    }
}

/* An answer of the server's own instead of the script's (502, 503, 504). Returns 0 or
 * -errno. */
static int job_error(struct cgi_job *job, int status, const char *why)
{
    log_error("cgi %s: %s", job->name, why);
    kill_group(job);
    if (job->head_done)
        return -EIO; /* part of the response is out: only closing can tell */
    job->head_done = job->body_done = true;
    int rc = ex_error(job->ex, status);
    job_maybe_done(job);
    return rc;
}

/* ---- the client's side ------------------------------------------------------------------------ */

/* The script's stdin is watched for room only while bytes wait for it. */
static int stdin_wait(struct cgi_job *job, bool waiting)
{
    int rc = ex_watch_set(job->ex, &job->w[W_STDIN], waiting ? WATCH_OUT : 0);
    if (rc == 0)
        rc = ex_want_body(job->ex, !waiting && job->body_to_stdin);
    return rc;
}

/* Body bytes for the script: the pipe takes what it can, the rest waits in stdin_buf (one read
 * of the client's is at most a carry's worth, and no more comes until it has drained). */
static int stdin_put(struct cgi_job *job, const char *data, size_t len)
{
    if (job->w[W_STDIN].fd < 0)
        return 0; /* the script closed its stdin: the rest of the body is discarded */
    if (!job->stdin_buf) {
        ssize_t n = write(job->w[W_STDIN].fd, data, len);
        if (n == (ssize_t)len)
            return 0;
        if (n < 0 && errno != EAGAIN) {
            watch_close(job, W_STDIN); /* EPIPE: it does not read its stdin */
            return 0;
        }
        if (n > 0) {
            data += n;
            len -= (size_t)n;
        }
        job->stdin_buf = carry_get(CARRY_MAX);
        if (!job->stdin_buf)
            return job_error(job, 503, "out of memory");
    }
    struct carry *b = job->stdin_buf;
    if (b->cap - b->len < len)
        return job_error(job, 500, "request body piece larger than a carry");
    memcpy(b->data + b->len, data, len);
    b->len += (uint32_t)len;
    return stdin_wait(job, true);
}

static int on_stdin(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    struct cgi_job *job = ex->state;
    (void)w;
    (void)events;
    struct carry *b = job->stdin_buf;
    if (b) {
        ssize_t n = write(job->w[W_STDIN].fd, b->data + b->off, b->len - b->off);
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n > 0 && (b->off += (uint32_t)n) < b->len)
            return 0;
        carry_put(b);
        job->stdin_buf = NULL;
        if (n < 0) {
            watch_close(job, W_STDIN); /* EPIPE: the rest of the body is discarded */
            return ex_want_body(ex, job->body_to_stdin);
        }
    }
    if (!job->body_to_stdin) {
        watch_close(job, W_STDIN); /* the whole body is in: EOF for the script */
        return 0;
    }
    return stdin_wait(job, false); /* room again: take more of the body */
}

/* ---- the script's side ------------------------------------------------------------------------ */

static int write_body(struct cgi_job *job, const char *data, size_t len)
{
    int rc = ex_stream_write(job->ex, data, len);
    if (rc == 0 && ex_blocked(job->ex)) {
        job->stdout_paused = true; /* stdout waits until the client drained */
        rc = ex_watch_set(job->ex, &job->w[W_STDOUT], 0);
    }
    return rc;
}

/* Body bytes that came with the header section (job->hdr from its `off`): sent once the head
 * is not queued any more. */
static int flush_pending_body(struct cgi_job *job)
{
    struct carry *b = job->hdr;
    if (!b || job->body_done || ex_blocked(job->ex))
        return 0;
    job->hdr = NULL;
    int rc = b->len > b->off ? write_body(job, b->data + b->off, b->len - b->off) : 0;
    carry_put(b);
    return rc;
}

/* A local redirect (RFC 3875 6.2.2): answer a GET of that path instead, once the script is
 * gone. */
static int local_redirect(struct cgi_job *job, struct strview location)
{
    if (location.len > 1 && location.ptr[1] == '/')
        return job_error(job, 502, "invalid local Location");
    const char *hash = memchr(location.ptr, '#', location.len);
    size_t tl = hash ? (size_t)(hash - location.ptr) : location.len;
    job->head_done = job->body_done = true;
    int rc = ex_redirect(job->ex, location.ptr, tl);
    job_maybe_done(job); /* a body would be ignored */
    return rc;
}

/* The header section is complete: answer with the script's status and headers. */
static int begin_response(struct cgi_job *job, const struct cgi_head *h)
{
    if (h->location.ptr && h->location.ptr[0] == '/' && !h->status)
        return local_redirect(job, h->location);
    struct exchange *ex = job->ex;
    int status = h->status ? h->status : h->location.ptr ? 302 : 200;
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex->date);
    if (h->content_type.ptr)
        RESP_HEADER(&r, "Content-Type", h->content_type.ptr, h->content_type.len);
    if (h->location.ptr)
        RESP_HEADER(&r, "Location", h->location.ptr, h->location.len);
    for (unsigned i = 0; i < h->nfields; i++)
        resp_header(&r, h->name[i].ptr, h->name[i].len, h->value[i].ptr, h->value[i].len);
    if (r.overflow || r.len + 192 > r.cap) /* room for the framing and a filter's fields */
        return job_error(job, 502, "response head too large");
    job->head_done = true;
    int rc = ex_stream_begin(ex, &r, h->content_length);
    if (rc == 0 && ex_blocked(ex)) {
        job->stdout_paused = true;
        rc = ex_watch_set(ex, &job->w[W_STDOUT], 0);
    }
    return rc;
}

static int stdout_eof(struct cgi_job *job)
{
    watch_close(job, W_STDOUT);
    if (!job->head_done) {
        if (job->timed_out)
            return job_error(job, 504, "killed at cgi_timeout before its header section");
        return job_error(job, 502, job->hdr && job->hdr->len ? "incomplete header section"
                                                            : "no output");
    }
    if (job->timed_out) {
        log_info("cgi %s: killed at cgi_timeout: response truncated", job->name);
        return -ETIMEDOUT;
    }
    job->body_done = true;
    int rc = ex_stream_end(job->ex);
    job_maybe_done(job);
    return rc;
}

/* Bytes of the header section: parse what has come so far. */
static int header_bytes(struct cgi_job *job, size_t n)
{
    job->hdr->len += (uint32_t)n;
    struct cgi_head h;
    const char *why = NULL;
    int r = cgi_parse_head(job->hdr->data, job->hdr->len, &h, &why);
    if (r == 0 && job->hdr->len >= CGI_HEAD_MAX)
        return job_error(job, 502, "header section larger than 16 KiB");
    if (r < 0)
        return job_error(job, 502, why);
    if (r == 0)
        return 0;
    job->hdr->off = (uint32_t)h.head_len; /* what follows is the body's beginning */
    int rc = begin_response(job, &h);
    return rc < 0 ? rc : flush_pending_body(job);
}

static int job_begin(struct cgi_job *job, struct exchange *ex);

static int on_stdout(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    struct cgi_job *job = ex->state;
    (void)events;
    if (!job->begun) {
        /* The script's output may be seen before writable(): the body is asked for (and a
         * 100 Continue sent) first, never inside a response already begun. (Its stdout is
         * watched only when the spawn succeeded.) */
        int rc = job_begin(job, ex);
        if (rc < 0)
            return rc;
    }
    char buf[CGI_READ];
    char *dst = buf;
    size_t want = sizeof(buf);
    if (!job->head_done) {
        if (!job->hdr && !(job->hdr = carry_get(CGI_HEAD_MAX)))
            return job_error(job, 503, "out of memory");
        dst = job->hdr->data + job->hdr->len;
        want = CGI_HEAD_MAX - job->hdr->len;
    }
    ssize_t n = read(w->fd, dst, want);
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0)
        return stdout_eof(job);
    if (job->head_done)
        return write_body(job, buf, (size_t)n);
    return header_bytes(job, (size_t)n);
}

/* Log complete stderr lines; control characters become '?', so a script cannot forge lines. */
static void log_stderr(struct cgi_job *job, const char *data, size_t len, bool flush)
{
    for (size_t i = 0; i < len; i++) {
        char ch = data[i];
        if (ch == '\n' || job->errlen == ERRLINE_MAX - 1) {
            job->errline[job->errlen] = '\0';
            log_warn("cgi %s: %s", job->name, job->errline);
            job->errlen = 0;
            if (ch == '\n')
                continue;
        }
        job->errline[job->errlen++] = (ch == '\t' || (unsigned char)ch >= 0x20) && ch != 0x7f
                                          ? ch : '?';
    }
    if (flush && job->errlen) {
        job->errline[job->errlen] = '\0';
        log_warn("cgi %s: %s", job->name, job->errline);
        job->errlen = 0;
    }
}

static int on_stderr(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    struct cgi_job *job = ex->state;
    (void)events;
    char buf[4096];
    ssize_t n = read(w->fd, buf, sizeof(buf));
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0) {
        log_stderr(job, "", 0, true);
        watch_close(job, W_STDERR);
        job_maybe_done(job);
        return 0;
    }
    log_stderr(job, buf, (size_t)n, false);
    return 0;
}

static int on_pid(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    struct cgi_job *job = ex->state;
    (void)events;
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    /* Whatever the script left running in its group goes with it (it holds our pipes). */
    kill_group(job);
    int rc = waitid(P_PIDFD, (id_t)w->fd, &si, WEXITED | WNOHANG);
    if ((rc == 0 && si.si_pid == 0) || (rc < 0 && errno != ECHILD))
        return 0; /* not exited after all */
    job->pid = 0; /* reaped (ECHILD: by someone else, SIGCHLD ignored) */
    atomic_fetch_sub_explicit(&job->g->running, 1, memory_order_relaxed);
    if (si.si_code == CLD_EXITED && si.si_status != 0)
        log_info("cgi %s: exited with status %d", job->name, si.si_status);
    else if (si.si_code != CLD_EXITED && !job->timed_out)
        log_info("cgi %s: killed by signal %d", job->name, si.si_status);
    watch_close(job, W_PID);
    job_maybe_done(job);
    return 0;
}

/* cgi_timeout: kill the process group; stdout's end then ends the response (504 if nothing
 * came yet), which gets timeout_send to reach the client before the connection is closed. */
static int on_timer(struct exchange *ex, struct ex_watch *w, uint32_t events)
{
    struct cgi_job *job = ex->state;
    uint64_t ticks;
    (void)events;
    if (read(w->fd, &ticks, sizeof(ticks)) < 0)
        return 0;
    if (!job->timed_out && (job->pid > 0 || !job->body_done)) {
        job->timed_out = true;
        atomic_fetch_add_explicit(&job->g->timeouts, 1, memory_order_relaxed);
        log_warn("cgi %s: still running after cgi_timeout (%u ms): process group killed",
                 job->name, job->timeout);
        kill_group(job);
        struct itimerspec its = { .it_value = { job->timeout_send / 1000,
                                                (long)(job->timeout_send % 1000) * 1000000L } };
        timerfd_settime(w->fd, 0, &its, NULL);
        return 0;
    }
    log_info("cgi %s: the client did not take the response within cgi_timeout", job->name);
    return -ETIMEDOUT;
}

/* ---- watching a started script (on the spawner) ---------------------------------------------- */

/* job->watch: see cgi_job.h. */
static int job_watch(struct cgi_job *job, int in, int out, int err)
{
    struct exchange *ex = job->ex;
    int pidfd = (int)syscall(SYS_pidfd_open, job->pid, 0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { .it_value = { job->timeout / 1000,
                                            (long)(job->timeout % 1000) * 1000000L } };
    job->w[W_STDIN].fd = in;
    job->w[W_STDOUT].fd = out;
    job->w[W_STDERR].fd = err;
    job->w[W_PID].fd = pidfd;
    job->w[W_TIMER].fd = tfd;
    bool ok = pidfd >= 0 && tfd >= 0 && timerfd_settime(tfd, 0, &its, NULL) == 0 &&
              ex_watch(ex, &job->w[W_STDOUT], out, WATCH_IN, on_stdout) == 0 &&
              ex_watch(ex, &job->w[W_STDERR], err, WATCH_IN, on_stderr) == 0 &&
              ex_watch(ex, &job->w[W_PID], pidfd, WATCH_IN, on_pid) == 0 &&
              ex_watch(ex, &job->w[W_TIMER], tfd, WATCH_IN, on_timer) == 0 &&
              (in < 0 || ex_watch(ex, &job->w[W_STDIN], in, 0, on_stdin) == 0);
    if (!ok) {
        /* Nothing may be left for events that will never come: the handles that were
         * registered leave the exchange, the script goes and is reaped here (a spawner may
         * wait, and a killed script is short), so writable() answers 503 and the exchange
         * ends with nothing watched. */
        log_error("cgi %s: cannot watch the script: %s", job->name, strerror(errno));
        kill_group(job);
        for (int k = 0; k < W_COUNT; k++)
            watch_close(job, k);
        waitpid(job->pid, NULL, 0);
        job->pid = 0;
        return 503;
    }
    job->body_to_stdin = in >= 0;
    return 0;
}


/* ---- resolving the script ---------------------------------------------------------------------- */

struct script {
    int fd, dir_fd;         /* the script; its directory (-1: the instance's) */
    size_t len;             /* bytes of the relative path that name the script */
};

/* Find the script in rel[0..len): the shortest leading run of segments that is a file; the rest
 * is PATH_INFO. Directories are walked beneath the instance's directory one level at a time.
 * Returns 0 or -errno (ex_status_for_errno: what the client is told). */
static int find_script(struct cgi *cg, const char *rel, size_t len, struct script *out)
{
    char part[PATH_MAX];
    int dir = -1;
    size_t end = 0;
    if (len == 0 || len >= sizeof(part))
        return len ? -ENAMETOOLONG : -EACCES;
    for (;;) {
        const char *slash = memchr(rel + end, '/', len - end);
        end = slash ? (size_t)(slash - rel) : len;
        memcpy(part, rel, end);
        part[end] = '\0';
        int fd = fc_open_beneath(cg->dir_fd, part, static_conf(cg->lc)->symlinks, 0);
        struct stat st;
        int err = fd < 0 ? -fd : fstat(fd, &st) < 0 ? EIO : 0;
        if (!err && S_ISDIR(st.st_mode) && end < len) {
            if (dir >= 0)
                close(dir);
            dir = fd;
            end++;
            continue;
        }
        if (!err && (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))))
            err = EACCES; /* a directory, a FIFO, a file that is not executable: no script */
        if (err) {
            if (fd >= 0)
                close(fd);
            if (dir >= 0)
                close(dir);
            return -err;
        }
        *out = (struct script){ fd, dir, end };
        return 0;
    }
}

/* The script's meta-variables, while the request's bytes are still here. */
static int build_env(struct cgi *cg, struct cgi_job *job, const struct exchange *ex,
                     const char *rel, size_t rel_len, const struct script *sc)
{
    const struct http_request *req = ex->req;
    size_t head_bytes = req->target.len + 64;
    for (unsigned i = 0; i < req->nheaders; i++)
        head_bytes += req->headers[i].name.len + req->headers[i].value.len + 8;
    char filename[PATH_MAX];
    size_t dl = strlen(cg->dir_abs);
    if (dl + 1 + sc->len >= sizeof(filename))
        return -ENAMETOOLONG;
    memcpy(filename, cg->dir_abs, dl);
    filename[dl] = '/';
    memcpy(filename + dl + 1, rel, sc->len);
    filename[dl + 1 + sc->len] = '\0';
    const struct config *cfg = &ex->rt->cfg;
    size_t name_len = (size_t)(rel + sc->len - ex->path);
    struct cgi_env_info info = {
        .req = req,
        .query = ex->query,
        .script_name = { ex->path, name_len },
        .path_info = { rel + sc->len, rel_len - sc->len },
        .document_root = cg->docroot_abs,
        .script_filename = filename,
        .server_software = "lfhttpd/" LFHTTPD_VERSION,
        .peer = { .sin6_family = AF_INET6, .sin6_port = ex->peer_port,
                  .sin6_addr = ex->client_addr }, /* the client's (trusted proxies) */
        .https = ex->tls,
        .remote_user = ex->remote_user,
        .pass = cgi_top(cfg)->env_pass,
        .npass = cgi_top(cfg)->nenv_pass,
    };
    /* The server's own address: the one this request came to (not the listener's wildcard). */
    if (ex_local_address(ex, &info.local) < 0)
        info.local = (struct sockaddr_in6){ .sin6_family = AF_INET6 };
    if (cgi_env_init(&job->env, head_bytes, req->nheaders) < 0 ||
        cgi_env_build(&job->env, &info) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- the handler -------------------------------------------------------------------------------- */

static int send_busy(struct exchange *ex)
{
    char head[RESP_HEAD_MAX];
    char page[512];
    struct response r;
    resp_begin(&r, head, sizeof(head), 503, ex->date);
    static const char hdrs[] = "Retry-After: 1\r\nContent-Type: text/html; charset=utf-8\r\n";
    resp_add(&r, hdrs, sizeof(hdrs) - 1);
    size_t n = http_error_page(503, page, sizeof(page));
    return ex_send(ex, &r, page, n);
}

/* A job for script `sc` (its descriptors are the job's from here). NULL when out of memory. */
static struct cgi_job *job_new(struct cgi *cg, const struct exchange *ex, const char *rel,
                               const struct script *sc)
{
    struct cgi_job *job = calloc(1, sizeof(*job));
    if (!job) {
        close(sc->fd);
        if (sc->dir_fd >= 0)
            close(sc->dir_fd);
        return NULL;
    }
    job->g = cg->g;
    job->watch = job_watch;
    for (int k = 0; k < W_COUNT; k++)
        job->w[k].fd = -1;
    job->body_fd = job->stdin_src = -1;
    job->script_fd = sc->fd;
    job->own_dir_fd = sc->dir_fd >= 0;
    job->dir_fd = job->own_dir_fd ? sc->dir_fd : cg->dir_fd;
    job->timeout = cgi_top(&ex->rt->cfg)->timeout;
    job->timeout_send = ex->rt->cfg.timeout_send;
    size_t name_len = (size_t)(rel + sc->len - ex->path);
    snprintf(job->name, sizeof(job->name), "%.*s", (int)name_len, ex->path);
    return job;
}

static int cgi_handle(void *inst, struct exchange *ex)
{
    struct cgi *cg = inst;
    const struct http_request *req = ex->req;
    if (!ex->path_plain && path_has_hidden_segment(ex->path, ex->path_len))
        return ex_error(ex, 404);
    const char *rel = ex->path + (cg->strip < ex->path_len ? cg->strip : ex->path_len);
    while (*rel == '/')
        rel++;
    size_t rel_len = (size_t)(ex->path + ex->path_len - rel);
    struct script sc;
    int rc = find_script(cg, rel, rel_len, &sc);
    if (rc < 0)
        return ex_error(ex, ex_status_for_errno(-rc));

    struct cgi_global *g = cg->g;
    unsigned max = cgi_top(&ex->rt->cfg)->max;
    if (atomic_fetch_add_explicit(&g->running, 1, memory_order_relaxed) >= max) {
        atomic_fetch_sub_explicit(&g->running, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->rejected, 1, memory_order_relaxed);
        close(sc.fd);
        if (sc.dir_fd >= 0)
            close(sc.dir_fd);
        return send_busy(ex);
    }
    struct cgi_job *job = job_new(cg, ex, rel, &sc);
    rc = job ? build_env(cg, job, ex, rel, rel_len, &sc) : -ENOMEM;
    struct exchange *d = rc == 0 ? ex_defer(ex, job) : NULL;
    if (!d) {
        atomic_fetch_sub_explicit(&g->running, 1, memory_order_relaxed);
        if (job)
            job_free(job);
        return ex_error(ex, rc == -ENAMETOOLONG ? 414 : rc == -ENOMEM || !job ? 503 : 500);
    }
    job->ex = d;
    if (req->has_body && req->chunked) {
        /* RFC 3875 wants CONTENT_LENGTH: collect a chunked body first (in memory, bounded by
         * max_body_size), then start the script with it as stdin. */
        job->body_fd = memfd_create("lfhttpd-cgi-body", MFD_CLOEXEC);
        if (job->body_fd < 0)
            return job_error(job, 503, "memfd_create failed");
        return ex_want_body(d, true);
    }
    job->stdin_src = req->has_body ? -1 : cg->devnull; /* a pipe, after the spawn */
    cgi_hand_over(job);
    return 0;
}

/* A chunked body collected before the script starts. */
static int collect_body(struct cgi_job *job, const char *data, size_t len, bool last)
{
    while (len) {
        ssize_t n = write(job->body_fd, data, len);
        if (n < 0)
            return job_error(job, 503, "cannot keep the request body");
        data += n;
        len -= (size_t)n;
        job->body_len += (uint64_t)n;
    }
    if (!last)
        return 0;
    char num[24];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)job->body_len);
    cgi_env_add_str(&job->env, "CONTENT_LENGTH", num);
    if (job->env.overflow || lseek(job->body_fd, 0, SEEK_SET) < 0)
        return job_error(job, 500, "cannot keep the request body");
    job->stdin_src = job->body_fd;
    int rc = ex_want_body(job->ex, false);
    if (rc == 0)
        cgi_hand_over(job);
    return rc;
}

static int cgi_body(void *inst, struct exchange *ex, const char *data, size_t len, bool last)
{
    (void)inst;
    struct cgi_job *job = ex->state;
    if (job->pid <= 0 && job->body_fd >= 0)
        return collect_body(job, data, len, last);
    int rc = len ? stdin_put(job, data, len) : 0;
    if (rc == 0 && last) {
        job->body_to_stdin = false;
        if (!job->stdin_buf)
            watch_close(job, W_STDIN); /* the whole body is in: EOF for the script */
    }
    return rc;
}

/* Back from the spawner, drained output, or a yield. */
/* The first step back on the pool after a successful spawn: a body the script reads is asked
 * for. */
static int job_begin(struct cgi_job *job, struct exchange *ex)
{
    job->begun = true;
    return job->body_to_stdin ? ex_want_body(ex, true) : 0;
}

static int cgi_writable(void *inst, struct exchange *ex)
{
    (void)inst;
    struct cgi_job *job = ex->state;
    if (!job->begun) {
        if (job->spawn_status) {
            job->begun = true;
            return job_error(job, job->spawn_status, "the script could not be started");
        }
        int rc = job_begin(job, ex);
        if (rc < 0)
            return rc;
    }
    if (job->stdout_paused && !ex_blocked(ex)) {
        job->stdout_paused = false;
        int rc = flush_pending_body(job);
        if (rc == 0 && !job->stdout_paused && job->w[W_STDOUT].fd >= 0)
            rc = ex_watch_set(ex, &job->w[W_STDOUT], WATCH_IN);
        return rc;
    }
    return 0;
}

/* The connection closes first: the script goes (killed, and reaped by the spawner). */
static void cgi_abort(void *inst, struct exchange *ex)
{
    (void)inst;
    struct cgi_job *job = ex->state;
    if (!job)
        return;
    if (job->pid > 0)
        log_info("cgi %s: the connection closed: script killed", job->name);
    else if (!job->begun && job->script_fd >= 0)
        atomic_fetch_sub_explicit(&job->g->running, 1, memory_order_relaxed); /* never ran */
    job_free(job);
}

static void *cgi_create(const struct handler_env *env, const struct loc_conf *lc, char *err,
                        size_t errlen)
{
    struct cgi *cg = calloc(1, sizeof(*cg));
    if (!cg) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cg->lc = lc;
    cg->devnull = cg->dir_fd = -1;
    if (!realpath(lc->root, cg->docroot_abs)) {
        snprintf(err, errlen, "%s: %s", lc->root, strerror(errno));
        goto fail;
    }
    if (lc->handler_arg) {
        /* `handler cgi DIR`: the location's prefix maps to DIR (like ScriptAlias). */
        if (!lc->prefix) {
            snprintf(err, errlen, "'handler cgi DIR' needs a prefix location (/cgi-bin/)");
            goto fail;
        }
        cg->dir_fd = open(lc->handler_arg, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cg->dir_fd < 0 || !realpath(lc->handler_arg, cg->dir_abs)) {
            snprintf(err, errlen, "%s: %s", lc->handler_arg, strerror(errno));
            goto fail;
        }
        cg->own_dir_fd = true;
        cg->strip = lc->prefix_len;
    } else {
        cg->dir_fd = lc->root_fd;
        snprintf(cg->dir_abs, sizeof(cg->dir_abs), "%s", cg->docroot_abs);
    }
    cg->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (cg->devnull < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        goto fail;
    }
    cg->g = cgi_global_get(env->process, err, errlen);
    if (!cg->g)
        goto fail;
    return cg;
fail:
    if (cg->own_dir_fd && cg->dir_fd >= 0)
        close(cg->dir_fd);
    if (cg->devnull >= 0)
        close(cg->devnull);
    free(cg);
    return NULL;
}

/* With its runtime (a reload, or exit). A job uses the instance's directory and /dev/null only
 * until its script has started, while its connection holds the runtime. */
static void cgi_destroy(void *inst)
{
    struct cgi *cg = inst;
    if (cg->own_dir_fd)
        close(cg->dir_fd);
    close(cg->devnull);
    free(cg);
}

const struct handler_ops cgi_handler = {
    .name = "cgi",
    .stop = cgi_stop,
    .release = cgi_release,
    .create = cgi_create,
    .handle = cgi_handle,
    .body = cgi_body,
    .writable = cgi_writable,
    .abort = cgi_abort,
    .destroy = cgi_destroy,
    .stats = cgi_stats,
};
