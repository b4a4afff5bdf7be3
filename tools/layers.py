#!/usr/bin/env python3
"""The layers of lfhttpd's source tree, and a check that every include points down.

    python3 tools/layers.py           check: list every include that crosses folders upward
                                      (or sideways between two folders of one rank) and exit 1
    python3 tools/layers.py --map     print the folder map (bottom first): what each folder is
                                      and which folders it may include
    python3 tools/layers.py --edges   print every cross-folder include, counted per folder pair
    python3 tools/layers.py --objects DIR
                                      check the includes, then the calls: every symbol an
                                      object file under DIR (the build's obj/ folder, which
                                      mirrors the tree) uses and another folder defines must be
                                      defined in a folder below its own; exit 1 if not
    python3 tools/layers.py --nm FILE check the calls in a listing `nm -A -P` printed (the
                                      same check, from text: how the test shows it fails)

A folder is a layer. A file may include headers of its own folder and of the folders listed
below its own; never one above, never one beside it. The same holds for the symbols it uses:
an include check alone misses an `extern` declared in a lower header and defined above (the
call points up though every include points down), so the symbol check reads what the
compiler made. docs/ARCHITECTURE.md opens with the map that --map prints, and `make test`
runs both checks.
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom first. (folder, what it is)
LAYERS = [
    ("server/base", "pure helpers with no state of the server: strings, clocks, hex and JSON, "
                    "addresses and CIDR, digests, carry buffers, CPU limits"),
    ("server/log", "the error log, log files written whole, the access-log buffer, counters"),
    ("server/lf", "the Leader/Followers pattern: event handler, handle set, thread pool, "
                  "timers, and the pattern's variants (edge, half-sync/half-async, reuseport)"),
    ("server/http", "HTTP/1.1 without I/O: the llhttp parser, requests, response heads, dates, "
                    "paths, the PROXY protocol"),
    ("server/rules", "site rules without I/O: path patterns, `_redirects` and `_headers` files, "
                     "the rule set's index, targets"),
    ("server/net", "sockets and TLS: listening sockets, TLS contexts and tickets"),
    ("server/acme", "automatic certificates: the ACME client, its state and its thread"),
    ("server/conf", "configuration: the parser, the directive registry, sites and locations, "
                    "one generation (runtime)"),
    ("server/conn", "connections: the acceptor, the connection's state machine, transports "
                    "(plain, TLS), the sink, per-client limits"),
    ("server/exchange", "one request's life: routing, auth, the handler interface, the "
                        "response's framing, streaming, deferral, the access log"),
    ("handlers/compress", "compression codecs and the variant cache, shared by static files "
                          "and streamed responses"),
    ("handlers/static", "static files: the open-file cache, MIME types, conditionals, ranges, "
                        "listings, representation choice"),
    ("handlers/cgi", "CGI/1.1: the exchange side and the spawner"),
    ("handlers/builtin", "built-in handlers: status, metrics, health, test endpoints"),
    ("handlers", "the handler registry: the one list of handler types"),
    ("server/daemon", "the process: main, the server object, reload and generations, signals, "
                      "systemd, the config watch, the probe client"),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
INCLUDE_ROOTS = ["server", "handlers"]   # the Makefile's -I paths
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """The layer of a repository path: the deepest listed folder that holds it."""
    d = os.path.dirname(path)
    while d and d not in RANK:
        d = os.path.dirname(d)
    return d or None


def resolve(src, name):
    """Where `#include "name"` in src lands: beside src first, then the -I roots."""
    for base in [os.path.dirname(src)] + INCLUDE_ROOTS:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(REPO, p)):
            return p
    return None


def sources():
    for root in INCLUDE_ROOTS:
        for d, _, files in os.walk(os.path.join(REPO, root)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), REPO)


def edges():
    for src in sorted(sources()):
        text = open(os.path.join(REPO, src), encoding="utf-8").read()
        for name in INC.findall(text):
            dst = resolve(src, name)
            if dst is None:
                continue
            a, b = folder_of(src), folder_of(dst)
            if a != b:
                yield src, dst, a, b


def nm_listing(objdir):
    """`nm -A -P` over every object file below objdir (paths relative to objdir)."""
    objs = sorted(os.path.relpath(os.path.join(d, f), objdir)
                  for d, _, files in os.walk(objdir) for f in files if f.endswith(".o"))
    if not objs:
        return None
    r = subprocess.run(["nm", "-A", "-P"] + objs, cwd=objdir, capture_output=True, text=True,
                       check=True)
    return r.stdout


def symbol_uses(listing):
    """From `nm -A -P` text (lines `OBJ: NAME TYPE [VALUE SIZE]`, OBJ a path that mirrors the
    tree, e.g. server/conn/connection.o): (object, folder, symbol, defining folder) for every
    symbol an object uses that an object of another folder defines."""
    defined, used = {}, []
    for line in listing.splitlines():
        obj, sep, rest = line.partition(": ")
        fields = rest.split()
        if not sep or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        folder = folder_of(obj)
        if kind == "U":
            used.append((obj, folder, name))
        elif kind.isupper():          # global and defined (T, D, B, R, W, V, C ...)
            defined[name] = folder
    return [(obj, a, name, defined[name]) for obj, a, name in used
            if name in defined and defined[name] != a]


def check_symbols(listing):
    """Print every use of a symbol defined in a folder above (or beside) the user's; the
    count of them."""
    bad = [(o, a, n, b) for o, a, n, b in symbol_uses(listing)
           if a is None or b is None or RANK[b] >= RANK[a]]
    for o, a, n, b in bad:
        print(f"{o}: uses {n}, defined in {b}/: {a} may not call up into {b} "
              f"(see tools/layers.py --map)")
    return len(bad)


def check_includes():
    bad = [(s, d, a, b) for s, d, a, b in edges()
           if a is None or b is None or RANK[b] >= RANK[a]]
    for s, d, a, b in bad:
        print(f"{s}: includes {d}: {a} may not include {b} (see tools/layers.py --map)")
    unplaced = sorted({s for s in sources() if folder_of(s) is None})
    for s in unplaced:
        print(f"{s}: in no layer (tools/layers.py LAYERS)")
    if bad or unplaced:
        print(f"layers: {len(bad)} upward include(s), {len(unplaced)} file(s) in no layer")
        return 1
    print("layers: every include points down")
    return 0


def main(argv):
    if "--map" in argv:
        for i, (name, what) in enumerate(LAYERS):
            below = ", ".join(n.split("/", 1)[-1] if "/" in n else n for n, _ in LAYERS[:i])
            print(f"{name + '/':19} {what}")
            print(f"{'':19} may include: {below or 'nothing of the project'}")
        return 0
    if "--edges" in argv:
        count = {}
        for _, _, a, b in edges():
            count[(a, b)] = count.get((a, b), 0) + 1
        for (a, b), n in sorted(count.items(), key=lambda kv: (RANK[kv[0][0]], RANK[kv[0][1]])):
            print(f"{a:18} -> {b:18} {n}")
        return 0
    if "--nm" in argv:
        listing = open(argv[argv.index("--nm") + 1], encoding="utf-8").read()
    elif "--objects" in argv:
        objdir = argv[argv.index("--objects") + 1]
        listing = nm_listing(objdir)
        if listing is None:
            print(f"layers: no object files under {objdir} (build first)")
            return 1
    else:
        return check_includes()
    rc = check_includes() if "--objects" in argv else 0
    n = check_symbols(listing)
    if n:
        print(f"layers: {n} upward call(s)")
        return 1
    print("layers: every call points down")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
