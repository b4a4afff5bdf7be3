"""The structure: every include in server/ and handlers/ points down the folder map, and no
function there is longer than 80 lines.

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
