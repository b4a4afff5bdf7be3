/* envsubst.c — ${NAME} and ${NAME:-default} in configuration values; see envsubst.h. */
#include "conf/envsubst.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128 /* longer names are refused: no real variable is longer */

static bool name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* Append len bytes to out at *pos; false when they do not fit (with the NUL). */
static bool put(char *out, size_t cap, size_t *pos, const char *s, size_t len)
{
    if (len >= cap - *pos)
        return false;
    memcpy(out + *pos, s, len);
    *pos += len;
    return true;
}

/* One `${...}` at `p` (pointing at its `$`). Returns the text after it, or NULL (err set). */
static const char *one(const char *p, char *out, size_t cap, size_t *pos, bool *used, char *err,
                       size_t errcap)
{
    const char *name = p + 2, *q = name;
    while (name_char(*q))
        q++;
    size_t nlen = (size_t)(q - name);
    if (!nlen || !name_start(*name) || nlen > NAME_MAX_LEN || (*q != '}' && strncmp(q, ":-", 2))) {
        const char *end = strchr(p, '}');
        snprintf(err, errcap, "bad variable reference '%.*s' (write ${NAME} or ${NAME:-default})",
                 end ? (int)(end - p + 1) : (int)strlen(p), p);
        return NULL;
    }
    const char *def = NULL, *end = q;
    if (*q == ':') {
        def = q + 2;
        end = strchr(def, '}');
        if (!end) {
            snprintf(err, errcap, "unterminated '${%.*s'", (int)nlen, name);
            return NULL;
        }
    }
    char key[NAME_MAX_LEN + 1];
    memcpy(key, name, nlen);
    key[nlen] = '\0';
    const char *val = getenv(key);
    bool ok;
    if (def && (!val || !*val)) {
        ok = put(out, cap, pos, def, (size_t)(end - def));
    } else if (val) {
        ok = put(out, cap, pos, val, strlen(val));
        *used |= *val != '\0';
    } else {
        snprintf(err, errcap, "environment variable %s is not set (give a default: ${%s:-VALUE})",
                 key, key);
        return NULL;
    }
    if (!ok) {
        snprintf(err, errcap, "value too long once ${%s} is substituted", key);
        return NULL;
    }
    return end + 1;
}

int env_subst(const char *in, char *out, size_t cap, bool *used, char *err, size_t errcap)
{
    size_t pos = 0;
    *used = false;
    for (const char *p = in; *p;) {
        const char *dollar = strchr(p, '$');
        size_t lit = dollar ? (size_t)(dollar - p) : strlen(p);
        if (!put(out, cap, &pos, p, lit)) {
            snprintf(err, errcap, "value too long");
            return -1;
        }
        if (!dollar)
            break;
        if (!strncmp(dollar, "$${", 3)) { /* a literal ${ */
            if (!put(out, cap, &pos, "${", 2)) {
                snprintf(err, errcap, "value too long");
                return -1;
            }
            p = dollar + 3;
        } else if (dollar[1] == '{') {
            p = one(dollar, out, cap, &pos, used, err, errcap);
            if (!p)
                return -1;
        } else {
            if (!put(out, cap, &pos, "$", 1)) {
                snprintf(err, errcap, "value too long");
                return -1;
            }
            p = dollar + 1;
        }
    }
    out[pos] = '\0';
    return (int)pos;
}
