/* test_config.c — the configuration parser's errors (conf/config.c, conf/site.c): for each
 * kind of mistake, config_from_args fails with exactly one line on stderr, "FILE:LINE: reason",
 * naming the file and the line of the mistake. Also: what a valid file sets, and that comments,
 * blank lines and quoted values are counted and read as documented. */
#include "conf/config.h"
#include "daemon/setup.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/lfhttpd-test-config-XXXXXX";
static char conf[600];
static char err[8192];

/* Load `text` as the configuration file; what was printed on stderr goes to err[]. */
static enum config_result load(struct config *cfg, const char *text)
{
    FILE *f = fopen(conf, "w");
    if (!f)
        return CONFIG_ERROR;
    fputs(text, f);
    fclose(f);
    char errpath[700];
    snprintf(errpath, sizeof(errpath), "%s/stderr", tmp);
    int efd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
    fflush(stderr);
    int saved = dup(2);
    dup2(efd, 2);
    char arg0[] = "lfhttpd", arg1[] = "--config";
    char *argv[] = { arg0, arg1, conf, NULL };
    daemon_setup_conf(); /* the handler types' directives, as main() does (once) */
    enum config_result r = config_from_args(cfg, 3, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(efd, err, sizeof(err) - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(efd);
    return r;
}

/* The file fails to load with exactly one line: "CONF:LINE: REASON\n". */
static void mistake(const char *what, const char *text, unsigned line, const char *reason)
{
    struct config cfg;
    enum config_result r = load(&cfg, text);
    char want[1200];
    snprintf(want, sizeof(want), "%s:%u: %s\n", conf, line, reason);
    if (r == CONFIG_OK)
        config_free(&cfg);
    bool pass = ok(r == CONFIG_ERROR && !strcmp(err, want), "%s: line %u, \"%s\"", what, line,
                   reason);
    if (!pass)
        printf("# got (%s): %s# want: %s", r == CONFIG_ERROR ? "error" : "no error", err, want);
}

int main(void)
{
    if (!mkdtemp(tmp))
        return 1;
    snprintf(conf, sizeof(conf), "%s/lfhttpd.conf", tmp);
    char root[700], file[700], text[8192];
    snprintf(root, sizeof(root), "%s/www", tmp);
    mkdir(root, 0755);
    snprintf(file, sizeof(file), "%s/afile", tmp);
    fclose(fopen(file, "w"));

    /* A valid file, with comments, blank lines and quotes. */
    struct config cfg;
    snprintf(text, sizeof(text),
             "# a comment\n"
             "\n"
             "   # an indented comment\n"
             "threads 3   # a trailing comment\n"
             "max_body_size 2m\n"
             "timeout_header 1500ms\n"
             "timeout_body 2m\n"
             "listen 127.0.0.1:0\n"
             "root %s\n"
             "add_header X-Quoted \"a \\\"b\\\" # not a comment\"\n"
             "location /p/ {\n"
             "    etag off\n"
             "}\n",
             root);
    ok(load(&cfg, text) == CONFIG_OK && err[0] == '\0', "a valid file loads, nothing printed");
    is_int(cfg.threads, 3, "threads 3");
    is_int(cfg.http.max_body_size, 2 * 1024 * 1024, "max_body_size 2m");
    is_int(cfg.timeout_header, 1500, "timeout_header 1500ms");
    is_int(cfg.timeout_body, 120000, "timeout_body 2m");
    ok(cfg.nlisten == 1 && !strcmp(cfg.listen[0].text, "127.0.0.1:0"),
       "the file's listen replaces the default");
    ok(cfg.sites.sites[0].base.nheaders == 1 &&
           !strcmp(cfg.sites.sites[0].base.headers[0].value, "a \"b\" # not a comment"),
       "a quoted value keeps its spaces, escaped quotes and #");
    config_free(&cfg);

    /* A missing file. */
    char missing[700];
    snprintf(missing, sizeof(missing), "%s/nope.conf", tmp);
    {
        char arg0[] = "lfhttpd", arg1[] = "--config";
        char *argv[] = { arg0, arg1, missing, NULL };
        char errpath[700];
        snprintf(errpath, sizeof(errpath), "%s/stderr", tmp);
        int efd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
        int saved = dup(2);
        dup2(efd, 2);
        enum config_result r = config_from_args(&cfg, 3, argv);
        dup2(saved, 2);
        close(saved);
        ssize_t n = pread(efd, err, sizeof(err) - 1, 0);
        err[n > 0 ? n : 0] = '\0';
        close(efd);
        char want[800];
        snprintf(want, sizeof(want), "%s: cannot open: No such file or directory\n", missing);
        ok(r == CONFIG_ERROR && !strcmp(err, want), "a missing file: \"FILE: cannot open: ...\"");
    }

    /* Lexical mistakes. */
    mistake("unknown directive", "threads 2\nfrobnicate 1\n", 2, "unknown directive 'frobnicate'");
    mistake("the line number counts comments and blank lines",
            "# one\n\n# three\n\nfrobnicate\n", 5, "unknown directive 'frobnicate'");
    mistake("unterminated quote", "add_header X-A \"abc\n", 1, "unterminated quoted string");
    mistake("quote inside a word", "add_header X-A ab\"c\"\n", 1, "unexpected quote");
    memset(text, 'a', 5000);
    memcpy(text, "root ", 5);
    strcpy(text + 5000, "\n");
    mistake("line too long", text, 1, "line too long");
    strcpy(text, "index");
    for (int i = 0; i < 40; i++)
        strcat(text, " i.html");
    strcat(text, "\n");
    mistake("too many values", text, 1, "too many values");

    /* Values. */
    mistake("not a number", "threads many\n", 1, "invalid value 'many' for 'threads' (1..1024)");
    mistake("threads 0", "threads 0\n", 1, "invalid value '0' for 'threads' (1..1024)");
    mistake("out of range", "max_headers 0\n", 1, "invalid value '0' for 'max_headers' (1..1000)");
    mistake("negative", "max_headers -1\n", 1, "invalid value '-1' for 'max_headers' (1..1000)");
    mistake("bad size suffix", "max_body_size 10x\n", 1,
            "invalid value '10x' for 'max_body_size' (0..1099511627776 bytes, k/m/g suffixes "
            "allowed)");
    mistake("size too large", "max_request_head 1g\n", 1,
            "invalid value '1g' for 'max_request_head' (1024..65536 bytes, k/m/g suffixes "
            "allowed)");
    mistake("bad duration unit", "timeout_header 5y\n", 1,
            "invalid value '5y' for 'timeout_header' (1..86400000 ms; units ms, s, m, h)");
    mistake("number overflow", "timeout_header 99999999999999999999999\n", 1,
            "invalid value '99999999999999999999999' for 'timeout_header' (1..86400000 ms; "
            "units ms, s, m, h)");
    mistake("two values for one", "threads 1 2\n", 1, "'threads' takes exactly one value");
    mistake("no value", "threads\n", 1, "'threads' takes exactly one value");
    mistake("site directive without value", "root\n", 1, "'root' takes exactly one value");
    mistake("log level", "log_level loud\n", 1,
            "invalid log_level 'loud' (error, warn, notice, info, debug)");
    mistake("concurrency", "concurrency lots\n", 1,
            "invalid concurrency 'lots' (leader-followers, half-sync-half-async, reuseport or "
            "leader-followers-edge)");
    mistake("access_log_format", "access_log_format xml\n", 1,
            "invalid access_log_format 'xml' (combined or json)");
    mistake("real_ip_header", "real_ip_header X-Real-IP\n", 1,
            "invalid real_ip_header 'X-Real-IP' (X-Forwarded-For or Forwarded)");
    mistake("on/off", "tls_redirect_http maybe\n", 1, "invalid tls_redirect_http 'maybe' (on or off)");
    mistake("site on/off", "etag maybe\n", 1, "invalid etag 'maybe' (on or off)");
    mistake("hidden_files", "hidden_files show\n", 1,
            "invalid hidden_files 'show' (deny or allow)");
    mistake("follow_symlinks", "follow_symlinks some\n", 1,
            "invalid follow_symlinks 'some' (inside, any or off)");
    mistake("listen address", "listen nowhere:http\n", 1,
            "invalid listen address 'nowhere:http' (expected ADDR:PORT, [V6]:PORT, "
            "unix:/PATH or systemd:NAME)");
    mistake("listen port", "listen 127.0.0.1:70000\n", 1,
            "invalid listen address '127.0.0.1:70000' (expected ADDR:PORT, [V6]:PORT, "
            "unix:/PATH or systemd:NAME)");
    mistake("bare IPv6", "listen ::1:80\n", 1,
            "invalid listen address '::1:80' (expected ADDR:PORT, [V6]:PORT, "
            "unix:/PATH or systemd:NAME)");
    mistake("listen option", "listen 127.0.0.1:80 fast\n", 1,
            "unknown listen option 'fast' (proxy_protocol)");
    mistake("trusted_proxies", "trusted_proxies 10.0.0.0/8 nonsense\n", 1,
            "invalid address or CIDR range 'nonsense'");
    mistake("status_allow", "status_allow 300.1.1.1\n", 1,
            "invalid address or CIDR range '300.1.1.1'");
    mistake("user name", "user \"a b\"\n", 1, "invalid user name 'a b'");
    mistake("cgi_env_pass", "cgi_env_pass PATH HTTP_PROXY\n", 1,
            "invalid environment variable name 'HTTP_PROXY' for 'cgi_env_pass'");
    mistake("test_endpoints", "test_endpoints _test\n", 1,
            "'test_endpoints' takes a path prefix such as /_test/, or off");
    mistake("tls_certificate without key", "tls_certificate cert.pem\n", 1,
            "'tls_certificate' takes a certificate file, a key file and optional server names");
    mistake("tls_certificate server name", "tls_certificate a.pem b.pem bad/name\n", 1,
            "invalid server name 'bad/name'");

    /* Files and directories named by directives. */
    snprintf(text, sizeof(text), "root %s/none\n", tmp);
    char reason[900];
    snprintf(reason, sizeof(reason), "root %s/none: No such file or directory", tmp);
    mistake("root that does not exist", text, 1, reason);
    snprintf(text, sizeof(text), "\nroot %s\n", file);
    snprintf(reason, sizeof(reason), "root %s: not a directory", file);
    mistake("root that is a file", text, 2, reason);
    snprintf(text, sizeof(text), "mime_types %s/none.types\n", tmp);
    snprintf(reason, sizeof(reason), "mime_types %s/none.types: No such file or directory", tmp);
    mistake("mime_types missing", text, 1, reason);
    snprintf(text, sizeof(text), "auth_basic_user_file %s/none\n", tmp);
    snprintf(reason, sizeof(reason), "auth_basic_user_file %s/none: No such file or directory", tmp);
    mistake("auth_basic_user_file missing", text, 1, reason);

    /* Mistakes only the whole file shows: the line of the directive that needs the other. */
    mistake("a TLS listener without a certificate", "threads 2\ntls_listen 127.0.0.1:0\n", 2,
            "a TLS listener needs a certificate (tls_certificate, or --cert FILE --key FILE)");
    mistake("tls_redirect_http without a TLS listener", "tls_redirect_http on\n", 1,
            "tls_redirect_http on needs a TLS listener");
    mistake("auth_basic without a user file", "server a.test {\n    auth_basic \"x\"\n}\n", 2,
            "auth_basic \"x\" needs auth_basic_user_file");
    mistake("auth_basic inherited by a location without a user file",
            "auth_basic \"top\"\nlocation /a/ {\n    etag off\n}\n", 1,
            "auth_basic \"top\" needs auth_basic_user_file");

    /* Site directives. */
    mistake("index with a slash", "index a/b.html\n", 1, "invalid index file name 'a/b.html'");
    mistake("spa_fallback", "spa_fallback index.html\n", 1,
            "'spa_fallback' takes a path starting with '/' or off");
    mistake("add_header name", "add_header \"X A\" b\n", 1,
            "'add_header' takes a header name and one (quoted) value");
    mistake("add_header without value", "add_header X-A\n", 1,
            "'add_header' takes a header name and one (quoted) value");
    mistake("expires", "expires soon\n", 1, "'expires' takes a duration (s, m, h, d) or off, not 'soon'");
    mistake("error_page status", "error_page 200 /e.html\n", 1,
            "invalid status '200' for 'error_page' (400..599)");
    mistake("error_page path", "error_page 404 e.html\n", 1, "'error_page' takes STATUS... /PATH");
    mistake("default_type", "default_type text\n", 1, "invalid 'default_type' value 'text'");
    mistake("auth_basic realm", "auth_basic \"a\\\"b\"\n", 1,
            "invalid 'auth_basic' value 'a\"b'");
    mistake("unknown handler", "handler php\n", 1, "unknown handler 'php'");
    mistake("handler with two arguments", "handler cgi a b\n", 1,
            "'handler' takes a type and an optional argument");

    /* Blocks. */
    mistake("'}' with nothing open", "threads 2\n}\n", 2, "unexpected '}'");
    mistake("'{' alone", "{\n", 1, "unexpected '{'");
    mistake("a directive opening a block", "threads 2 {\n", 1, "unexpected '{'");
    mistake("brace at the end of a directive", "server a.test {\n    etag off }\n}\n", 2,
            "braces go on their own line or end a block's first line");
    mistake("server without '{'", "server a.test\n", 1,
            "'server' block must end its first line with '{'");
    mistake("server without a name", "server {\n}\n", 1, "'server' takes one or more names");
    mistake("server name", "server a/b.test {\n}\n", 1,
            "invalid server name 'a/b.test' (a host name or *.suffix)");
    mistake("server wildcard", "server a.*.test {\n}\n", 1,
            "invalid server name 'a.*.test' (a host name or *.suffix)");
    mistake("nested server", "server a.test {\n  server b.test {\n  }\n}\n", 2,
            "'server' blocks cannot be nested");
    mistake("nested location", "location /a/ {\n  location /b/ {\n  }\n}\n", 2,
            "'location' blocks cannot be nested");
    mistake("location match", "location assets {\n}\n", 1,
            "'location' takes a path prefix (/assets/) or *.EXT");
    mistake("location with two matches", "location /a/ /b/ {\n}\n", 1,
            "'location' takes one match (a /prefix/ or *.ext)");
    mistake("process-wide directive in a block", "server a.test {\n    threads 2\n}\n", 2,
            "'threads' is not allowed inside a block");
    mistake("unknown directive in a block", "location /a/ {\n    frobnicate\n}\n", 2,
            "unknown directive 'frobnicate'");
    mistake("unclosed server", "threads 2\nserver a.test {\n    etag off\n", 2,
            "'server' block opened here is not closed");
    mistake("unclosed location", "server a.test {\n}\nlocation /x/ {\netag off\n", 3,
            "'location' block opened here is not closed");
    mistake("mistake inside a location", "server a.test {\n    location /a/ {\n"
            "        etag maybe\n    }\n}\n", 3, "invalid etag 'maybe' (on or off)");

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    int rc = system(cmd);
    (void)rc;
    return test_done();
}
