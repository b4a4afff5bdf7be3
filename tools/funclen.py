#!/usr/bin/env python3
"""No function of server/ or handlers/ longer than a limit (default 80 lines).

    python3 tools/funclen.py [LIMIT]     list every longer function and exit 1, else exit 0

The code's style puts a function's opening brace alone at the start of a line and its closing
brace likewise, so a function is the lines between such a pair whose preceding signature
names a parameter list. A length counts the lines between the braces. `make test` runs it.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOTS = ("server", "handlers")


def functions(path):
    """(name, first line, body lines) of each function in a C file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i - 1
            while j > 0 and lines[j][:1] in (" ", "\t"):
                j -= 1              # the signature's first line (parameters may wrap)
            k = i + 1
            while k < len(lines) and lines[k] != "}" and not lines[k].startswith("};"):
                k += 1
            names = re.findall(r"(\w+)\s*\(", lines[j])
            if names:
                yield names[0], j + 1, k - i - 1
            i = k
        i += 1


def main(argv):
    limit = int(argv[0]) if argv else 80
    long_ones = []
    for root in ROOTS:
        for d, _, files in os.walk(os.path.join(REPO, root)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    path = os.path.join(d, f)
                    for name, line, n in functions(path):
                        if n > limit:
                            long_ones.append((os.path.relpath(path, REPO), line, name, n))
    for path, line, name, n in long_ones:
        print(f"{path}:{line}: {name}() is {n} lines (at most {limit})")
    print(f"funclen: {len(long_ones)} function(s) over {limit} lines")
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
