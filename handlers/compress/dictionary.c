/* dictionary.c — Compression Dictionary Transport: negotiation, patterns and the dcz encoder;
 * see dictionary.h (the store is in dictionary_store.c). */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_CCtx_refPrefix_advanced, the memory estimates */
#include "compress/dictionary.h"

#include "base/fdio.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <openssl/evp.h>

const unsigned char dcz_magic[DCZ_MAGIC_LEN] = { 0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00 };

#define Q_ONE 1000                 /* q-values in thousandths */
#define B64_HASH_CHARS 43          /* base64 digits of 32 bytes, without padding */
#define STREAM_CHUNK (64 * 1024)   /* dcz_encode_fd: input read and output written per step */
#define ECHO_MAX 64                /* bytes of a refused value repeated in its error message */
#define ECHO_BUF (4 * ECHO_MAX + sizeof("..."))

/* ---- negotiation ----------------------------------------------------------------------------- */

/* The value of a base64 digit (RFC 4648 alphabet, the one RFC 8941 uses), or -1. */
static int b64_digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

bool dict_available_parse(struct strview value, unsigned char hash[DICT_HASH_LEN])
{
    struct strview v = value.ptr ? sv_trim(value) : SV_NULL;
    if (v.len < 2 || v.ptr[0] != ':' || v.ptr[v.len - 1] != ':')
        return false;
    const unsigned char *b = (const unsigned char *)v.ptr + 1;
    size_t n = v.len - 2;
    /* 32 bytes are 43 digits (the last one's low 2 bits are padding, tolerated when not zero
     * as RFC 8941 4.2.7 asks), then one '=' or none. */
    if (n == B64_HASH_CHARS + 1 && b[B64_HASH_CHARS] == '=')
        n--;
    if (n != B64_HASH_CHARS)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_digit(b[i]);
        if (d < 0)
            return false;
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            hash[out++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return out == DICT_HASH_LEN;
}

/* A qvalue ("0", "0.5", "1.000": RFC 9110 12.4.2) in thousandths, or -1. */
static int qvalue(struct strview v)
{
    if (!v.len || (v.ptr[0] != '0' && v.ptr[0] != '1'))
        return -1;
    int q = (v.ptr[0] - '0') * Q_ONE;
    size_t i = 1;
    if (i < v.len && v.ptr[i] == '.')
        for (int scale = Q_ONE / 10; ++i < v.len && scale > 0; scale /= 10) {
            if (v.ptr[i] < '0' || v.ptr[i] > '9')
                return -1;
            q += (v.ptr[i] - '0') * scale;
        }
    return i == v.len && q <= Q_ONE ? q : -1;
}

/* The q-value of one Accept-Encoding element's parameters (";q=0.5", other parameters
 * skipped) in thousandths: 1000 when absent, -1 when malformed. The same reading as
 * compress.c's, whose parser is private to it and knows only the codings of its table. */
static int element_q(struct strview params)
{
    struct strview p = params;
    while (p.len) {
        while (p.len && (p.ptr[0] == ';' || p.ptr[0] == ' ' || p.ptr[0] == '\t')) {
            p.ptr++;
            p.len--;
        }
        const char *semi = p.len ? memchr(p.ptr, ';', p.len) : NULL;
        struct strview param = { p.ptr, semi ? (size_t)(semi - p.ptr) : p.len };
        if (param.len >= 2 && (param.ptr[0] == 'q' || param.ptr[0] == 'Q') && param.ptr[1] == '=')
            return qvalue(sv_trim((struct strview){ param.ptr + 2, param.len - 2 }));
        p.ptr += param.len;
        p.len -= param.len;
    }
    return Q_ONE;
}

bool dict_accepts_dcz(struct strview accept_encoding)
{
    struct strview list = accept_encoding, item;
    while (list.ptr && sv_list_next(&list, &item)) {
        const char *semi = memchr(item.ptr, ';', item.len);
        size_t clen = semi ? (size_t)(semi - item.ptr) : item.len;
        struct strview coding = sv_trim((struct strview){ item.ptr, clen });
        if (SV_CASE_EQ(coding, "dcz"))
            return element_q((struct strview){ item.ptr + clen, item.len - clen }) > 0;
    }
    return false;
}

/* ---- patterns -------------------------------------------------------------------------------- */

/* The request destinations of the Fetch standard that match-dest may name. */
static const char *const fetch_dests[] = {
    "audio", "audioworklet", "document", "embed", "font", "frame", "iframe", "image", "json",
    "manifest", "object", "paintworklet", "report", "script", "serviceworker", "sharedworker",
    "style", "track", "video", "webidentity", "worker", "xslt", NULL
};

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Why `m` is not a pattern lfhttpd can both announce and evaluate, or NULL when it is one. Path
 * characters of RFC 3986 and '*'; what URLPattern would read as syntax (":name", groups, "?",
 * "+", "\") and what a quoted sf-string cannot hold are refused. */
static const char *match_problem(const char *m)
{
    size_t n = strlen(m);
    if (n == 0 || m[0] != '/')
        return "must be a path that starts with '/'";
    if (n > DICT_MATCH_MAX)
        return "is too long (at most 1024 bytes)";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)m[i];
        if (c == '\r' || c == '\n')
            return "holds a line break";
        if (c == '"' || c == '\\')
            return "holds a quote or a backslash";
        if (c == '%' && !(is_hex(m[i + 1]) && is_hex(m[i + 2]))) /* (NUL-terminated) */
            return "holds '%' that is not followed by two hex digits";
        if (c != '%' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
            !(c >= '0' && c <= '9') && !strchr("-._~!$&',;=@/*", c))
            return "holds a character other than a URL path's and '*' (no spaces, no "
                   "URLPattern syntax: ':name', '(', ')', '{', '}', '?', '+'; no '#')";
    }
    /* URL parsing would resolve dot segments in the pattern, not in what lfhttpd compares. */
    if (strstr(m, "/./") || strstr(m, "/../") || (n >= 2 && !strcmp(m + n - 2, "/.")) ||
        (n >= 3 && !strcmp(m + n - 3, "/..")))
        return "holds a '.' or '..' segment";
    return NULL;
}

