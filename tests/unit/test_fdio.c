/* Unit tests for fdio.c: fd_write_all writes every byte or says why not. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/fdio.h"
#include "test.h"

int main(void)
{
    int fd = memfd_create("test-fdio", 0);
    ok(fd >= 0, "a memory file");
    static char big[1 << 20];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    is_int(fd_write_all(fd, big, sizeof(big)), 0, "a megabyte written");
    is_int(fd_write_all(fd, "", 0), 0, "nothing to write is no error");
    static char back[sizeof(big)];
    ok(pread(fd, back, sizeof(back), 0) == (ssize_t)sizeof(back) &&
           memcmp(back, big, sizeof(big)) == 0,
       "every byte came back in order");
    close(fd);
    is_int(fd_write_all(fd, "x", 1), -EBADF, "a closed descriptor: -EBADF");
    int p[2];
    ok(pipe(p) == 0, "a pipe");
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    is_int(fd_write_all(p[1], "x", 1), -EPIPE, "no reader: -EPIPE");
    close(p[1]);
    return done_testing();
}
