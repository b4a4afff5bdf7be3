/* proxy_protocol.h — the PROXY protocol (HAProxy), versions 1 and 2.
 *
 * On a listener configured with `listen ADDR:PORT proxy_protocol`, a load balancer sends a
 * header before the client's bytes saying who the client is. The connection parses it before
 * the first request and then uses the client's address (logs, CGI REMOTE_ADDR, allow-lists).
 * A connection whose first bytes are not a valid header is closed. Pure: no I/O. */
#ifndef LF_PROXY_PROTOCOL_H
#define LF_PROXY_PROTOCOL_H

#include <netinet/in.h>
#include <stddef.h>

/* Parse a PROXY header at the start of data[0..len). Returns the header's length (> 0) and,
 * for a proxied TCP connection, sets *addr and *port to the source (IPv4 as v4-mapped; untouched
 * for "UNKNOWN" / LOCAL); 0 when more bytes are needed; -1 when the bytes are not a valid
 * header. */
int proxy_protocol_parse(const char *data, size_t len, struct in6_addr *addr, in_port_t *port);

#endif
