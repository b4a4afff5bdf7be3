/* cgi.c — CGI/1.1 (RFC 3875) programs, without a pool thread ever waiting for one.
 *
 * A request for a script is resolved beneath the location's directory (the same
 * openat2(RESOLVE_BENEATH) open as static files) to an open regular, executable file, and its
 * environment is built (meta-variables only, cgi_env.c). The job then takes the connection
 * over (EX_TAKE_CONN); a spawner thread starts the script with posix_spawn() from the
 * descriptor that was checked (/proc/self/fd/3, so what was checked is what runs), in its own
 * process group and directory; and everything else happens in the shared handle set, on
 * whichever pool thread leads:
 *
 *   client  a small epoll set holding the client socket, itself one handle in the shared set,
 *           so the job can change what it waits for on the socket (body bytes, room to write,
 *           a hang-up) at any time without touching a registration another thread may hold;
 *   stdin   the pipe to the script (body bytes; only while some are pending);
 *   stdout  the script's output: its header section, then the body, streamed to the client;
 *   stderr  copied to the error log line by line;
 *   pidfd   the script's exit: reaped at once, so no zombie is left;
 *   timer   cgi_timeout (timer.h): kill the process group.
 *
 * Backpressure both ways: while the pipe to the script is full the job stops reading the
 * client's body (no EPOLLIN on the socket); while the client socket is full the bytes wait in
 * the connection's carry buffer and stdout is not re-armed until the client drained them.
 *
 * Locking and lifetime (the invariant docs/ARCHITECTURE.md states):
 *   - Several handles of one job can fire on different threads at once, so every event
 *     handler of a job takes job->lock first and holds it while it touches the job or the
 *     connection the job owns.
 *   - job->refs counts what can still reach the job: each handle armed in the handle set (an
 *     event may be on its way to a thread), the scheduled timer, and the exchange (the
 *     connection, until it is given back). An event's thread inherits the reference of the
 *     arming it consumed and either re-arms (keeping it) or drops it. Whoever drops the last
 *     reference frees the job, after unlocking: no other thread can reach it any more.
 *   - A handle is re-armed only by the thread processing its event, or armed while it is
 *     parked — never modified while it may be in flight. The client handle is the exception
 *     that proves the rule: it waits on a private epoll set whose interest may change freely,
 *     and when the job is done with the client it is made ready ("poked") so that its last
 *     event arrives exactly once.
 *   - When the response is complete (or failed), the thread that finished it gives the
 *     connection back with conn_handback() after unlocking, and continues it like any other
 *     connection event (keep-alive, pipelining, an internal redirect, or a close). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "carry.h"
#include "cgi_env.h"
#include "cgi_head.h"
#include "connection.h"
#include "file_cache.h"
#include "handle_set.h"
#include "handler.h"
#include "http_exchange.h"
#include "log.h"
#include "path.h"
#include "runtime.h"
#include "server.h"
#include "site.h"
#include "timer.h"
#include "transport.h"
#include "version.h"

#define CGI_READ EX_STREAM_MAX        /* stdout bytes per read: one stream write */
#define CGI_HEAD_MAX (16 * 1024)      /* the script's header section */
#define CGI_REDIRECTS_MAX 10          /* local redirects in a row */
#define ERRLINE_MAX 1000              /* stderr line length in the log */

enum { H_CLIENT = 0, H_STDIN, H_STDOUT, H_STDERR, H_PID, H_COUNT };

/* Tags in the client poll set. */
enum { TAG_SOCKET = 1, TAG_POKE = 2 };

struct cgi {
    struct server *srv;
    const struct loc_conf *lc;
    int dir_fd;                     /* scripts are resolved beneath this directory */
    bool own_dir_fd;
    size_t strip;                   /* `handler cgi DIR`: URL prefix mapped to DIR */
    char dir_abs[PATH_MAX];
    char docroot_abs[PATH_MAX];
    int devnull;                    /* stdin of requests without a body */
};

struct cgi_job;

struct cgi_handle {
    struct event_handler eh;        /* first member; eh.fd -1 when closed */
    struct cgi_job *job;
    uint8_t kind;
    bool registered;                /* in the handle set */
    bool armed;                     /* waiting there: holds a reference */
};

struct cgi_job {
    pthread_mutex_t lock;
    unsigned refs;
    struct cgi *cg;                 /* the instance: only until the hand-over (see below) */
    struct server *srv;
    struct handle_set *hs;          /* the connection's handle set: its pipes join it */
    struct cgi_job *prev, *next;    /* srv->cgi_jobs, under srv->cgi_lock */
    int poke_fd;                    /* an eventfd that is always readable (job_end) */
    unsigned timeout, timeout_send; /* cgi_timeout and timeout_send of the request's runtime */
    struct cgi_handle h[H_COUNT];
    pid_t pid;                      /* > 0 until reaped */
    struct timer_entry timer;
    bool timer_set;

    /* Until the script starts (on a spawner thread, after the hand-over). */
    struct cgi_env env;
    int script_fd, dir_fd;          /* dir_fd -1: the instance's directory */
    int body_fd;                    /* a chunked body collected in memory (memfd), or -1 */
    uint64_t body_len;
    int stdin_src;                  /* the script's stdin: an fd (borrowed), or -1 for a pipe */
    int spawn_status;               /* 0, or the HTTP status for a script that did not start */
    bool begun;                     /* a pool thread has taken over after the spawn */
    struct cgi_job *spawn_next;     /* the spawner's queue */

    /* While the job owns the connection. */
    struct conn *conn;
    uint32_t client_events;         /* interest of the socket in the client poll set */
    bool want_body;                 /* body bytes remain to be read from the client */
    bool stdin_open;
    struct carry *stdin_buf;        /* body bytes the pipe has not taken yet */
    struct carry *hdr;              /* the script's header section, until complete */
    bool head_done;                 /* the response head is sent (or replaced) */
    bool body_done;                 /* the response's last byte is queued */
    bool stdout_parked;             /* stdout waits for the client to drain */
    bool timed_out;
    uint8_t redirects;
    char host[256];                 /* for a local redirect */
    size_t host_len;
    char name[160];                 /* the script's URL path, for the log */
    char errline[ERRLINE_MAX];
    size_t errlen;
};

