/* test_path.c — unit tests for server/http/path.c */
#include "http/path.h"
#include "test.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Normalise a C string with a generous buffer; expect success and the given result. */
static void norm_ok(const char *in, const char *expected)
{
    char out[256];
    size_t n = 12345;
    int rc = path_normalize(in, strlen(in), out, sizeof(out), &n);

    if (rc != 0) {
        ok(0, "normalize \"%s\" -> \"%s\"", in, expected);
        printf("# got rc %d expected 0\n", rc);
        return;
    }
    if (!is_mem(out, n, expected, in))
        return;
    if (out[n] != '\0')
        ok(0, "normalize \"%s\" NUL-terminated", in);
}

/* Normalise a byte string and expect the error rc. */
static void norm_err_mem(const char *in, size_t len, int rc, const char *name)
{
    char out[256];
    size_t n = 0;

    is_int(path_normalize(in, len, out, sizeof(out), &n), rc, name);
}

static void norm_err(const char *in, int rc)
{
    char name[300];

    snprintf(name, sizeof(name), "reject \"%s\"", in);
    norm_err_mem(in, strlen(in), rc, name);
}

static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t m = strlen(suffix);

    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Straightforward reference implementation: decode into a buffer, then a forward segment
 * stack. Returns 0 / -EINVAL (no capacity limit beyond out's 256 bytes). */
static int reference_normalize(const char *in, size_t len, char *out, size_t *out_len)
{
    char dec[256];
    size_t dn = 0, seg_start[128], seg_len[128], nseg = 0, n = 0;
    bool trailing;

    if (len == 0 || in[0] != '/' || len >= sizeof(dec))
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        unsigned c = (unsigned char)in[i];

        if (c == '%') {
            unsigned v;

            if (i + 2 >= len || sscanf((char[3]){in[i + 1], in[i + 2], 0}, "%2x", &v) != 1 ||
                !strchr("0123456789abcdefABCDEF", in[i + 1]) ||
                !strchr("0123456789abcdefABCDEF", in[i + 2]))
                return -EINVAL;
            c = v;
            i += 2;
        }
        if (c < 0x20 || c == 0x7f || c == '\\')
            return -EINVAL;
        dec[dn++] = (char)c;
    }
    trailing = dec[dn - 1] == '/';
    for (size_t i = 0; i < dn;) {
        size_t j = i;

        while (j < dn && dec[j] != '/')
            j++;
        if (j - i == 2 && dec[i] == '.' && dec[i + 1] == '.') {
            if (nseg == 0)
                return -EINVAL;
            nseg--;
        } else if (j - i > 0 && !(j - i == 1 && dec[i] == '.')) {
            seg_start[nseg] = i;
            seg_len[nseg++] = j - i;
        }
        if (j == dn && j > i && dec[i] == '.' && (j - i == 1 || (j - i == 2 && dec[i + 1] == '.')))
            trailing = true;
        i = j + 1;
    }
    for (size_t k = 0; k < nseg; k++) {
        out[n++] = '/';
        memcpy(out + n, dec + seg_start[k], seg_len[k]);
        n += seg_len[k];
    }
    if (nseg == 0 || trailing)
        out[n++] = '/';
    out[n] = '\0';
    *out_len = n;
    return 0;
}

/* Random inputs from a hostile alphabet: no crash, and every success is well-formed. */
static void property_test(void)
{
    static const char alphabet[] = "/.%2efa\\0";
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    char in[40], out[64], ref[256];
    size_t bad = 0, mismatch = 0, successes = 0;

    for (int iter = 0; iter < 100000; iter++) {
        size_t len = (size_t)(xorshift64(&seed) % sizeof(in)) + 1, n = 0, rn = 0;
        size_t cap = xorshift64(&seed) % 8 == 0 ? 4 : sizeof(out);
        char *heap;
        int rc, rrc;

        for (size_t i = 0; i < len; i++)
            in[i] = alphabet[xorshift64(&seed) % (sizeof(alphabet) - 1)];
        if (xorshift64(&seed) % 4 != 0)
            in[0] = '/';
        /* small caps exercise -ENAMETOOLONG; outputs never exceed the input length */
        /* exact-size heap copy so that ASan catches any read beyond in + len */
        heap = malloc(len);
        if (heap == NULL)
            abort();
        memcpy(heap, in, len);
        rc = path_normalize(heap, len, out, cap, &n);
        free(heap);
        rrc = reference_normalize(in, len, ref, &rn);
        if (rrc == 0 && rn + 1 > cap)
            rrc = -ENAMETOOLONG;
        if (rc != rrc || (rc == 0 && (n != rn || memcmp(out, ref, n) != 0))) {
            if (mismatch++ < 5)
                printf("# mismatch for \"%.*s\": rc %d vs reference %d\n", (int)len, in, rc,
                       rrc);
        }
        if (rc == -EINVAL || rc == -ENAMETOOLONG)
            continue;
        if (rc != 0) {
            bad++;
            continue;
        }
        successes++;
        if (n == 0 || out[0] != '/' || out[n] != '\0' || strlen(out) != n ||
            memmem(out, n, "/../", 4) || memmem(out, n, "/./", 3) || memmem(out, n, "//", 2) ||
            ends_with(out, n, "/..") || ends_with(out, n, "/.") || memchr(out, '\\', n)) {
            if (bad++ < 5)
                printf("# bad output \"%.*s\" for input \"%.*s\"\n", (int)n, out, (int)len, in);
        }
    }
    is_int(bad, 0, "property: 100000 random inputs give well-formed results");
    is_int(mismatch, 0, "property: results agree with a naive reference implementation");
    ok(successes > 1000, "property: %zu successes (enough to be meaningful)", successes);
}