/* Why the id is refused (printable ASCII, at most DICT_ID_MAX), or NULL. */
static const char *id_problem(const char *id)
{
    size_t n = strlen(id);
    if (n > DICT_ID_MAX)
        return "dictionary id is too long (at most 1024 characters)";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || (unsigned char)id[i] > 0x7e)
            return "dictionary id holds a character that is not printable ASCII";
    return NULL;
}

/* A refused value as an error message may repeat it: printable ASCII, other bytes as \xHH
 * (a line break must not split a log line), at most ECHO_MAX bytes of it. */
static const char *echo(char buf[ECHO_BUF], const char *v)
{
    size_t n = 0;
    for (size_t i = 0; v[i] && n + sizeof("\\xHH...") < ECHO_BUF; i++) {
        unsigned char c = (unsigned char)v[i];
        if (i == ECHO_MAX) {
            n += (size_t)sprintf(buf + n, "...");
            break;
        }
        n += (size_t)(c >= 0x20 && c < 0x7f ? sprintf(buf + n, "%c", c)
                                            : sprintf(buf + n, "\\x%02x", c));
    }
    buf[n] = '\0';
    return buf;
}

static bool dest_known(const char *d)
{
    for (int i = 0; fetch_dests[i]; i++)
        if (!strcmp(d, fetch_dests[i]))
            return true;
    return false;
}

/* Write the Use-As-Dictionary field value into buf (large enough: see dict_pattern_init). */
static size_t format_header(char *buf, const char *match, const char *const *dests, int ndests,
                            const char *id)
{
    size_t n = (size_t)sprintf(buf, "match=\"%s\"", match);
    if (ndests > 0) {
        n += (size_t)sprintf(buf + n, ", match-dest=(");
        for (int i = 0; i < ndests; i++)
            n += (size_t)sprintf(buf + n, "%s\"%s\"", i ? " " : "", dests[i]);
        buf[n++] = ')';
    }
    if (id && *id) {
        n += (size_t)sprintf(buf + n, ", id=\"");
        for (const char *c = id; *c; c++) { /* sf-string: '"' and '\' are escaped */
            if (*c == '"' || *c == '\\')
                buf[n++] = '\\';
            buf[n++] = *c;
        }
        buf[n++] = '"';
    }
    buf[n] = '\0';
    return n;
}

/* The store's name of a pattern: 64 bits of the SHA-256 of its scope (the tree it covers),
 * a NUL, and its match; never 0. */
static uint64_t pattern_key(const char *scope, const char *match, size_t mlen)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    uint64_t k = 0;
    char in[PATH_MAX + 1 + DICT_MATCH_MAX];
    size_t slen = strnlen(scope, PATH_MAX - 1);
    memcpy(in, scope, slen);
    in[slen] = '\0';
    memcpy(in + slen + 1, match, mlen < DICT_MATCH_MAX ? mlen : DICT_MATCH_MAX);
    if (EVP_Digest(in, slen + 1 + (mlen < DICT_MATCH_MAX ? mlen : DICT_MATCH_MAX), md, &mdlen,
                   EVP_sha256(), NULL) == 1)
        for (int i = 0; i < 8; i++)
            k = (k << 8) | md[i];
    return k ? k : 1;
}

