/* mime.c — file extension to Content-Type mapping.
 *
 * A table is a sorted array of (lower-case extension, Content-Type) pairs searched by binary
 * search. Loading merges the built-in table with the entries of a mime.types file (file entries
 * win, later lines win over earlier ones) and sorts the result once.
 */
#include "static/mime.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_strict.h"

#define MIME_UTF8 "; charset=utf-8"

struct mime_entry {
    const char *ext;  /* lower case, no '.' */
    const char *type; /* full Content-Type value */
};

struct mime_table {
    struct mime_entry *entries; /* sorted by ext (strcmp), unique */
    size_t n;
    char **owned; /* strings allocated while loading */
    size_t nowned, owned_cap;
};

/* Sorted by ext (strcmp order), unique; checked by mime_table_load. */
static const struct mime_entry mime_builtin[] = {
    {"7z", "application/x-7z-compressed"},
    {"aac", "audio/aac"},
    {"apk", "application/vnd.android.package-archive"},
    {"apng", "image/apng"},
    {"atom", "application/atom+xml" MIME_UTF8},
    {"avif", "image/avif"},
    {"bin", "application/octet-stream"},
    {"bmp", "image/bmp"},
    {"br", "application/x-brotli"},
    {"bz2", "application/x-bzip2"},
    {"c", "text/x-c" MIME_UTF8},
    {"css", "text/css" MIME_UTF8},
    {"csv", "text/csv" MIME_UTF8},
    {"deb", "application/vnd.debian.binary-package"},
    {"dmg", "application/x-apple-diskimage"},
    {"doc", "application/msword"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"eot", "application/vnd.ms-fontobject"},
    {"epub", "application/epub+zip"},
    {"exe", "application/vnd.microsoft.portable-executable"},
    {"flac", "audio/flac"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"h", "text/x-c" MIME_UTF8},
    {"htm", "text/html" MIME_UTF8},
    {"html", "text/html" MIME_UTF8},
    {"ico", "image/vnd.microsoft.icon"},
    {"ics", "text/calendar" MIME_UTF8},
    {"iso", "application/x-iso9660-image"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript" MIME_UTF8},
    {"json", "application/json" MIME_UTF8},
    {"jsonld", "application/ld+json" MIME_UTF8},
    {"m4a", "audio/mp4"},
    {"m4v", "video/mp4"},
    {"manifest", "text/cache-manifest" MIME_UTF8},
    {"map", "application/json" MIME_UTF8},
    {"md", "text/markdown" MIME_UTF8},
    {"mjs", "text/javascript" MIME_UTF8},
    {"mov", "video/quicktime"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"mpeg", "video/mpeg"},
    {"mpg", "video/mpeg"},
    {"odt", "application/vnd.oasis.opendocument.text"},
    {"oga", "audio/ogg"},
    {"ogg", "audio/ogg"},
    {"ogv", "video/ogg"},
    {"opus", "audio/ogg"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"ppt", "application/vnd.ms-powerpoint"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"py", "text/x-python" MIME_UTF8},
    {"rb", "text/x-ruby" MIME_UTF8},
    {"rpm", "application/x-rpm"},
    {"rss", "application/rss+xml" MIME_UTF8},
    {"sh", "application/x-sh"},
    {"svg", "image/svg+xml" MIME_UTF8},
    {"svgz", "image/svg+xml" MIME_UTF8},
    {"tar", "application/x-tar"},
    {"tgz", "application/gzip"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain" MIME_UTF8},
    {"vtt", "text/vtt" MIME_UTF8},
    {"wasm", "application/wasm"},
    {"wav", "audio/wav"},
    {"weba", "audio/webm"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json" MIME_UTF8},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xls", "application/vnd.ms-excel"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"xml", "application/xml" MIME_UTF8},
    {"xz", "application/x-xz"},
    {"zip", "application/zip"},
    {"zst", "application/zstd"},
};

#define MIME_BUILTIN_N (sizeof(mime_builtin) / sizeof(mime_builtin[0]))

/* An entry while loading: seq orders duplicates (higher wins). */
struct mime_load_entry {
    const char *ext;
    const char *type;
    size_t seq;
};

struct mime_loader {
    struct mime_table *t;
    struct mime_load_entry *v;
    size_t n, cap;
};

static unsigned char mime_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

static void mime_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mime_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Compare name/len (any case) with the lower-case NUL-terminated key, like strcmp. */
static int mime_cmp(const char *name, size_t len, const char *key)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char a = mime_lower((unsigned char)name[i]), b = (unsigned char)key[i];

        if (b == '\0' || a != b)
            return b == '\0' ? 1 : (int)a - (int)b;
    }
    return key[len] == '\0' ? 0 : -1;
}

