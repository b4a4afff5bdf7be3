/* test_rules.c — unit tests for server/rules: patterns, the rule set's index (against a naive
 * scan), targets, the `_redirects` and `_headers` parsers and their messages.
 *
 * Linked with --wrap=malloc,calloc,realloc,aligned_alloc (the Makefile; alloc_count.h): matching and expanding must not
 * allocate, and the wrappers count every allocation of the library. */
#include "rules/rules.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_count.h"

/* ---- helpers ---- */

#define MAX_WARNINGS 8
static char warnings[MAX_WARNINGS][RULES_ERR_MAX];
static unsigned nwarnings;

static void collect_warning(void *arg, const char *msg)
{
    (void)arg;
    if (nwarnings < MAX_WARNINGS)
        snprintf(warnings[nwarnings], sizeof(warnings[0]), "%s", msg);
    nwarnings++;
}

static struct rules_diag diag = { .warn = collect_warning };

static struct rules_set *redirects(const char *text)
{
    nwarnings = 0;
    struct rules_set *s = rules_parse_redirects("_redirects", text, strlen(text), &diag);
    if (!s)
        printf("# load failed: %s\n", diag.error);
    return s;
}

static struct rules_set *headers(const char *text)
{
    nwarnings = 0;
    struct rules_set *s = rules_parse_headers("_headers", text, strlen(text), &diag);
    if (!s)
        printf("# load failed: %s\n", diag.error);
    return s;
}

/* What a request gets: "STATUS TARGET" (with '!' after a forced rule's status), "-" when no
 * rule matches, "STATUS error N" when the target cannot be expanded. */
static const char *outcome(const struct rules_set *s, const char *path, const char *q,
                           unsigned flags)
{
    static char buf[RULES_MAX_EXPANDED + 32];
    char target[RULES_MAX_EXPANDED];
    struct rules_match m;
    size_t n;

    if (!rules_match(s, path, strlen(path), q, q ? strlen(q) : 0, flags, &m))
        return "-";
    const struct rules_rule *r = &s->rule[m.rule];
    int rc = rules_expand(s, &m, path, q, q ? strlen(q) : 0, target, sizeof(target), &n);
    if (rc < 0)
        snprintf(buf, sizeof(buf), "%u%s error %d", r->status, r->force ? "!" : "", -rc);
    else
        snprintf(buf, sizeof(buf), "%u%s %s", r->status, r->force ? "!" : "", target);
    return buf;
}

static void gives(const struct rules_set *s, const char *path, const char *q,
                  const char *expected)
{
    char name[512];

    snprintf(name, sizeof(name), "%s%s%s -> %s", path, q ? "?" : "", q ? q : "", expected);
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?'; /* one TAP line per test */
    is_str(outcome(s, path, q, 0), expected, name);
}

/* The load of text fails with exactly message. */
static void refused(bool headers_file, const char *text, const char *message)
{
    struct rules_set *s = headers_file
        ? rules_parse_headers("_headers", text, strlen(text), &diag)
        : rules_parse_redirects("_redirects", text, strlen(text), &diag);

    ok(s == NULL, "refused: %s", message);
    if (s == NULL)
        is_str(diag.error, message, "  message");
    rules_free(s);
}

/* Headers of path, as "Name: value; ! Name; ..." in the order of rules_match_all. */
static const char *header_list(const struct rules_set *s, const char *path)
{
    static char buf[2048];
    uint32_t idx[RULES_MAX_HEADER_RULES];
    size_t n = rules_match_all(s, path, strlen(path), idx, RULES_MAX_HEADER_RULES), len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const struct rules_rule *r = &s->rule[idx[i]];
        struct rules_match m;
        if (!rules_match_rule(s, idx[i], path, strlen(path), NULL, 0, 0, &m))
            return "match_all gave a rule that does not match";
        for (unsigned h = 0; h < r->nheader; h++) {
            char v[512];
            size_t vn;
            if (!r->header[h].value)
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s! %s", len ? "; " : "",
                                        r->header[h].name);
            else if (rules_expand_header(s, &m, h, path, NULL, v, sizeof(v), &vn) == 0)
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s: %s",
                                        len ? "; " : "", r->header[h].name, v);
            else
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s: (refused)",
                                        len ? "; " : "", r->header[h].name);
        }
    }
    return buf;
}

/* ---- patterns ---- */

static bool pmatch(const char *pat, const char *path, const char *capname, const char *cap)
{
    struct pattern p;
    struct rules_names names = { 0 };
    struct rules_capture c[RULES_MAX_CAPTURES];
    const char *why;

    if (pattern_compile(&p, pat, strlen(pat), &names, &why) < 0) {
        printf("# %s: %s\n", pat, why);
        return false;
    }
    bool hit = pattern_match(&p, path, strlen(path), c);
    if (hit && capname) {
        int slot = -1;
        for (unsigned i = 0; i < names.count; i++)
            if (strcmp(names.name[i], capname) == 0)
                slot = (int)i;
        hit = slot >= 0 && c[slot].set && strlen(cap) == c[slot].len &&
              memcmp(path + c[slot].off, cap, c[slot].len) == 0;
        if (!hit && slot >= 0)
            printf("# %s on %s: %s = \"%.*s\"\n", pat, path, capname, (int)c[slot].len,
                   path + c[slot].off);
    }
    pattern_free(&p);
    return hit;
}

