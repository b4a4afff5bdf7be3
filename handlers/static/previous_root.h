/* previous_root.h — root_grace: after a deploy switched a location's root (daemon's
 * root_switch.h), a fingerprinted asset the new tree lacks is still served from the previous
 * tree until the grace ends, so that a page of the previous release still loads its lazy chunks.
 *
 * Only names that carry a content hash, as cache_policy.h judges them (the same test that
 * makes them immutable in caches): such a file is immutable by construction, so the old one is
 * the right content for whoever asks for it; anything else missing from the new tree (a page the
 * deploy removed) is a 404 at once. */
#ifndef LF_PREVIOUS_ROOT_H
#define LF_PREVIOUS_ROOT_H

struct exchange;
struct fc_entry;
struct file_cache;

/* `missing` is the cache's FC_MISSING entry for the request's path. If the location is in its
 * root_grace, the name is fingerprinted and the previous tree has the file, release `missing`
 * and return the previous tree's entry; else return `missing`. */
struct fc_entry *static_previous_root(struct file_cache *fc, struct exchange *ex,
                                      struct fc_entry *missing);

#endif
