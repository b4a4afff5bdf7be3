/* ex_rules.h — site rules in a request's life: the step between the location's limits and
 * access checks and its authentication (docs/ARCHITECTURE.md, "Order of evaluation").
 *
 * Once per request, on the decoded, normalised path: the site's rule files are never served
 * (404); the header rules that match the path are rendered into the exchange's header lines
 * (ex->rules_hdr), which every response head of the request then gets (ex_rules_headers, from
 * the framing); the first redirect rule that matches and is not shadowed by a file answers
 * (a redirect, a status page) or rewrites the path, which is matched again (at most
 * RULES_MAX_CHAIN rewrites: one more answers 500) and then served as if requested, by the
 * location of the rewritten path. Nothing here allocates. */
#ifndef LF_EX_RULES_H
#define LF_EX_RULES_H

#include "http/http_response.h"

struct exchange;
struct site;

/* Bytes of the header lines the rules of one request may add (the head must hold them too). */
#define EX_RULES_HDR_MAX 2048

/* Apply the rules of ex->loc (rules_on). Returns 0 to go on with ex->loc and ex->path (both
 * changed by a rewrite), 1 when the request was answered, or -errno. */
int ex_rules_apply(struct exchange *ex, const struct site *site);

/* Put the rules' header lines into head r: each replaces the header of its name, a detach
 * (`! Name`) removes it. Called by the framing when ex->rules_hdr_len > 0. */
void ex_rules_headers(const struct exchange *ex, struct response *r);

#endif
