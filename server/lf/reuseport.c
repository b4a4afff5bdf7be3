/* reuseport.c — the reuseport strategy: the paper's "Leader/Followers with multiple handle
 * sets".
 *
 * One handle set per thread, each with its own SO_REUSEPORT listening sockets (the server opens
 * one per set); each thread is the only member of its group, so it leads its own set and never
 * hands off. The kernel spreads connections over the listeners; a connection stays with its
 * thread for life. The pool's part is only that grouping: the loop is the textbook's. */
#include "lf/tp_variant.h"

const struct tp_variant tp_reuseport = {
    .groups = TP_GROUP_PER_THREAD,
    .every_thread = true, /* a set whose thread did not start would have nobody to lead it */
    .loop = lf_loop,
};
