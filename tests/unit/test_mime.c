/* test_mime.c — unit tests for handlers/static/mime.c (run from the repository root) */
#include "static/mime.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UTF8 "; charset=utf-8"

static const char *look(const struct mime_table *t, const char *name)
{
    return mime_lookup(t, name, strlen(name));
}

/* Write text to a fresh temporary file; returns its path in buf. */
static const char *write_temp(char *buf, size_t cap, const char *text)
{
    int fd;

    snprintf(buf, cap, "/tmp/lfhttpd_test_mime_XXXXXX");
    fd = mkstemp(buf);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror("temp file");
        exit(2);
    }
    close(fd);
    return buf;
}

static void test_builtin(void)
{
    char err[256] = "";
    struct mime_table *t = mime_table_load(NULL, err, sizeof(err));

    ok(t != NULL, "built-in table loads (%s)", err);
    if (t == NULL)
        return;
    is_str(look(t, "index.html"), "text/html" UTF8, "index.html");
    is_str(look(t, "INDEX.HTML"), "text/html" UTF8, "INDEX.HTML (case-insensitive)");
    is_str(look(t, "Page.HtM"), "text/html" UTF8, "Page.HtM");
    is_str(look(t, "/a/b/style.css"), "text/css" UTF8, "path with directories");
    is_str(look(t, "app.js"), "text/javascript" UTF8, "js is text/javascript (RFC 9239)");
    is_str(look(t, "mod.mjs"), "text/javascript" UTF8, "mjs");
    is_str(look(t, "data.json"), "application/json" UTF8, "json has charset");
    is_str(look(t, "doc.jsonld"), "application/ld+json" UTF8, "+json type has charset");
    is_str(look(t, "feed.atom"), "application/atom+xml" UTF8, "+xml type has charset");
    is_str(look(t, "logo.svg"), "image/svg+xml" UTF8, "svg has charset");
    is_str(look(t, "site.webmanifest"), "application/manifest+json" UTF8, "webmanifest");
    is_str(look(t, "a.txt"), "text/plain" UTF8, "txt");
    is_str(look(t, "a.png"), "image/png", "png has no charset");
    is_str(look(t, "a.jpg"), "image/jpeg", "jpg");
    is_str(look(t, "a.JPEG"), "image/jpeg", "JPEG");
    is_str(look(t, "a.avif"), "image/avif", "avif");
    is_str(look(t, "f.woff2"), "font/woff2", "woff2");
    is_str(look(t, "m.wasm"), "application/wasm", "wasm");
    is_str(look(t, "7z.7z"), "application/x-7z-compressed", "7z (digit-first extension)");
    is_str(look(t, "a.tar.gz"), "application/gzip", "a.tar.gz -> gz type");
    is_str(look(t, "a.zst"), "application/zstd", "zst (last entry)");
    is_str(look(t, "README"), NULL, "no extension -> NULL");
    is_str(look(t, ".bashrc"), NULL, "dot-file -> NULL");
    is_str(look(t, "/home/.bashrc"), NULL, "dot-file in a path -> NULL");
    is_str(look(t, "/.config/x.json"), "application/json" UTF8, "dot directory, real extension");
    is_str(look(t, "file."), NULL, "trailing dot -> NULL");
    is_str(look(t, "/a.d/README"), NULL, "dot in a directory name only -> NULL");
    is_str(look(t, "a.unknownext"), NULL, "unknown extension -> NULL");
    is_str(look(t, "a.htmlx"), NULL, "longer than a known extension -> NULL");
    is_str(look(t, "a.ht"), NULL, "prefix of a known extension -> NULL");
    is_str(look(t, ""), NULL, "empty name -> NULL");
    is_str(mime_lookup(t, "index.html.bak", 10), "text/html" UTF8, "len is respected");
    is_str(mime_lookup(NULL, "x.css", 5), "text/css" UTF8, "NULL table uses built-in");

    /* every extension the built-in table must know */
    {
        static const char *const exts[] = {
            "html", "htm", "css", "js", "mjs", "json", "map", "txt", "md", "xml", "svg",
            "svgz", "png", "jpg", "jpeg", "gif", "webp", "avif", "ico", "bmp", "tif", "tiff",
            "woff", "woff2", "ttf", "otf", "eot", "wasm", "pdf", "zip", "gz", "tgz", "br",
            "zst", "tar", "bz2", "xz", "7z", "mp3", "mp4", "m4a", "m4v", "webm", "ogg", "oga",
            "ogv", "opus", "wav", "flac", "mov", "mpeg", "csv", "ics", "vtt", "webmanifest",
            "manifest", "atom", "rss", "jsonld", "epub", "apk", "exe", "bin", "iso", "dmg",
            "deb", "rpm", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "sh", "py", "rb",
            "c", "h",
        };
        size_t missing = 0;

        for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
            char name[32];

            snprintf(name, sizeof(name), "f.%s", exts[i]);
            if (look(t, name) == NULL || look(NULL, name) == NULL) {
                printf("# missing built-in extension %s\n", exts[i]);
                missing++;
            }
        }
        is_int(missing, 0, "built-in table covers all required extensions");
    }
    mime_table_free(t);
    mime_table_free(NULL);
}

