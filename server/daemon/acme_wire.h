/* acme_wire.h — the ACME client (acme/acme.h) in the daemon: started once the listeners exist,
 * kept across a reload that does not change its settings, restarted by one that does, stopped
 * at exit. Its certificate goes into the TLS listeners' managed slot (net/tls.h), its
 * TLS-ALPN-01 challenges into their ALPN callback; HTTP-01 is answered by the exchange from
 * acme_http01_lookup. */
#ifndef LF_ACME_WIRE_H
#define LF_ACME_WIRE_H

#include <stddef.h>

struct runtime;

/* Make the ACME thread match rt's configuration: start, keep, restart or stop it. `why` prefixes
 * the log lines. 0, or -1 when it could not start (one line logged). Main thread (start-up) or
 * the reloading thread; never two at once (the reload lock). */
int acme_wire_apply(const struct runtime *rt, const char *why);
/* Stop it and forget the managed certificate (at exit). */
void acme_wire_stop(void);
/* A renewal now (SIGUSR2), when ACME runs. */
void acme_wire_renew(void);
/* "; acme: renewal failing for NAME (reason)" for systemd's STATUS, or "" */
void acme_wire_summary(char *out, size_t size);

#endif