/* What the thread that drops the lock must do with the connection. */
struct post {
    struct conn *c;
    enum conn_handback_how how;
    struct conn_redirect redirect;
    char target[2048];
    char host[256];
};

static void job_on_event(struct event_handler *eh, uint32_t events, struct worker *w);
static const struct event_handler_ops job_ops = { .handle_event = job_on_event };

/* ---- job lifetime ------------------------------------------------------------------------ */

static struct cgi_job *job_new(struct cgi *cg, struct handle_set *hs)
{
    struct cgi_job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    pthread_mutex_init(&job->lock, NULL);
    job->refs = 1; /* the exchange's */
    job->cg = cg;
    job->srv = cg->srv;
    job->hs = hs;
    job->script_fd = job->dir_fd = job->body_fd = job->poke_fd = job->stdin_src = -1;
    for (int k = 0; k < H_COUNT; k++) {
        job->h[k].eh.fd = -1;
        job->h[k].eh.ops = &job_ops;
        job->h[k].job = job;
        job->h[k].kind = (uint8_t)k;
    }
    struct server *srv = cg->srv;
    pthread_mutex_lock(&srv->cgi_lock);
    job->next = srv->cgi_jobs;
    if (srv->cgi_jobs)
        srv->cgi_jobs->prev = job;
    srv->cgi_jobs = job;
    pthread_mutex_unlock(&srv->cgi_lock);
    return job;
}

/* Close a handle that is not armed (nothing of it can be in flight). */
static void handle_close(struct cgi_job *job, int k)
{
    struct cgi_handle *h = &job->h[k];
    if (h->eh.fd < 0)
        return;
    if (h->registered)
        hs_del(job->hs, &h->eh);
    close(h->eh.fd);
    h->eh.fd = -1;
    h->registered = false;
}

/* The last reference is gone: nothing can reach the job any more. */
static void job_free(struct cgi_job *job)
{
    struct server *srv = job->srv;
    pthread_mutex_lock(&srv->cgi_lock);
    if (job->prev)
        job->prev->next = job->next;
    else
        srv->cgi_jobs = job->next;
    if (job->next)
        job->next->prev = job->prev;
    pthread_mutex_unlock(&srv->cgi_lock);
    for (int k = 0; k < H_COUNT; k++)
        handle_close(job, k);
    if (job->pid > 0) {
        /* Only when the pidfd could not be watched (or at shutdown): a killed child is gone at
         * once, so this wait is short. */
        kill(-job->pid, SIGKILL);
        waitpid(job->pid, NULL, 0);
        atomic_fetch_sub_explicit(&job->srv->cgi_running, 1, memory_order_relaxed);
    }
    if (job->script_fd >= 0)
        close(job->script_fd);
    if (job->dir_fd >= 0)
        close(job->dir_fd);
    if (job->body_fd >= 0)
        close(job->body_fd);
    if (job->poke_fd >= 0)
        close(job->poke_fd);
    cgi_env_free(&job->env);
    carry_put(job->stdin_buf);
    carry_put(job->hdr);
    pthread_mutex_destroy(&job->lock);
    free(job);
}

/* Unlock; free the job if that was the last reference; then continue the connection that was
 * given back, if any. */
static void job_unlock(struct cgi_job *job, struct worker *w, struct post *post)
{
    bool last = job->refs == 0;
    pthread_mutex_unlock(&job->lock);
    if (last)
        job_free(job);
    if (post && post->c)
        conn_handback(post->c, w, post->how,
                      post->how == HANDBACK_REDIRECT ? &post->redirect : NULL);
}

/* Arm a handle that is not armed (parked, or never registered). */
static int job_arm(struct cgi_job *job, int k, uint32_t events)
{
    struct cgi_handle *h = &job->h[k];
    int rc = h->registered ? hs_rearm(job->hs, &h->eh, events)
                           : hs_add(job->hs, &h->eh, events);
    if (rc < 0) {
        log_error("cgi %s: epoll_ctl: %s", job->name, strerror(-rc));
        return rc;
    }
    h->registered = true;
    h->armed = true;
    job->refs++;
    return 0;
}

static void kill_group(struct cgi_job *job)
{
    if (job->pid > 0)
        kill(-job->pid, SIGKILL); /* not reaped yet, so the group cannot be someone else's */
}

/* Drop the timer when nothing is left for it to guard. */
static void job_maybe_cancel_timer(struct cgi_job *job)
{
    if (job->timer_set && job->pid <= 0 && !job->conn &&
        timer_cancel(&job->srv->timers, &job->timer)) {
        job->timer_set = false;
        job->refs--;
    }
}

/* ---- the client side ---------------------------------------------------------------------- */

/* Set the socket's interest in the client poll set from what the job needs now. */
static void client_update(struct cgi_job *job)
{
    struct conn *c = job->conn;
    int pfd = job->h[H_CLIENT].eh.fd;
    if (!c || pfd < 0)
        return;
    uint32_t ev = EPOLLRDHUP;
    if (job->want_body && !job->stdin_buf)
        ev |= EPOLLIN;
    if (c->sending)
        ev |= EPOLLOUT;
    if (c->tp_want) { /* TLS: the transport must move bytes the other way first */
        ev |= c->tp_want;
        c->tp_want = 0;
    }
    if (ev == job->client_events)
        return;
    struct epoll_event e = { .events = ev, .data.u32 = TAG_SOCKET };
    if (epoll_ctl(pfd, EPOLL_CTL_MOD, c->eh.fd, &e) == 0)
        job->client_events = ev;
}

/* The job is done with the client: give the connection back (through `post`, after the
 * unlock) and let the client handle's last event come. */
