/* cpu_limit.c — CPUs this process may use: affinity mask and cgroup CPU quota; see cpu_limit.h. */
#include "base/cpu_limit.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cpu_limit_parse_cpu_max(const char *text, uint64_t *quota_us, uint64_t *period_us)
{
    char q[32];
    unsigned long long period = 100000;
    int n = sscanf(text, "%31s %llu", q, &period);
    if (n < 1)
        return -1;
    if (!strcmp(q, "max"))
        return 0;
    char *end;
    errno = 0;
    unsigned long long quota = strtoull(q, &end, 10);
    if (errno || *end || !isdigit((unsigned char)q[0]) || quota == 0 || period == 0)
        return -1;
    *quota_us = quota;
    *period_us = period;
    return 1;
}

unsigned cpu_limit_quota_cpus(uint64_t quota_us, uint64_t period_us)
{
    if (!period_us)
        return 0;
    uint64_t n = quota_us / period_us + (quota_us % period_us ? 1 : 0);
    return n == 0 ? 1 : n > UINT_MAX ? UINT_MAX : (unsigned)n;
}

/* The first line of a small file, without its line end; false if it cannot be read. */
static bool read_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(out, (int)cap, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

/* Consider one quota: keep it when it allows fewer CPUs than the tightest so far. */
static void consider(struct cpu_limit *cl, uint64_t quota, uint64_t period, const char *file)
{
    unsigned n = cpu_limit_quota_cpus(quota, period);
    if (cl->quota_cpus && n >= cl->quota_cpus)
        return;
    cl->quota_cpus = n;
    cl->quota_us = quota;
    cl->period_us = period;
    snprintf(cl->quota_file, sizeof(cl->quota_file), "%s", file);
}

/* The quota set on one cgroup directory, if any (v2: cpu.max; v1: cpu.cfs_quota_us). */
static void read_quota(struct cpu_limit *cl, const char *dir, bool v2)
{
    char path[PATH_MAX + 32], line[128];
    uint64_t quota, period;
    if (v2) {
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        if (read_line(path, line, sizeof(line)) && cpu_limit_parse_cpu_max(line, &quota, &period) == 1)
            consider(cl, quota, period, path);
        return;
    }
    char ppath[PATH_MAX + 32], pline[128];
    snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
    snprintf(ppath, sizeof(ppath), "%s/cpu.cfs_period_us", dir);
    if (!read_line(path, line, sizeof(line)) || !read_line(ppath, pline, sizeof(pline)))
        return;
    char *e1, *e2;
    long long q = strtoll(line, &e1, 10);
    long long p = strtoll(pline, &e2, 10);
    if (*e1 || *e2 || q <= 0 || p <= 0) /* -1: no quota */
        return;
    consider(cl, (uint64_t)q, (uint64_t)p, path);
}

/* Undo mountinfo's octal escapes (\040 for a space...) in place. */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

static bool has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, tok, n))
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Walk from the process's cgroup directory up to the mount point, reading each level's quota:
 * a parent's limit binds its children too. `root` is the part of the hierarchy mounted at
 * `mnt`; `cg` the process's cgroup path in that hierarchy. */
static void walk(struct cpu_limit *cl, const char *root, const char *mnt, const char *cg, bool v2)
{
    char dir[PATH_MAX];
    size_t rl = strlen(root);
    const char *rel = NULL;
    if (!strcmp(root, "/"))
        rel = cg;
    else if (!strncmp(cg, root, rl) && (cg[rl] == '\0' || cg[rl] == '/'))
        rel = cg + rl;
    /* A path outside the mounted part cannot be located: use what is mounted (inside a
     * container that is the container's own cgroup). */
    if (!rel || !strcmp(rel, "/"))
        rel = "";
    if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, rel) >= sizeof(dir))
        return;
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        snprintf(dir, sizeof(dir), "%s", mnt);
    size_t ml = strlen(mnt);
    for (unsigned depth = 0; depth < 64; depth++) {
        read_quota(cl, dir, v2);
        size_t len = strlen(dir);
        if (len <= ml)
            break;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < ml)
            break;
        *slash = '\0';
        if (strlen(dir) < ml) /* the mount point "/" itself */
            break;
    }
}