static const char *mime_search(const struct mime_entry *e, size_t n, const char *ext, size_t len)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = mime_cmp(ext, len, e[mid].ext);

        if (c == 0)
            return e[mid].type;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *mime_lookup(const struct mime_table *t, const char *name, size_t len)
{
    size_t seg = 0, dot = 0;
    bool have_dot = false;

    for (size_t i = 0; i < len; i++) {
        if (name[i] == '/') {
            seg = i + 1;
            have_dot = false;
        } else if (name[i] == '.') {
            dot = i;
            have_dot = true;
        }
    }
    /* no dot, a dot-file's leading dot, or an empty extension */
    if (!have_dot || dot == seg || dot + 1 == len)
        return NULL;
    if (t == NULL)
        return mime_search(mime_builtin, MIME_BUILTIN_N, name + dot + 1, len - dot - 1);
    return mime_search(t->entries, t->n, name + dot + 1, len - dot - 1);
}

/* Remember s so that mime_table_free releases it; frees s and returns -ENOMEM on failure. */
static int mime_own(struct mime_table *t, char *s)
{
    if (t->nowned == t->owned_cap) {
        size_t cap = t->owned_cap ? t->owned_cap * 2 : 64;
        char **p = realloc(t->owned, cap * sizeof(*p));

        if (p == NULL) {
            free(s);
            return -ENOMEM;
        }
        t->owned = p;
        t->owned_cap = cap;
    }
    t->owned[t->nowned++] = s;
    return 0;
}

static int mime_add(struct mime_loader *l, const char *ext, const char *type)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct mime_load_entry *p = realloc(l->v, cap * sizeof(*p));

        if (p == NULL)
            return -ENOMEM;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n].ext = ext;
    l->v[l->n].type = type;
    l->v[l->n].seq = l->n;
    l->n++;
    return 0;
}

static bool mime_ends_with(const char *s, size_t n, const char *suffix)
{
    size_t m = strlen(suffix);

    return n >= m && strncasecmp(s + n - m, suffix, m) == 0;
}

/* True if the media type (no parameters) gets "; charset=utf-8". */
static bool mime_is_text(const char *type)
{
    static const char *const text[] = {
        "application/javascript", "application/json", "application/xml",
        "image/svg+xml",          "application/manifest+json",
    };
    size_t n = strlen(type);

    if (strncasecmp(type, "text/", 5) == 0)
        return true;
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
        if (strcasecmp(type, text[i]) == 0)
            return true;
    }
    return mime_ends_with(type, n, "+xml") || mime_ends_with(type, n, "+json");
}

/* True if tok/len is "token/token". */
static bool mime_valid_type(const char *tok, size_t len)
{
    size_t slash = 0, nslash = 0;

    for (size_t i = 0; i < len; i++) {
        if (tok[i] == '/') {
            slash = i;
            nslash++;
        } else if (!http_is_tchar((unsigned char)tok[i])) {
            return false;
        }
    }
    return nslash == 1 && slash > 0 && slash + 1 < len;
}

/* True if tok/len is acceptable as an extension: visible ASCII except '/' and '\'. */
static bool mime_valid_ext(const char *tok, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)tok[i];

        if (c <= 0x20 || c >= 0x7f || c == '/' || c == '\\')
            return false;
    }
    return true;
}

/* Next whitespace-separated token of line starting at *pos; a token starting with '#' begins a
 * comment. Returns its length (0 at end of line or at a comment) and sets *tok. */
