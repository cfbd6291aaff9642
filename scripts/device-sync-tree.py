#!/usr/bin/env python3
"""Bring a build tree up to a `git archive` tarball, touching only files whose bytes changed.

Why: on the device the working tree is sent as it is, helpers' edits included. A session that sends
`git archive HEAD` (carry .snap/) instead builds exactly a commit; writing only the files that differ keeps
their old mtimes, so the build directory next to them rebuilds only what the commit changed.

usage: scripts/device-sync-tree.py TARBALL DEST    (prints how many files it wrote)
"""
import os
import sys
import tarfile


def sync(tarball: str, dest: str) -> int:
    written = 0
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            path = os.path.join(dest, member.name)
            if member.isdir():
                os.makedirs(path, exist_ok=True)
                continue
            if not member.isfile():
                continue
            data = tar.extractfile(member).read()
            try:
                with open(path, "rb") as f:
                    if f.read() == data:
                        continue
            except FileNotFoundError:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, member.mode & 0o777)
            written += 1
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(f"device-sync-tree: {sync(sys.argv[1], sys.argv[2])} files written into {sys.argv[2]}")
