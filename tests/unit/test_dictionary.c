/* test_dictionary.c — unit tests for handlers/compress/dictionary.c and dictionary_store.c:
 * the RFC 9842 headers, patterns, the dcz encoder (decoded back with libzstd) and the store. */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader, ZSTD_DCtx_refPrefix_advanced */
#include "compress/dictionary.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <openssl/evp.h>

#define KIB 1024
#define ERRLEN 512

static struct strview sv(const char *s)
{
    return (struct strview){ s, strlen(s) };
}

static void sha256(const void *p, size_t n, unsigned char out[DICT_HASH_LEN])
{
    unsigned int len;
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

/* ---- negotiation ----------------------------------------------------------------------------- */

static void test_available(void)
{
    /* SHA-256 of the empty string */
    static const unsigned char empty[DICT_HASH_LEN] = {
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9,
        0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52,
        0xb8, 0x55
    };
    unsigned char h[DICT_HASH_LEN];
    memset(h, 0, sizeof(h));
    ok(dict_available_parse(sv(":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"), h) &&
       !memcmp(h, empty, sizeof(h)), "Available-Dictionary: the sf-binary of a SHA-256");
    ok(dict_available_parse(sv(":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU:"), h) &&
       !memcmp(h, empty, sizeof(h)), "padding is optional");
    ok(dict_available_parse(sv(" \t:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=: "), h),
       "surrounding whitespace");
    ok(dict_available_parse(sv(":pZGm1Av0IEBKARczz7exkNYsZb8LzaMrV7J32a2fFG4=:"), h),
       "the RFC's example");
    static const char *const bad[] = {
        "", ":", "::", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",     /* no closing colon */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuA==:",    /* 31 bytes */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFVV:",    /* 33 bytes */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuF==:",    /* two padding */
        ":47DEQpj8HBSa-_TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",    /* base64url */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NM pJWZG3hSuFU=:",   /* space inside */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:;a=1", /* parameters */
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:, "
        ":47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",              /* two */
        "\"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\"",
        NULL
    };
    for (int i = 0; bad[i]; i++)
        ok(!dict_available_parse(sv(bad[i]), h), "no dictionary: '%s'", bad[i]);
    ok(!dict_available_parse(SV_NULL, h), "no dictionary: absent");
}

static void test_accept(void)
{
    ok(dict_accepts_dcz(sv("gzip, deflate, br, zstd, dcb, dcz")), "Chromium's Accept-Encoding");
    ok(dict_accepts_dcz(sv("DCZ;q=0.5")), "case-insensitive, q > 0");
    ok(dict_accepts_dcz(sv("gzip;q=1.0, dcz ; q=0.001")), "spaces around ';', q=0.001");
    ok(!dict_accepts_dcz(sv("gzip, dcz;q=0")), "q=0 refuses");
    ok(!dict_accepts_dcz(sv("gzip, dcz;q=0.000")), "q=0.000 refuses");
    ok(!dict_accepts_dcz(sv("dcz;q=2")), "a malformed q refuses");
    ok(!dict_accepts_dcz(sv("dcz;q=")), "an empty q refuses");
    ok(dict_accepts_dcz(sv("dcz;level=3;q=0.9")), "other parameters are skipped");
    ok(!dict_accepts_dcz(sv("dcz;level=3;q=0")), "... but not a q after them");
    ok(!dict_accepts_dcz(sv("dcz;q=0.1234")), "four decimals refuse");
    ok(!dict_accepts_dcz(sv("*")), "'*' does not stand for dcz");
    ok(!dict_accepts_dcz(sv("dczx, xdcz, zstd")), "only the coding itself");
    ok(!dict_accepts_dcz(sv("")), "empty");
    ok(!dict_accepts_dcz(SV_NULL), "absent");
}

/* ---- patterns -------------------------------------------------------------------------------- */

static void test_pattern_header(void)
{
    struct dict_pattern p;
    char err[ERRLEN] = "";
    const char *dests[] = { "script", "style" };
    is_int(dict_pattern_init(&p, "x.conf:3", "/assets/app-*.js", dests, 1, "app", err,
                             sizeof(err)), 0, "a pattern with a destination and an id");
    is_str(p.header, "match=\"/assets/app-*.js\", match-dest=(\"script\"), id=\"app\"",
           "its Use-As-Dictionary");
    is_int(p.header_len, strlen(p.header), "header_len");
    uint64_t key = p.key;
    ok(key != 0, "a key");
    dict_pattern_free(&p);

    dict_pattern_init(&p, "x.conf:3", "/assets/app-*.js", dests, 2, NULL, err, sizeof(err));
    is_str(p.header, "match=\"/assets/app-*.js\", match-dest=(\"script\" \"style\")",
           "two destinations, no id");
    is_int(p.key, key, "the key depends on the match only");
    dict_pattern_free(&p);

    dict_pattern_init(&p, "x.conf:3", "/a/*", NULL, 0, "say \"hi\" \\o/", err, sizeof(err));
    is_str(p.header, "match=\"/a/*\", id=\"say \\\"hi\\\" \\\\o/\"", "the id is an sf-string");
    ok(p.key != key, "another match, another key");
    dict_pattern_free(&p);

    dict_pattern_init(&p, "x.conf:3", "/%C3%A9t%c3%a9/*;v=1", NULL, 0, "", err, sizeof(err));
    is_str(p.header, "match=\"/%C3%A9t%c3%a9/*;v=1\"", "percent-encoding; an empty id is none");
    dict_pattern_free(&p);
}

static void test_pattern_refused(void)
{
    static const struct {
        const char *match, *why;
    } bad[] = {
        { "assets/*.js", "starts with '/'" },
        { "https://example.com/app.js", "starts with '/'" },
        { "", "starts with '/'" },
        { "/a\r\nSet-Cookie: x", "line break" },
        { "/a\nb", "line break" },
        { "/a\"b", "quote" },
        { "/a\\*", "backslash" },
        { "/a b", "other than" },
        { "/app/:version/main.js", "other than" },
        { "/app/(\\d+)/main.js", "other than" },
        { "/app/{v1}?", "other than" },
        { "/app.js?v=*", "other than" },
        { "/app.js#x", "other than" },
        { "/a+/b", "other than" },
        { "/a%zz", "'%'" },
        { "/a%4", "'%'" },
        { "/a/../b/*", "segment" },
        { "/a/./b", "segment" },
        { "/a/..", "segment" },
        { "/caf\xc3\xa9", "other than" },
    };
    char err[ERRLEN];
    struct dict_pattern p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = dict_pattern_init(&p, "site.conf:12", bad[i].match, NULL, 0, NULL, err,
                                   sizeof(err));
        ok(rc == -1 && !strncmp(err, "site.conf:12: dictionary match '", 32) &&
           strstr(err, bad[i].why), "refused: %s", err);
    }
    char *longm = malloc(DICT_MATCH_MAX + 2);
    memset(longm, 'a', DICT_MATCH_MAX + 1);
    longm[0] = '/';
    longm[DICT_MATCH_MAX + 1] = '\0';
    ok(dict_pattern_init(&p, "c:1", longm, NULL, 0, NULL, err, sizeof(err)) == -1 &&
       strstr(err, "too long"), "a match over %d bytes", DICT_MATCH_MAX);
    longm[DICT_MATCH_MAX] = '\0';
    ok(dict_pattern_init(&p, "c:1", longm, NULL, 0, NULL, err, sizeof(err)) == 0,
       "a match of %d bytes", DICT_MATCH_MAX);
    dict_pattern_free(&p);
    free(longm);

    const char *dests[] = { "scripts" };
    ok(dict_pattern_init(&p, "c:2", "/a*", dests, 1, NULL, err, sizeof(err)) == -1,
       "unknown destination: %s", err);
    is_str(err, "c:2: unknown dictionary destination 'scripts' (a request destination: "
                "script, style, document, font, image, ...)", "its message");
    const char *many[DICT_DESTS_MAX + 1];
    for (int i = 0; i <= DICT_DESTS_MAX; i++)
        many[i] = "script";
    ok(dict_pattern_init(&p, "c:3", "/a*", many, DICT_DESTS_MAX + 1, NULL, err,
                         sizeof(err)) == -1, "too many destinations: %s", err);
    ok(dict_pattern_init(&p, "c:4", "/a*", NULL, 0, "a\r\nb", err, sizeof(err)) == -1 &&
       !strcmp(err, "c:4: dictionary id holds a character that is not printable ASCII"),
       "an id with a line break: %s", err);
}

