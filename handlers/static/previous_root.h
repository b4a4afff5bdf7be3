/* previous_root.h — root_grace: after a deploy switched a location's root (daemon's
 * root_switch.h), a hashed asset the new tree lacks is still served from the previous tree
 * until the grace ends, so that a page of the previous release still loads its lazy chunks.
 *
 * Only names that carry a content hash: such a file is immutable by construction, so the old
 * one is the right content for whoever asks for it; anything else missing from the new tree
 * (a page the deploy removed) is a 404 at once. */
#ifndef LF_PREVIOUS_ROOT_H
#define LF_PREVIOUS_ROOT_H

#include <stdbool.h>
#include <stddef.h>

struct exchange;
struct fc_entry;
struct file_cache;

/* Does the last segment of `path` carry a content hash? A token of 8 to 64 letters, digits or
 * '_' with at least one digit, after a '.' or '-' of the name and just before its extension or
 * one dotted word before it: app.3f9a2c1b.js, index-BmKz3a9q.js, chunk-5KQ2X7ZB.css,
 * main.0123456789abcdef.js, 787.a1b2c3d4.chunk.js. */
bool static_name_hashed(const char *path, size_t len);

/* `missing` is the cache's FC_MISSING entry for the request's path. If the location is in its
 * root_grace, the name is hashed and the previous tree has the file, release `missing` and
 * return the previous tree's entry; else return `missing`. */
struct fc_entry *static_previous_root(struct file_cache *fc, struct exchange *ex,
                                      struct fc_entry *missing);

#endif
