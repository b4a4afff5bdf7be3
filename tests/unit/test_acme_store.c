/* test_acme_store.c — unit tests for server/acme/store.c: atomic replacement, modes, bounded
 * reads, the lock, and keys that are missing or corrupt. */
#include "acme/certs.h"
#include "acme/store.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/test_acme_store.XXXXXX";

static void write_file(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int mode_of(const char *name)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* Files in the directory whose name contains `part`. */
static int count(const char *part)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, part) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void files(void)
{
    char *data = NULL;
    size_t len = 0;

    is_int(store_write(dir, "f", "one", 3, 0644), 0, "write");
    is_int(store_read(dir, "f", &data, &len), 0, "read");
    is_mem(data, len, "one", "what was written");
    free(data);
    is_int(store_write(dir, "f", "second", 6, 0600), 0, "replace");
    is_int(store_read(dir, "f", &data, &len), 0, "read again");
    is_mem(data, len, "second", "the new content, whole");
    free(data);
    is_int(mode_of("f"), 0600, "the mode asked for, whatever the umask and the old file");
    is_int(count(".tmp"), 0, "no temporary file left");
    /* a crash between write and rename leaves a temporary file: it changes nothing */
    write_file(".f.12345.tmp", "half");
    is_int(store_read(dir, "f", &data, &len), 0, "read beside a stale temporary file");
    is_mem(data, len, "second", "still the last complete version");
    free(data);
    is_int(store_read(dir, "missing", &data, &len), -ENOENT, "missing: -ENOENT");
    data = calloc(1, STORE_FILE_MAX + 1);
    is_int(store_write(dir, "big", data, STORE_FILE_MAX + 1, 0600), 0, "a large file");
    free(data);
    data = NULL;
    is_int(store_read(dir, "big", &data, &len), -EFBIG, "read beyond the bound: -EFBIG");
    is_int(store_write("/nonexistent/dir", "f", "x", 1, 0600), -ENOENT, "no directory");
}

static void lock(void)
{
    int a = store_trylock(dir), b;

    ok(a >= 0, "lock taken");
    /* flock belongs to the open file: a second open conflicts, as another process would */
    b = store_trylock(dir);
    is_int(b, -EWOULDBLOCK, "held: -EWOULDBLOCK, no waiting");
    store_unlock(a);
    b = store_trylock(dir);
    ok(b >= 0, "free again once released");
    store_unlock(b);
    is_int(mode_of("lock"), 0600, "the lock file is private");
}

static void keys(void)
{
    EVP_PKEY *k = certs_key_new(), *back;
    int err = 1;

    is_int(store_save_key(dir, "k.key", k), 0, "save a key");
    is_int(mode_of("k.key"), 0600, "0600");
    back = store_load_key(dir, "k.key", &err);
    ok(back && err == 0 && EVP_PKEY_eq(k, back) == 1, "load: the same key");
    EVP_PKEY_free(back);
    back = store_load_key(dir, "none.key", &err);
    ok(!back && err == -ENOENT, "missing: -ENOENT");
    write_file("bad.key", "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\n");
    back = store_load_key(dir, "bad.key", &err);
    ok(!back && err == -EINVAL, "truncated PEM: -EINVAL");
    write_file("bad.key", "");
    back = store_load_key(dir, "bad.key", &err);
    ok(!back && err == -EINVAL, "empty: -EINVAL");
    EVP_PKEY_free(k);
}

int main(void)
{
    char cmd[64];

    if (!mkdtemp(dir))
        return 1;
    is_int(store_init(dir), 0, "init an existing directory");
    files();
    lock();
    keys();
    snprintf(cmd, sizeof(cmd), "%s/sub", dir);
    is_int(store_init(cmd), 0, "init creates");
    is_int(mode_of("sub"), 0700, "0700");
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return done_testing();
}
