/* root_switch.h — a location's root across generations: root_follow's identities and
 * root_grace's previous tree, set while a generation is built (generation.c).
 *
 * A deploy swaps the directory a root names (a `current -> releases/N` symlink renamed over,
 * a kubelet volume's `..data`): a new generation opens the new tree (the timer tick notices
 * the change, watch.c, and reloads). This file records what each root resolved to when its
 * generation opened it, says in the log when that differs from the previous generation's, and
 * gives the location a copy of itself on the previous tree's root (lc->prev) for root_grace:
 * the static handler serves from it what the new tree lacks (static/previous_root.h). The
 * previous tree's directory is held by that copy's fd, in the new generation, until the
 * generation built at the end of the grace (watch.c) drops it. */
#ifndef LF_ROOT_SWITCH_H
#define LF_ROOT_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

struct loc_conf;
struct runtime;

/* Record what lc->root_fd is (and its ..data's target, for a kubelet volume). */
void root_identify(struct loc_conf *lc);
/* Compare `lc` with the location of the previous generation `prev` (NULL: none) that has the
 * same root; log a switch when `first` (the location that opened this root), and give `lc` its
 * previous tree under root_grace. `now` is monotonic ms. Returns 0, or -1 (message printed). */
int root_carry(const struct runtime *prev, struct loc_conf *lc, bool first, unsigned generation,
               int64_t now);
/* Give back what root_carry gave `lc`. */
void root_release(struct loc_conf *lc);

#endif
