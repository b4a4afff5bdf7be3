/* threads.c — see threads.h. */
#include "base/threads.h"

#include <signal.h>

unsigned threads_start(pthread_t *t, unsigned n, void *(*fn)(void *), void *arg, const char *name,
                       int *err)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* inherited by the threads made below */
    unsigned started = 0;
    int rc = 0;
    while (started < n && !(rc = pthread_create(&t[started], NULL, fn, arg)))
        pthread_setname_np(t[started++], name);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    *err = rc;
    return started;
}