static void test_conf_file(void)
{
    char err[256] = "";
    struct mime_table *t = mime_table_load("conf/mime.types", err, sizeof(err));

    ok(t != NULL, "conf/mime.types loads (%s)", err);
    if (t == NULL)
        return;
    is_str(look(t, "index.html"), "text/html" UTF8, "conf: html");
    is_str(look(t, "x.shtml"), "text/html" UTF8, "conf: extra extension");
    is_str(look(t, "x.yml"), "text/yaml" UTF8, "conf: text/yaml gets charset");
    is_str(look(t, "x.xhtml"), "application/xhtml+xml" UTF8, "conf: +xml gets charset");
    is_str(look(t, "x.mkv"), "video/x-matroska", "conf: mkv");
    is_str(look(t, "x.WOFF2"), "font/woff2", "conf: case-insensitive");
    mime_table_free(t);

    /* the system table, if present, must parse too (real-world file with odd extensions) */
    if (access("/etc/mime.types", R_OK) == 0) {
        t = mime_table_load("/etc/mime.types", err, sizeof(err));
        ok(t != NULL, "/etc/mime.types loads (%s)", t ? "ok" : err);
        mime_table_free(t);
    } else {
        ok(1, "/etc/mime.types not present (skipped)");
    }
}

static void test_overrides(void)
{
    char path[64], err[256] = "";
    struct mime_table *t;

    write_temp(path, sizeof(path),
               "# comment line\n"
               "\n"
               "   \t  \n"
               "text/x-custom  foo   HTML\t# trailing comment css\n"
               "application/x-first dup\n"
               "application/x-second dup\n"
               "application/vnd.foo+json  fj\n"
               "application/x-nothing\n"
               "application/x-multi tar.gz\n"
               "image/PNG png\r\n");
    t = mime_table_load(path, err, sizeof(err));
    ok(t != NULL, "override file loads (%s)", err);
    if (t != NULL) {
        is_str(look(t, "a.foo"), "text/x-custom" UTF8, "new extension, text gets charset");
        is_str(look(t, "a.html"), "text/x-custom" UTF8, "file overrides built-in");
        is_str(look(t, "a.css"), "text/css" UTF8, "comment not parsed; built-in fallback");
        is_str(look(t, "a.dup"), "application/x-second", "later line wins");
        is_str(look(t, "a.fj"), "application/vnd.foo+json" UTF8, "+json suffix gets charset");
        is_str(look(t, "a.png"), "image/PNG", "CRLF line endings ok");
        is_str(look(t, "a.gz"), "application/gzip", "multi-dot extension ignored");
        is_str(look(t, "a.wasm"), "application/wasm", "built-in fallback");
        mime_table_free(t);
    }
    unlink(path);

    write_temp(path, sizeof(path), "text/plain txt\n# ok\nnot-a-type foo\n");
    t = mime_table_load(path, err, sizeof(err));
    ok(t == NULL, "bad media type rejected");
    {
        char expected[128];

        snprintf(expected, sizeof(expected), "%s:3: invalid media type", path);
        is_str(err, expected, "error names FILE:LINE");
    }
    unlink(path);

    write_temp(path, sizeof(path), "text/plain txt a/b\n");
    t = mime_table_load(path, err, sizeof(err));
    ok(t == NULL, "extension with '/' rejected");
    ok(strstr(err, ":1: invalid extension") != NULL, "extension error text: %s", err);
    unlink(path);

    write_temp(path, sizeof(path), "text//plain txt\n");
    ok(mime_table_load(path, err, sizeof(err)) == NULL, "text//plain rejected");
    unlink(path);
    write_temp(path, sizeof(path), "text/ txt\n");
    ok(mime_table_load(path, err, sizeof(err)) == NULL, "empty subtype rejected");
    unlink(path);
    write_temp(path, sizeof(path), "text/pla\"in txt\n");
    ok(mime_table_load(path, err, sizeof(err)) == NULL, "non-token media type rejected");
    unlink(path);

    /* an empty file is fine: built-in only */
    write_temp(path, sizeof(path), "");
    t = mime_table_load(path, err, sizeof(err));
    ok(t != NULL && look(t, "a.js") != NULL, "empty file: built-in table only");
    mime_table_free(t);
    unlink(path);

    /* a tiny error buffer truncates but stays NUL-terminated; NULL err is allowed */
    write_temp(path, sizeof(path), "bogus\n");
    {
        char small[8];

        memset(small, 'x', sizeof(small));
        ok(mime_table_load(path, small, sizeof(small)) == NULL && small[7] == '\0',
           "small error buffer is NUL-terminated");
        ok(mime_table_load(path, NULL, 0) == NULL, "NULL err buffer allowed");
    }
    unlink(path);
}

static void test_missing(void)
{
    char err[256] = "";
    struct mime_table *t = mime_table_load("/nonexistent/mime.types", err, sizeof(err));

    ok(t == NULL, "missing file -> NULL");
    is_str(err, "/nonexistent/mime.types: cannot open: No such file or directory",
           "missing file error text");
}

int main(void)
{
    test_builtin();
    test_conf_file();
    test_overrides();
    test_missing();
    return done_testing();
}
