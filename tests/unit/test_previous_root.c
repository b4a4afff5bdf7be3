/* test_previous_root.c — unit tests for handlers/static/previous_root.c: which names carry a
 * content hash (root_grace serves only those from the previous tree). */
#include "static/previous_root.h"
#include "test.h"

#include <string.h>

static void expect(const char *path, bool hashed)
{
    ok(static_name_hashed(path, strlen(path)) == hashed, "%s %s", path,
       hashed ? "is hashed" : "is not hashed");
}

int main(void)
{
    /* The bundlers' usual shapes: webpack, Vite, esbuild, Parcel, Angular. */
    expect("/assets/app.1a2b3c4d.js", true);
    expect("/assets/index-BmKz3a9q.js", true);
    expect("/chunk-5KQ2X7ZB.css", true);
    expect("/main.0123456789abcdef.js", true);
    expect("/static/js/787.a1b2c3d4.chunk.js", true);  /* one dotted word before the extension */
    expect("/static/js/787.a1b2c3d4.chunk.min.js", false); /* two: not looked that far */
    expect("/runtime.a1b2c3d4.chunk", true);
    expect("/x_y.3f9a2c1b_5e.js", true);
    /* Plain names: no token, too short, no digit, the whole stem, no extension. */
    expect("/index.html", false);
    expect("/app.js", false);
    expect("/jquery-3.7.1.min.js", false);
    expect("/favicon-32x32.png", false);
    expect("/Roboto-Regular.woff2", false);
    expect("/fonts/Inter-SemiBold.woff2", false);
    expect("/20240101.txt", false);
    expect("/app.1a2b3c4d", false);
    expect("/1a2b3c4d.js", false);
    expect("/app.1a2b3c4.js", false);                   /* 7 characters */
    expect("/app.1a2b3c4d!.js", false);
    expect("/dir.1a2b3c4d/app.js", false);              /* only the last segment counts */
    expect("/", false);
    expect("", false);
    /* 64 characters is the longest token taken, 65 is not a hash. */
    expect("/a.0123456789012345678901234567890123456789012345678901234567890123.js", true);
    expect("/a.01234567890123456789012345678901234567890123456789012345678901234.js", false);
    return done_testing();
}
