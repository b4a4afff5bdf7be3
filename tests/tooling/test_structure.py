"""The structure: every include in server/ and handlers/ points down the folder map, no
function there is longer than 80 lines, and every file there has its row in
docs/ARCHITECTURE.md.

tools/layers.py prints the map (--map) and lists each include that points up or sideways; the
suite fails while it lists any, so a new upward include is caught where it is written.
"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_layers_point_down():
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "layers.py")],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "tools/layers.py exit %d:\n%s%s" % (r.returncode, r.stdout,
                                                                   r.stderr)


def test_no_function_over_80_lines():
    r = subprocess.run([sys.executable, os.path.join(REPO, "tools", "funclen.py"), "80"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "tools/funclen.py exit %d:\n%s%s" % (r.returncode, r.stdout,
                                                                    r.stderr)
    assert "0 function(s) over 80 lines" in r.stdout, r.stdout


def test_every_source_file_has_a_row_in_the_architecture():
    """docs/ARCHITECTURE.md's "Source files" names every file of server/ and handlers/, so a
    file added without saying what it is fails here."""
    doc = open(os.path.join(REPO, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    start = doc.index("## Source files")
    section = doc[start:doc.index("\n## ", start + 1)]
    missing = []
    for top in ("server", "handlers"):
        for d, _, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                stem, ext = os.path.splitext(f)
                if ext in (".c", ".h", ".S", ".html") and stem + "." not in section:
                    missing.append(os.path.relpath(os.path.join(d, f), REPO))
    assert not missing, "no row in docs/ARCHITECTURE.md's Source files: %s" % sorted(missing)