static void job_end(struct cgi_job *job, struct post *post, enum conn_handback_how how)
{
    struct conn *c = job->conn;
    if (!c)
        return;
    job->conn = NULL;
    int pfd = job->h[H_CLIENT].eh.fd;
    if (pfd >= 0) {
        epoll_ctl(pfd, EPOLL_CTL_DEL, c->eh.fd, NULL);
        if (job->h[H_CLIENT].armed) {
            struct epoll_event e = { .events = EPOLLIN, .data.u32 = TAG_POKE };
            epoll_ctl(pfd, EPOLL_CTL_ADD, job->poke_fd, &e);
        }
    }
    if (job->stdin_open) {
        job->stdin_open = false;
        if (!job->h[H_STDIN].armed)
            handle_close(job, H_STDIN);
    }
    if (!job->h[H_STDOUT].armed)
        handle_close(job, H_STDOUT); /* a redirect or a failure: the rest is not wanted */
    carry_put(job->stdin_buf);
    job->stdin_buf = NULL;
    carry_put(job->hdr);
    job->hdr = NULL;
    post->c = c;
    post->how = how;
    job->refs--; /* the exchange's reference */
    job_maybe_cancel_timer(job);
}

static void job_abort(struct cgi_job *job, struct post *post, const char *why)
{
    if (!job->conn)
        return;
    log_info("cgi %s: %s", job->name, why);
    kill_group(job);
    job_end(job, post, HANDBACK_CLOSE);
}

static void job_maybe_finish(struct cgi_job *job, struct post *post)
{
    if (job->conn && job->body_done && !job->conn->sending)
        job_end(job, post, HANDBACK_DONE);
}

/* An answer of the server's own instead of the script's (502, 504, 500). */
static void job_error(struct cgi_job *job, struct worker *w, struct post *post, int status,
                      const char *why)
{
    if (job->head_done) {
        job_abort(job, post, why); /* part of the response is out: only closing can tell */
        return;
    }
    log_error("cgi %s: %s", job->name, why);
    kill_group(job);
    struct http_exchange ex;
    ex_for_conn(&ex, job->conn, w);
    job->head_done = job->body_done = true;
    if (ex_send_error(&ex, status) < 0) {
        job_end(job, post, HANDBACK_CLOSE);
        return;
    }
    client_update(job);
    job_maybe_finish(job, post);
}

/* http_body_cb: decoded request body bytes for the script's stdin. The pipe takes what it can;
 * the rest waits in stdin_buf (one read of the client is at most a carry's worth). */
static int stdin_sink(void *arg, const char *data, size_t len)
{
    struct cgi_job *job = arg;
    if (!job->stdin_open)
        return 0; /* the script stopped reading: the body is discarded */
    if (!job->stdin_buf) {
        ssize_t n = write(job->h[H_STDIN].eh.fd, data, len);
        if (n == (ssize_t)len)
            return 0;
        if (n < 0 && errno != EAGAIN) {
            job->stdin_open = false; /* EPIPE: the script closed its stdin */
            return 0;
        }
        if (n > 0) {
            data += n;
            len -= (size_t)n;
        }
        job->stdin_buf = carry_get(CARRY_MAX);
        if (!job->stdin_buf)
            return 500;
    }
    struct carry *b = job->stdin_buf;
    if (b->cap - b->len < len)
        return 500; /* cannot happen: one pump reads at most CARRY_MAX bytes */
    memcpy(b->data + b->len, data, len);
    b->len += (uint32_t)len;
    return 0;
}

static void pump_body(struct cgi_job *job, struct post *post)
{
    int r = conn_pump_body(job->conn, stdin_sink, job);
    if (r < 0) {
        job_abort(job, post, "the client went away or sent a malformed body");
        return;
    }
    if (r == 1)
        job->want_body = false;
    if (!job->stdin_open && job->h[H_STDIN].eh.fd >= 0 && !job->h[H_STDIN].armed) {
        carry_put(job->stdin_buf);
        job->stdin_buf = NULL;
        handle_close(job, H_STDIN);
    } else if (job->stdin_buf && !job->h[H_STDIN].armed) {
        if (job_arm(job, H_STDIN, EPOLLOUT) < 0)
            job_abort(job, post, "cannot watch stdin");
    } else if (!job->want_body && !job->stdin_buf && job->stdin_open) {
        job->stdin_open = false; /* the whole body is in: EOF for the script */
        if (!job->h[H_STDIN].armed)
            handle_close(job, H_STDIN);
    }
}

static void flush_pending_body(struct cgi_job *job, struct worker *w, struct post *post);

static uint32_t on_client(struct cgi_job *job, struct worker *w, struct post *post)
{
    struct epoll_event ev[2];
    uint32_t revents = 0;
    int n = epoll_wait(job->h[H_CLIENT].eh.fd, ev, 2, 0);
    for (int i = 0; i < n; i++)
        if (ev[i].data.u32 == TAG_SOCKET)
            revents = ev[i].events;
    struct conn *c = job->conn;
    if (!c)
        return 0; /* the poke: the job is done with the client */
    if (!job->begun) {
        /* The first event after the spawner's poke: take the exchange on from here. */
        job->begun = true;
        epoll_ctl(job->h[H_CLIENT].eh.fd, EPOLL_CTL_DEL, job->poke_fd, NULL);
        if (job->spawn_status) {
            job_error(job, w, post, job->spawn_status, "the script could not be started");
            return job->conn ? (client_update(job), EPOLLIN) : 0;
        }
        if (c->phase == PH_BODY && job->stdin_open) {
            job->want_body = true;
            pump_body(job, post);
            if (!job->conn)
                return 0;
        } else if (job->stdin_open) {
            job->stdin_open = false;
            handle_close(job, H_STDIN);
        }
    }
    if (c->sending) {
        int rc = conn_flush(c, w);
        if (rc == 0) {
            c->sending = false;
            if (job->stdout_parked) {
                job->stdout_parked = false;
                flush_pending_body(job, w, post);
            }
            if (job->conn && !job->stdout_parked && !job->h[H_STDOUT].armed &&
                job->h[H_STDOUT].eh.fd >= 0 && !job->body_done) {
                if (job_arm(job, H_STDOUT, EPOLLIN) < 0) {
                    job_abort(job, post, "cannot watch stdout");
                    return 0;
                }
            }
        } else if (rc != -EAGAIN) {
            job_abort(job, post, "the client went away");
            return 0;
        }
        if (!job->conn)
            return 0;
    }
    if (job->want_body && !job->stdin_buf) {
        pump_body(job, post);
        if (!job->conn)
            return 0;
    }
    if ((revents & (EPOLLHUP | EPOLLERR)) || ((revents & EPOLLRDHUP) && !job->want_body)) {
        job_abort(job, post, "the client closed the connection: script killed");
        return 0;
    }
    job_maybe_finish(job, post);
    if (!job->conn)
        return 0;
    client_update(job);
    return EPOLLIN;
}