void cpu_limit_read_from(struct cpu_limit *cl, const char *mountinfo, const char *cgroup,
                         unsigned online, unsigned affinity)
{
    memset(cl, 0, sizeof(*cl));
    cl->online = online ? online : 1;
    cl->affinity = affinity;

    /* The process's cgroup paths: v2 ("0::/path") and the v1 hierarchy with the cpu controller. */
    char v2path[PATH_MAX] = "", v1path[PATH_MAX] = "";
    bool have_v2 = false, have_v1 = false;
    char *line = NULL;
    size_t cap = 0;
    FILE *f = fopen(cgroup, "re");
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!strncmp(line, "0:", 2) && !*ctrls && !have_v2) {
            snprintf(v2path, sizeof(v2path), "%s", path);
            have_v2 = true;
        } else if (has_token(ctrls, "cpu") && !have_v1) {
            snprintf(v1path, sizeof(v1path), "%s", path);
            have_v1 = true;
        }
    }
    if (f)
        fclose(f);

    f = (have_v1 || have_v2) ? fopen(mountinfo, "re") : NULL;
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS */
        char *fields[6], *save = NULL;
        int n = 0;
        char *t = strtok_r(line, " ", &save);
        while (t && n < 6) {
            fields[n++] = t;
            if (n < 6) /* not one more: the next token may be the separator */
                t = strtok_r(NULL, " ", &save);
        }
        if (n < 6)
            continue;
        while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-"))
            ;
        char *fstype = strtok_r(NULL, " ", &save);
        char *source = strtok_r(NULL, " ", &save);
        char *superopts = strtok_r(NULL, " ", &save);
        if (!fstype || !source || !superopts)
            continue;
        char *root = fields[3], *mnt = fields[4];
        unescape(root);
        unescape(mnt);
        if (!strcmp(fstype, "cgroup2") && have_v2)
            walk(cl, root, mnt, v2path, true);
        else if (!strcmp(fstype, "cgroup") && have_v1 && has_token(superopts, "cpu"))
            walk(cl, root, mnt, v1path, false);
    }
    if (f)
        fclose(f);
    free(line);

    unsigned n = cl->online;
    if (cl->affinity && cl->affinity < n)
        n = cl->affinity;
    if (cl->quota_cpus && cl->quota_cpus < n)
        n = cl->quota_cpus;
    cl->cpus = n ? n : 1;
}

void cpu_limit_read(struct cpu_limit *cl)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned affinity = 0;
    cpu_set_t *set = NULL;
    /* The mask may be larger than cpu_set_t on hosts with many CPUs: grow until it fits. */
    for (int ncpu = 1024; ncpu <= 1 << 16; ncpu *= 2) {
        size_t size = CPU_ALLOC_SIZE(ncpu);
        set = CPU_ALLOC(ncpu);
        if (!set)
            break;
        if (sched_getaffinity(0, size, set) == 0) {
            affinity = (unsigned)CPU_COUNT_S(size, set);
            break;
        }
        CPU_FREE(set);
        set = NULL;
        if (errno != EINVAL)
            break;
    }
    if (set)
        CPU_FREE(set);
    cpu_limit_read_from(cl, "/proc/self/mountinfo", "/proc/self/cgroup",
                        online > 0 ? (unsigned)online : 1, affinity);
}

void cpu_limit_describe(const struct cpu_limit *cl, char *out, size_t cap)
{
    char aff[64], quota[sizeof(cl->quota_file) + 128];
    if (cl->affinity)
        snprintf(aff, sizeof(aff), "%u of %u online CPUs in the affinity mask", cl->affinity,
                 cl->online);
    else
        snprintf(aff, sizeof(aff), "%u online CPUs (affinity mask unknown)", cl->online);
    if (cl->quota_cpus)
        snprintf(quota, sizeof(quota), "cgroup CPU quota %llu/%llu us = %u CPU%s rounded up (%s)",
                 (unsigned long long)cl->quota_us, (unsigned long long)cl->period_us,
                 cl->quota_cpus, cl->quota_cpus == 1 ? "" : "s", cl->quota_file);
    else
        snprintf(quota, sizeof(quota), "no cgroup CPU quota");
    snprintf(out, cap, "%s; %s", aff, quota);
}