static size_t mime_next_token(const char *line, size_t *pos, const char **tok)
{
    size_t i = *pos, start;

    while (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')
        i++;
    if (line[i] == '\0' || line[i] == '#') {
        *pos = i;
        return 0;
    }
    start = i;
    while (line[i] != '\0' && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
           line[i] != '\n')
        i++;
    *pos = i;
    *tok = line + start;
    return i - start;
}

/* Parse one line. Returns 0, -EINVAL (reason in why) or -ENOMEM. */
static int mime_parse_line(struct mime_loader *l, const char *line, size_t linelen,
                           const char **why)
{
    size_t pos = 0, tlen, elen;
    const char *tok = NULL, *ext = NULL;
    char *type;
    bool text;

    if (strlen(line) != linelen) {
        *why = "NUL byte in line";
        return -EINVAL;
    }
    tlen = mime_next_token(line, &pos, &tok);
    if (tlen == 0)
        return 0; /* blank or comment */
    if (!mime_valid_type(tok, tlen)) {
        *why = "invalid media type";
        return -EINVAL;
    }
    type = malloc(tlen + sizeof(MIME_UTF8));
    if (type == NULL)
        return -ENOMEM;
    memcpy(type, tok, tlen);
    type[tlen] = '\0';
    text = mime_is_text(type);
    if (text)
        memcpy(type + tlen, MIME_UTF8, sizeof(MIME_UTF8));
    if (mime_own(l->t, type) < 0)
        return -ENOMEM;

    while ((elen = mime_next_token(line, &pos, &ext)) > 0) {
        char *e;

        if (!mime_valid_ext(ext, elen)) {
            *why = "invalid extension";
            return -EINVAL;
        }
        if (memchr(ext, '.', elen) != NULL)
            continue; /* lookups use the text after the last '.', so this can never match */
        e = malloc(elen + 1);
        if (e == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < elen; i++)
            e[i] = (char)mime_lower((unsigned char)ext[i]);
        e[elen] = '\0';
        if (mime_own(l->t, e) < 0 || mime_add(l, e, type) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int mime_load_entry_cmp(const void *a, const void *b)
{
    const struct mime_load_entry *x = a, *y = b;
    int c = strcmp(x->ext, y->ext);

    if (c != 0)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read path into the loader. Returns 0, or -errno with err filled in. */
static int mime_read_file(struct mime_loader *l, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char *line = NULL, ebuf[128];
    size_t linecap = 0, lineno = 0;
    ssize_t n;
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        mime_err(err, errlen, "%s: cannot open: %s", path, strerror_r(-rc, ebuf, sizeof(ebuf)));
        return rc;
    }
    while ((n = getline(&line, &linecap, f)) >= 0) {
        const char *why = "";

        lineno++;
        rc = mime_parse_line(l, line, (size_t)n, &why);
        if (rc == -EINVAL)
            mime_err(err, errlen, "%s:%zu: %s", path, lineno, why);
        if (rc < 0)
            break;
    }
    if (rc == 0 && ferror(f)) {
        rc = -EIO;
        mime_err(err, errlen, "%s: read error: %s", path, strerror_r(EIO, ebuf, sizeof(ebuf)));
    }
    if (rc == -ENOMEM)
        mime_err(err, errlen, "lfhttpd: out of memory");
    free(line);
    fclose(f);
    return rc;
}

struct mime_table *mime_table_load(const char *path, char *err, size_t errlen)
{
    struct mime_loader l = {0};
    size_t n = 0;

    for (size_t i = 1; i < MIME_BUILTIN_N; i++) {
        if (strcmp(mime_builtin[i - 1].ext, mime_builtin[i].ext) >= 0) {
            mime_err(err, errlen, "built-in MIME table not sorted at \"%s\"", mime_builtin[i].ext);
            return NULL;
        }
    }
    l.t = calloc(1, sizeof(*l.t));
    if (l.t == NULL)
        goto oom;
    for (size_t i = 0; i < MIME_BUILTIN_N; i++) {
        if (mime_add(&l, mime_builtin[i].ext, mime_builtin[i].type) < 0)
            goto oom;
    }
    if (path != NULL && mime_read_file(&l, path, err, errlen) < 0)
        goto fail;

    /* sort by (ext, seq); keep the last entry of each run of equal extensions */
    qsort(l.v, l.n, sizeof(*l.v), mime_load_entry_cmp);
    l.t->entries = malloc(l.n * sizeof(*l.t->entries));
    if (l.t->entries == NULL)
        goto oom;
    for (size_t i = 0; i < l.n; i++) {
        if (i + 1 < l.n && strcmp(l.v[i].ext, l.v[i + 1].ext) == 0)
            continue;
        l.t->entries[n].ext = l.v[i].ext;
        l.t->entries[n].type = l.v[i].type;
        n++;
    }
    l.t->n = n;
    free(l.v);
    return l.t;

oom:
    mime_err(err, errlen, "lfhttpd: out of memory");
fail:
    free(l.v);
    mime_table_free(l.t);
    return NULL;
}

void mime_table_free(struct mime_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    free(t->entries);
    free(t);
}