/* ---- the script's side ------------------------------------------------------------------------ */

static uint32_t on_stdin(struct cgi_job *job, struct post *post)
{
    struct carry *b = job->stdin_buf;
    int fd = job->h[H_STDIN].eh.fd;
    if (job->stdin_open && b && job->conn) {
        ssize_t n = write(fd, b->data + b->off, b->len - b->off);
        if (n < 0 && errno == EAGAIN)
            return EPOLLOUT;
        if (n > 0) {
            b->off += (uint32_t)n;
            if (b->off < b->len)
                return EPOLLOUT;
            carry_put(b);
            job->stdin_buf = NULL;
            if (job->want_body) {
                client_update(job); /* room again: read more of the body */
                return 0;
            }
        }
    }
    /* Done (body complete), failed (the script closed its stdin) or no longer wanted. */
    carry_put(job->stdin_buf);
    job->stdin_buf = NULL;
    job->stdin_open = false;
    handle_close(job, H_STDIN);
    if (job->conn && job->want_body)
        client_update(job); /* the rest of the body is read and discarded */
    (void)post;
    return 0;
}

static void write_body(struct cgi_job *job, struct worker *w, struct post *post,
                       const char *data, size_t len)
{
    struct http_exchange ex;
    ex_for_conn(&ex, job->conn, w);
    int rc = ex_stream_write(&ex, data, len);
    if (rc < 0) {
        job_abort(job, post, "the client went away");
        return;
    }
    if (rc == 1) {
        job->stdout_parked = true; /* stdout waits until the client drained */
        client_update(job);
    }
}

/* Body bytes that came with the header section (job->hdr from its `off`): sent as soon as the
 * head is not parked any more. */
static void flush_pending_body(struct cgi_job *job, struct worker *w, struct post *post)
{
    struct carry *b = job->hdr;
    if (!b || !job->conn || job->body_done || job->stdout_parked)
        return;
    job->hdr = NULL;
    if (b->len > b->off)
        write_body(job, w, post, b->data + b->off, b->len - b->off);
    carry_put(b);
}

/* The header section is complete: answer with the script's status and headers. */
static void begin_response(struct cgi_job *job, struct worker *w, struct post *post,
                           const struct cgi_head *h)
{
    struct conn *c = job->conn;
    if (h->location.ptr && h->location.ptr[0] == '/' && !h->status) {
        /* A local redirect (RFC 3875 6.2.2): answer a GET of that path instead. */
        if (job->redirects >= CGI_REDIRECTS_MAX) {
            job_error(job, w, post, 500, "too many local redirects");
            return;
        }
        if (h->location.len >= sizeof(post->target) || (h->location.len > 1 &&
                                                         h->location.ptr[1] == '/')) {
            job_error(job, w, post, 502, "invalid local Location");
            return;
        }
        const char *hash = memchr(h->location.ptr, '#', h->location.len);
        size_t tl = hash ? (size_t)(hash - h->location.ptr) : h->location.len;
        memcpy(post->target, h->location.ptr, tl);
        memcpy(post->host, job->host, job->host_len);
        post->redirect = (struct conn_redirect){ post->target, tl, post->host, job->host_len };
        job->head_done = job->body_done = true;
        job_end(job, post, HANDBACK_REDIRECT); /* closes stdout: a body would be ignored */
        return;
    }
    int status = h->status ? h->status : h->location.ptr ? 302 : 200;
    struct http_exchange ex;
    ex_for_conn(&ex, c, w);
    char head[RESP_HEAD_MAX];
    struct response r;
    resp_begin(&r, head, sizeof(head), status, ex.date);
    if (h->content_type.ptr)
        RESP_HEADER(&r, "Content-Type", h->content_type.ptr, h->content_type.len);
    if (h->location.ptr)
        RESP_HEADER(&r, "Location", h->location.ptr, h->location.len);
    for (unsigned i = 0; i < h->nfields; i++)
        resp_header(&r, h->name[i].ptr, h->name[i].len, h->value[i].ptr, h->value[i].len);
    if (r.overflow || r.len + 128 > r.cap) {
        job_error(job, w, post, 502, "response head too large");
        return;
    }
    job->head_done = true;
    if (ex_stream_begin(&ex, &r, h->content_length) < 0) {
        job_abort(job, post, "the client went away");
        return;
    }
    if (c->sending) {
        job->stdout_parked = true;
        client_update(job);
    }
}

static void stdout_eof(struct cgi_job *job, struct worker *w, struct post *post)
{
    if (!job->head_done) {
        if (job->timed_out)
            job_error(job, w, post, 504, "killed at cgi_timeout before its header section");
        else
            job_error(job, w, post, 502, job->hdr && job->hdr->len ? "incomplete header section"
                                                                   : "no output");
        return;
    }
    if (job->timed_out) {
        job_abort(job, post, "killed at cgi_timeout: response truncated");
        return;
    }
    struct http_exchange ex;
    ex_for_conn(&ex, job->conn, w);
    if (ex_stream_end(&ex) < 0) {
        job_abort(job, post, "the client went away");
        return;
    }
    job->body_done = true;
    client_update(job);
    job_maybe_finish(job, post);
}