static void test_patterns(void)
{
    ok(pmatch("/about", "/about", NULL, NULL), "exact");
    ok(pmatch("/about", "/about/", NULL, NULL), "exact, trailing slash of the path ignored");
    ok(pmatch("/about/", "/about", NULL, NULL), "exact, trailing slash of the pattern ignored");
    ok(!pmatch("/about", "/About", NULL, NULL), "case-sensitive");
    ok(!pmatch("/about", "/about/x", NULL, NULL), "exact is not a prefix");
    ok(pmatch("/", "/", NULL, NULL), "root");
    ok(!pmatch("/", "/a", NULL, NULL), "root is exact");
    ok(pmatch("/old/*", "/old", "splat", ""), "splat: the prefix itself");
    ok(pmatch("/old/*", "/old/", "splat", ""), "splat: the prefix with '/'");
    ok(pmatch("/old/*", "/old/a/b", "splat", "a/b"), "splat: any depth");
    ok(pmatch("/old/*", "/old/a/b/", "splat", "a/b/"), "splat keeps a directory's '/'");
    ok(!pmatch("/old/*", "/older", NULL, NULL), "splat: not a byte prefix");
    ok(pmatch("/*", "/", "splat", ""), "root splat matches the root");
    ok(pmatch("/*", "/x/y", "splat", "x/y"), "root splat matches all");
    ok(pmatch("/news/:year/:slug", "/news/2004/hello", "slug", "hello"), "placeholders");
    ok(pmatch("/news/:year/:slug", "/news/2004/hello", "year", "2004"), "placeholders (2)");
    ok(!pmatch("/news/:year/:slug", "/news/2004", NULL, NULL), "placeholder needs a segment");
    ok(!pmatch("/news/:year", "/news/2004/x", NULL, NULL), "placeholder is one segment");
    ok(pmatch("/img/*.png", "/img/cat.png", "splat", "cat"), "glob in a segment");
    ok(pmatch("/img/*.png", "/img/.png", "splat", ""), "glob: empty run");
    ok(!pmatch("/img/*.png", "/img/a/cat.png", NULL, NULL), "glob does not cross '/'");
    ok(!pmatch("/img/*.png", "/img/cat.jpg", NULL, NULL), "glob suffix");
    ok(pmatch("/a/*/c", "/a/b/c", "splat", "b"), "middle '*' is one segment");
    ok(!pmatch("/a/*/c", "/a/b/x/c", NULL, NULL), "middle '*' is not two segments");
    ok(pmatch("/a/*-*.js", "/a/x-y-z.js", "splat", "x"), "two stars: the first run shortest");
    ok(pmatch("/assets/**/*.{js,css}", "/assets/a/b/c.js", "splat", "a/b"), "** and {..}");
    ok(pmatch("/assets/**/*.{js,css}", "/assets/x.css", "splat", ""), "** matches nothing");
    ok(!pmatch("/assets/**/*.{js,css}", "/assets/a/b.png", NULL, NULL), "{..}: no other");
    ok(!pmatch("/assets/**/*.{js,css}", "/assetsx/a.js", NULL, NULL), "** after a literal");
    ok(pmatch("/**/index.html", "/a/b/index.html", "splat", "a/b"), "leading **");
    ok(pmatch("/**/x/**/y", "/x/a/x/b/y", NULL, NULL), "two **: backtracking");
    ok(pmatch("/{en,de}/:page", "/de/home", "page", "home"), "alternatives of a segment");
    ok(pmatch("/a/{,min.}app.js", "/a/app.js", NULL, NULL), "an empty alternative");
    ok(pmatch("/authors/c%C3%A9line", "/authors/c\xc3\xa9line", NULL, NULL),
       "the pattern is percent-decoded, the path is decoded");
    ok(pmatch("/a//b", "/a/b", NULL, NULL), "empty segments of a pattern are dropped");
    ok(!pmatch("/a", "", NULL, NULL) && !pmatch("/a", "a", NULL, NULL), "a path has a '/'");
    ok(pmatch("/x/:a", "/x/a:b", "a", "a:b"), "':' inside a value");
    ok(pmatch("/x:y/z", "/x:y/z", NULL, NULL), "':' inside a literal segment");
    /* the tail test: what a path must end with */
    ok(pmatch("/**/z", "/a/z/", "splat", "a"), "tail: a literal last segment, path with '/'");
    ok(!pmatch("/**/z", "/a/yz", NULL, NULL), "tail: a literal last segment is whole");
    ok(pmatch("/**/z", "/z", "splat", ""), "tail: the whole path");
    ok(pmatch("/**/a*", "/q/ab", "splat", "q"), "tail: a glob ending in '*' has none");
    ok(pmatch("/**/*b.c", "/q/xb.c", NULL, NULL), "tail: the glob's end after its last '*'");
    ok(!pmatch("/**/*b.c", "/q/xb.cc", NULL, NULL), "tail: a longer end");
    ok(!pmatch("/**/x", "/", NULL, NULL), "tail: longer than the path");
    ok(pmatch("/{a,b}/**/{c,dd}", "/b/x/dd", "splat", "x"), "tail of each alternative");
}

/* ---- `_redirects`: documented examples, as behaviour ---- */

