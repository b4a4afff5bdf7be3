/* cache_policy.h — `cache_policy auto`: a Cache-Control chosen from what a file is.
 *
 * A static site generator (Hugo's resources.Fingerprint, Vite, webpack, esbuild) names an
 * asset after a hash of its content, so the name changes whenever the bytes do: such a file
 * may be cached for a year and never revalidated. A page (HTML) keeps its name across deploys
 * and must be revalidated every time, or a visitor keeps an old page pointing at assets a new
 * deploy removed. Everything else is left to the configuration.
 *
 * The test is deliberately conservative: a name taken for a hash that is not one would pin an
 * ordinary file in caches for a year, while a hash not recognised only costs revalidations.
 * A file's name (its last path segment) is split at '.' into parts, the last being the
 * extension. The candidates are
 *   - every part between the first and the last (app.3f9a1c2b.js, main.min.HEX.css);
 *   - in the first part, what follows its last '-' or '_' (index-BZ1x2y3Z.js);
 *   - in the first part, its last 8 characters when a '-' stands before them (Rollup's and
 *     Vite's `[name]-[hash]`, whose 8 characters may themselves hold '-' or '_').
 * A candidate is a content hash when it has 8 to 128 characters of [A-Za-z0-9_-], at least one
 * letter and one digit, and is either hexadecimal in one case (webpack, Hugo), or holds both
 * upper- and lower-case letters (base64: Rollup, Vite), or is 8 characters of RFC 4648's
 * base32 alphabet [A-Z2-7] (esbuild). So jquery-3.7.1.min.js, polyfills-legacy.js,
 * bootstrap.bundle.min.js, 2024-report.pdf and photo-1920x1080.jpg are not fingerprinted. */
#ifndef LF_CACHE_POLICY_H
#define LF_CACHE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

enum cache_class {
    CACHE_OTHER = 0,   /* left to the configuration */
    CACHE_IMMUTABLE,   /* a fingerprinted asset: public, max-age=31536000, immutable */
    CACHE_REVALIDATE,  /* HTML: no-cache */
};

#define CACHE_IMMUTABLE_VALUE "public, max-age=31536000, immutable"
#define CACHE_REVALIDATE_VALUE "no-cache"

/* Does the file name `name` (a last path segment, `len` bytes) carry a content hash? */
bool cache_name_fingerprinted(const char *name, size_t len);
/* The class of a file at URL path `path` served as Content-Type `type`. */
enum cache_class cache_classify(const char *path, size_t len, const char *type);

#endif