static uint32_t on_stdout(struct cgi_job *job, struct worker *w, struct post *post)
{
    int fd = job->h[H_STDOUT].eh.fd;
    if (!job->conn || job->body_done) {
        handle_close(job, H_STDOUT); /* the response is over: what follows is not wanted */
        return 0;
    }
    char buf[CGI_READ];
    char *dst = buf;
    size_t want = sizeof(buf);
    if (!job->head_done) {
        if (!job->hdr && !(job->hdr = carry_get(CGI_HEAD_MAX))) {
            job_error(job, w, post, 503, "out of memory");
            return 0;
        }
        dst = job->hdr->data + job->hdr->len;
        want = job->hdr->cap - job->hdr->len;
        if (want > CGI_HEAD_MAX - job->hdr->len)
            want = CGI_HEAD_MAX - job->hdr->len;
    }
    ssize_t n = read(fd, dst, want);
    if (n < 0 && errno == EAGAIN)
        return EPOLLIN;
    if (n <= 0) {
        handle_close(job, H_STDOUT);
        stdout_eof(job, w, post);
        return 0;
    }
    if (job->head_done) {
        write_body(job, w, post, buf, (size_t)n);
    } else {
        job->hdr->len += (uint32_t)n;
        struct cgi_head h;
        const char *why = NULL;
        int r = cgi_parse_head(job->hdr->data, job->hdr->len, &h, &why);
        if (r == 0 && job->hdr->len >= CGI_HEAD_MAX)
            job_error(job, w, post, 502, "header section larger than 16 KiB");
        else if (r < 0)
            job_error(job, w, post, 502, why);
        else if (r == 1) {
            job->hdr->off = (uint32_t)h.head_len; /* what follows is the body's beginning */
            begin_response(job, w, post, &h);
            flush_pending_body(job, w, post);
        }
    }
    if (!job->conn || job->h[H_STDOUT].eh.fd < 0 || job->stdout_parked)
        return 0;
    return EPOLLIN;
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

static uint32_t on_stderr(struct cgi_job *job)
{
    char buf[4096];
    ssize_t n = read(job->h[H_STDERR].eh.fd, buf, sizeof(buf));
    if (n < 0 && errno == EAGAIN)
        return EPOLLIN;
    if (n <= 0) {
        log_stderr(job, "", 0, true);
        handle_close(job, H_STDERR);
        return 0;
    }
    log_stderr(job, buf, (size_t)n, false);
    return EPOLLIN;
}

static uint32_t on_pid(struct cgi_job *job)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    /* Whatever the script left running in its group goes with it (it holds our pipes). */
    kill_group(job);
    int rc = waitid(P_PIDFD, (id_t)job->h[H_PID].eh.fd, &si, WEXITED | WNOHANG);
    if (rc == 0 && si.si_pid == 0)
        return EPOLLIN; /* not exited after all */
    if (rc < 0 && errno != ECHILD)
        return EPOLLIN;
    job->pid = 0; /* reaped (ECHILD: by someone else, SIGCHLD ignored) */
    atomic_fetch_sub_explicit(&job->srv->cgi_running, 1, memory_order_relaxed);
    if (si.si_code == CLD_EXITED && si.si_status != 0)
        log_info("cgi %s: exited with status %d", job->name, si.si_status);
    else if (si.si_code != CLD_EXITED && !job->timed_out)
        log_info("cgi %s: killed by signal %d", job->name, si.si_status);
    handle_close(job, H_PID);
    job_maybe_cancel_timer(job);
    return 0;
}

static void job_on_event(struct event_handler *eh, uint32_t events, struct worker *w)
{
    struct cgi_handle *h = (struct cgi_handle *)eh;
    struct cgi_job *job = h->job;
    struct post post;
    post.c = NULL;
    (void)events;
    pthread_mutex_lock(&job->lock);
    h->armed = false; /* this event consumed the arming; its reference is ours now */
    uint32_t rearm = 0;
    switch (h->kind) {
    case H_CLIENT:
        rearm = on_client(job, w, &post);
        break;
    case H_STDIN:
        rearm = on_stdin(job, &post);
        break;
    case H_STDOUT:
        rearm = on_stdout(job, w, &post);
        break;
    case H_STDERR:
        rearm = on_stderr(job);
        break;
    case H_PID:
        rearm = on_pid(job);
        break;
    }
    if (rearm && h->eh.fd >= 0 && hs_rearm(job->hs, eh, rearm) == 0)
        h->armed = true; /* keeps the reference */
    else
        job->refs--;
    job_unlock(job, w, &post);
}

static void on_timeout(struct timer_entry *t, struct worker *w)
{
    struct cgi_job *job = (struct cgi_job *)((char *)t - offsetof(struct cgi_job, timer));
    struct post post;
    post.c = NULL;
    pthread_mutex_lock(&job->lock);
    job->timer_set = false;
    if (job->pid > 0 && !job->timed_out) {
        job->timed_out = true;
        atomic_fetch_add_explicit(&job->srv->cgi_timeouts, 1, memory_order_relaxed);
        log_warn("cgi %s: still running after cgi_timeout (%u ms): process group killed",
                 job->name, job->timeout);
        kill_group(job); /* stdout's EOF then ends the response (504 if nothing came yet) */
        /* Give the end of the response timeout_send to reach the client, then close. */
        if (timer_add(&job->srv->timers, &job->timer,
                      timer_now() + job->timeout_send) == 0) {
            job->timer_set = true;
            job_unlock(job, w, &post); /* the timer keeps its reference */
            return;
        }
    }
    if (job->conn) {
        job_abort(job, &post, "the client did not take the response within cgi_timeout");
    }
    job->refs--;
    job_unlock(job, w, &post);
}

/* ---- starting a script ------------------------------------------------------------------- */

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Start the script with stdin from `stdin_fd` (or a new pipe when stdin_fd < 0). Returns 0 or
 * an HTTP status. The job keeps the server's ends of the pipes and the pidfd. */
