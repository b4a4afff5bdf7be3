/* rules_internal.h — what the rule files' parsers (rules_parse.c) need of the rule set
 * (rules.c): building a set, and checking it once it is whole. Not for other folders. */
#ifndef LF_RULES_INTERNAL_H
#define LF_RULES_INTERNAL_H

#include "rules/rules.h"

/* A new empty set, or NULL. */
struct rules_set *rules_set_new(void);

/* Room for one more rule at the end of set (zeroed); NULL when out of memory. */
struct rules_rule *rules_append(struct rules_set *set);

/* Free what one rule holds (not the rule itself). */
void rules_rule_free(struct rules_rule *r);

/* Build the index of a set whose rules are all appended, then look for loops among its
 * redirects and forced rewrites. Returns 0, or -1 with a "FILE:LINE: reason" in diag->error.
 */
int rules_finish(struct rules_set *set, const char *file, struct rules_diag *diag);

#endif /* LF_RULES_INTERNAL_H */
