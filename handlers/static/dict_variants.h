/* dict_variants.h — Compression Dictionary Transport for static files: the files a
 * compress_dictionary pattern covers go into the dictionary store once per version, and are
 * sent as dcz against an old version a client holds, made once per (file version, dictionary)
 * by the compressor threads. The protocol's parts are compress/dictionary.h; this is where
 * they meet the open-file cache.
 *
 * Request threads never wait and never touch the disk here: the store's lookup is lock-free,
 * an entry's dcz variants are in its slots (file_cache.h: fc_dcz_slot), and whatever is
 * missing is queued — the request gets the best ordinary representation meanwhile. */
#ifndef LF_DICT_VARIANTS_H
#define LF_DICT_VARIANTS_H

#include "base/strview.h"

struct fc_entry;
struct http_request;
struct otf_loc;
struct runtime;

/* `e` (covered: e->dict) is being served: the first time, queue putting this version into the
 * store (a version is a dictionary once a client has it, whatever representation it got). */
void dict_note_served(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e);

/* The dcz variant of `e` for the dictionary the request offers (Available-Dictionary, with
 * dcz in Accept-Encoding `aeh`), borrowed while `e` is held; or NULL: none offered, malformed,
 * not a stored version of e's pattern, or not made yet (then queued, once per dictionary). */
struct fc_entry *dict_want(struct otf_loc *cl, struct runtime *rt, struct fc_entry *e,
                           const struct http_request *req, struct strview aeh);

#endif