static void test_normalize(void)
{
    char out[64];
    size_t n = 0;

    /* plain and collapsing */
    norm_ok("/", "/");
    norm_ok("/index.html", "/index.html");
    norm_ok("/a/b/c", "/a/b/c");
    norm_ok("//a//b/", "/a/b/");
    norm_ok("///", "/");
    norm_ok("/a/b/", "/a/b/");
    /* dot segments */
    norm_ok("/./././", "/");
    norm_ok("/.", "/");
    norm_ok("/a/.", "/a/");
    norm_ok("/a/./b", "/a/b");
    norm_ok("/a/b/..", "/a/");
    norm_ok("/a/b/../", "/a/");
    norm_ok("/a/b/../c", "/a/c");
    norm_ok("/a/..", "/");
    norm_ok("/a/../", "/");
    norm_ok("/a/b/../../c/./d/", "/c/d/");
    norm_ok("/a/b/c/../../..", "/");
    norm_ok("/...", "/...");
    norm_ok("/a/.../b", "/a/.../b");
    norm_ok("/..a/b..", "/..a/b..");
    norm_ok("/.hidden", "/.hidden");
    /* percent-decoding */
    norm_ok("/%41%62c", "/Abc");
    norm_ok("/a%20b", "/a b");
    norm_ok("/%C3%A9t%c3%a9", "/\xc3\xa9t\xc3\xa9");
    norm_ok("/\xc3\xa9", "/\xc3\xa9");
    norm_ok("/a%2fb", "/a/b");
    norm_ok("/a%2Fb%2F", "/a/b/");
    norm_ok("/a/%2e", "/a/");
    norm_ok("/a/b/%2e%2E", "/a/");
    norm_ok("/a/b/.%2e/c", "/a/c");
    norm_ok("/%25", "/%");
    norm_ok("/%2541", "/%41");
    norm_ok("/a+b", "/a+b");
    norm_ok("/a%2f..%2fb", "/b");

    /* traversal attempts */
    norm_err("/../etc/passwd", -EINVAL);
    norm_err("/..", -EINVAL);
    norm_err("/../", -EINVAL);
    norm_err("/%2e%2e/x", -EINVAL);
    norm_err("/%2E%2E%2Fx", -EINVAL);
    norm_err("/a/../../b", -EINVAL);
    norm_err("/a/%2e%2e/%2e%2e/b", -EINVAL);
    norm_err("/..%2f", -EINVAL);
    norm_err("/a%2f..%2f..%2fetc", -EINVAL);
    norm_err("/./../a", -EINVAL);
    norm_err("//../a", -EINVAL);
    norm_err("/a/b/../../..", -EINVAL);
    norm_err("/../a/..", -EINVAL);

    /* malformed */
    norm_err("", -EINVAL);
    norm_err("a/b", -EINVAL);
    norm_err("%2fa", -EINVAL);
    norm_err("*", -EINVAL);
    norm_err("/a%G1", -EINVAL);
    norm_err("/a%1G", -EINVAL);
    norm_err("/a%4", -EINVAL);
    norm_err("/a%", -EINVAL);
    norm_err("/%%41", -EINVAL);
    norm_err("/a%00b", -EINVAL);
    norm_err("/a%0a", -EINVAL);
    norm_err("/a%7f", -EINVAL);
    norm_err("/a%7F", -EINVAL);
    norm_err("/a\\b", -EINVAL);
    norm_err("/a%5cb", -EINVAL);
    norm_err("/a%5C..%5C..%5Cetc", -EINVAL);
    norm_err("/a\tb", -EINVAL);
    norm_err("/a\x7f", -EINVAL);
    norm_err_mem("/a\0b", 4, -EINVAL, "reject raw NUL byte");
    norm_err_mem("/a\rb", 4, -EINVAL, "reject raw CR");

    /* never reads past len: "/a%41" truncated to "/a%4" is an error, "/a/.." cut to "/a/." */
    norm_err_mem("/a%41", 4, -EINVAL, "truncated escape at len boundary");
    is_int(path_normalize("/a/..", 4, out, sizeof(out), &n), 0, "len boundary respected");
    is_mem(out, n, "/a/", "len boundary result");

    /* `plain`: true only for a path taken as it came, which then has no dot segment */
    {
        static const struct { const char *in; int plain; } pl[] = {
            { "/a/b.txt", 1 }, { "/", 1 }, { "/dir/", 1 }, { "/a.b/c", 1 },
            { "/.git/config", 0 }, { "/a/.hidden", 0 }, { "/a//b", 0 }, { "/a/./b", 0 },
            { "/a/../b", 0 }, { "/%41", 0 }, { "/a/%2ehidden", 0 },
        };
        for (size_t k = 0; k < sizeof(pl) / sizeof(pl[0]); k++) {
            bool plain = !pl[k].plain;
            int rc = path_normalize_plain(pl[k].in, strlen(pl[k].in), out, sizeof(out), &n,
                                          &plain);
            is_int(rc, 0, pl[k].in);
            is_int(plain, pl[k].plain, pl[k].in);
            if (plain)
                is_int(path_has_hidden_segment(out, n), 0, "a plain path has no dot segment");
        }
    }

    /* output capacity */
    is_int(path_normalize("/abc", 4, out, 5, &n), 0, "exact fit (4 + NUL in 5)");
    is_mem(out, n, "/abc", "exact fit result");
    is_int(path_normalize("/abc", 4, out, 4, &n), -ENAMETOOLONG, "one byte short");
    is_int(path_normalize("/", 1, out, 1, &n), -ENAMETOOLONG, "cap 1 cannot hold \"/\"");
    is_int(path_normalize("/", 1, out, 0, &n), -ENAMETOOLONG, "cap 0");
    is_int(path_normalize("/", 1, out, 2, &n), 0, "cap 2 holds \"/\"");
    is_int(path_normalize("/../a", 5, out, 0, &n), -EINVAL, "climb wins over cap 0");
    is_int(path_normalize("/x/../../aaaaaaaa", 17, out, 4, &n), -EINVAL,
           "climb wins over small cap");
    is_int(path_normalize("/abc/", 5, out, 6, &n), 0, "trailing slash exact fit");
    is_int(path_normalize("/abc/", 5, out, 5, &n), -ENAMETOOLONG, "trailing slash one short");
    is_int(path_normalize("/a/bbbbbbbbbbbbbbbbbbbbbbbbbbbb/..", 34, out, 4, &n), 0,
           "long segment removed by '..' does not count against cap");
    is_mem(out, n, "/a/", "long segment removed result");
    is_int(path_normalize("/%41%42%43", 10, out, 5, &n), 0, "cap applies to decoded length");
    is_mem(out, n, "/ABC", "decoded length result");
    {
        char big[600];

        big[0] = '/';
        memset(big + 1, 'x', sizeof(big) - 1);
        is_int(path_normalize(big, sizeof(big), out, sizeof(out), &n), -ENAMETOOLONG,
               "overlong output");
    }
}

