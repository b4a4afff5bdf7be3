/* test_cpu_limit.c — threads auto: cpu.max parsing, rounding, and finding the process's cgroup
 * quota through mountinfo and /proc/self/cgroup (v2, v1, containers, nested limits). The
 * hierarchies are real directories made here; the two /proc files are written to match. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cpu_limit.h"
#include "test.h"

static char base[PATH_MAX];

static void put(const char *rel, const char *text)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof(path), "%s/%s", base, rel);
    /* make the parents */
    for (char *p = path + strlen(base) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* mountinfo with one line per (root, mount point relative to base, fstype, superoptions) */
static void mountinfo(const char *lines)
{
    put("mountinfo", lines);
}

static struct cpu_limit read_limit(unsigned online, unsigned affinity)
{
    char mi[PATH_MAX + 16], cg[PATH_MAX + 16];
    snprintf(mi, sizeof(mi), "%s/mountinfo", base);
    snprintf(cg, sizeof(cg), "%s/cgroup", base);
    struct cpu_limit cl;
    cpu_limit_read_from(&cl, mi, cg, online, affinity);
    return cl;
}

int main(void)
{
    uint64_t q = 0, p = 0;
    is_int(cpu_limit_parse_cpu_max("max 100000", &q, &p), 0, "cpu.max 'max': no quota");
    is_int(cpu_limit_parse_cpu_max("150000 100000\n", &q, &p), 1, "cpu.max with a quota");
    ok(q == 150000 && p == 100000, "quota and period read (%llu %llu)", (unsigned long long)q,
       (unsigned long long)p);
    is_int(cpu_limit_parse_cpu_max("50000", &q, &p), 1, "cpu.max without a period");
    ok(p == 100000, "the default period is 100 ms");
    is_int(cpu_limit_parse_cpu_max("", &q, &p), -1, "empty cpu.max is malformed");
    is_int(cpu_limit_parse_cpu_max("x 100000", &q, &p), -1, "non-numeric quota is malformed");
    is_int(cpu_limit_parse_cpu_max("0 100000", &q, &p), -1, "zero quota is malformed");
    is_int(cpu_limit_parse_cpu_max("1000 0", &q, &p), -1, "zero period is malformed");

    is_int(cpu_limit_quota_cpus(150000, 100000), 2, "1.5 CPUs round up to 2");
    is_int(cpu_limit_quota_cpus(100000, 100000), 1, "exactly 1 CPU");
    is_int(cpu_limit_quota_cpus(10000, 100000), 1, "0.1 CPU is still one thread");
    is_int(cpu_limit_quota_cpus(200001, 100000), 3, "2.00001 CPUs round up to 3");

    snprintf(base, sizeof(base), "/tmp/lfhttpd-cpu-limit.XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    char text[PATH_MAX * 4];

    /* cgroup v2, the process in /a/b, a quota of 2.5 CPUs on b, none on a */
    put("cgroup", "0::/a/b\n");
    put("v2/a/cpu.max", "max 100000\n");
    put("v2/a/b/cpu.max", "250000 100000\n");
    snprintf(text, sizeof(text),
             "21 1 0:19 / /proc rw - proc proc rw\n"
             "30 25 0:26 / %s/v2 rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", base);
    mountinfo(text);
    struct cpu_limit cl = read_limit(8, 8);
    is_int(cl.quota_cpus, 3, "v2: 2.5 CPUs on the process's cgroup -> 3");
    is_int(cl.cpus, 3, "v2: threads auto = 3 of 8");
    ok(strstr(cl.quota_file, "/v2/a/b/cpu.max") != NULL, "v2: says where (%s)", cl.quota_file);

    /* a tighter limit on the parent binds the child */
    put("v2/a/cpu.max", "100000 100000\n");
    cl = read_limit(8, 8);
    is_int(cl.cpus, 1, "v2: the parent's 1 CPU binds the child's 2.5");
    ok(strstr(cl.quota_file, "/v2/a/cpu.max") != NULL, "v2: the parent's file named (%s)",
       cl.quota_file);

    /* the affinity mask is smaller still; and the number of online CPUs */
    put("v2/a/cpu.max", "max 100000\n");
    cl = read_limit(8, 2);
    is_int(cl.cpus, 2, "affinity 2 < quota 3: 2");
    cl = read_limit(2, 0);
    is_int(cl.cpus, 2, "2 online, affinity unknown, quota 3: 2");
    char why[PATH_MAX + 256];
    cl = read_limit(8, 2);
    cpu_limit_describe(&cl, why, sizeof(why));
    ok(strstr(why, "2 of 8 online CPUs in the affinity mask") && strstr(why, "250000/100000"),
       "described: %s", why);

    /* cgroup v1 as a container sees it without a cgroup namespace: the container's cgroup is
     * mounted at the mount point, /proc/self/cgroup names it by its host path */
    put("cgroup", "9:name=systemd:/machine.slice/libpod-1.scope\n"
                  "3:cpuset:/machine.slice/libpod-1.scope\n"
                  "2:cpu,cpuacct:/machine.slice/libpod-1.scope\n"
                  "0::/\n");
    put("v1cpu/cpu.cfs_quota_us", "150000\n");
    put("v1cpu/cpu.cfs_period_us", "100000\n");
    put("v1cpuset/cpu.cfs_quota_us", "100000\n"); /* must not be read: not the cpu hierarchy */
    put("v1cpuset/cpu.cfs_period_us", "100000\n");
    snprintf(text, sizeof(text),
             "40 30 0:30 /machine.slice/libpod-1.scope %s/v1cpu ro - cgroup cgroup rw,cpu,cpuacct\n"
             "41 30 0:31 /machine.slice/libpod-1.scope %s/v1cpuset ro - cgroup cgroup rw,cpuset\n",
             base, base);
    mountinfo(text);
    cl = read_limit(4, 4);
    is_int(cl.quota_cpus, 2, "v1 in a container: --cpus 1.5 -> 2");
    ok(strstr(cl.quota_file, "/v1cpu/cpu.cfs_quota_us") != NULL, "v1: says where (%s)",
       cl.quota_file);

    /* v1 on a host: the hierarchy's root mounted, the process two levels down; -1 = none */
    put("cgroup", "4:cpu:/user/job\n");
    put("v1host/cpu.cfs_quota_us", "-1\n");
    put("v1host/cpu.cfs_period_us", "100000\n");
    put("v1host/user/cpu.cfs_quota_us", "-1\n");
    put("v1host/user/cpu.cfs_period_us", "100000\n");
    put("v1host/user/job/cpu.cfs_quota_us", "-1\n");
    put("v1host/user/job/cpu.cfs_period_us", "100000\n");
    snprintf(text, sizeof(text), "40 30 0:30 / %s/v1host rw - cgroup cgroup rw,cpu\n", base);
    mountinfo(text);
    cl = read_limit(4, 4);
    is_int(cl.quota_cpus, 0, "v1: -1 everywhere is no quota");
    is_int(cl.cpus, 4, "v1: no quota, 4 CPUs");
    put("v1host/user/cpu.cfs_quota_us", "300000\n");
    cl = read_limit(4, 4);
    is_int(cl.cpus, 3, "v1: the parent's 3 CPUs found from the process's cgroup");

    /* a mount point with a space (octal escape in mountinfo) */
    put("cgroup", "0::/\n");
    put("with space/cpu.max", "200000 100000\n");
    snprintf(text, sizeof(text), "30 25 0:26 / %s/with\\040space rw - cgroup2 cgroup2 rw\n", base);
    mountinfo(text);
    cl = read_limit(4, 4);
    is_int(cl.cpus, 2, "mount point with an escaped space");

    /* the process's path is outside the mounted part: the mount point's own limit */
    put("cgroup", "0::/elsewhere/x\n");
    put("v2ns/cpu.max", "100000 100000\n");
    snprintf(text, sizeof(text), "30 25 0:26 /pod1 %s/v2ns rw - cgroup2 cgroup2 rw\n", base);
    mountinfo(text);
    cl = read_limit(4, 4);
    is_int(cl.cpus, 1, "a cgroup outside the mounted part: the mount point's quota");

    /* no cgroup file at all */
    unlink(strcat(strcpy(text, base), "/cgroup"));
    cl = read_limit(4, 3);
    is_int(cl.quota_cpus, 0, "no /proc/self/cgroup: no quota");
    is_int(cl.cpus, 3, "no /proc/self/cgroup: the affinity mask");

    /* the real process: whatever the machine says, at least one CPU and never more than online */
    cpu_limit_read(&cl);
    ok(cl.cpus >= 1 && cl.cpus <= cl.online, "this process: %u of %u", cl.cpus, cl.online);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", base);
    return done_testing();
}
