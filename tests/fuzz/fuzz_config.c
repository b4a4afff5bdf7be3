/* fuzz_config.c — libFuzzer harness over the configuration parser: the input is a configuration
 * file, loaded exactly as `lfhttpd --config FILE` loads it (config_from_args: the file, the
 * built-in locations, inheritance, the whole-file checks). Invariants:
 *   - never a crash, a leak or undefined behaviour (ASan, LSan, UBSan);
 *   - a rejected file prints exactly one line, "FILE:LINE: reason", whose LINE is a line of
 *     the input;
 *   - an accepted file prints nothing, and can be freed.
 *
 * The parser checks files named by directives where they are named (a root must be a
 * directory, a log file is opened for appending, created if missing), so the harness runs in a
 * sandbox set up once: its own mount namespace in which every mount is read-only but for a
 * private tmpfs over /tmp and the working directory (where libFuzzer keeps its corpus, crashes
 * and logs), and its own network namespace (a listen address with a host name would be looked
 * up: with no network, it fails at once). Each input is parsed with a scratch directory under
 * that /tmp as working directory, holding copies of www/ and conf/ as the seeds name them, so
 * that relative paths lead somewhere and nothing a configuration names can touch the machine.
 * Needs root or unprivileged user namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuzz_common.h"

static char scratch[] = "/tmp/lfhttpd-fuzz-config";
static char home[PATH_MAX]; /* the working directory libFuzzer was started in */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_config: %s: %s\n", what, strerror(errno));
    abort();
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        die(path);
    close(fd);
}

/* Remount `mp` read-only, keeping its other flags (a user namespace may not drop them). */
static void remount_ro(const char *mp)
{
    struct statvfs sv;
    if (statvfs(mp, &sv) < 0)
        return; /* gone, or hidden by another mount: nothing to protect there */
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
    static const struct { unsigned long st, ms; } keep[] = {
        { ST_NOSUID, MS_NOSUID }, { ST_NODEV, MS_NODEV }, { ST_NOEXEC, MS_NOEXEC },
        { ST_NOATIME, MS_NOATIME }, { ST_NODIRATIME, MS_NODIRATIME },
        { ST_RELATIME, MS_RELATIME },
    };
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
        if (sv.f_flag & keep[i].st)
            flags |= keep[i].ms;
    mount(NULL, mp, NULL, flags, NULL); /* best effort for pseudo file systems */
}

static void map_ids(void)
{
    char map[64];
    uid_t uid = getuid();
    gid_t gid = getgid();
    int fd = open("/proc/self/setgroups", O_WRONLY);
    if (fd >= 0) {
        if (write(fd, "deny", 4) < 0)
            die("setgroups");
        close(fd);
    }
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
    write_text("/proc/self/uid_map", map);
    snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
    write_text("/proc/self/gid_map", map);
}

static void sandbox(void)
{
    if (!getcwd(home, sizeof(home)))
        die("getcwd");
    if (unshare(CLONE_NEWNS | CLONE_NEWNET) < 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) < 0)
            die("unshare (needs root or unprivileged user namespaces)");
        map_ids();
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die("making / private");
    /* Every mount read-only, deepest first (mountinfo lists parents before children). */
    FILE *mi = fopen("/proc/self/mountinfo", "r");
    if (!mi)
        die("/proc/self/mountinfo");
    char line[4096];
    char (*mps)[512] = calloc(4096, sizeof(*mps));
    unsigned n = 0;
    while (n < 4096 && fgets(line, sizeof(line), mi)) {
        char mp[512];
        if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1)
            snprintf(mps[n++], sizeof(mps[0]), "%s", mp);
    }
    fclose(mi);
    /* The working directory stays writable for libFuzzer: a bind of itself, made before the
     * remounts so that it is a mount of its own, then remounted read-write. */
    if (mount(home, home, NULL, MS_BIND, NULL) < 0)
        die("bind-mounting the working directory");
    while (n > 0)
        remount_ro(mps[--n]);
    free(mps);
    if (mount(NULL, home, NULL, MS_REMOUNT | MS_BIND, NULL) < 0)
        die("remounting the working directory read-write");
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") < 0)
        die("mounting a tmpfs on /tmp");
}

/* The scratch directory: www/ (with cgi-bin/), conf/mime.types, a few files the seeds name. */
static void make_scratch(void)
{
    static const char *const dirs[] = { "", "/www", "/www/cgi-bin", "/conf", "/site", "/logs" };
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(p, sizeof(p), "%s%s", scratch, dirs[i]);
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            die(p);
    }
    snprintf(p, sizeof(p), "%s/conf/mime.types", scratch);
    write_text(p, "text/html html htm\ntext/css css\napplication/wasm wasm\n");
    snprintf(p, sizeof(p), "%s/conf/htpasswd", scratch); /* only checked for access */
    write_text(p, "# users\n");
    snprintf(p, sizeof(p), "%s/www/index.html", scratch);
    write_text(p, "<!doctype html>\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    sandbox();
    make_scratch();
    daemon_setup_conf(); /* the handler types' directives, as main() does */
    return 0;
}

/* Number of lines of the input, as fgets counts them. */
static unsigned count_lines(const uint8_t *data, size_t size)
{
    unsigned lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    return lines + (size && data[size - 1] != '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char conf_name[] = "fuzz.conf";
    if (chdir(scratch) < 0)
        die("chdir to the scratch directory");
    int fd = open(conf_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
        die(conf_name);
    close(fd);

    /* What the parser prints goes to stderr: catch it in memory for this input only. */
    char *out = NULL;
    size_t out_len = 0;
    FILE *mem = open_memstream(&out, &out_len);
    FZ_CHECK(mem != NULL);
    FILE *saved = stderr;
    stderr = mem;
    static struct config cfg;
    char a0[] = "lfhttpd", a1[] = "--config", a2[] = "fuzz.conf";
    char *args[] = { a0, a1, a2, NULL };
    enum config_result r = config_from_args(&cfg, 3, args);
    stderr = saved;
    fclose(mem);
    if (chdir(home) < 0)
        die("chdir back");

    if (r == CONFIG_OK) {
        if (out_len)
            fprintf(stderr, "accepted file printed: %s\n", out);
        FZ_CHECK(out_len == 0);
        config_free(&cfg);
    } else {
        FZ_CHECK(r == CONFIG_ERROR);
        /* Exactly one line: "fuzz.conf:LINE: reason\n". */
        bool one_line = out_len > 1 && out[out_len - 1] == '\n' &&
                        memchr(out, '\n', out_len - 1) == NULL;
        char *end = NULL;
        unsigned long line = 0;
        bool file_line = out_len > sizeof(conf_name) &&
                         !strncmp(out, conf_name, sizeof(conf_name) - 1) &&
                         out[sizeof(conf_name) - 1] == ':';
        if (file_line) {
            line = strtoul(out + sizeof(conf_name), &end, 10);
            file_line = end > out + sizeof(conf_name) && end[0] == ':' && end[1] == ' ' &&
                        end[2] != '\n';
        }
        bool line_ok = file_line && line >= 1 && line <= count_lines(data, size);
        if (!one_line || !file_line || !line_ok)
            fprintf(stderr, "rejected file printed (%zu bytes, %u lines): %.*s\n", out_len,
                    count_lines(data, size), (int)(out_len > 2000 ? 2000 : out_len), out);
        FZ_CHECK(one_line);
        FZ_CHECK(file_line);
        FZ_CHECK(line_ok);
    }
    free(out);
    return 0;
}