static void test_hidden(void)
{
    ok(path_has_hidden_segment("/.git/config", 12), "hidden: /.git/config");
    ok(path_has_hidden_segment("/a/.env", 7), "hidden: /a/.env");
    ok(path_has_hidden_segment("/a/b/.", 6), "hidden: /a/b/.");
    ok(!path_has_hidden_segment("/a/b.c/d", 8), "not hidden: /a/b.c/d");
    ok(!path_has_hidden_segment("/", 1), "not hidden: /");
    ok(!path_has_hidden_segment("/a/b", 4), "not hidden: /a/b");
    ok(!path_has_hidden_segment("/a/.env", 3), "hidden check respects len");
}

static void test_percent_decode(void)
{
    char out[32];
    size_t n = 0;

    is_int(path_percent_decode("a%20b+c", 7, out, sizeof(out), &n), 0, "decode query");
    is_str(out, "a b+c", "decode: '+' left alone");
    is_int(path_percent_decode("%2f%2F%e9", 9, out, sizeof(out), &n), 0, "decode any bytes");
    is_mem(out, n, "//\xe9", "decode result");
    is_int(path_percent_decode("", 0, out, sizeof(out), &n), 0, "decode empty");
    is_int(n, 0, "decode empty length");
    is_int(path_percent_decode("a%zz", 4, out, sizeof(out), &n), -EINVAL, "decode bad escape");
    is_int(path_percent_decode("a%4", 3, out, sizeof(out), &n), -EINVAL, "decode truncated");
    is_int(path_percent_decode("a%00", 4, out, sizeof(out), &n), -EINVAL, "decode %00");
    is_int(path_percent_decode("abcd", 4, out, 4, &n), -ENAMETOOLONG, "decode too long");
    is_int(path_percent_decode("abcd", 4, out, 5, &n), 0, "decode exact fit");
    is_int(path_percent_decode("", 0, out, 0, &n), -ENAMETOOLONG, "decode cap 0");
}

int main(void)
{
    test_normalize();
    test_hidden();
    test_percent_decode();
    property_test();
    return done_testing();
}
