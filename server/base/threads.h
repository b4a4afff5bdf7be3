/* threads.h — helper threads beside the pool: CGI's spawners, the compressor threads. */
#ifndef LF_THREADS_H
#define LF_THREADS_H

#include <pthread.h>

/* Start up to n threads running fn(arg), each named `name`, with every signal blocked: signals
 * belong to the pool's signalfd, and one delivered to a helper thread instead would never be
 * read there. Stops at the first failure. Returns how many started (t[0..return value) are
 * theirs); *err is 0 or the error that stopped it. */
unsigned threads_start(pthread_t *t, unsigned n, void *(*fn)(void *), void *arg, const char *name,
                       int *err);

#endif