static bool matches(const char *pattern, const char *path)
{
    struct dict_pattern p;
    char err[ERRLEN];
    if (dict_pattern_init(&p, "t:1", pattern, NULL, 0, NULL, err, sizeof(err)) < 0)
        return false;
    bool m = dict_path_matches(&p, sv(path));
    dict_pattern_free(&p);
    return m;
}

static void test_pattern_match(void)
{
    ok(matches("/assets/app-*.js", "/assets/app-v2.js"), "prefix-star-suffix");
    ok(matches("/assets/app-*.js", "/assets/app-.js"), "'*' matches nothing");
    ok(matches("/assets/app-*.js", "/assets/app-x/y.js"), "'*' matches '/' (URLPattern)");
    ok(matches("/assets/app-*.js", "/assets/app-.js.js"), "backtracking");
    ok(!matches("/assets/app-*.js", "/assets/app.js"), "the literal part is needed");
    ok(!matches("/assets/app-*.js", "/assets/app-v2.js.map"), "anchored at the end");
    ok(!matches("/assets/app-*.js", "/x/assets/app-v2.js"), "anchored at the start");
    ok(!matches("/assets/app-*.js", "/Assets/app-v2.js"), "case-sensitive");
    ok(matches("/app/*/main.js", "/app/1.2.3/main.js"), "the RFC's versioned directories");
    ok(matches("/product/*", "/product/"), "the RFC's path prefix");
    ok(!matches("/product/*", "/product"), "the prefix's '/' is needed");
    ok(matches("/a/*/b*c", "/a/x/y/bzzc"), "two stars");
    ok(matches("/a/**", "/a/"), "stars in a row");
    ok(matches("/exact.js", "/exact.js") && !matches("/exact.js", "/exact.jsx"), "no star");
    ok(!matches("*", "/"), "a bare '*' is refused at configuration");
    ok(matches("/*", "/anything/at/all"), "everything");
}

