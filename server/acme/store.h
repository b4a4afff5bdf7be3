/* store.h — the ACME client's state on disk: the account key, each certificate's chain and key,
 * under one state directory.
 *
 * Every file is replaced atomically (a temporary file written in full, fsync'd, renamed over
 * the old one, the directory fsync'd), so a crash leaves the old version or the new one, never
 * a mix. A lock file (flock) serializes processes that share the directory: the one that
 * holds it may order and write; the others wait, then find its result. */
#ifndef LF_ACME_STORE_H
#define LF_ACME_STORE_H

#include <openssl/types.h>
#include <stddef.h>
#include <sys/types.h>

/* The largest file the store reads: a chain of a few certificates, or a key, is far smaller;
 * anything larger is not one of ours. */
#define STORE_FILE_MAX (256 * 1024)

/* Create the directory (0700) when missing. 0, or -errno. */
int store_init(const char *dir);
/* Replace dir/name with data[0..len), mode `mode` (0600 for keys). 0, or -errno. */
int store_write(const char *dir, const char *name, const void *data, size_t len, mode_t mode);
/* Read dir/name into a malloc'd, NUL-terminated buffer (its length in *len). -ENOENT when
 * missing, -EFBIG beyond STORE_FILE_MAX, other -errno. */
int store_read(const char *dir, const char *name, char **data, size_t *len);

/* Take dir's lock file without waiting: the lock's descriptor, -EWOULDBLOCK when another
 * process holds it, or another -errno. Released by store_unlock(). */
int store_trylock(const char *dir);
void store_unlock(int fd);

/* A private key (PEM) from dir/name: NULL with *err = -ENOENT when missing, -EINVAL when the
 * file does not hold a key (corrupt), or another -errno. */
EVP_PKEY *store_load_key(const char *dir, const char *name, int *err);
/* Write key as PEM (PKCS#8), mode 0600. 0, or -errno. */
int store_save_key(const char *dir, const char *name, EVP_PKEY *key);

#endif
