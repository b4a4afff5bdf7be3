/* auth_basic.h — HTTP Basic authentication (RFC 7617) from an htpasswd-style file.
 *
 * Only modern crypt(3) hashes are accepted — bcrypt ($2a$, $2b$, $2y$), SHA-crypt ($5$, $6$)
 * and yescrypt ($y$) — verified with libcrypt's crypt_r() and compared in constant time;
 * plain-text, DES and MD5 entries are refused when the file is loaded. Basic credentials are
 * only base64, so they belong behind TLS.
 *
 * A bcrypt verification costs tens of milliseconds of CPU on the processing thread, so each
 * thread remembers the last few credentials it verified (a hash of the header, never the
 * password) for AUTH_CACHE_SECONDS; a failed attempt is never cached. */
#ifndef LF_AUTH_BASIC_H
#define LF_AUTH_BASIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strview.h"

struct auth_user {
    char *name;
    char *hash;
};

struct auth_users {
    struct auth_user *v;
    unsigned n;
    uint64_t id;   /* unique per load: cached verifications never cross reloads */
};

/* Load a user file. Prints "FILE:LINE: reason" and returns NULL on error. */
struct auth_users *auth_load(const char *path);
void auth_free(struct auth_users *u);

/* Check an Authorization header value. Returns true when it names a user of `users` with the
 * right password; the user name is then copied into user_buf (cap bytes), and *user views it.
 * (The 401 challenge is the exchange's: exchange.c.) */
bool auth_check(const struct auth_users *users, struct strview authorization, char *user_buf,
                size_t cap, struct strview *user);

#endif