/* ---- the dcz encoder ------------------------------------------------------------------------- */

/* Text that looks like a minified bundle: tokens from a small vocabulary, seeded. */
static char *make_text(size_t n, unsigned seed)
{
    static const char *const words[] = {
        "function", "return", "var ", "const ", "=>", "{", "}", "(", ")", ";", "this.", "props",
        "state", "render", "createElement", "useState", "if(", "else", "null", "undefined",
        ".prototype.", "Object.assign", "\n", "0x1f", "42", "\"use strict\"", "module.exports"
    };
    char *t = malloc(n);
    unsigned x = seed;
    for (size_t i = 0; i < n;) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % (sizeof(words) / sizeof(words[0]))];
        for (size_t k = 0; w[k] && i < n; k++)
            t[i++] = w[k];
        if ((x & 0xff) < 40 && i < n)
            t[i++] = (char)('a' + (x >> 8) % 26);
    }
    return t;
}

/* v2: v1 with a few edits (what a patch release does). */
static char *edit(const char *v1, size_t n)
{
    char *v2 = malloc(n);
    memcpy(v2, v1, n);
    for (size_t off = 1000; off + 16 < n; off += n / 7)
        memcpy(v2 + off, "/*patched 1.2.4*/", 16);
    return v2;
}

/* Decode a dcz body as a browser does: the 40-byte header checked and taken off (libzstd's
 * prefix lasts one frame, and a skippable frame counts as one), then the zstd frame with the
 * dictionary as a raw prefix, the window bounded as RFC 9842 lets a client bound it. */
static size_t decode(const unsigned char *z, size_t zn, const char *dict, size_t dn, char *out,
                     size_t cap)
{
    if (zn < DCZ_HEADER_LEN || memcmp(z, dcz_magic, DCZ_MAGIC_LEN))
        return (size_t)-1;
    z += DCZ_HEADER_LEN;
    zn -= DCZ_HEADER_LEN;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    size_t limit = dn + dn / 4 > ((size_t)8 << 20) ? dn + dn / 4 : ((size_t)8 << 20);
    int wlog = 10;
    while (((size_t)1 << (wlog + 1)) <= limit && wlog < DCZ_WINDOW_LOG_CEILING)
        wlog++;
    ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
    ZSTD_DCtx_refPrefix_advanced(d, dict, dn, ZSTD_dct_rawContent);
    ZSTD_inBuffer in = { z, zn, 0 };
    ZSTD_outBuffer o = { out, cap, 0 };
    size_t r;
    do {
        r = ZSTD_decompressStream(d, &o, &in);
    } while (!ZSTD_isError(r) && in.pos < in.size && o.pos < o.size);
    ZSTD_freeDCtx(d);
    return ZSTD_isError(r) || r != 0 ? (size_t)-1 : o.pos;
}

