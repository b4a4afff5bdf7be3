"""What the kubelet does to a ConfigMap or Secret volume when the object changes.

Kubernetes' AtomicWriter (pkg/volume/util/atomic_writer.go) never rewrites a file in place:

  1. the new payload is written into a fresh hidden directory `..YYYY_MM_DD_HH_MM_SS.NNNN`;
  2. a symlink `..data_tmp` -> that directory is made and renamed over `..data` (the swap: one
     rename(2), so a reader sees the old set of files or the new one, never a mix);
  3. each key is visible as a symlink `KEY` -> `..data/KEY` (made once; unchanged afterwards);
  4. the previous timestamped directory is removed, and keys no longer in the payload too.

A server that watches only the files it opened sees none of this (their inodes never change;
they are unlinked); one that watches the directory sees the `..data` rename.

    python3 tests/lib/kubelet.py DIR KEY=FILE...   the same from the shell (container test): the
                                                   payload is read from the FILEs
"""

import os
import shutil
import sys
import tempfile
import time


def atomic_write(target_dir, payload, mode=0o644):
    """Publish `payload` ({key: bytes}) in `target_dir` the way the kubelet does."""
    os.makedirs(target_dir, exist_ok=True)
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    ts_dir = tempfile.mkdtemp(prefix=stamp, dir=target_dir)
    os.chmod(ts_dir, 0o755)
    for key, data in payload.items():
        path = os.path.join(ts_dir, key)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
    data_link = os.path.join(target_dir, "..data")
    old = os.readlink(data_link) if os.path.islink(data_link) else None
    tmp_link = os.path.join(target_dir, "..data_tmp")
    os.symlink(os.path.basename(ts_dir), tmp_link)
    os.rename(tmp_link, data_link)
    for key in payload:
        visible = os.path.join(target_dir, key)
        if os.path.islink(visible):
            continue
        # A first write over a directory that has plain files (podman's ConfigMap volumes are
        # made that way) replaces each by its symlink, atomically too.
        tmp = visible + ".kubelet-tmp"
        os.symlink(os.path.join("..data", key), tmp)
        os.rename(tmp, visible)
    if old:
        shutil.rmtree(os.path.join(target_dir, old), ignore_errors=True)
    for name in os.listdir(target_dir):
        p = os.path.join(target_dir, name)
        if not name.startswith("..") and name not in payload and os.path.islink(p) \
                and os.readlink(p).startswith("..data/"):
            os.unlink(p)


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.stderr.write("usage: kubelet.py DIR KEY=FILE...\n")
        return 2
    payload = {}
    for arg in argv[2:]:
        key, src = arg.split("=", 1)
        with open(src, "rb") as f:
            payload[key] = f.read()
    atomic_write(argv[1], payload)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
