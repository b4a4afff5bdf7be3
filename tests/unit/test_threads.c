/* test_threads.c — unit tests for server/base/threads.c: helper threads start named, with every
 * signal blocked, and the caller's own mask is left as it was. */
#include "base/threads.h"
#include "test.h"

#include <signal.h>
#include <string.h>

#define N 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int all_blocked = 1, named = 1, ran;
static char name_wanted[] = "lfhttpd-test";
static pthread_barrier_t started; /* the name is set once pthread_create has returned */

static void *main_of(void *arg)
{
    pthread_barrier_wait(&started);
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    pthread_mutex_lock(&lock);
    ran++;
    if (!sigismember(&mask, SIGTERM) || !sigismember(&mask, SIGINT) ||
        !sigismember(&mask, SIGHUP) || !sigismember(&mask, SIGUSR1))
        all_blocked = 0;
    if (strcmp(name, arg))
        named = 0;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    sigset_t before, after;
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    pthread_t t[N];
    pthread_barrier_init(&started, NULL, N + 1);
    int err = -1;
    unsigned n = threads_start(t, N, main_of, name_wanted, name_wanted, &err);
    ok(n == N && err == 0, "all %d started, no error", N);
    pthread_barrier_wait(&started);
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    ok(ran == N, "each ran");
    ok(all_blocked, "with the signals blocked");
    ok(named, "and named");
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    ok(sigismember(&after, SIGTERM) == sigismember(&before, SIGTERM) &&
           sigismember(&after, SIGUSR1) == sigismember(&before, SIGUSR1),
       "the caller's mask is as it was");
    err = -1;
    ok(threads_start(t, 0, main_of, NULL, "x", &err) == 0 && err == 0, "none asked, none made");
    return done_testing();
}
