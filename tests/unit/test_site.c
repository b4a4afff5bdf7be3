/* test_site.c — unit tests for site and location selection (server/conf/site.c), on sites built
 * from a real configuration file by config_from_args: which site a Host value picks (exact
 * names, case, port, trailing dot, the longest wildcard, the default site), which location a
 * path picks (extensions first in file order, then the longest prefix, the built-ins), and what
 * a location inherits. */
#include "conf/config.h"
#include "conf/site.h"
#include "daemon/setup.h"
#include "static/static_conf.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/lfhttpd-test-site-XXXXXX";
static char dir[5][256];

static const struct site *pick(const struct config *cfg, const char *host)
{
    struct strview h = host ? (struct strview){ host, strlen(host) } : SV_NULL;
    return site_select(&cfg->sites, h);
}

static const struct loc_conf *loc(const struct site *s, const char *path)
{
    return site_location(s, (struct strview){ path, strlen(path) });
}

static bool load(struct config *cfg, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fputs(text, f);
    fclose(f);
    char arg0[] = "lfhttpd", arg1[] = "--config";
    char *argv[] = { arg0, arg1, path, NULL };
    daemon_setup_conf(); /* the handler types' directives, as main() does (once) */
    return config_from_args(cfg, 3, argv) == CONFIG_OK;
}

/* Which server block a site is: by its first name ("" for the top level). */
static const char *site_name(const struct config *cfg, const struct site *s)
{
    if (s == &cfg->sites.sites[0])
        return "";
    return s->nnames ? s->names[0] : "(unnamed)";
}

static const char *loc_name(const struct site *s, const struct loc_conf *lc)
{
    if (lc == &s->base)
        return "(site)";
    return lc->prefix ? lc->prefix : lc->ext;
}

