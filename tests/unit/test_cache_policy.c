/* test_cache_policy.c — unit tests for handlers/static/cache_policy.c: which names carry a
 * content hash, and the class of a file (cache_policy.h has the rule). */
#include "static/cache_policy.h"
#include "test.h"

#include <string.h>

static bool fp(const char *name)
{
    return cache_name_fingerprinted(name, strlen(name));
}

static void test_fingerprinted(void)
{
    static const char *const yes[] = {
        "app.3f9a1c2b.js",              /* webpack's [name].[contenthash:8] */
        "index-BZ1x2y3Z.js",            /* Vite / Rollup */
        "index-B_x3-9aZ.js",            /* a Rollup hash holding '-' and '_' */
        "vendor-9fA2bC7d.css",
        "main-KQ7ZJ4HB.js",             /* esbuild's base32 */
        "main.min.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.css", /* Hugo */
        "chunk.5E2A9B1C.js",            /* upper-case hex */
        "logo.a1b2c3d4e5f6.svg",
        "font.8c5d6e7f.woff2",
    };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        ok(fp(yes[i]), "%s is fingerprinted", yes[i]);
}

static void test_not_fingerprinted(void)
{
    static const char *const no[] = {
        "jquery-3.7.1.min.js",
        "polyfills-legacy.js",
        "bootstrap.bundle.min.js",
        "2024-report.pdf",
        "photo-1920x1080.jpg",          /* lower case, not hex: a size, not a hash */
        "IMG_20240101_123456.jpg",      /* digits only */
        "report-20240101.pdf",
        "font-awesome-4.7.0.min.css",
        "python-3.12.0b1-amd64.deb",
        "deadbeefcafe.js",              /* the whole first part is a name */
        "app.deadbeef.js",              /* hex letters but no digit */
        "app.1234567.js",               /* 7 characters */
        "app.3f9a1c2b",                 /* the last part is the extension */
        "3f9a1c2b",
        "README",
        "a.b.c.d.e",
        "",
        "style.v2release.css",          /* lower-case word with a digit, not hex */
        "main-KQ7ZJ4HBX.js",            /* 9 characters of base32, one case: not esbuild's */
        "invoice-INV2024001.pdf",       /* upper case and digits, not base32 (0, 1) */
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        ok(!fp(no[i]), "%s is not fingerprinted", no[i]);
}

static void test_classify(void)
{
    const char *html = "text/html; charset=utf-8";
    is_int(cache_classify("/", 1, html), CACHE_REVALIDATE, "the index page: no-cache");
    is_int(cache_classify("/a/app.3f9a1c2b.html", 20, html), CACHE_REVALIDATE,
           "HTML is revalidated even with a hash in its name");
    is_int(cache_classify("/assets/index-BZ1x2y3Z.js", 25, "text/javascript"), CACHE_IMMUTABLE,
           "an asset with a hash: immutable");
    is_int(cache_classify("/js/jquery-3.7.1.min.js", 23, "text/javascript"), CACHE_OTHER,
           "a versioned library: left to the configuration");
    is_int(cache_classify("/app.3f9a1c2b/x.js", 18, "text/javascript"), CACHE_OTHER,
           "only the file's own name counts, not a directory's");
    is_int(cache_classify("/robots.txt", 11, NULL), CACHE_OTHER, "no type, no hash");
}

int main(void)
{
    test_fingerprinted();
    test_not_fingerprinted();
    test_classify();
    return done_testing();
}