static void test_window(void)
{
    const size_t M = (size_t)1 << 20;
    is_int(dcz_window_log(0, 0), ZSTD_WINDOWLOG_MIN, "nothing: the smallest window");
    is_int(dcz_window_log(M, M), 21, "1 MiB + 1 MiB: 2 MiB");
    is_int(dcz_window_log(M, M + 1), 22, "just over: the next power of two");
    is_int(dcz_window_log(8 * M, 8 * M), 23, "8 MiB + 8 MiB: within max(8 MiB, 10 MiB)");
    is_int(dcz_window_log(100 * M, 10 * M), 26, "100 MiB: within 125 MiB");
    is_int(dcz_window_log(120 * M, 8 * M), 27, "120 MiB: 128 MiB, the ceiling");
    is_int(dcz_window_log(200 * M, 8 * M), 27, "never above 128 MiB");
}

static void test_header_and_roundtrip(void)
{
    const size_t n = 300 * KIB;
    char *v1 = make_text(n, 1), *v2 = edit(v1, n);
    unsigned char h[DICT_HASH_LEN];
    sha256(v1, n, h);
    size_t cap = dcz_bound(n);
    unsigned char *z = malloc(cap);
    ssize_t zn = dcz_encode(v1, n, h, v2, n, z, cap, DCZ_LEVEL_DEFAULT);
    ok(zn > DCZ_HEADER_LEN, "encoded: %zd bytes for %zu", zn, n);
    static const unsigned char magic[] = { 0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00 };
    ok(!memcmp(z, magic, 8), "the RFC's 8 bytes: a skippable frame (0x184D2A5E) of 32 bytes");
    ok(!memcmp(z + 8, h, DICT_HASH_LEN), "then the dictionary's SHA-256");
    ok(ZSTD_isSkippableFrame(z, (size_t)zn), "libzstd reads the header as a skippable frame");
    is_int(ZSTD_findFrameCompressedSize(z, (size_t)zn), DCZ_HEADER_LEN, "of 40 bytes");
    ZSTD_frameHeader fh = { 0 };
    size_t fhr = ZSTD_getFrameHeader(&fh, z + DCZ_HEADER_LEN, (size_t)zn - DCZ_HEADER_LEN);
    ok(fhr == 0 && fh.windowSize <= ((uint64_t)8 << 20) && fh.frameContentSize == n,
       "the frame: window %llu within the RFC's, content size %llu",
       (unsigned long long)fh.windowSize, (unsigned long long)fh.frameContentSize);
    char *out = malloc(n + 1);
    is_int(decode(z, (size_t)zn, v1, n, out, n + 1), n, "decoded whole, with the prefix");
    ok(!memcmp(out, v2, n), "round trip");
    size_t plain = ZSTD_compress(out, n, v2, n, 19);
    ok((size_t)zn * 10 < plain, "a delta: %zd bytes, zstd -19 alone %zu", zn, plain);
    char *other = make_text(n, 2);
    ok(decode(z, (size_t)zn, other, n, out, n + 1) != n || memcmp(out, v2, n),
       "another dictionary does not give it back");
    is_int(dcz_encode(v1, n, h, v2, n, z, 100, DCZ_LEVEL_DEFAULT), -EFBIG, "no room: -EFBIG");
    is_int(dcz_encode(v1, DCZ_MAX_TOTAL, h, v2, 1, z, cap, 1), -E2BIG, "too large: -E2BIG");
    is_int(dcz_encode(v1, 0, h, v2, n, z, cap, 3) > 0, 1, "an empty dictionary still works");
    size_t mem = dcz_job_memory(n, n, DCZ_LEVEL_DEFAULT, false);
    ok(mem > 2 * n, "a job of 300 KiB + 300 KiB at level 19: %zu KiB", mem / KIB);
    is_int(dcz_fit_level(n, n, DCZ_LEVEL_DEFAULT, false), DCZ_LEVEL_DEFAULT, "which fits");
    const size_t big = (size_t)64 << 20;
    int lv = dcz_fit_level(big, big, DCZ_LEVEL_DEFAULT, false);
    ok(lv >= 1 && lv < DCZ_LEVEL_DEFAULT &&
       dcz_job_memory(big, big, lv, false) <= DCZ_JOB_MEMORY_MAX,
       "64 + 64 MiB: level %d keeps the job within %zu MiB", lv, DCZ_JOB_MEMORY_MAX >> 20);
    free(other);
    free(out);
    free(z);
    free(v1);
    free(v2);
}

