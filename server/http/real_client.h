/* real_client.h — who a request comes from when it comes through trusted proxies: the
 * addresses the proxies' X-Forwarded-For or Forwarded (RFC 7239) header lines carry, checked
 * against the trusted list (netaddr.h). HTTP, so it lives here; netaddr stays addresses only. */
#ifndef LF_REAL_CLIENT_H
#define LF_REAL_CLIENT_H

#include <netinet/in.h>
#include <stdbool.h>

#include "base/netaddr.h"

struct http_request;

/* The client of a request: `peer`, unless `peer` is a trusted proxy, in which case the
 * configured header — X-Forwarded-For, or Forwarded (RFC 7239) when `forwarded` — is walked
 * from right to left and the first address that is not itself a trusted proxy is taken. Only
 * one header is ever believed: the other may have been sent by the client itself. Malformed
 * entries stop the walk (the last address vouched for by a trusted hop is used). */
void http_real_client(const struct cidr_list *trusted, bool forwarded,
                      const struct in6_addr *peer, const struct http_request *req,
                      struct in6_addr *out);

#endif