static void test_netlify_examples(void)
{
    struct rules_set *s = redirects(
        "# Redirects from what the browser requests to what we serve, in the order of the "
        "documentation, each example as its page writes it\n"
        "/home              /\n"
        "/blog/my-post.php  /blog/my-post\n"
        "/news              /blog\n"
        "/cuties            https://www.petsofnetlify.com\n"
        "/authors/c%C3%A9line /authors/about-c%C3%A9line\n"
        "\n"
        "/old-page /new-page 302\n"
        "/news/*  /blog/:splat\n"
        "/talks/:month/:date/:year/:slug  /events/:year/:month/:date/:slug\n"
        "/store id=:id  /blog/:id  301\n"
        "/articles id=:id tag=:tag /posts/:tag/:id 301\n"
        "/things type=photos  /photos  302\n"
        "/en/*  /en/404.html  404\n"
        "/app/*  /app/index.html  200!\n"
        "/  /anz  302  Country=au,nz\n"
        "/admin/*  200!  Role=admin\n"
        "/*  /index.html  200\n");

    ok(s != NULL, "Netlify's examples load");
    if (!s)
        return;
    is_int(nwarnings, 2, "two rules skipped with a warning");
    is_str(warnings[0], "_redirects:16: condition 'Country=au,nz' cannot be evaluated by "
           "lfhttpd; rule skipped", "warning: Country");
    is_str(warnings[1], "_redirects:17: condition 'Role=admin' cannot be evaluated by lfhttpd; "
           "rule skipped", "warning: Role");
    gives(s, "/home", NULL, "301 /");
    gives(s, "/home/", NULL, "301 /");
    gives(s, "/home", "utm=x", "301 /?utm=x");
    gives(s, "/blog/my-post.php", NULL, "301 /blog/my-post");
    gives(s, "/cuties", NULL, "301 https://www.petsofnetlify.com");
    gives(s, "/authors/c\xc3\xa9line", NULL, "301 /authors/about-c%C3%A9line");
    gives(s, "/old-page", NULL, "302 /new-page");
    gives(s, "/news", NULL, "301 /blog");
    gives(s, "/news/2004/01/10/my-story", NULL, "301 /blog/2004/01/10/my-story");
    gives(s, "/talks/12/24/2024/xmas", NULL, "301 /events/2024/12/24/xmas");
    gives(s, "/store", "id=my-blog-post", "301 /blog/my-blog-post");
    gives(s, "/store", "x=1&id=7&y", "301 /blog/7");
    gives(s, "/articles", "tag=c&id=9", "301 /posts/c/9");
    gives(s, "/articles", "id=9", "200 /index.html?id=9");
    gives(s, "/things", "type=photos", "302 /photos");
    gives(s, "/things", "type=videos", "200 /index.html?type=videos");
    gives(s, "/en/missing", NULL, "404 /en/404.html");
    gives(s, "/app/settings", NULL, "200! /app/index.html");
    gives(s, "/", NULL, "200 /index.html");
    gives(s, "/admin/x", NULL, "200 /index.html");
    is_str(outcome(s, "/anything", NULL, RULES_MATCH_FORCED_ONLY), "-",
           "a file at the path shadows a rule without '!'");
    is_str(outcome(s, "/app/settings", NULL, RULES_MATCH_FORCED_ONLY), "200! /app/index.html",
           "a forced rule applies over a file");
    rules_free(s);

    s = redirects("http://blog.example/* https://example.com/blog/:splat 301!\n"
                  "/fr /fr/home 302 Language=fr\n/in /in/home 302 Cookie=ab_test\n/x /y\n"
                  "/api/* https://api.example.com/:splat 200\n");
    ok(s != NULL && s->count == 1, "rules of a host, by language, by cookie and proxies are "
       "skipped");
    is_int(nwarnings, 4, "  with four warnings");
    is_str(warnings[0], "_redirects:1: pattern 'http://blog.example/*' is for a host: rules of "
           "a host are not supported; rule skipped", "  warning: host");
    is_str(warnings[1], "_redirects:2: condition 'Language=fr' cannot be evaluated by lfhttpd; "
           "rule skipped", "  warning: Language");
    is_str(warnings[2], "_redirects:3: condition 'Cookie=ab_test' cannot be evaluated by "
           "lfhttpd; rule skipped", "  warning: Cookie");
    is_str(warnings[3], "_redirects:5: status 200 to 'https://api.example.com/:splat' is a "
           "proxy, and lfhttpd does not proxy; rule skipped", "  warning: a proxy");
    rules_free(s);
}

static void test_cloudflare_examples(void)
{
    struct rules_set *s = redirects(
        "/home301 / 301\n"
        "/home302 / 302\n"
        "/querystrings /?query=string 301\n"
        "/twitch https://twitch.tv\n"
        "/notrailing/ /nottrailing 301\n"
        "/page/ /page2/#fragment 301\n"
        "/blog/* https://blog.my.domain/:splat 301\n"
        "/movies/:title /media/:title 301\n"
        "/products/:code/:name /products?code=:code&name=:name 301\n"
        "/pages/*\t/pages2/:splat\t307\n");

    ok(s != NULL, "Cloudflare's examples load");
    if (!s)
        return;
    gives(s, "/home301", NULL, "301 /");
    gives(s, "/home302", NULL, "302 /");
    gives(s, "/querystrings", "a=b", "301 /?query=string");
    gives(s, "/twitch", NULL, "301 https://twitch.tv");
    gives(s, "/notrailing", NULL, "301 /nottrailing");
    gives(s, "/page", "x=1", "301 /page2/?x=1#fragment");
    gives(s, "/blog/2024/hello world", NULL, "301 https://blog.my.domain/2024/hello%20world");
    gives(s, "/movies/Star Wars", NULL, "301 /media/Star%20Wars");
    gives(s, "/products/42/a&b=c", NULL, "301 /products?code=42&name=a%26b%3Dc");
    gives(s, "/pages/x/", NULL, "307 /pages2/x/");
    rules_free(s);
}

/* ---- precedence and kinds ---- */

static void test_precedence(void)
{
    struct rules_set *s = redirects(
        "/blog/:slug     /dynamic/:slug  302\n"
        "/blog/hello     /exact          301\n"
        "/docs/*         /prefix/:splat  301\n"
        "/docs/intro     /exact-intro    301\n"
        "/docs/v2/*      /v2/:splat      308\n"
        "/**/*.php       /php/:splat     303\n"
        "/gone           /gone.html      410\n"
        "/oops           /500.html       500\n"
        "/temp           /there          307\n"
        "/keep?          /never          301\n");

    ok(s != NULL, "precedence set loads");
    if (!s)
        return;
    gives(s, "/blog/hello", NULL, "302 /dynamic/hello");
    gives(s, "/docs/intro", NULL, "301 /prefix/intro");
    gives(s, "/docs/v2/a", NULL, "301 /prefix/v2/a");
    gives(s, "/x/y/index.php", NULL, "303 /php/x/y");
    gives(s, "/docs/index.php", NULL, "301 /prefix/index.php");
    gives(s, "/gone", NULL, "410 /gone.html");
    gives(s, "/oops", NULL, "500 /500.html");
    gives(s, "/temp", "a=1&b=2", "307 /there?a=1&b=2");
    gives(s, "/nothing", NULL, "-");
    is_int(s->rule[0].kind, RULES_REDIRECT, "kind: redirect");
    is_int(s->rule[6].kind, RULES_STATUS, "kind: gone is an error status with a page");
    rules_free(s);

    s = redirects("/a /x 200\n/b/* /y/:splat 200\n/c/:n /z/:n.html 404\n");
    ok(s != NULL, "rewrites load");
    if (s) {
        gives(s, "/a", "q=1", "200 /x?q=1");
        gives(s, "/b/one/two", NULL, "200 /y/one/two");
        gives(s, "/b/%41", NULL, "200 /y/%41");
        gives(s, "/c/hello world", NULL, "404 /z/hello world.html");
        is_int(s->rule[0].kind, RULES_REWRITE, "kind: rewrite");
    }
    rules_free(s);
}

/* ---- unsafe values ---- */

