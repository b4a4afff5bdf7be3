/* spawner.c — the CGI handler's spawner: threads outside the pool that start scripts with
 * posix_spawn() (from the descriptor that was checked, in their own process group and
 * directory) and reap the ones that were killed, the one place a blocking wait is allowed;
 * and the process-wide counters. See cgi.c for the exchange's side, cgi_job.h for what they
 * share. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/threads.h"
#include "cgi/cgi_conf.h"
#include "cgi/cgi_job.h"
#include "conf/runtime.h"
#include "log/log.h"
#include "log/stats_writer.h"

void cgi_stats(void *process, void *generation, const struct runtime *rt,
               struct stats_writer *w)
{
    (void)generation;
    struct cgi_global *g = process;
    unsigned running = 0;
    unsigned long long started = 0, rejected = 0, timeouts = 0, failed = 0;
    if (g) {
        running = atomic_load_explicit(&g->running, memory_order_relaxed);
        started = atomic_load_explicit(&g->started, memory_order_relaxed);
        rejected = atomic_load_explicit(&g->rejected, memory_order_relaxed);
        timeouts = atomic_load_explicit(&g->timeouts, memory_order_relaxed);
        failed = atomic_load_explicit(&g->failed, memory_order_relaxed);
    }
    if (w->format == STATS_JSON) {
        stats_printf(w, "\"cgi\":{\"running\":%u,\"max\":%u,\"started\":%llu,"
                        "\"rejected\":%llu,\"timeouts\":%llu,\"failed\":%llu},",
                     running, cgi_top(&rt->cfg)->max, started, rejected, timeouts, failed);
        return;
    }
    stats_metric(w, "lfhttpd_cgi_running", "gauge", "CGI scripts running.", running);
    stats_metric(w, "lfhttpd_cgi_started_total", "counter", "CGI scripts started.", started);
    stats_metric(w, "lfhttpd_cgi_rejected_total", "counter",
                 "CGI requests refused at cgi_max (503).", rejected);
    stats_metric(w, "lfhttpd_cgi_timeouts_total", "counter", "CGI scripts killed at cgi_timeout.",
                 timeouts);
    stats_metric(w, "lfhttpd_cgi_failed_total", "counter", "CGI scripts that could not start.",
                 failed);
}

void cgi_reap_later(struct cgi_global *g, pid_t pid)
{
    struct reap *r = malloc(sizeof(*r));
    pthread_mutex_lock(&g->lock);
    if (r && !g->stop) {
        r->pid = pid;
        r->next = g->reaps;
        g->reaps = r;
        pthread_cond_signal(&g->cv);
        r = NULL;
        pid = 0;
    }
    pthread_mutex_unlock(&g->lock);
    free(r);
    if (pid > 0) {
        waitpid(pid, NULL, 0); /* killed: short */
        atomic_fetch_sub_explicit(&g->running, 1, memory_order_relaxed);
    }
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
}

/* posix_spawn the script with stdin from `stdin_fd` and the given pipe ends. 0 or an errno.
 * Every file action and attribute is checked: one left out (an allocation failed) would start
 * the script with the server's own stdin or stdout. */
static int spawn_script(struct cgi_job *job, int stdin_fd, int out_fd, int err_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(&at);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    /* The directory first: its descriptor may be the number a dup2 below replaces (3 is free
     * for a request's directory once a reload closed the first runtime's root). */
    rc = posix_spawn_file_actions_addfchdir_np(&fa, job->dir_fd);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    /* The script runs from the descriptor that was checked: no path is looked up again. fd 3
     * stays open (without close-on-exec) so an interpreter can open /proc/self/fd/3. */
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, job->script_fd, 3);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (!rc)
        rc = posix_spawnattr_setsigmask(&at, &none); /* the pool blocks SIGINT/SIGTERM */
    if (!rc)
        rc = posix_spawnattr_setsigdefault(&at, &all); /* SIGPIPE is ignored here, not there */
    if (!rc)
        rc = posix_spawnattr_setpgroup(&at, 0); /* its own process group: killed as a whole */
    if (!rc)
        rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                               POSIX_SPAWN_SETSIGDEF);
    const char *base = strrchr(job->name, '/');
    char *argv[] = { (char *)(uintptr_t)(base ? base + 1 : job->name), NULL };
    pid_t pid;
    if (!rc)
        rc = posix_spawn(&pid, "/proc/self/fd/3", &fa, &at, argv, job->env.vars);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc == 0)
        job->pid = pid;
    return rc;
}