static int temp_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

static void test_encode_fd(const char *dir)
{
    const size_t n = 200 * KIB;
    char *v1 = make_text(n, 3), *v2 = edit(v1, n);
    unsigned char h[DICT_HASH_LEN];
    sha256(v1, n, h);
    int in = temp_file(dir, "in"), out = temp_file(dir, "out");
    ok(write(in, v2, n) == (ssize_t)n && lseek(in, 0, SEEK_SET) == 0, "the new version on disk");
    uint64_t zn = 0;
    is_int(dcz_encode_fd(v1, n, h, in, n, out, DCZ_LEVEL_DEFAULT, &zn), 0, "streamed");
    unsigned char *z = malloc(zn);
    ok(pread(out, z, zn, 0) == (ssize_t)zn, "%llu bytes written", (unsigned long long)zn);
    ok(!memcmp(z, dcz_magic, DCZ_MAGIC_LEN) && !memcmp(z + DCZ_MAGIC_LEN, h, DICT_HASH_LEN),
       "the header first");
    char *back = malloc(n + 1);
    ok(decode(z, zn, v1, n, back, n + 1) == n && !memcmp(back, v2, n), "round trip");
    ok(ftruncate(out, 0) == 0 && lseek(in, 0, SEEK_SET) == 0, "again");
    is_int(dcz_encode_fd(v1, n, h, in, n + 1, out, DCZ_LEVEL_DEFAULT, &zn), -EIO,
           "a file shorter than announced: -EIO");
    is_int(dcz_encode_fd(v1, n, h, in, 0, out, 1, &zn), 0, "an empty input");
    close(in);
    close(out);
    free(back);
    free(z);
    free(v1);
    free(v2);
}

/* ---- the store ------------------------------------------------------------------------------- */

#define K1 0x1111111111111111ULL
#define K2 0x2222222222222222ULL
#define K3 0x3333333333333333ULL

static struct dict_store *open_store(const char *dir, unsigned per, uint64_t bytes, unsigned cap)
{
    struct dict_store_limits lim = { per, bytes, cap };
    char err[ERRLEN] = "";
    struct dict_store *s = dict_store_open(dir, &lim, err, sizeof(err));
    if (!s)
        printf("# %s\n", err);
    return s;
}

/* Put a text of `n` bytes made from `seed`; its hash in h. */
static int put(struct dict_store *s, uint64_t key, unsigned seed, size_t n,
               unsigned char h[DICT_HASH_LEN])
{
    char *t = make_text(n, seed);
    int rc = dict_store_put(s, key, t, n, h);
    free(t);
    return rc;
}

static bool has(struct dict_store *s, const unsigned char *h)
{
    struct dict_entry e;
    return dict_store_lookup(s, h, &e);
}

static void file_of(const char *dir, uint64_t key, const unsigned char *h, char *path, size_t cap)
{
    int n = snprintf(path, cap, "%s/%016llx-", dir, (unsigned long long)key);
    for (int i = 0; i < DICT_HASH_LEN; i++)
        n += snprintf(path + n, cap - (size_t)n, "%02x", h[i]);
    snprintf(path + n, cap - (size_t)n, ".dict");
}