void dict_pattern_scope(struct dict_pattern *p, const char *scope)
{
    p->key = pattern_key(scope, p->match, p->match_len);
}

int dict_pattern_init(struct dict_pattern *p, const char *where, const char *match,
                      const char *const *dests, int ndests, const char *id, char *err,
                      size_t errlen)
{
    memset(p, 0, sizeof(*p));
    char shown[ECHO_BUF];
    const char *why = match_problem(match);
    if (why) {
        snprintf(err, errlen, "%s: dictionary match '%s' %s", where, echo(shown, match), why);
        return -1;
    }
    if (ndests < 0 || ndests > DICT_DESTS_MAX) {
        snprintf(err, errlen, "%s: at most %d dictionary destinations", where, DICT_DESTS_MAX);
        return -1;
    }
    size_t need = sizeof("match=\"\", match-dest=(), id=\"\"") + strlen(match);
    for (int i = 0; i < ndests; i++) {
        if (!dest_known(dests[i])) {
            snprintf(err, errlen, "%s: unknown dictionary destination '%s' (a request "
                     "destination: script, style, document, font, image, ...)", where,
                     echo(shown, dests[i]));
            return -1;
        }
        need += strlen(dests[i]) + sizeof(" \"\"");
    }
    if (id && (why = id_problem(id))) {
        snprintf(err, errlen, "%s: %s", where, why);
        return -1;
    }
    need += id ? 2 * strlen(id) : 0; /* every character escaped, at worst */
    if (!(p->header = malloc(need))) {
        snprintf(err, errlen, "%s: out of memory", where);
        return -1;
    }
    p->header_len = format_header(p->header, match, dests, ndests, id);
    p->match = p->header + sizeof("match=\"") - 1;
    p->match_len = strlen(match);
    p->key = pattern_key("", match, p->match_len);
    return 0;
}

void dict_pattern_free(struct dict_pattern *p)
{
    free(p->header);
    memset(p, 0, sizeof(*p));
}

bool dict_path_matches(const struct dict_pattern *p, struct strview path)
{
    const char *pat = p->match, *s = path.ptr;
    size_t m = p->match_len, n = path.len, pi = 0, si = 0;
    size_t star = SIZE_MAX, mark = 0; /* the last '*' seen, and where its match ends now */
    while (si < n) {
        if (pi < m && pat[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < m && pat[pi] == s[si]) {
            pi++;
            si++;
        } else if (star != SIZE_MAX) { /* let the last '*' take one more character */
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < m && pat[pi] == '*')
        pi++;
    return pi == m;
}

/* ---- the dcz encoder ------------------------------------------------------------------------- */

int dcz_window_log(size_t dict_len, size_t in_len)
{
    /* What the client must take: max(8 MiB, 1.25 x dictionary), at most 128 MiB, and a window
     * is a power of two no larger than that. */
    size_t limit = dict_len + dict_len / 4;
    int max_log = DCZ_WINDOW_LOG_FLOOR;
    while (max_log < DCZ_WINDOW_LOG_CEILING && ((size_t)1 << (max_log + 1)) <= limit)
        max_log++;
    /* What covers the dictionary and the whole input: no larger, since zstd's tables grow
     * with the window. */
    size_t total = dict_len + in_len;
    int log = ZSTD_WINDOWLOG_MIN;
    while (log < max_log && ((size_t)1 << log) < total)
        log++;
    return log;
}

size_t dcz_bound(size_t in_len)
{
    return DCZ_HEADER_LEN + ZSTD_compressBound(in_len);
}

size_t dcz_job_memory(size_t dict_len, size_t in_len, int level, bool streaming)
{
    ZSTD_compressionParameters cp = ZSTD_getCParams(level, in_len, dict_len);
    cp.windowLog = (unsigned)dcz_window_log(dict_len, in_len);
    cp = ZSTD_adjustCParams(cp, in_len, dict_len);
    size_t ctx = streaming ? ZSTD_estimateCStreamSize_usingCParams(cp)
                           : ZSTD_estimateCCtxSize_usingCParams(cp);
    size_t io = streaming ? 2 * STREAM_CHUNK : in_len + dcz_bound(in_len);
    return dict_len + io + ctx;
}

int dcz_fit_level(size_t dict_len, size_t in_len, int level, bool streaming)
{
    for (; level >= 1; level--)
        if (dcz_job_memory(dict_len, in_len, level, streaming) <= DCZ_JOB_MEMORY_MAX)
            return level;
    return 0;
}

/* A compression context for one dcz frame: the level, the window, the dictionary as a prefix
 * of raw content (never read as a zstd dictionary, whatever its first bytes), a checksum. */
static ZSTD_CCtx *dcz_context(const void *dict, size_t dict_len, size_t in_len, int level)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (!z)
        return NULL;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog,
                                            dcz_window_log(dict_len, in_len))) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(z, in_len)) ||
        ZSTD_isError(ZSTD_CCtx_refPrefix_advanced(z, dict, dict_len, ZSTD_dct_rawContent))) {
        ZSTD_freeCCtx(z);
        return NULL;
    }
    return z;
}