/* Start the script and watch what it gives back (job->watch). Returns 0 or an HTTP
 * status. */
static int job_spawn(struct cgi_job *job)
{
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
    if ((job->stdin_src < 0 && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(err, O_CLOEXEC) < 0 || (in[1] >= 0 && set_nonblock(in[1]) < 0) ||
        set_nonblock(out[0]) < 0 || set_nonblock(err[0]) < 0) {
        close_pair(in);
        close_pair(out);
        close_pair(err);
        return 503;
    }
    int rc = spawn_script(job, job->stdin_src >= 0 ? job->stdin_src : in[0], out[1], err[1]);
    if (in[0] >= 0)
        close(in[0]);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
        log_error("cgi %s: cannot start: %s", job->name, strerror(rc));
        if (in[1] >= 0)
            close(in[1]);
        close(out[0]);
        close(err[0]);
        return rc == EAGAIN || rc == ENOMEM || rc == EMFILE || rc == ENFILE ? 503 : 500;
    }
    atomic_fetch_add_explicit(&job->g->started, 1, memory_order_relaxed);
    return job->watch(job, in[1], out[0], err[0]);
}

/* On a spawner thread, which holds the exchange: start the script, then give the exchange back
 * to the pool, where writable() goes on (or answers the failure). */
static void spawn_one(struct cgi_job *job)
{
    job->spawn_status = job_spawn(job);
    if (job->spawn_status) {
        atomic_fetch_add_explicit(&job->g->failed, 1, memory_order_relaxed);
        if (job->pid <= 0)
            atomic_fetch_sub_explicit(&job->g->running, 1, memory_order_relaxed);
    }
    close(job->script_fd);
    job->script_fd = -1;
    if (job->own_dir_fd)
        close(job->dir_fd);
    job->own_dir_fd = false;
    if (job->body_fd >= 0) {
        close(job->body_fd); /* the script has it as its stdin now */
        job->body_fd = -1;
    }
    cgi_env_free(&job->env);
    ex_release(job->ex);
}

static void *spawner_main(void *arg)
{
    struct cgi_global *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->head && !g->reaps && !g->stop)
            pthread_cond_wait(&g->cv, &g->lock);
        if (g->stop)
            break;
        if (g->reaps) {
            struct reap *r = g->reaps;
            g->reaps = r->next;
            pthread_mutex_unlock(&g->lock);
            waitpid(r->pid, NULL, 0); /* killed already: short */
            atomic_fetch_sub_explicit(&g->running, 1, memory_order_relaxed);
            free(r);
        } else {
            struct cgi_job *job = g->head;
            g->head = job->next;
            if (!g->head)
                g->tail = NULL;
            pthread_mutex_unlock(&g->lock);
            spawn_one(job);
        }
        pthread_mutex_lock(&g->lock);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

struct cgi_global *cgi_global_get(_Atomic(void *) *slot, char *err, size_t errlen)
{
    struct cgi_global *g = atomic_load(slot);
    if (g)
        return g;
    g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cv, NULL);
    int rc;
    g->nthreads = threads_start(g->thread, SPAWNER_THREADS, spawner_main, g, "lfhttpd-spawn", &rc);
    if (!g->nthreads) {
        snprintf(err, errlen, "cannot start the spawner threads: %s", strerror(rc));
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->cv);
        free(g);
        return NULL;
    }
    atomic_store(slot, g);
    return g;
}

/* stop(): after the pool, before the connections are freed (their exchanges may be queued
 * here: they are aborted then, without a spawner). */
void cgi_stop(void *state)
{
    struct cgi_global *g = state;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->lock);
    for (unsigned i = 0; i < g->nthreads; i++)
        pthread_join(g->thread[i], NULL);
    g->head = g->tail = NULL;
    while (g->reaps) {
        struct reap *r = g->reaps;
        g->reaps = r->next;
        waitpid(r->pid, NULL, 0);
        free(r);
    }
}

void cgi_release(void *state)
{
    struct cgi_global *g = state;
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cv);
    free(g);
}

/* ex_hold()'s hand-over, once the connection has let go: queue the job for a spawner. */
static void give_to_spawner(struct exchange *ex)
{
    struct cgi_job *job = ex->state;
    struct cgi_global *g = job->g;
    pthread_mutex_lock(&g->lock);
    job->next = NULL;
    if (g->tail)
        g->tail->next = job;
    else
        g->head = job;
    g->tail = job;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->lock);
}

void cgi_hand_over(struct cgi_job *job)
{
    ex_hold(job->ex, give_to_spawner);
}