static void test_store_bounds(const char *dir)
{
    struct dict_store *s = open_store(dir, 2, 1000, 4);
    ok(s != NULL, "opened (created) %s", dir);
    unsigned char a[DICT_HASH_LEN], b[DICT_HASH_LEN], c[DICT_HASH_LEN], x[DICT_HASH_LEN];
    is_int(put(s, K1, 1, 100, a), 0, "put A");
    struct dict_entry e;
    ok(dict_store_lookup(s, a, &e) && e.size == 100 && e.pattern_key == K1 &&
       !memcmp(e.hash, a, DICT_HASH_LEN), "A is found: size, pattern, hash");
    char path[600];
    file_of(dir, K1, a, path, sizeof(path));
    ok(access(path, F_OK) == 0, "its file is named by pattern and hash");
    put(s, K1, 2, 100, b);
    put(s, K1, 3, 100, c);
    ok(!has(s, a) && has(s, b) && has(s, c), "a third of the pattern evicts the oldest");
    ok(access(path, F_OK) < 0 && errno == ENOENT, "and deletes its file");
    is_int(put(s, K1, 2, 100, b), 0, "B again: now the newest");
    put(s, K1, 4, 100, x);
    ok(has(s, b) && !has(s, c) && has(s, x), "so C goes, not B");

    unsigned char p[DICT_HASH_LEN], q[DICT_HASH_LEN];
    put(s, K2, 5, 600, p);
    put(s, K2, 6, 500, q);
    ok(!has(s, p) && has(s, q), "600 + 500 bytes > 1000: the older goes");
    is_int(put(s, K2, 7, 1001, p), -E2BIG, "larger than a pattern's bytes: -E2BIG");
    is_int(dict_store_put(s, K2, "", 0, p), -EINVAL, "empty: -EINVAL");
    uint64_t bytes;
    is_int(dict_store_count(s, 0, &bytes), 3, "3 in all");
    is_int(bytes, 700, "700 bytes");

    unsigned char r[DICT_HASH_LEN], t[DICT_HASH_LEN];
    put(s, K3, 8, 10, r); /* 4: the capacity */
    put(s, K3, 9, 10, t); /* 5: the oldest of any pattern goes (B) */
    ok(!has(s, b) && has(s, x) && has(s, q) && has(s, r) && has(s, t),
       "over the capacity: the oldest of all goes");
    is_int(dict_store_count(s, K1, NULL), 1, "pattern 1 keeps 1");
    dict_store_close(s);
}

static void test_usable(const char *dir)
{
    struct dict_store *s = open_store(dir, 4, 1 << 20, 16);
    struct dict_pattern app, css;
    char err[ERRLEN];
    dict_pattern_init(&app, "t:1", "/assets/app-*.js", NULL, 0, NULL, err, sizeof(err));
    dict_pattern_init(&css, "t:2", "/assets/*.css", NULL, 0, NULL, err, sizeof(err));
    unsigned char h[DICT_HASH_LEN], other[DICT_HASH_LEN];
    put(s, app.key, 40, 500, h);
    put(s, css.key, 41, 500, other);
    struct dict_entry e;
    ok(dict_usable(s, &app, sv("/assets/app-v2.js"), h, &e) && e.size == 500,
       "a path of the pattern, a dictionary of the pattern");
    ok(!dict_usable(s, &app, sv("/assets/lib-v2.js"), h, &e), "a path outside the pattern");
    ok(!dict_usable(s, &app, sv("/assets/app-v2.js"), other, &e),
       "a dictionary stored for another pattern");
    memset(other, 0, sizeof(other));
    ok(!dict_usable(s, &app, sv("/assets/app-v2.js"), other, &e), "an unknown dictionary");
    /* The same pattern over another site's tree: another key, and the first site's versions
     * are not its dictionaries. */
    struct dict_pattern a_site, b_site;
    dict_pattern_init(&a_site, "t:3", "/assets/app-*.js", NULL, 0, NULL, err, sizeof(err));
    dict_pattern_init(&b_site, "t:4", "/assets/app-*.js", NULL, 0, NULL, err, sizeof(err));
    dict_pattern_scope(&a_site, "/srv/a");
    dict_pattern_scope(&b_site, "/srv/b");
    ok(a_site.key != b_site.key && a_site.key != app.key, "the scope is part of the key");
    put(s, a_site.key, 42, 500, h);
    ok(dict_usable(s, &a_site, sv("/assets/app-v2.js"), h, &e), "a version of this site");
    ok(!dict_usable(s, &b_site, sv("/assets/app-v2.js"), h, &e),
       "the same pattern's version of another site");
    dict_pattern_free(&a_site);
    dict_pattern_free(&b_site);
    dict_pattern_free(&app);
    dict_pattern_free(&css);
    dict_store_close(s);

    char file[400], msg[ERRLEN] = "";
    snprintf(file, sizeof(file), "%s/plain-file", dir);
    close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    struct dict_store_limits lim = { 1, 1, 1 };
    ok(!dict_store_open(file, &lim, msg, sizeof(msg)) && strstr(msg, "cannot open"),
       "a file where the directory should be: %s", msg);
    lim.capacity = 0;
    ok(!dict_store_open(dir, &lim, msg, sizeof(msg)) && strstr(msg, "invalid bounds"),
       "no capacity: %s", msg);
}

