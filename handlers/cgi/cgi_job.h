/* cgi_job.h — what the CGI handler's two sides share: the exchange's (cgi.c: a script's
 * descriptors, the client's body, the script's output) and the spawner's (spawner.c: threads
 * that start scripts and reap killed ones, the process-wide counters). Not an interface for
 * other handlers. */
#ifndef LF_CGI_JOB_H
#define LF_CGI_JOB_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgi/cgi_env.h"
#include "exchange/exchange.h"

struct carry;
struct loc_conf;
struct runtime;
struct stats_writer;

#define CGI_READ EX_STREAM_MAX        /* stdout bytes per read: one stream write */
#define CGI_HEAD_MAX (16 * 1024)      /* the script's header section */
#define ERRLINE_MAX 1000              /* stderr line length in the log */
#define SPAWNER_THREADS 2             /* two: one slow exec does not hold up the next script */

struct reap {
    pid_t pid;
    struct reap *next;
};

struct cgi_job;

/* The CGI handler type's state in the server (its slot: handler.h), made with the first CGI
 * location; a job outlives the configuration generation it started under. */
struct cgi_global {
    _Atomic unsigned running;
    _Atomic uint64_t started, rejected, timeouts, failed;
    pthread_mutex_t lock;           /* the queues and `stop` */
    pthread_cond_t cv;
    struct cgi_job *head, *tail;    /* scripts to start */
    struct reap *reaps;             /* killed scripts to reap */
    bool stop;
    pthread_t thread[SPAWNER_THREADS];
    unsigned nthreads;
};

/* An instance: one CGI location. */
struct cgi {
    struct cgi_global *g;
    const struct loc_conf *lc;
    int dir_fd;                     /* scripts are resolved beneath this directory */
    bool own_dir_fd;
    size_t strip;                   /* `handler cgi DIR`: URL prefix mapped to DIR */
    char dir_abs[PATH_MAX];
    char docroot_abs[PATH_MAX];
    int devnull;                    /* stdin of requests without a body */
};

enum { W_STDIN = 0, W_STDOUT, W_STDERR, W_PID, W_TIMER, W_COUNT };

/* One script run: the state of its deferred exchange. */
struct cgi_job {
    struct cgi_global *g;
    struct exchange *ex;
    struct ex_watch w[W_COUNT];     /* fd -1 once closed */
    pid_t pid;                      /* > 0 until reaped */
    unsigned timeout, timeout_send; /* cgi_timeout and timeout_send of the request's runtime */
    struct cgi_job *next;           /* the spawner's queue */

    /* Until the script starts (on a spawner thread). */
    /* Once it has started, on the spawner: watch its pipe ends (`in` -1 when stdin is not a
     * pipe), its exit and its time limit through the exchange. The exchange's side sets it
     * (cgi.c: cgi_job_watch), so that the spawner needs nothing of that side. Returns 0, or
     * 503 (then nothing is left watched and the script is reaped). */
    int (*watch)(struct cgi_job *job, int in, int out, int err);
    struct cgi_env env;
    int script_fd, dir_fd;          /* dir_fd: of the script (the instance's when it is theirs) */
    bool own_dir_fd;
    int body_fd;                    /* a chunked body collected in memory (memfd), or -1 */
    uint64_t body_len;
    int stdin_src;                  /* the script's stdin: an fd (borrowed), or -1 for a pipe */
    int spawn_status;               /* 0, or the HTTP status for a script that did not start */
    bool begun;                     /* back in the pool after the spawn */

    /* While it runs. */
    bool body_to_stdin;             /* body bytes remain for the script's stdin */
    struct carry *stdin_buf;        /* body bytes the pipe has not taken yet */
    struct carry *hdr;              /* the script's header section, until complete */
    bool head_done;                 /* the response head is sent (or replaced) */
    bool body_done;                 /* the response's last byte is queued */
    bool stdout_paused;             /* stdout waits until the client drained the socket */
    bool timed_out;
    char name[160];                 /* the script's URL path, for the log */
    char errline[ERRLINE_MAX];
    size_t errlen;
};

/* ---- spawner.c ---------------------------------------------------------------------------- */

/* The type's state: made with the first CGI location (its spawner threads). NULL with a
 * reason in err. */
struct cgi_global *cgi_global_get(_Atomic(void *) *slot, char *err, size_t errlen);
/* stop() and release() (handler.h). */
void cgi_stop(void *state);
void cgi_release(void *state);
/* stats() (handler.h): the process-wide counters. */
void cgi_stats(void *process, void *generation, const struct runtime *rt,
               struct stats_writer *w);
/* The exchange leaves the pool for a spawner, which starts the script and gives it back
 * (ex_release): writable() goes on, or answers job->spawn_status. */
void cgi_hand_over(struct cgi_job *job);
/* Hand a killed script to the spawner for its reaping (a blocking wait), or reap it here when
 * there is no spawner any more (at exit). */
void cgi_reap_later(struct cgi_global *g, pid_t pid);

#endif
