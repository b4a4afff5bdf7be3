/* metrics.h — the labelled request counters and the latency histogram of /metrics.
 *
 * Every pool thread owns one table (`struct mx_table`) and is its only writer: a count is a
 * relaxed load and a relaxed store of the thread's own slot, no shared atomic and no lock on the
 * request path. /metrics sums the tables when it is scraped (mx_sum), as the pool's per-thread
 * stats are (thread_pool.h). A thread outside the pool (the main thread closing connections at
 * exit) counts into one shared table with atomic adds.
 *
 * The labels are bounded by construction:
 *   method  the nine methods of RFC 9110 and PATCH, plus OTHER (MX_NMETHODS);
 *   code    a fixed table of the statuses the server and its CGI scripts send, plus one
 *           "Nxx" bucket per class for any other (MX_NCODES);
 *   vhost   the first name of each configured `server` block, interned process-wide the
 *           first time a generation names it (reloads keep the slot, so counters never
 *           reset); at most MX_VHOSTS names, later ones count as `other`; the top-level site
 *           (and a `server` block without a name) is `default`; admin_listen's requests are
 *           `admin`.
 * Memory: MX_NVHOSTS x MX_NMETHODS x MX_NCODES counters of 8 bytes per thread, laid out vhost
 * first, so only the pages of the vhosts a thread served become resident: sizeof(struct
 * mx_table) is 236,520 bytes of address space per thread (calloc'ed once, at its start). */
#ifndef LF_METRICS_H
#define LF_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MX_VHOSTS 64                              /* interned server names */
enum { MX_VH_DEFAULT = MX_VHOSTS, MX_VH_OTHER, MX_VH_ADMIN, MX_NVHOSTS };
#define MX_NMETHODS 10                            /* 9 known + OTHER */
#define MX_NCODES 44                              /* 38 statuses, 5 classes, other */
#define MX_NBUCKETS 15                            /* 14 bounds + +Inf */
#define MX_NAME_MAX 256

struct mx_table {
    _Atomic uint64_t requests[MX_NVHOSTS][MX_NMETHODS][MX_NCODES];
    _Atomic uint64_t bytes[MX_NVHOSTS];           /* response body bytes */
    _Atomic uint64_t duration[MX_NBUCKETS];       /* per bucket, not cumulative */
    _Atomic uint64_t duration_ns;                 /* their sum */
    _Atomic uint64_t tls_handshakes;              /* completed handshakes */
    _Atomic uint64_t tls_resumed;                 /* of which resumed a session */
};

/* The sums of every table (plain numbers), for the exposition. */
struct mx_totals {
    uint64_t requests[MX_NVHOSTS][MX_NMETHODS][MX_NCODES];
    uint64_t bytes[MX_NVHOSTS];
    uint64_t duration[MX_NBUCKETS];
    uint64_t duration_ns;
    uint64_t tls_handshakes, tls_resumed;
};

/* Label values, for the exposition. */
extern const char *const mx_method_names[MX_NMETHODS];
extern const char *const mx_code_names[];
extern const double mx_bucket_bounds[MX_NBUCKETS - 1]; /* seconds, the last bucket is +Inf */
/* The label of vhost slot `v` (an interned name, default, other, admin); NULL: not used. */
const char *mx_vhost_name(unsigned v);

/* A pool thread's table, attached at the thread's start (thread_pool.c); 0 or -ENOMEM. */
int mx_thread_attach(void);
/* Free every table (after the pool's threads have left). */
void mx_free_all(void);

/* The slot of a server's first name (interned; MX_VH_OTHER once the table is full); called
 * only while a generation is built. */
uint8_t mx_vhost_slot(const char *name);
/* The slot of an llhttp method (llhttp_method_t). */
uint8_t mx_method_slot(int method);
/* Monotonic nanoseconds, the histogram's clock. */
uint64_t mx_now_ns(void);
/* An exchange's start without a clock read per request: the pool's dispatch() notes when the
 * thread got its batch of events (mx_event_begin), and an exchange starts at the event that
 * completed its head — so its duration includes the wait behind the events before it in the
 * batch, which its client waited too. Outside the pool: now. */
void mx_event_begin(void);
uint64_t mx_event_ns(void);

/* Count one exchange: the one place is log_request() in exchange.c. */
void mx_count(uint8_t vhost, uint8_t method, int status, uint64_t bytes, uint64_t ns);
/* Count one completed TLS handshake (transport_tls.c). */
void mx_count_tls(bool resumed);

/* Sum every table into `t` (zeroed first). */
void mx_sum(struct mx_totals *t);

#endif
