/* cpu_limit.h — how many CPUs this process may actually use, for `threads auto`.
 *
 * The number of online CPUs is the host's; a container or a systemd unit usually gets less:
 * an affinity mask (taskset, cpusets: sched_getaffinity) and a CPU bandwidth quota (cgroup v2
 * `cpu.max`, cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, e.g. `podman run --cpus 1.5`
 * or a Kubernetes CPU limit). A Leader/Followers pool larger than the CPUs it may run on only
 * adds hand-offs and preemptions, so `threads auto` takes the smaller of the two, the quota
 * rounded up (1.5 CPUs -> 2 threads).
 *
 * The quota is the tightest of the process's cgroup and its ancestors up to the root of the
 * mounted hierarchy (inside a container: the container's own cgroup, which is the root it sees
 * with a cgroup namespace). Read once at start-up and on reload; nothing here runs on the
 * request path. */
#ifndef LF_CPU_LIMIT_H
#define LF_CPU_LIMIT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cpu_limit {
    unsigned online;            /* sysconf(_SC_NPROCESSORS_ONLN) */
    unsigned affinity;          /* CPUs in the affinity mask; 0 = could not be read */
    unsigned quota_cpus;        /* ceil(quota / period) of the tightest quota; 0 = no quota */
    uint64_t quota_us, period_us;
    char quota_file[PATH_MAX + 32]; /* where that quota was read */
    unsigned cpus;              /* what `threads auto` uses: the smallest of the above, >= 1 */
};

/* Fill `cl` from this process's affinity mask, /proc/self/mountinfo and /proc/self/cgroup. */
void cpu_limit_read(struct cpu_limit *cl);

/* The same with other files (unit tests): `mountinfo` and `cgroup` are paths in the formats of
 * /proc/self/mountinfo and /proc/self/cgroup; the mount points they name are real directories.
 * `affinity` is taken as given (0 = unknown). */
void cpu_limit_read_from(struct cpu_limit *cl, const char *mountinfo, const char *cgroup,
                         unsigned online, unsigned affinity);

/* One line saying how `cl->cpus` was found, e.g. "1 of 2 online CPUs in the affinity mask; no
 * cgroup CPU quota". */
void cpu_limit_describe(const struct cpu_limit *cl, char *out, size_t cap);

/* Parse a cgroup v2 cpu.max ("max 100000" or "150000 100000"). Returns 1 with a quota, 0 for
 * "max" (no quota), -1 if malformed. */
int cpu_limit_parse_cpu_max(const char *text, uint64_t *quota_us, uint64_t *period_us);

/* CPUs a quota allows, rounded up (at least 1). */
unsigned cpu_limit_quota_cpus(uint64_t quota_us, uint64_t period_us);

#endif
