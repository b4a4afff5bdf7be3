/* dcz.c — lfhttpd's dcz encoder (handlers/compress/dictionary.c) on two files, for
 * bench/dictionary.py: `dcz DICTIONARY INPUT OUTPUT [LEVEL]` writes the dcz body of INPUT against
 * DICTIONARY and prints "bytes cpu_seconds window_log job_memory". Built by the script against
 * build/liblfhttpd.a. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "compress/dictionary.h"

/* The whole file, malloc'ed; NULL on failure. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
            fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = n >= 0 ? (size_t)n : 0;
    }
    fclose(f);
    return buf;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: dcz DICTIONARY INPUT OUTPUT [LEVEL]\n");
        return 2;
    }
    int level = argc > 4 ? atoi(argv[4]) : DCZ_LEVEL_DEFAULT;
    size_t dn = 0, n = 0;
    char *dict = slurp(argv[1], &dn), *in = slurp(argv[2], &n);
    if (!dict || !in) {
        fprintf(stderr, "dcz: cannot read %s\n", !dict ? argv[1] : argv[2]);
        return 1;
    }
    unsigned char hash[DICT_HASH_LEN];
    unsigned int hl = 0;
    size_t cap = dcz_bound(n);
    unsigned char *out = malloc(cap);
    double t0 = cpu_seconds();
    EVP_Digest(dict, dn, hash, &hl, EVP_sha256(), NULL); /* part of the job's cost */
    ssize_t zn = out ? dcz_encode(dict, dn, hash, in, n, out, cap, level) : -ENOMEM;
    double t = cpu_seconds() - t0;
    if (zn < 0) {
        fprintf(stderr, "dcz: %s\n", strerror((int)-zn));
        return 1;
    }
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(out, 1, (size_t)zn, f) != (size_t)zn || fclose(f) != 0) {
        fprintf(stderr, "dcz: cannot write %s\n", argv[3]);
        return 1;
    }
    printf("%zd %.6f %d %zu\n", zn, t, dcz_window_log(dn, n), dcz_job_memory(dn, n, level, false));
    free(out);
    free(dict);
    free(in);
    return 0;
}