#define SITE_IS(cfg, host, want) \
    is_str(site_name((cfg), pick((cfg), (host))), (want), "Host " #host " -> " #want)
#define LOC_IS(s, path, want) is_str(loc_name((s), loc((s), (path))), (want), #path " -> " #want)

int main(void)
{
    if (!mkdtemp(tmp))
        return 1;
    for (int i = 0; i < 5; i++) {
        snprintf(dir[i], sizeof(dir[i]), "%s/root%d", tmp, i);
        mkdir(dir[i], 0755);
    }
    char text[4096];
    snprintf(text, sizeof(text),
             "root %s\n"
             "location /assets/ {\n"
             "    cache_control \"assets\"\n"
             "}\n"
             "location /assets/img/ {\n"
             "    cache_control \"img\"\n"
             "}\n"
             "location /a {\n"
             "}\n"
             "location *.css {\n"
             "    add_header X-Kind css\n"
             "}\n"
             "location *.min.css {\n"
             "    add_header X-Kind min\n"
             "}\n"
             "location *.wasm {\n"
             "}\n"
             "server example.com www.example.com {\n"
             "    root %s\n"
             "    location /x/ {\n"
             "        etag off\n"
             "    }\n"
             "    location /metrics {\n"
             "        handler static\n"
             "    }\n"
             "}\n"
             "server *.example.org {\n"
             "    root %s\n"
             "}\n"
             "server *.b.example.org {\n"
             "    root %s\n"
             "}\n"
             "server Mixed.Case.Test {\n"
             "}\n",
             dir[0], dir[1], dir[2], dir[3]);
    struct config cfg;
    ok(load(&cfg, "a.conf", text), "configuration with five sites loads");

    /* Sites. */
    SITE_IS(&cfg, "example.com", "example.com");
    SITE_IS(&cfg, "www.example.com", "example.com");
    SITE_IS(&cfg, "EXAMPLE.com", "example.com");
    SITE_IS(&cfg, "example.com:8080", "example.com");
    SITE_IS(&cfg, "example.com.", "example.com");
    SITE_IS(&cfg, "example.com.:80", "example.com");
    SITE_IS(&cfg, "mixed.case.test", "mixed.case.test");
    SITE_IS(&cfg, "xexample.com", "");
    SITE_IS(&cfg, "example.co", "");
    SITE_IS(&cfg, "a.example.org", "*.example.org");
    SITE_IS(&cfg, "A.EXAMPLE.ORG:443", "*.example.org");
    SITE_IS(&cfg, "b.example.org", "*.example.org");
    SITE_IS(&cfg, "x.b.example.org", "*.b.example.org");
    SITE_IS(&cfg, "y.x.b.example.org", "*.b.example.org");
    SITE_IS(&cfg, "example.org", "");
    SITE_IS(&cfg, "xexample.org", "");
    SITE_IS(&cfg, "unknown.test", "");
    SITE_IS(&cfg, "127.0.0.1:8080", "");
    SITE_IS(&cfg, "[::1]:8080", "");
    SITE_IS(&cfg, "[::1]", "");
    SITE_IS(&cfg, "", "");
    SITE_IS(&cfg, NULL, "");

    /* Locations of the top level. */
    const struct site *top = &cfg.sites.sites[0];
    LOC_IS(top, "/", "(site)");
    LOC_IS(top, "/index.html", "(site)");
    LOC_IS(top, "/assets/app.js", "/assets/");
    LOC_IS(top, "/assets/", "/assets/");
    LOC_IS(top, "/assets", "/a");
    LOC_IS(top, "/assets/img/logo.png", "/assets/img/");
    LOC_IS(top, "/assets/imgs/logo.png", "/assets/");
    LOC_IS(top, "/abc", "/a");
    LOC_IS(top, "/b", "(site)");
    LOC_IS(top, "/x.wasm", ".wasm");
    LOC_IS(top, "/X.WASM", ".wasm");
    LOC_IS(top, "/assets/site.css", ".css");
    LOC_IS(top, "/site.min.css", ".css");
    /* a decoded path: its query is gone, a '?' left is part of the name (%3F) */
    LOC_IS(top, "/site.css?v=.wasm", ".wasm");
    LOC_IS(top, "/sub/?1.css", ".css");
    LOC_IS(top, "/site.cssx", "(site)");
    LOC_IS(top, "/assets/x?y", "/assets/");
    LOC_IS(top, "/healthz", "/healthz");
    LOC_IS(top, "/server-status", "/server-status");
    LOC_IS(top, "/metrics", "/metrics");
    is_str(loc(top, "/healthz")->handler, "health", "built-in /healthz runs the health handler");
    is_str(loc(top, "/metrics")->handler, "metrics", "built-in /metrics runs the metrics handler");

    /* A server block's own locations and built-ins. */
    const struct site *ex = pick(&cfg, "example.com");
    LOC_IS(ex, "/x/y", "/x/");
    LOC_IS(ex, "/assets/app.js", "(site)");
    LOC_IS(ex, "/a.css", "(site)");
    is_str(loc(ex, "/metrics")->handler, "static", "a site's own /metrics replaces the built-in");
    is_str(loc(ex, "/healthz")->handler, "health", "the other built-ins are still added");

    /* Inheritance: location <- site <- top level <- defaults. */
    is_str(loc(top, "/assets/app.js")->root, dir[0], "a top-level location inherits the root");
    is_str(static_conf(loc(top, "/assets/app.js"))->cache_control, "assets", "its own cache_control");
    is_str(static_conf(loc(top, "/assets/img/a"))->cache_control, "img", "a nested prefix has its own");
    is_str(static_conf(loc(top, "/"))->cache_control, "", "the site's default: no cache_control");
    is_str(ex->base.root, dir[1], "a server block's own root");
    is_str(loc(ex, "/x/y")->root, dir[1], "its location inherits the server's root");
    is_int(static_conf(loc(ex, "/x/y"))->etag, 0, "and keeps its own etag off");
    is_int(static_conf(&ex->base)->etag, 1, "the server's etag: the default, on");
    is_str(pick(&cfg, "mixed.case.test")->base.root, dir[0],
           "a server without root inherits the top level's");
    const struct loc_conf *css = loc(top, "/a.css");
    ok(css->nheaders == 1 && !strcmp(css->headers[0].value, "css"), "*.css has its add_header");
    is_str(css->handler, "static", "the default handler is static");
    config_free(&cfg);

    /* A server block listed as `default` takes unknown hosts. */
    snprintf(text, sizeof(text),
             "root %s\n"
             "server one.test {\n"
             "    root %s\n"
             "}\n"
             "server fallback.test default {\n"
             "    root %s\n"
             "}\n",
             dir[0], dir[1], dir[4]);
    ok(load(&cfg, "b.conf", text), "configuration with a default server block loads");
    SITE_IS(&cfg, "one.test", "one.test");
    SITE_IS(&cfg, "fallback.test", "fallback.test");
    SITE_IS(&cfg, "nobody.test", "fallback.test");
    SITE_IS(&cfg, "", "fallback.test");
    SITE_IS(&cfg, NULL, "fallback.test");
    config_free(&cfg);

    /* One site only: every Host goes to it. */
    snprintf(text, sizeof(text), "root %s\n", dir[0]);
    ok(load(&cfg, "c.conf", text), "configuration without server blocks loads");
    SITE_IS(&cfg, "anything.test", "");
    LOC_IS(&cfg.sites.sites[0], "/anything", "(site)");
    config_free(&cfg);

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    int rc = system(cmd);
    (void)rc;
    return test_done();
}