static void test_injection(void)
{
    struct rules_set *s = redirects(
        "/r/*      /new/:splat         301\n"
        "/q id=:id /item/:id           302\n"
        "/w/*      /static/:splat      200\n"
        "/p/:a     /docs/:a/../../x    200\n"
        "/e        /a/%2e%2e/%2e%2e/x  200\n"
        "/c        /a%0d%0ab           200\n"
        "/h        /here               301\n"
        "/s/*      /:splat             301\n");

    ok(s != NULL, "injection set loads");
    if (!s)
        return;
    gives(s, "/r/a\r\nSet-Cookie: x=1", NULL, "301 error 22");
    gives(s, "/r/a\nb", NULL, "301 error 22");
    gives(s, "/r/a\x7f", NULL, "301 error 22");
    gives(s, "/r/a%0d%0a", NULL, "301 /new/a%250d%250a");
    gives(s, "/q", "id=a%0d%0aLocation:x", "302 /item/a%0d%0aLocation:x");
    gives(s, "/q", "id=a\r\nX: y", "302 error 22");
    gives(s, "/q", "id=a b", "302 error 22");
    gives(s, "/h", "a\rb", "301 error 22");
    gives(s, "/r//evil.example", NULL, "301 /new//evil.example");
    gives(s, "/s//evil.example", NULL, "301 error 22");
    gives(s, "/s/\\evil.example", NULL, "301 /%5Cevil.example");
    gives(s, "/w/../../etc/passwd", NULL, "200 error 22");
    gives(s, "/w/a/../b", NULL, "200 /static/b");
    gives(s, "/p/x", NULL, "200 /x");
    gives(s, "/e", NULL, "200 error 22");
    gives(s, "/c", NULL, "200 error 22");
    rules_free(s);

    struct rules_set *h = headers("/m/:title\n  X-Movie: You are watching \":title\"\n"
                                  "/t/*\n  X-Tail: [:splat]\n");
    ok(h != NULL, "header values with placeholders load");
    if (h) {
        is_str(header_list(h, "/m/Up"), "X-Movie: You are watching \"Up\"", "placeholder");
        is_str(header_list(h, "/m/a\r\nSet-Cookie: 1"), "X-Movie: (refused)", "CR LF refused");
        is_str(header_list(h, "/t/a\tb"), "X-Tail: [a\tb]", "HTAB allowed in a header");
        is_str(header_list(h, "/t/a\x01"), "X-Tail: (refused)", "control byte refused");
    }
    rules_free(h);

    char small[8];
    size_t n;
    struct rules_match m;
    s = redirects("/a /a-very-long-target 301\n");
    ok(s && rules_match(s, "/a", 2, NULL, 0, 0, &m) &&
       rules_expand(s, &m, "/a", NULL, 0, small, sizeof(small), &n) == -ENAMETOOLONG,
       "a target longer than the buffer is -ENAMETOOLONG");
    rules_free(s);
}

/* ---- loops ---- */

static void test_loops(void)
{
    refused(false, "/a /b 301\n/b /a 302\n", "_redirects:1: redirect loop: /a -> /b -> /a");
    refused(false, "# self\n/a/ /a 301\n", "_redirects:2: redirect loop: /a -> /a");
    refused(false, "/x/* /y/:splat 301\n/y/* /x/:splat 301\n",
            "_redirects:1: redirect loop: /x/probe -> /y/probe -> /x/probe");
    refused(false, "/p /q 200!\n/q /p 200!\n", "_redirects:1: redirect loop: /p -> /q -> /p");
    refused(false, "/ /home 301\n/home /%2f 301\n", "_redirects:1: redirect loop: / -> /home -> /");
    refused(false, "/blog/:slug /posts/:slug 301\n/posts/:slug /blog/:slug 301\n",
            "_redirects:1: redirect loop: /blog/probe -> /posts/probe -> /blog/probe");
    refused(false, "/**/*.htm /:splat/index.htm 301\n",
            "_redirects:1: redirect loop: /probe/probe.htm -> /probe/index.htm -> "
            "/probe/index.htm");

    struct rules_set *s = redirects("/x/* /y/:splat 301\n/y/probe/* /x/:splat 301\n");
    ok(s != NULL, "no loop: a rule applied twice on the way to a path with no rule");
    rules_free(s);
    s = redirects("/* /index.html 200\n/a /b 301\n/b /c 301\n"
                                    "/c https://example.com/a 301\n/d /d 200\n"
                                    "/q id=:id /q 301\n");
    ok(s != NULL, "no loop: a rewrite to a file, a chain, an absolute URL, a condition");
    rules_free(s);
    ok(RULES_MAX_CHAIN >= 2, "the runtime bound of a chain is a constant");
}

/* ---- messages ---- */