static int job_spawn(struct cgi_job *job, int stdin_fd)
{
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
    int status = 500;
    if ((stdin_fd < 0 && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0) {
        status = 503;
        goto fail;
    }
    if ((in[1] >= 0 && set_nonblock(in[1]) < 0) || set_nonblock(out[0]) < 0 ||
        set_nonblock(err[0]) < 0)
        goto fail;

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, stdin_fd >= 0 ? stdin_fd : in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    /* The script runs from the descriptor that was checked: no path is looked up again. fd 3
     * stays open (without close-on-exec) so an interpreter can open /proc/self/fd/3. */
    posix_spawn_file_actions_adddup2(&fa, job->script_fd, 3);
    posix_spawn_file_actions_addfchdir_np(&fa, job->dir_fd >= 0 ? job->dir_fd : job->cg->dir_fd);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);  /* the pool blocks SIGINT/SIGTERM; scripts don't */
    posix_spawnattr_setsigdefault(&at, &all); /* SIGPIPE is ignored here, not there */
    posix_spawnattr_setpgroup(&at, 0);       /* its own process group: killed as a whole */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    const char *base = strrchr(job->name, '/');
    char *argv[] = { (char *)(uintptr_t)(base ? base + 1 : job->name), NULL };
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/fd/3", &fa, &at, argv, job->env.vars);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        log_error("cgi %s: cannot start: %s", job->name, strerror(rc));
        status = rc == EAGAIN || rc == ENOMEM || rc == EMFILE || rc == ENFILE ? 503 : 500;
        goto fail;
    }
    job->pid = pid;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        log_error("cgi %s: pidfd_open: %s", job->name, strerror(errno)); /* reaped at free */
    job->h[H_PID].eh.fd = pidfd;
    job->h[H_STDIN].eh.fd = in[1];
    job->h[H_STDOUT].eh.fd = out[0];
    job->h[H_STDERR].eh.fd = err[0];
    job->stdin_open = in[1] >= 0;
    if (in[0] >= 0)
        close(in[0]);
    close(out[1]);
    close(err[1]);
    close(job->script_fd);
    job->script_fd = -1;
    if (job->dir_fd >= 0)
        close(job->dir_fd);
    job->dir_fd = -1;
    cgi_env_free(&job->env);
    atomic_fetch_add_explicit(&job->srv->cgi_started, 1, memory_order_relaxed);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    atomic_fetch_add_explicit(&job->srv->cgi_failed, 1, memory_order_relaxed);
    return status;
}

/* Give up a job whose script was never started: its reservation (cgi_max) and the exchange's
 * reference. */
static void job_drop_unstarted(struct cgi_job *job, struct worker *w)
{
    pthread_mutex_lock(&job->lock);
    atomic_fetch_sub_explicit(&job->srv->cgi_running, 1, memory_order_relaxed);
    job->refs--;
    job_unlock(job, w, NULL);
}

/* ---- resolving the script ------------------------------------------------------------------ */

struct script {
    int fd, dir_fd;         /* the script; its directory (-1: the instance's) */
    size_t len;             /* bytes of the relative path that name the script */
};

static int errno_status(int err)
{
    switch (err) {
    case EACCES:
    case EPERM:
        return 403;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        return 503;
    default:
        return 404;
    }
}

/* Find the script in rel[0..len): the shortest leading run of segments that is a file; the rest
 * is PATH_INFO. Directories are walked beneath the instance's directory one level at a time. */
static int find_script(struct cgi *cg, const char *rel, size_t len, struct script *out)
{
    char part[PATH_MAX];
    int dir = -1;
    size_t end = 0;
    if (len == 0 || len >= sizeof(part))
        return len ? 414 : 403;
    for (;;) {
        const char *slash = memchr(rel + end, '/', len - end);
        end = slash ? (size_t)(slash - rel) : len;
        memcpy(part, rel, end);
        part[end] = '\0';
        int fd = fc_open_beneath(cg->dir_fd, part, cg->lc->symlinks, 0);
        if (fd < 0) {
            if (dir >= 0)
                close(dir);
            return errno_status(-fd);
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
            close(fd);
            if (dir >= 0)
                close(dir);
            return 500;
        }
        if (S_ISDIR(st.st_mode) && end < len) {
            if (dir >= 0)
                close(dir);
            dir = fd;
            end++;
            continue;
        }
        if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
            close(fd); /* a directory, a FIFO, a file that is not executable: not a script */
            if (dir >= 0)
                close(dir);
            return 403;
        }
        out->fd = fd;
        out->dir_fd = dir;
        out->len = end;
        return 0;
    }
}

/* ---- the spawner ------------------------------------------------------------------------

 * posix_spawn returns only once the child has exec'ed (CLONE_VFORK). That is short, but on a
 * loaded machine it is milliseconds, and a burst of requests for scripts would keep every pool
 * thread busy starting them while other requests wait. So scripts are started by threads of
 * their own (two), outside the pool: the hand-over queues the job, the spawner starts the script,
 * arms its handles, and pokes the client handle, whose event brings the exchange back to
 * whichever pool thread leads. The spawner touches a job only under its lock, and only
 * before any of its handles but the client's could fire. */
#define SPAWNER_THREADS 2 /* two, so one slow exec does not hold up the next script */

struct cgi_spawner {
    pthread_t thread[SPAWNER_THREADS];
    unsigned nthreads;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    struct cgi_job *head, *tail;
    bool stop;
};

static void spawn_one(struct cgi_job *job)
{
    struct post post;
    post.c = NULL;
    pthread_mutex_lock(&job->lock);
    int st = job_spawn(job, job->stdin_src);
    job->cg = NULL; /* the instance may go with its runtime once the connection is given back */
    if (job->body_fd >= 0) {
        close(job->body_fd); /* the script has it as stdin now */
        job->body_fd = -1;
    }
    if (st == 0) {
        bool ok = job_arm(job, H_STDOUT, EPOLLIN) == 0 && job_arm(job, H_STDERR, EPOLLIN) == 0 &&
                  (job->h[H_PID].eh.fd < 0 || job_arm(job, H_PID, EPOLLIN) == 0);
        job->timer.fire = on_timeout;
        if (ok && timer_add(&job->srv->timers, &job->timer, timer_now() + job->timeout) == 0) {
            job->timer_set = true;
            job->refs++;
        } else {
            ok = false;
        }
        if (!ok) {
            kill_group(job); /* its stdout's EOF and its pidfd (or job_free) clean up */
            st = 503;
        }
    } else {
        atomic_fetch_sub_explicit(&job->srv->cgi_running, 1, memory_order_relaxed);
    }
    job->spawn_status = st;
    struct epoll_event e = { .events = EPOLLIN, .data.u32 = TAG_POKE };
    if (epoll_ctl(job->h[H_CLIENT].eh.fd, EPOLL_CTL_ADD, job->poke_fd, &e) < 0 ||
        job_arm(job, H_CLIENT, EPOLLIN) < 0) {
        kill_group(job);
        job_end(job, &post, HANDBACK_CLOSE); /* nothing could bring it back: close it here */
    }
    job_unlock(job, NULL, &post);
}

