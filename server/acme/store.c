/* store.c — atomic files, the lock and PEM keys under the state directory (store.h). */
#include "acme/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"

#define LOCK_NAME "lock"
#define STATE_DIR_MODE 0700
#define LOCK_MODE 0600
#define KEY_MODE 0600

int store_init(const char *dir)
{
    struct stat st;

    if (mkdir(dir, STATE_DIR_MODE) < 0 && errno != EEXIST)
        return -errno;
    if (stat(dir, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int store_write(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
    char tmp[NAME_MAX + 1];
    int dfd, fd = -1, rc;

    if (snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid()) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    /* fchmod: the umask must not loosen or tighten what the caller asked for. */
    rc = fchmod(fd, mode) < 0 ? -errno : fd_write_all(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
        rc = -errno;
    /* The rename is durable only once the directory is. */
    if (rc == 0 && fsync(dfd) < 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
out:
    close(dfd);
    return rc;
}

int store_read(const char *dir, const char *name, char **data, size_t *len)
{
    char path[PATH_MAX];
    struct stat st;
    char *buf = NULL;
    ssize_t n;
    int fd, rc = 0;

    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (!S_ISREG(st.st_mode) || st.st_size > STORE_FILE_MAX)
        rc = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
    else if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
        rc = -ENOMEM;
    /* One read of the size fstat saw: a file that grows meanwhile is cut there, and what is
     * read is checked by its parser anyway. */
    if (rc == 0 && (n = pread(fd, buf, (size_t)st.st_size, 0)) >= 0) {
        buf[n] = '\0';
        *data = buf;
        *len = (size_t)n;
    } else if (rc == 0) {
        rc = -errno;
    }
    if (rc < 0)
        free(buf);
    close(fd);
    return rc;
}

int store_trylock(const char *dir)
{
    char path[PATH_MAX];
    int fd;

    if (snprintf(path, sizeof(path), "%s/%s", dir, LOCK_NAME) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, LOCK_MODE);
    if (fd < 0)
        return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

void store_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

EVP_PKEY *store_load_key(const char *dir, const char *name, int *err)
{
    EVP_PKEY *key = NULL;
    char *data = NULL;
    size_t len = 0;
    BIO *bio;

    *err = store_read(dir, name, &data, &len);
    if (*err < 0)
        return NULL;
    bio = BIO_new_mem_buf(data, (int)len);
    if (bio)
        key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    *err = key ? 0 : -EINVAL;
    ERR_clear_error();
    BIO_free(bio);
    OPENSSL_cleanse(data, len);
    free(data);
    return key;
}

int store_save_key(const char *dir, const char *name, EVP_PKEY *key)
{
    /* secure memory: the key's PEM text is cleansed when the BIO is freed */
    BIO *bio = BIO_new(BIO_s_secmem());
    char *pem;
    long n;
    int rc = -ENOMEM;

    if (bio && PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
        && (n = BIO_get_mem_data(bio, &pem)) > 0)
        rc = store_write(dir, name, pem, (size_t)n, KEY_MODE);
    ERR_clear_error();
    BIO_free(bio);
    return rc;
}