static void test_redirect_errors(void)
{
    static const struct {
        const char *text, *message;
    } cases[] = {
        { "foo /bar\n", "_redirects:1: pattern 'foo': a pattern starts with '/'" },
        { "/a\n", "_redirects:1: missing target after '/a'" },
        { "/a 301\n", "_redirects:1: missing target after '/a'" },
        { "/a id=:id\n", "_redirects:1: missing target after 'id=:id'" },
        { "/a /b 299\n", "_redirects:1: status 299 is neither a redirect (301, 302, 303, 307, "
                         "308), a rewrite (200) nor an error (4xx, 5xx)" },
        { "/a /b 3011\n", "_redirects:1: unexpected '3011' after the target" },
        { "/a /b 301 extra\n", "_redirects:1: unexpected 'extra' after the target" },
        { "/a /b 301 Foo=bar\n", "_redirects:1: unknown condition 'Foo=bar'" },
        { "/a ftp://x\n", "_redirects:1: target 'ftp://x' is neither a path nor an http(s) URL" },
        { "/a //evil.example 301\n",
          "_redirects:1: target '//evil.example' names another host: write http(s)://" },
        { "/a https://x.example/ 404\n",
          "_redirects:1: status 404 needs a path of this site as target (lfhttpd does not "
          "proxy)" },
        { "/a /b#top 200\n",
          "_redirects:1: a rewrite or error page target has no fragment ('#')" },
        { "/a =x /b\n", "_redirects:1: query condition '=x' is not KEY=VALUE or KEY=:name" },
        { "/a id= /b\n", "_redirects:1: query condition 'id=' is not KEY=VALUE or KEY=:name" },
        { "/a id=: /b\n", "_redirects:1: query capture ':' is not ':name'" },
        { "/a id=:splat /b\n", "_redirects:1: query capture ':splat' is not ':name'" },
        { "/a/:id id=:id /b\n", "_redirects:1: ':id' is captured twice" },
        { "/a a=1 b=2 c=3 d=4 e=5 /b\n", "_redirects:1: more than 4 query conditions" },
        { "/a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", "_redirects:1: more than 16 fields" },
        { "\n/a{b /c\n", "_redirects:2: pattern '/a{b': '{' without '}'" },
        { "/a}b /c\n", "_redirects:1: pattern '/a}b': '}' without '{'" },
        { "/a{} /c\n", "_redirects:1: pattern '/a{}': empty '{}'" },
        { "/a{b,{c}} /c\n", "_redirects:1: pattern '/a{b,{c}}': '{' alternatives hold text of "
                            "one segment, without '{' or '/'" },
        { "/{a,b}{c,d}{e,f}{g,h}{i,j} /c\n", "_redirects:1: pattern '/{a,b}{c,d}{e,f}{g,h}"
                                             "{i,j}': more than 16 alternatives in '{..}'" },
        { "/a**b /c\n", "_redirects:1: pattern '/a**b': '**' must be a whole segment" },
        { "/:a-b /c\n", "_redirects:1: pattern '/:a-b': a placeholder's name has letters, "
                        "digits and '_' only" },
        { "/:splat /c\n", "_redirects:1: pattern '/:splat': ':splat' is the name of the '*' "
                          "capture, not a placeholder" },
        { "/:a/:b/:c/:d/:e/:f/:g/:h/:i /c\n",
          "_redirects:1: pattern '/:a/:b/:c/:d/:e/:f/:g/:h/:i': more than 8 captures" },
        { "/a%zz /c\n", "_redirects:1: pattern '/a%zz': invalid percent-escape in the pattern" },
        { "/a%01 /c\n", "_redirects:1: pattern '/a%01': control byte in the pattern" },
        { "/a /b\x01\n", "_redirects:1: control byte in the target" },
        { "/:abcdefghijklmnopqrstuvwxyz0123456 /c\n", "_redirects:1: pattern '/:abcdefghijklm"
          "nopqrstuvwxyz0123456': a placeholder's name is longer than 31 bytes" },
        { "/:a/:b/:c/:d/:e/:f/:g a=:h b=:i /c\n", "_redirects:1: more than 8 captures" },
        { "/a\r\x01 /c\n", "_redirects:1: pattern '/a?" "?': control byte in the pattern" },
        { "\xef\xbb\xbf/a /b\n/c\n", "_redirects:2: missing target after '/c'" },
        { "/a /b\0c\n", NULL },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (cases[i].message)
            refused(false, cases[i].text, cases[i].message);

    const char nul[] = "/a /b\n/c\0 /d\n";
    struct rules_set *s = rules_parse_redirects("_redirects", nul, sizeof(nul) - 1, &diag);
    ok(s == NULL, "refused: NUL byte");
    is_str(diag.error, "_redirects:2: NUL byte in the line", "  message");
}

/* A file of count lines made by line(i, buf); then its load must give message (or succeed
 * when message is NULL). */
static void bulk(bool headers_file, unsigned count, void (*line)(unsigned, char *, size_t),
                 const char *message)
{
    size_t cap = (size_t)count * 96 + 64, len = 0;
    char *text = malloc(cap);

    for (unsigned i = 0; i < count; i++)
        line(i, text + len, cap - len), len += strlen(text + len);
    text[len] = '\0';
    struct rules_set *s = headers_file
        ? rules_parse_headers("_headers", text, len, &diag)
        : rules_parse_redirects("_redirects", text, len, &diag);
    if (message) {
        ok(s == NULL, "refused: %s", message);
        is_str(s ? "" : diag.error, message, "  message");
    } else {
        ok(s != NULL, "%u lines load", count);
        if (!s)
            printf("# %s\n", diag.error);
    }
    rules_free(s);
    free(text);
}

static void static_line(unsigned i, char *buf, size_t cap)
{
    snprintf(buf, cap, "/page-%u /target-%u 301\n", i, i);
}

static void dynamic_line(unsigned i, char *buf, size_t cap)
{
    snprintf(buf, cap, "/d%u/:x /t/:x 302\n", i);
}

static void header_rule_lines(unsigned i, char *buf, size_t cap)
{
    snprintf(buf, cap, "/h%u/*\n  X-N: %u\n", i, i);
}

static void many_headers_lines(unsigned i, char *buf, size_t cap)
{
    snprintf(buf, cap, i == 0 ? "/a\n" : "  X-H%u: v\n", i);
}

static void test_bounds(void)
{
    bulk(false, RULES_MAX_STATIC, static_line, NULL);
    bulk(false, RULES_MAX_STATIC + 1, static_line,
         "_redirects:2001: more than 2000 exact and prefix rules");
    bulk(false, RULES_MAX_DYNAMIC, dynamic_line, NULL);
    bulk(false, RULES_MAX_DYNAMIC + 1, dynamic_line,
         "_redirects:101: more than 100 rules with placeholders or wildcards");
    bulk(true, RULES_MAX_HEADER_RULES, header_rule_lines, NULL);
    bulk(true, RULES_MAX_HEADER_RULES + 1, header_rule_lines, "_headers:201: more than 100 rules");
    bulk(true, RULES_MAX_HEADERS + 1, many_headers_lines, NULL);
    bulk(true, RULES_MAX_HEADERS + 2, many_headers_lines,
         "_headers:34: more than 32 headers for one pattern");

    char line[RULES_MAX_LINE + 16];
    memset(line, 'a', sizeof(line));
    line[0] = '/';
    memcpy(line + RULES_MAX_LINE - 3, " /b", 3);
    line[RULES_MAX_LINE] = '\n';
    line[RULES_MAX_LINE + 1] = '\0';
    refused(false, line, "_redirects:1: pattern '/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                         "aaaaaaaaaa': pattern longer than 512 bytes");
    memcpy(line + RULES_MAX_LINE - 3, "aa /b\n", 7);
    refused(false, line, "_redirects:1: line longer than 2000 bytes");

    char target[RULES_MAX_TARGET + 16];
    memset(target, 'b', sizeof(target));
    memcpy(target, "/a /", 4);
    target[RULES_MAX_TARGET + 4] = '\0';
    refused(false, target, "_redirects:1: target longer than 1023 bytes");

    char deep[200] = "";
    for (int i = 0; i < 33; i++)
        strcat(deep, "/s");
    strcat(deep, " /x\n");
    char msg[300];
    snprintf(msg, sizeof(msg), "_redirects:1: pattern '%.60s': more than 32 segments", deep);
    refused(false, deep, msg);
}

static void test_headers(void)
{
    struct rules_set *s = headers(
        "# This is a comment\n"
        "/secure/page\n"
        "  X-Frame-Options: DENY\n"
        "  X-Content-Type-Options: nosniff\n"
        "  Referrer-Policy: no-referrer\n"
        "\n"
        "/static/*\n"
        "  Access-Control-Allow-Origin: *\n"
        "  X-Robots-Tag: nosnippet\n"
        "\n"
        "https://myproject.pages.dev/*\n"
        "  X-Robots-Tag: noindex\n"
        "/*\n"
        "\tContent-Security-Policy: default-src 'self';\r\n"
        "  # an indented comment\n"
        "/*.jpg\n"
        "  ! Content-Security-Policy\n");

    ok(s != NULL, "Cloudflare's _headers example loads");
    if (!s)
        return;
    is_int(nwarnings, 1, "a host's rule is skipped with a warning");
    is_str(warnings[0], "_headers:11: pattern 'https://myproject.pages.dev/*' is for a host: "
           "rules of a host are not supported; rule skipped", "  warning");
    is_str(header_list(s, "/secure/page"), "X-Frame-Options: DENY; X-Content-Type-Options: "
           "nosniff; Referrer-Policy: no-referrer; Content-Security-Policy: default-src 'self';",
           "every matching rule, in file order");
    is_str(header_list(s, "/image.jpg"), "Content-Security-Policy: default-src 'self';; "
           "! Content-Security-Policy", "a detach after a set");
    is_str(header_list(s, "/static/image.jpg"), "Access-Control-Allow-Origin: *; X-Robots-Tag: "
           "nosnippet; Content-Security-Policy: default-src 'self';",
           "a '*' inside a segment does not cross '/'");
    is_str(header_list(s, "/home"), "Content-Security-Policy: default-src 'self';",
           "only the catch-all");
    rules_free(s);

    refused(true, "  X-A: b\n", "_headers:1: header line before any path pattern");
    refused(true, "/a\n  X-A b\n", "_headers:2: header line without ':' (Name: value, or ! Name)");
    refused(true, "/a\n  X-A:   \n", "_headers:2: header 'X-A' without a value");
    refused(true, "/a\n  X A: b\n", "_headers:2: invalid header name 'X A'");
    refused(true, "/a\n  : b\n", "_headers:2: header line without a name");
    refused(true, "/a\n  !\n", "_headers:2: header line without a name");
    refused(true, "/a\n  X-A: b\x01\n", "_headers:2: control byte in the value of header 'X-A'");
    refused(true, "/a\n  Content-Length: 5\n",
            "_headers:2: header 'Content-Length' is the server's to send");
    refused(true, "/a\n  ! transfer-encoding\n",
            "_headers:2: header 'transfer-encoding' is the server's to send");
    refused(true, "/a b\n  X-A: b\n", "_headers:1: a path pattern is one field: '/a b'");
    refused(true, "/a\n/b\n  X-A: b\n", "_headers:1: no header lines under the pattern");
    refused(true, "/a\n  X-A: b\n/c\n", "_headers:3: no header lines under the pattern");
    refused(true, "a\n  X-A: b\n", "_headers:1: pattern 'a': a pattern starts with '/'");
}

/* ---- the index against a naive scan ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static const char *const seg_pool[] = { "a", "b", "c", "ab", "a.js", "b.css" };
#define POOL (sizeof(seg_pool) / sizeof(seg_pool[0]))

static void random_pattern(char *p, size_t cap)
{
    static const char *const pieces[] = { "*", "**", ":p", "a*", "*.js", "{a,b}", "{ab,c}" };
    unsigned depth = rnd(4), dynamic = rnd(3) == 0;
    size_t n = 0;

    p[n++] = '/';
    p[n] = '\0';
    for (unsigned d = 0; d < depth; d++) {
        const char *piece = dynamic && rnd(3) == 0 ? pieces[rnd(7)] : seg_pool[rnd(POOL)];
        if (!strcmp(piece, ":p") && strstr(p, ":p"))
            piece = ":q";
        if (!strcmp(piece, ":q") && strstr(p, ":q"))
            piece = "b";
        n += (size_t)snprintf(p + n, cap - n, "%s%s", d ? "/" : "", piece);
    }
    if (rnd(3) == 0)
        n += (size_t)snprintf(p + n, cap - n, "%s*", n > 1 ? "/" : "");
    else if (rnd(8) == 0 && n > 1)
        p[n++] = '/', p[n] = '\0';
}

static void random_path(char *p, size_t cap)
{
    unsigned depth = rnd(5);
    size_t n = 0;

    for (unsigned d = 0; d < depth; d++)
        n += (size_t)snprintf(p + n, cap - n, "/%s", seg_pool[rnd(POOL)]);
    if (n == 0 || rnd(5) == 0)
        p[n++] = '/';
    p[n] = '\0';
}

/* One random set of up to 60 rules, each with a random status that never chains (so that
 * loop detection never refuses it), sometimes forced, sometimes with a query condition. */
static void random_file(char *text, size_t cap, unsigned rules)
{
    static const char *const status[] = { "404", "404!", "410", "200", "451!" };
    size_t n = 0;

    for (unsigned i = 0; i < rules; i++) {
        char pat[128];
        random_pattern(pat, sizeof(pat));
        const char *cond = rnd(6) == 0 ? " k=:v" : rnd(6) == 0 ? " k=1" : "";
        n += (size_t)snprintf(text + n, cap - n, "%s%s /t%u %s\n", pat, cond, i,
                              status[rnd(5)]);
    }
}

static void test_property(void)
{
    static char text[60 * 200];
    unsigned mismatches = 0, checks = 0, hits = 0;

    for (unsigned round = 0; round < 400; round++) {
        random_file(text, sizeof(text), 1 + rnd(60));
        struct rules_set *s = rules_parse_redirects("_redirects", text, strlen(text), &diag);
        if (!s) {
            printf("# random file refused: %s\n%s", diag.error, text);
            mismatches++;
            continue;
        }
        for (unsigned k = 0; k < 200; k++) {
            char path[128];
            static const char *const queries[] = { NULL, "k=1", "x=2&k=3", "k" };
            const char *q = queries[rnd(4)];
            unsigned flags = rnd(3) == 0 ? RULES_MATCH_FORCED_ONLY : 0;
            random_path(path, sizeof(path));
            size_t plen = strlen(path), qlen = q ? strlen(q) : 0;
            struct rules_match fast, slow;
            uint32_t naive = UINT32_MAX;
            for (uint32_t i = 0; i < s->count && naive == UINT32_MAX; i++)
                if (rules_match_rule(s, i, path, plen, q, qlen, flags, &slow))
                    naive = i;
            bool hit = rules_match(s, path, plen, q, qlen, flags, &fast);
            bool same = hit ? naive == fast.rule &&
                                  !memcmp(fast.cap, slow.cap, sizeof(fast.cap))
                            : naive == UINT32_MAX;
            if (!same && mismatches++ < 5)
                printf("# %s?%s: index %d, scan %d\n%s", path, q ? q : "",
                       hit ? (int)fast.rule : -1, (int)naive, text);
            checks++;
            hits += hit;
        }
        rules_free(s);
    }
    is_int(mismatches, 0, "first match: the index agrees with a linear scan");
    ok(hits > checks / 4 && hits < checks, "  (%u of %u random requests matched)", hits, checks);
}

/* Reference matchers, recursive and slow: a glob against bytes, segments against a path. */
static bool ref_glob(const char *g, size_t k, const char *s, size_t m)
{
    if (k == 0)
        return m == 0;
    if (g[0] == '*')
        return ref_glob(g + 1, k - 1, s, m) || (m > 0 && ref_glob(g, k, s + 1, m - 1));
    return m > 0 && g[0] == s[0] && ref_glob(g + 1, k - 1, s + 1, m - 1);
}

static bool ref_segs(const struct pattern *p, const struct pattern_seg *seg, unsigned n,
                     const char *path, size_t pos, size_t end)
{
    if (n == 0)
        return pos >= end;
    if (seg->kind == PATTERN_ANY) {
        if (ref_segs(p, seg + 1, n - 1, path, pos, end))
            return true;
        while (pos < end) {
            const char *slash = memchr(path + pos + 1, '/', end - pos - 1);
            pos = slash ? (size_t)(slash - path) : end;
            if (ref_segs(p, seg + 1, n - 1, path, pos, end))
                return true;
        }
        return false;
    }
    if (pos >= end)
        return false;
    const char *slash = memchr(path + pos + 1, '/', end - pos - 1);
    size_t next = slash ? (size_t)(slash - path) : end, m = next - pos - 1;
    const char *t = p->text + seg->off, *s = path + pos + 1;
    bool hit = seg->kind == PATTERN_LITERAL ? m == seg->len && memcmp(t, s, m) == 0
             : seg->kind == PATTERN_PARAM   ? m > 0
                                            : ref_glob(t, seg->len, s, m);
    return hit && ref_segs(p, seg + 1, n - 1, path, next, end);
}

static void test_pattern_reference(void)
{
    unsigned mismatches = 0, hits = 0, checks = 0;

    for (unsigned round = 0; round < 3000; round++) {
        char pat[128], path[128];
        struct pattern p;
        struct rules_names names = { 0 };
        struct rules_capture cap[RULES_MAX_CAPTURES];
        const char *why;
        random_pattern(pat, sizeof(pat));
        if (pattern_compile(&p, pat, strlen(pat), &names, &why) < 0) {
            printf("# %s: %s\n", pat, why);
            mismatches++;
            continue;
        }
        for (unsigned k = 0; k < 50; k++, checks++) {
            random_path(path, sizeof(path));
            size_t len = strlen(path), end = len == 1 ? 0 : pattern_path_end(path, len);
            bool ref = false;
            for (unsigned a = 0; a < p.nalt && !ref; a++)
                ref = ref_segs(&p, p.seg + p.alt[a].seg_first, p.alt[a].seg_count, path, 0, end);
            bool got = pattern_match(&p, path, len, cap);
            hits += got;
            if (got != ref && mismatches++ < 5)
                printf("# %s on %s: %d, reference %d\n", pat, path, got, ref);
        }
        pattern_free(&p);
    }
    is_int(mismatches, 0, "the pattern matcher agrees with a recursive reference");
    ok(hits > checks / 10, "  (%u of %u random paths matched)", hits, checks);
}

static void test_property_all(void)
{
    static char text[60 * 200];
    unsigned mismatches = 0;

    for (unsigned round = 0; round < 200; round++) {
        size_t n = 0;
        unsigned rules = 1 + rnd(60);
        for (unsigned i = 0; i < rules; i++) {
            char pat[128];
            random_pattern(pat, sizeof(pat));
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\n  X-R: %u\n", pat, i);
        }
        struct rules_set *s = rules_parse_headers("_headers", text, n, &diag);
        if (!s) {
            printf("# random file refused: %s\n", diag.error);
            mismatches++;
            continue;
        }
        for (unsigned k = 0; k < 100; k++) {
            char path[128];
            uint32_t idx[RULES_MAX_HEADER_RULES], naive[RULES_MAX_HEADER_RULES];
            size_t nn = 0;
            struct rules_match m;
            random_path(path, sizeof(path));
            size_t plen = strlen(path);
            size_t got = rules_match_all(s, path, plen, idx, RULES_MAX_HEADER_RULES);
            for (uint32_t i = 0; i < s->count; i++)
                if (rules_match_rule(s, i, path, plen, NULL, 0, 0, &m))
                    naive[nn++] = i;
            if ((got != nn || memcmp(idx, naive, nn * sizeof(*idx))) && mismatches++ < 5)
                printf("# %s: %zu rules, scan %zu\n", path, got, nn);
        }
        rules_free(s);
    }
    is_int(mismatches, 0, "every match: the index agrees with a linear scan");
}

/* ---- matching allocates nothing ---- */

static void test_no_allocation(void)
{
    struct rules_set *r = redirects("/a /b 301\n/c/* /d/:splat 200\n/e/:x /f/:x 302\n"
                                    "/g id=:id /h/:id 301\n/**/*.{js,css} /assets/:splat 301\n");
    struct rules_set *h = headers("/*\n  X-A: b\n/p/:x\n  X-B: :x\n");
    char out[256];
    size_t n;
    struct rules_match m;
    uint32_t idx[8];
    unsigned long before = atomic_load(&allocations);

    ok(r && h, "sets for the allocation count load");
    if (!r || !h)
        return;
    static const char *const paths[] = { "/a", "/c/x/y", "/e/z", "/g", "/q/w/x.js", "/none" };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (rules_match(r, paths[i], strlen(paths[i]), "id=1", 4, 0, &m))
            rules_expand(r, &m, paths[i], "id=1", 4, out, sizeof(out), &n);
    size_t k = rules_match_all(h, "/p/v", 4, idx, 8);
    for (size_t i = 0; i < k; i++)
        if (rules_match_rule(h, idx[i], "/p/v", 4, NULL, 0, 0, &m))
            rules_expand_header(h, &m, 0, "/p/v", NULL, out, sizeof(out), &n);
    is_int(atomic_load(&allocations) - before, 0, "matching and expanding allocate nothing");
    rules_free(r);
    rules_free(h);
}

/* ---- one set, many threads ---- */

#define THREADS         4
#define THREAD_REQUESTS 256
#define THREAD_ROUNDS   200

struct thread_job {
    const struct rules_set *set;
    char (*paths)[64];
    const uint32_t *expected;  /* rule per path, UINT32_MAX for none */
    unsigned wrong;
};

static void *thread_main(void *arg)
{
    struct thread_job *job = arg;
    struct rules_match m;
    char out[256];
    size_t n;

    for (unsigned r = 0; r < THREAD_ROUNDS; r++)
        for (unsigned i = 0; i < THREAD_REQUESTS; i++) {
            const char *p = job->paths[i];
            bool hit = rules_match(job->set, p, strlen(p), "k=1", 3, 0, &m);
            if (hit != (job->expected[i] != UINT32_MAX) || (hit && m.rule != job->expected[i]))
                job->wrong++;
            else if (hit)
                rules_expand(job->set, &m, p, "k=1", 3, out, sizeof(out), &n);
        }
    return NULL;
}

/* A loaded set is read-only: threads match against it at once and get what one thread got
 * (run under ThreadSanitizer, a write anywhere would show). */
static void test_threads(void)
{
    static char text[60 * 200], paths[THREAD_REQUESTS][64];
    static uint32_t expected[THREAD_REQUESTS];
    struct thread_job jobs[THREADS];
    pthread_t tid[THREADS];
    struct rules_match m;

    random_file(text, sizeof(text), 60);
    struct rules_set *s = rules_parse_redirects("_redirects", text, strlen(text), &diag);
    ok(s != NULL, "a set for threads loads");
    if (!s)
        return;
    for (unsigned i = 0; i < THREAD_REQUESTS; i++) {
        random_path(paths[i], sizeof(paths[i]));
        expected[i] = rules_match(s, paths[i], strlen(paths[i]), "k=1", 3, 0, &m) ? m.rule
                                                                                  : UINT32_MAX;
    }
    for (unsigned t = 0; t < THREADS; t++) {
        jobs[t] = (struct thread_job){ s, paths, expected, 0 };
        pthread_create(&tid[t], NULL, thread_main, &jobs[t]);
    }
    unsigned wrong = 0;
    for (unsigned t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        wrong += jobs[t].wrong;
    }
    is_int(wrong, 0, "4 threads matching one set get what one thread got");
    rules_free(s);
}

/* ---- one rule at a time (configuration directives) ---- */

static void test_rule_by_rule(void)
{
    struct rules_set *s = rules_new();
    struct rules_match m;
    char out[RULES_MAX_EXPANDED];
    size_t n;

    nwarnings = 0;
    ok(rules_add_redirect(s, "a.conf", 3, "/old/* /new/:splat 302", &diag) == 0 &&
       rules_add_redirect(s, "b.conf", 7, "/x /y 301 Country=us", &diag) == 0 &&
       rules_add_header(s, "b.conf", 9, "/h/*", "X-H", ":splat", &diag) == 0,
       "rules are added one by one, each with its file and line");
    ok(nwarnings == 1 && strstr(warnings[0], "b.conf:7: condition 'Country=us'"),
       "a skipped rule warns with its own file and line");
    ok(rules_done(s, &diag) == 0 && s->count == 2, "the set is finished");
    ok(rules_match(s, "/old/a", 6, NULL, 0, 0, &m) &&
       rules_expand(s, &m, "/old/a", NULL, 0, out, sizeof(out), &n) == 0 &&
       !strcmp(out, "/new/a"), "a directive's rule matches as a file's does");
    rules_free(s);

    s = rules_new();
    ok(rules_add_redirect(s, "c.conf", 2, "/a /b", &diag) == 0 &&
       rules_add_redirect(s, "d.conf", 5, "/b /a", &diag) == 0, "two rules of two files");
    ok(rules_done(s, &diag) < 0 && strstr(diag.error, "c.conf:2: redirect loop: /a -> /b -> /a"),
       "a loop names the file and line of its rule: %s", diag.error);
    rules_free(s);

    s = rules_new();
    ok(rules_add_redirect(s, "e.conf", 4, "/a", &diag) < 0 &&
       !strcmp(diag.error, "e.conf:4: missing target after '/a'"), "an error names its line");
    ok(rules_add_header(s, "e.conf", 6, "/a", "Bad:Name", "1", &diag) < 0 &&
       !strcmp(diag.error, "e.conf:6: invalid header name 'Bad:Name'"),
       "a header's name is checked whole: %s", diag.error);
    rules_free(s);
}

int main(void)
{
    test_patterns();
    test_netlify_examples();
    test_cloudflare_examples();
    test_precedence();
    test_injection();
    test_loops();
    test_redirect_errors();
    test_bounds();
    test_headers();
    test_rule_by_rule();
    test_property();
    test_property_all();
    test_pattern_reference();
    test_threads();
    test_no_allocation();
    return done_testing();
}