static void *spawner_main(void *arg)
{
    struct cgi_spawner *sp = arg;
    pthread_mutex_lock(&sp->lock);
    for (;;) {
        while (!sp->head && !sp->stop)
            pthread_cond_wait(&sp->cv, &sp->lock);
        struct cgi_job *job = sp->head;
        if (!job)
            break;
        sp->head = job->spawn_next;
        if (!sp->head)
            sp->tail = NULL;
        pthread_mutex_unlock(&sp->lock);
        spawn_one(job);
        pthread_mutex_lock(&sp->lock);
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

/* The server's spawner, started with the first CGI location. Returns 0 or an errno. */
static int spawner_start(struct server *srv)
{
    int rc = 0;
    pthread_mutex_lock(&srv->cgi_lock);
    if (!srv->cgi_spawner) {
        struct cgi_spawner *sp = calloc(1, sizeof(*sp));
        if (!sp) {
            rc = ENOMEM;
        } else {
            pthread_mutex_init(&sp->lock, NULL);
            pthread_cond_init(&sp->cv, NULL);
            /* Signals belong to the pool's signalfd: the spawner blocks them all. */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_BLOCK, &all, &old);
            for (unsigned i = 0; i < SPAWNER_THREADS && !rc; i++) {
                rc = pthread_create(&sp->thread[i], NULL, spawner_main, sp);
                if (!rc) {
                    pthread_setname_np(sp->thread[i], "lfhttpd-spawn");
                    sp->nthreads++;
                }
            }
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (sp->nthreads) {
                rc = 0; /* one is enough to work */
                srv->cgi_spawner = sp;
            } else {
                pthread_mutex_destroy(&sp->lock);
                pthread_cond_destroy(&sp->cv);
                free(sp);
            }
        }
    }
    pthread_mutex_unlock(&srv->cgi_lock);
    return rc;
}

/* ---- handler ops ------------------------------------------------------------------------------ */

static int send_busy(struct http_exchange *ex)
{
    char head[RESP_HEAD_MAX];
    char page[512];
    struct response r;
    resp_begin(&r, head, sizeof(head), 503, ex->date);
    static const char hdrs[] = "Retry-After: 1\r\nContent-Type: text/html; charset=utf-8\r\n";
    resp_add(&r, hdrs, sizeof(hdrs) - 1);
    size_t n = http_error_page(503, page, sizeof(page));
    return ex_send(ex, &r, page, n) < 0 ? -1 : 0;
}

static int cgi_handle(void *inst, struct http_exchange *ex)
{
    struct cgi *cg = inst;
    struct server *srv = cg->srv;
    const struct http_request *req = ex->req;
    if (!ex->path_plain && path_has_hidden_segment(ex->path, ex->path_len))
        return 404;
    const char *rel = ex->path + (cg->strip < ex->path_len ? cg->strip : ex->path_len);
    while (*rel == '/')
        rel++;
    size_t rel_len = (size_t)(ex->path + ex->path_len - rel);
    struct script sc;
    int st = find_script(cg, rel, rel_len, &sc);
    if (st)
        return st;

    const struct config *cfg = &ex->rt->cfg;
    if (atomic_fetch_add_explicit(&srv->cgi_running, 1, memory_order_relaxed) >= cfg->cgi_max) {
        atomic_fetch_sub_explicit(&srv->cgi_running, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&srv->cgi_rejected, 1, memory_order_relaxed);
        close(sc.fd);
        if (sc.dir_fd >= 0)
            close(sc.dir_fd);
        return send_busy(ex);
    }
    struct cgi_job *job = job_new(cg, ex->conn->hs);
    if (!job) {
        atomic_fetch_sub_explicit(&srv->cgi_running, 1, memory_order_relaxed);
        close(sc.fd);
        if (sc.dir_fd >= 0)
            close(sc.dir_fd);
        return 503;
    }
    job->script_fd = sc.fd;
    job->dir_fd = sc.dir_fd;
    job->timeout = cfg->cgi_timeout;
    job->timeout_send = cfg->timeout_send;
    job->redirects = ex->redirects;
    size_t name_len = (size_t)(rel + sc.len - ex->path);
    snprintf(job->name, sizeof(job->name), "%.*s", (int)name_len, ex->path);
    job->host_len = req->host.len < sizeof(job->host) ? req->host.len : 0;
    if (job->host_len)
        memcpy(job->host, req->host.ptr, job->host_len);

    /* The environment, while the request's bytes are still here. */
    size_t head_bytes = req->target.len + 64;
    for (unsigned i = 0; i < req->nheaders; i++)
        head_bytes += req->headers[i].name.len + req->headers[i].value.len + 8;
    char filename[PATH_MAX];
    size_t dl = strlen(cg->dir_abs);
    if (dl + 1 + sc.len >= sizeof(filename)) {
        job_drop_unstarted(job, ex->w);
        return 414;
    }
    memcpy(filename, cg->dir_abs, dl);
    filename[dl] = '/';
    memcpy(filename + dl + 1, rel, sc.len);
    filename[dl + 1 + sc.len] = '\0';
    struct cgi_env_info info = {
        .req = req,
        .script_name = { ex->path, name_len },
        .path_info = { rel + sc.len, rel_len - sc.len },
        .document_root = cg->docroot_abs,
        .script_filename = filename,
        .server_software = "lfhttpd/" LFHTTPD_VERSION,
        .peer = { .sin6_family = AF_INET6, .sin6_port = ex->conn->peer_port,
                  .sin6_addr = ex->client_addr }, /* the client's (trusted proxies) */
        .https = ex->conn->tp != &transport_plain,
        .remote_user = ex->remote_user,
        .pass = cfg->cgi_env_pass,
        .npass = cfg->ncgi_env_pass,
    };
    struct sockaddr_storage local;
    socklen_t ll = sizeof(local);
    if (getsockname(ex->conn->eh.fd, (struct sockaddr *)&local, &ll) == 0) {
        if (local.ss_family == AF_INET6) {
            memcpy(&info.local, &local, sizeof(info.local));
        } else {
            const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)&local;
            info.local.sin6_family = AF_INET6;
            info.local.sin6_port = in4->sin_port;
            info.local.sin6_addr.s6_addr[10] = info.local.sin6_addr.s6_addr[11] = 0xff;
            memcpy(&info.local.sin6_addr.s6_addr[12], &in4->sin_addr, 4);
        }
    }
    if (cgi_env_init(&job->env, head_bytes, req->nheaders) < 0 ||
        cgi_env_build(&job->env, &info) < 0) {
        job_drop_unstarted(job, ex->w);
        return 500;
    }

    if (req->has_body && req->chunked) {
        /* RFC 3875 wants CONTENT_LENGTH: collect a chunked body first (in memory, bounded by
         * max_body_size), then start the script with it as stdin. */
        job->body_fd = memfd_create("lfhttpd-cgi-body", MFD_CLOEXEC);
        if (job->body_fd < 0 || ex_defer(ex, job, EX_WANT_BODY) < 0) {
            job_drop_unstarted(job, ex->w);
            return 503;
        }
        return 0;
    }
    job->stdin_src = req->has_body ? -1 : cg->devnull; /* started after the hand-over */
    if (ex_defer(ex, job, EX_TAKE_CONN) < 0) {
        job_drop_unstarted(job, ex->w);
        return 503;
    }
    return 0;
}

