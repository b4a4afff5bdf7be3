/* auth_basic.c — see auth_basic.h. */
#include "exchange/auth_basic.h"

#include <crypt.h>
#include <stdatomic.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "exchange/exchange.h"
#include "conf/site.h"
#include "log/diag.h"

#define AUTH_CACHE_SLOTS 8
#define AUTH_CACHE_SECONDS 60

static bool supported_hash(const char *h)
{
    return !strncmp(h, "$2a$", 4) || !strncmp(h, "$2b$", 4) || !strncmp(h, "$2y$", 4) ||
           !strncmp(h, "$5$", 3) || !strncmp(h, "$6$", 3) || !strncmp(h, "$y$", 3);
}

void auth_free(struct auth_users *u)
{
    if (!u)
        return;
    for (unsigned i = 0; i < u->n; i++) {
        free(u->v[i].name);
        free(u->v[i].hash);
    }
    free(u->v);
    free(u);
}

static _Atomic uint64_t next_users_id = 1;

struct auth_users *auth_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        diag("%s: cannot open: %m\n", path);
        return NULL;
    }
    struct auth_users *u = calloc(1, sizeof(*u));
    char line[1024];
    unsigned lineno = 0;
    bool ok = u != NULL;
    while (ok && fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        char *colon = strchr(line, ':');
        if (!colon || colon == line) {
            diag("%s:%u: expected USER:HASH\n", path, lineno);
            ok = false;
            break;
        }
        *colon = '\0';
        const char *hash = colon + 1;
        if (!supported_hash(hash)) {
            diag("%s:%u: user '%s': unsupported or plain-text password hash (use bcrypt, "
                 "e.g. htpasswd -B, or SHA-crypt)\n",
                 path, lineno, line);
            ok = false;
            break;
        }
        struct auth_user *nv = realloc(u->v, sizeof(*nv) * (u->n + 1));
        if (!nv) {
            ok = false;
            break;
        }
        u->v = nv;
        u->v[u->n].name = strdup(line);
        u->v[u->n].hash = strdup(hash);
        u->n++;
    }
    fclose(f);
    if (ok && u->n == 0) {
        diag("%s: no users\n", path);
        ok = false;
    }
    if (!ok) {
        auth_free(u);
        return NULL;
    }
    u->id = atomic_fetch_add(&next_users_id, 1);
    return u;
}

/* This thread's recently verified credentials. */
struct auth_cache_slot {
    uint64_t users_id;        /* which loaded list (never a pointer: memory gets reused) */
    unsigned char digest[SHA256_DIGEST_LENGTH];
    time_t expires;
    unsigned user;
};
static _Thread_local struct auth_cache_slot auth_cache[AUTH_CACHE_SLOTS];
static _Thread_local unsigned auth_cache_next;

static void set_user(const char *name, char *buf, size_t cap, struct strview *user)
{
    size_t n = strlen(name);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, name, n);
    buf[n] = '\0';
    *user = (struct strview){ buf, n };
}

bool auth_check(const struct auth_users *users, struct strview h, char *user_buf, size_t cap,
                struct strview *user)
{
    if (!h.ptr || h.len < 7 || strncasecmp(h.ptr, "basic ", 6))
        return false;
    struct strview b64 = sv_trim((struct strview){ h.ptr + 6, h.len - 6 });
    if (b64.len == 0 || b64.len > 1024 || b64.len % 4)
        return false;

    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)b64.ptr, b64.len, digest);
    time_t now = time(NULL);
    for (unsigned i = 0; i < AUTH_CACHE_SLOTS; i++) {
        struct auth_cache_slot *s = &auth_cache[i];
        if (s->users_id == users->id && s->expires > now && s->user < users->n &&
            !CRYPTO_memcmp(s->digest, digest, sizeof(digest))) {
            set_user(users->v[s->user].name, user_buf, cap, user);
            return true;
        }
    }

    unsigned char dec[800];
    int n = EVP_DecodeBlock(dec, (const unsigned char *)b64.ptr, (int)b64.len);
    if (n < 0)
        return false;
    for (size_t i = b64.len; i > 0 && b64.ptr[i - 1] == '='; i--)
        n--; /* EVP_DecodeBlock counts the padding as zero bytes */
    dec[n] = '\0';
    char *colon = memchr(dec, ':', (size_t)n);
    if (!colon || memchr(dec, '\0', (size_t)n))
        return false;
    *colon = '\0';
    const char *name = (const char *)dec, *password = colon + 1;

    /* Same work whether or not the user exists, so timing does not reveal user names. */
    const struct auth_user *u = NULL;
    for (unsigned i = 0; i < users->n; i++)
        if (!strcmp(users->v[i].name, name))
            u = &users->v[i];
    const char *hash = u ? u->hash : users->v[0].hash; /* same algorithm and cost */
    struct crypt_data cd;
    memset(&cd, 0, sizeof(cd));
    const char *out = crypt_r(password, hash, &cd);
    OPENSSL_cleanse(dec, sizeof(dec));
    bool ok = u && out && out[0] != '*' && strlen(out) == strlen(hash) &&
              CRYPTO_memcmp(out, hash, strlen(hash)) == 0;
    OPENSSL_cleanse(&cd, sizeof(cd));
    if (!ok)
        return false;
    struct auth_cache_slot *s = &auth_cache[auth_cache_next++ % AUTH_CACHE_SLOTS];
    s->users_id = users->id;
    memcpy(s->digest, digest, sizeof(digest));
    s->expires = now + AUTH_CACHE_SECONDS;
    s->user = (unsigned)(u - users->v);
    set_user(u->name, user_buf, cap, user);
    return true;
}
