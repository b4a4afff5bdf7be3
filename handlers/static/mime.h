/* mime.h — file extension to Content-Type mapping.
 *
 * A table is built once at start-up by mime_table_load() and is immutable afterwards, so
 * mime_lookup() may be called concurrently from any number of threads without locking.
 */
#ifndef LFHTTPD_MIME_H
#define LFHTTPD_MIME_H

#include <stddef.h>

struct mime_table;

/* Build a table from a mime.types file in the standard format ("type ext ext ...", '#'
 * comments, blank lines; later lines override earlier ones for the same extension). path
 * NULL -> only the built-in table. The file's entries override the built-in table's, which
 * stays as the fallback for extensions the file does not mention. Extensions are matched
 * case-insensitively; file extensions containing a '.' (e.g. "tar.gz") can never match and
 * are ignored, as are types listed without extensions.
 *
 * Text types (any text/ type, application/javascript, application/json, application/xml,
 * image/svg+xml, application/manifest+json, and any +xml/+json type) get "; charset=utf-8"
 * appended in the stored string.
 *
 * Returns the table (free with mime_table_free), or NULL with a message in err (errlen bytes,
 * NUL-terminated, may be truncated; err may be NULL if errlen is 0):
 *   "FILE:LINE: reason"              a line could not be parsed (invalid media type/extension)
 *   "FILE: cannot open: strerror"    the file could not be opened
 *   "FILE: read error: strerror" / "lfhttpd: out of memory"
 */
struct mime_table *mime_table_load(const char *path, char *err, size_t errlen);

/* Free a table from mime_table_load. NULL is a no-op. Strings returned by mime_lookup on this
 * table become invalid. */
void mime_table_free(struct mime_table *t);

/* Content-Type for a file name or path name/len (not necessarily NUL-terminated) by its
 * extension: the text after the last '.' of the last '/'-separated segment, compared
 * case-insensitively. No extension, an empty one ("a."), or a dot-file (".bashrc") -> NULL.
 * Returns a NUL-terminated string owned by the table, or NULL when unknown (the caller uses
 * its configured default type). t NULL -> the built-in table only. Lock-free and
 * allocation-free. */
const char *mime_lookup(const struct mime_table *t, const char *name, size_t len);

#endif /* LFHTTPD_MIME_H */