/* A chunked body, before the script starts. */
static int cgi_body(void *inst, struct http_exchange *ex, const char *data, size_t len, bool last)
{
    (void)inst;
    struct cgi_job *job = ex->state;
    while (len) {
        ssize_t n = write(job->body_fd, data, len);
        if (n < 0) {
            job_drop_unstarted(job, ex->w);
            return ex_send_error(ex, 503) < 0 ? -1 : 0;
        }
        data += n;
        len -= (size_t)n;
        job->body_len += (uint64_t)n;
    }
    if (!last)
        return 0;
    char num[24];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)job->body_len);
    cgi_env_add_str(&job->env, "CONTENT_LENGTH", num);
    if (job->env.overflow || lseek(job->body_fd, 0, SEEK_SET) < 0) {
        job_drop_unstarted(job, ex->w);
        return ex_send_error(ex, 500) < 0 ? -1 : 0;
    }
    job->stdin_src = job->body_fd;
    ex_defer_flags(ex, EX_TAKE_CONN); /* the connection hands itself over next */
    return 0;
}

/* The hand-over: the job owns the connection from here until it gives it back. The script is
 * started by a spawner thread; its poke brings the exchange back to a pool thread. */
static int cgi_writable(void *inst, struct http_exchange *ex)
{
    (void)inst;
    struct cgi_job *job = ex->state;
    struct conn *c = ex->conn;
    pthread_mutex_lock(&job->lock);
    job->conn = c;
    int pfd = epoll_create1(EPOLL_CLOEXEC);
    job->h[H_CLIENT].eh.fd = pfd;
    job->poke_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event e = { .events = EPOLLRDHUP, .data.u32 = TAG_SOCKET };
    job->client_events = EPOLLRDHUP;
    bool ok = pfd >= 0 && job->poke_fd >= 0 && epoll_ctl(pfd, EPOLL_CTL_ADD, c->eh.fd, &e) == 0;
    if (!ok) {
        job->conn = NULL;
        pthread_mutex_unlock(&job->lock);
        log_error("cgi %s: %s", job->name, strerror(errno));
        job_drop_unstarted(job, ex->w);
        return -1; /* refused: the connection closes */
    }
    pthread_mutex_unlock(&job->lock);
    struct cgi_spawner *sp = job->srv->cgi_spawner;
    pthread_mutex_lock(&sp->lock);
    if (sp->tail)
        sp->tail->spawn_next = job;
    else
        sp->head = job;
    sp->tail = job;
    pthread_cond_signal(&sp->cv);
    pthread_mutex_unlock(&sp->lock);
    return 0;
}

/* The connection closed before the hand-over. */
static void cgi_abort(void *inst, struct http_exchange *ex)
{
    (void)inst;
    job_drop_unstarted(ex->state, ex->w);
}

static void *cgi_create(struct server *srv, const struct loc_conf *lc, char *err, size_t errlen)
{
    struct cgi *cg = calloc(1, sizeof(*cg));
    if (!cg) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cg->srv = srv;
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
    int rc = spawner_start(srv);
    if (rc) {
        snprintf(err, errlen, "cannot start the spawner threads: %s", strerror(rc));
        goto fail;
    }
    return cg;
fail:
    if (cg->own_dir_fd && cg->dir_fd >= 0)
        close(cg->dir_fd);
    if (cg->devnull >= 0)
        close(cg->devnull);
    free(cg);
    return NULL;
}

/* With its runtime (a reload, or exit). Jobs do not need the instance after the hand-over,
 * and before it their connection holds the runtime. */
static void cgi_destroy(void *inst)
{
    struct cgi *cg = inst;
    if (cg->own_dir_fd)
        close(cg->dir_fd);
    close(cg->devnull);
    free(cg);
}

void cgi_shutdown(struct server *srv)
{
    struct cgi_spawner *sp = srv->cgi_spawner;
    if (sp) {
        pthread_mutex_lock(&sp->lock);
        sp->stop = true;
        pthread_cond_broadcast(&sp->cv);
        pthread_mutex_unlock(&sp->lock);
        for (unsigned i = 0; i < sp->nthreads; i++)
            pthread_join(sp->thread[i], NULL);
        pthread_mutex_destroy(&sp->lock);
        pthread_cond_destroy(&sp->cv);
        free(sp);
        srv->cgi_spawner = NULL;
    }
    while (srv->cgi_jobs)
        job_free(srv->cgi_jobs); /* kills and reaps a script still running */
}

const struct handler_ops cgi_handler = {
    .name = "cgi",
    .create = cgi_create,
    .handle = cgi_handle,
    .body = cgi_body,
    .writable = cgi_writable,
    .abort = cgi_abort,
    .destroy = cgi_destroy,
};