static void test_store_restart(const char *dir)
{
    struct dict_store *s = open_store(dir, 3, 1 << 20, 16);
    unsigned char h[4][DICT_HASH_LEN];
    for (int i = 0; i < 3; i++)
        put(s, K1, 20 + (unsigned)i, 1000, h[i]);
    dict_store_close(s);
    /* Distinct mtimes, a second apart: the order that survives the restart. (Sleeping between
     * the writes is not enough: file times come from a clock that may tick every 10 ms.) */
    for (int i = 0; i < 3; i++) {
        char path[600];
        file_of(dir, K1, h[i], path, sizeof(path));
        struct timespec t[2] = { { time(NULL) - 60 + i, 0 }, { time(NULL) - 60 + i, 0 } };
        utimensat(AT_FDCWD, path, t, 0);
    }
    char junk[600], tmp[600], fresh[600];
    snprintf(junk, sizeof(junk), "%s/README", dir);
    snprintf(tmp, sizeof(tmp), "%s/.dict-tmp-abcdef", dir);
    snprintf(fresh, sizeof(fresh), "%s/.dict-tmp-in-progress", dir);
    close(open(junk, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    close(open(tmp, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    close(open(fresh, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    struct timespec old[2] = { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } };
    utimensat(AT_FDCWD, tmp, old, 0);

    s = open_store(dir, 3, 1 << 20, 16);
    ok(s && has(s, h[0]) && has(s, h[1]) && has(s, h[2]), "reopened: all three found");
    ok(access(tmp, F_OK) < 0, "a leftover temporary file is removed");
    ok(access(fresh, F_OK) == 0, "a recent one may be another store's write: kept");
    ok(access(junk, F_OK) == 0, "a file not named like ours is left alone");
    void *data = NULL;
    size_t len = 0;
    char *want = make_text(1000, 21);
    ok(dict_store_load(s, h[1], &data, &len) == 0 && len == 1000 && !memcmp(data, want, len),
       "loaded, checked");
    free(data);
    free(want);
    put(s, K1, 23, 1000, h[3]);
    ok(!has(s, h[0]) && has(s, h[3]), "the order survived: the oldest from before goes first");
    dict_store_close(s);

    s = open_store(dir, 1, 1 << 20, 16);
    ok(s && has(s, h[3]) && !has(s, h[1]) && !has(s, h[2]), "lower bounds: the newest stays");
    is_int(dict_store_count(s, K1, NULL), 1, "one of the pattern");
    dict_store_close(s);
    unlink(junk);
}

static void corrupt(const char *path, bool truncate_it)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (truncate_it) {
        if (ftruncate(fd, 10) < 0)
            perror("ftruncate");
    } else if (pwrite(fd, "X", 1, 500) != 1) {
        perror("pwrite");
    }
    close(fd);
}

static void test_store_corruption(const char *dir)
{
    struct dict_store *s = open_store(dir, 4, 1 << 20, 16);
    unsigned char a[DICT_HASH_LEN], b[DICT_HASH_LEN], c[DICT_HASH_LEN];
    put(s, K2, 30, 1000, a);
    put(s, K2, 31, 1000, b);
    put(s, K2, 32, 1000, c);
    char pa[600], pb[600], pc[600];
    file_of(dir, K2, a, pa, sizeof(pa));
    file_of(dir, K2, b, pb, sizeof(pb));
    file_of(dir, K2, c, pc, sizeof(pc));
    corrupt(pa, false);
    corrupt(pb, true);
    unlink(pc);
    void *data = NULL;
    size_t len;
    is_int(dict_store_load(s, a, &data, &len), -EBADMSG, "a changed byte: -EBADMSG");
    ok(!has(s, a) && access(pa, F_OK) < 0, "dropped and deleted");
    is_int(dict_store_load(s, b, &data, &len), -EBADMSG, "truncated: -EBADMSG");
    ok(!has(s, b) && access(pb, F_OK) < 0, "dropped and deleted");
    is_int(dict_store_load(s, c, &data, &len), -ENOENT, "deleted behind our back: -ENOENT");
    ok(!has(s, c), "dropped");
    is_int(dict_store_load(s, a, &data, &len), -ENOENT, "unknown: -ENOENT");
    ok(data == NULL, "nothing returned");
    is_int(put(s, K2, 30, 1000, a), 0, "stored again");
    corrupt(pa, false);
    dict_store_close(s);
    s = open_store(dir, 4, 1 << 20, 16);
    ok(has(s, a), "a corrupt file is indexed by name after a restart");
    is_int(dict_store_load(s, a, &data, &len), -EBADMSG, "but never used: checked on load");
    ok(!has(s, a) && access(pa, F_OK) < 0, "and deleted");
    dict_store_close(s);
}

/* Request threads look up while compressor threads store and evict: a lookup may miss, but
 * what it finds is always a whole, right entry (run it under ThreadSanitizer too). */
#define RACE_ROUNDS 10 /* each a put of 8 entries, most of them evicting: fsyncs */

struct race {
    struct dict_store *s;
    unsigned char known[8][DICT_HASH_LEN];
    _Atomic int stop;
    _Atomic long found, wrong;
};

static void *race_reader(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->stop))
        for (int i = 0; i < 8; i++) {
            struct dict_entry e;
            if (!dict_store_lookup(r->s, r->known[i], &e))
                continue;
            atomic_fetch_add(&r->found, 1);
            if (memcmp(e.hash, r->known[i], DICT_HASH_LEN) || e.size != 64 + (uint64_t)i ||
                e.pattern_key != K1 + (uint64_t)(i % 2))
                atomic_fetch_add(&r->wrong, 1);
        }
    return NULL;
}

static void *race_writer(void *arg)
{
    struct race *r = arg;
    for (int round = 0; round < RACE_ROUNDS; round++)
        for (int i = 0; i < 8; i++) {
            char *t = make_text(64 + (size_t)i, 100 + (unsigned)i);
            dict_store_put(r->s, K1 + (uint64_t)(i % 2), t, 64 + (size_t)i, NULL);
            free(t);
        }
    return NULL;
}

static void test_store_threads(const char *dir)
{
    struct race r = { .s = open_store(dir, 2, 1 << 20, 4) };
    for (int i = 0; i < 8; i++) {
        char *t = make_text(64 + (size_t)i, 100 + (unsigned)i);
        sha256(t, 64 + (size_t)i, r.known[i]);
        free(t);
    }
    pthread_t rd[2], wr[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&rd[i], NULL, race_reader, &r);
    for (int i = 0; i < 2; i++)
        pthread_create(&wr[i], NULL, race_writer, &r);
    for (int i = 0; i < 2; i++)
        pthread_join(wr[i], NULL);
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(rd[i], NULL);
    ok(atomic_load(&r.found) > 0, "lookups found entries while they changed (%ld)",
       atomic_load(&r.found));
    is_int(atomic_load(&r.wrong), 0, "never a torn or wrong entry");
    is_int(dict_store_count(r.s, 0, NULL), 4, "the bounds held: 2 per pattern");
    dict_store_close(r.s);
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
}

int main(void)
{
    char base[] = "/tmp/test_dictionary.XXXXXX";
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    char d1[300], d2[300], d3[300], d4[300], d5[300];
    snprintf(d1, sizeof(d1), "%s/bounds", base);
    snprintf(d2, sizeof(d2), "%s/restart", base);
    snprintf(d3, sizeof(d3), "%s/corrupt", base);
    snprintf(d4, sizeof(d4), "%s/threads", base);
    snprintf(d5, sizeof(d5), "%s/usable", base);

    test_available();
    test_accept();
    test_pattern_header();
    test_pattern_refused();
    test_pattern_match();
    test_window();
    test_header_and_roundtrip();
    test_encode_fd(base);
    test_store_bounds(d1);
    test_store_restart(d2);
    test_store_corruption(d3);
    test_store_threads(d4);
    test_usable(d5);
    rm_tree(base);
    return done_testing();
}
