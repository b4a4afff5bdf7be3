/* probe.h — `lfhttpd --probe URL`: the server's own health-check client.
 *
 * A container image without a shell, curl or wget still needs a HEALTHCHECK (and podman turns
 * a Kubernetes exec probe into one): the binary asks one URL itself. GET over plain HTTP/1.1
 * on a fresh connection, at most PROBE_TIMEOUT_MS from start to the status line; exit 0 for a
 * 2xx or 3xx status (as a kubelet's httpGet probe counts it), 1 for anything else (another
 * status, refused, timed out), 2 for a malformed URL or command line. */
#ifndef LF_PROBE_H
#define LF_PROBE_H

#include <stddef.h>

#define PROBE_TIMEOUT_MS 5000

/* Is `--probe` on this command line? */
int probe_requested(int argc, char **argv);
/* Run the probe the command line asks for; returns the exit status. */
int probe_main(int argc, char **argv);

/* Split "http://HOST[:PORT][/PATH]" (HOST: a name, an IPv4 address or [IPv6]; PATH may carry
 * a query) into its parts; port defaults to 80, path to "/". Returns 0 or -1 with `err`. */
int probe_parse_url(const char *url, char *host, size_t hostcap, char *port, size_t portcap,
                    const char **path, char *err, size_t errcap);

#endif