ssize_t dcz_encode(const void *dict, size_t dict_len, const unsigned char hash[DICT_HASH_LEN],
                   const void *in, size_t in_len, void *out, size_t cap, int level)
{
    if (dict_len > DCZ_MAX_TOTAL || in_len > DCZ_MAX_TOTAL - dict_len)
        return -E2BIG;
    if (cap <= DCZ_HEADER_LEN)
        return -EFBIG;
    if (!(level = dcz_fit_level(dict_len, in_len, level, false)))
        return -E2BIG;
    ZSTD_CCtx *z = dcz_context(dict, dict_len, in_len, level);
    if (!z)
        return -ENOMEM;
    unsigned char *o = out;
    memcpy(o, dcz_magic, DCZ_MAGIC_LEN);
    memcpy(o + DCZ_MAGIC_LEN, hash, DICT_HASH_LEN);
    size_t r = ZSTD_compress2(z, o + DCZ_HEADER_LEN, cap - DCZ_HEADER_LEN, in, in_len);
    ZSTD_freeCCtx(z);
    if (ZSTD_isError(r))
        return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? -EFBIG : -EIO;
    return (ssize_t)(DCZ_HEADER_LEN + r);
}

/* Feed one chunk (the last one when `end`) and write what comes out. 0 or -errno. */
static int stream_step(ZSTD_CCtx *z, const void *in, size_t len, bool end, unsigned char *obuf,
                       int out_fd, uint64_t *total)
{
    ZSTD_inBuffer ib = { in, len, 0 };
    size_t left;
    do {
        ZSTD_outBuffer ob = { obuf, STREAM_CHUNK, 0 };
        left = ZSTD_compressStream2(z, &ob, &ib, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left))
            return -EIO;
        int rc = fd_write_all(out_fd, obuf, ob.pos);
        if (rc < 0)
            return rc;
        *total += ob.pos;
    } while (ib.pos < ib.size || (end && left != 0));
    return 0;
}

/* Read in_len bytes from in_fd through the context into out_fd. */
static int stream_body(ZSTD_CCtx *z, int in_fd, uint64_t in_len, int out_fd, uint64_t *total)
{
    unsigned char *ibuf = malloc(2 * STREAM_CHUNK);
    if (!ibuf)
        return -ENOMEM;
    unsigned char *obuf = ibuf + STREAM_CHUNK;
    uint64_t left = in_len;
    int rc = 0;
    do {
        size_t want = left < STREAM_CHUNK ? (size_t)left : STREAM_CHUNK;
        ssize_t got = want ? read(in_fd, ibuf, want) : 0;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 || (want && got == 0)) { /* an error, or the file is shorter now */
            rc = got < 0 ? -errno : -EIO;
            break;
        }
        left -= (uint64_t)got;
        rc = stream_step(z, ibuf, (size_t)got, left == 0, obuf, out_fd, total);
    } while (rc == 0 && left > 0);
    free(ibuf);
    return rc;
}

int dcz_encode_fd(const void *dict, size_t dict_len, const unsigned char hash[DICT_HASH_LEN],
                  int in_fd, uint64_t in_len, int out_fd, int level, uint64_t *out_len)
{
    if (dict_len > DCZ_MAX_TOTAL || in_len > DCZ_MAX_TOTAL - dict_len)
        return -E2BIG;
    if (!(level = dcz_fit_level(dict_len, (size_t)in_len, level, true)))
        return -E2BIG;
    ZSTD_CCtx *z = dcz_context(dict, dict_len, (size_t)in_len, level);
    if (!z)
        return -ENOMEM;
    unsigned char head[DCZ_HEADER_LEN];
    memcpy(head, dcz_magic, DCZ_MAGIC_LEN);
    memcpy(head + DCZ_MAGIC_LEN, hash, DICT_HASH_LEN);
    uint64_t total = DCZ_HEADER_LEN;
    int rc = fd_write_all(out_fd, head, sizeof(head));
    if (rc == 0)
        rc = stream_body(z, in_fd, in_len, out_fd, &total);
    ZSTD_freeCCtx(z);
    if (rc == 0 && out_len)
        *out_len = total;
    return rc;
}
