#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a `git fast-import` stream for make bench-git's test repository:
COMMITS commits on main over a tree of DIRS x FILES text files, each commit
rewriting a few lines of a few files, so that the pack has many objects and
deltas, like a real project's history. Deterministic (fixed seed): the
same arguments give the same repository and the same HEAD.

    gen-repo.py COMMITS [DIRS FILES] | git fast-import
"""
import random
import sys


def main():
    commits = int(sys.argv[1])
    dirs = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 24
    rnd = random.Random(13)
    words = ["poll", "pipe", "socket", "event", "wait", "handle", "thread",
             "ready", "timeout", "console", "read", "write", "close", "error"]
    content = {}
    for d in range(dirs):
        for f in range(files):
            content["src%02d/file%03d.c" % (d, f)] = [
                " ".join(rnd.choice(words) for _ in range(10))
                for _ in range(rnd.randint(40, 160))]
    out = sys.stdout.buffer
    when = 1700000000
    for c in range(commits):
        names = sorted(content) if c == 0 else rnd.sample(sorted(content), 3)
        out.write(b"commit refs/heads/main\n")
        out.write(b"mark :%d\n" % (c + 1))
        stamp = b"%d +0000" % (when + 600 * c)
        out.write(b"author Bench <bench@example.org> " + stamp + b"\n")
        out.write(b"committer Bench <bench@example.org> " + stamp + b"\n")
        msg = b"change %d\n" % c
        out.write(b"data %d\n%s" % (len(msg), msg))
        if c > 0:
            out.write(b"from :%d\n" % c)
        for name in names:
            lines = content[name]
            if c > 0:
                for _ in range(rnd.randint(1, 4)):
                    i = rnd.randrange(len(lines))
                    lines[i] = " ".join(rnd.choice(words) for _ in range(10))
                if rnd.random() < 0.3:
                    lines.append("/* %d */" % c)
            data = ("\n".join(lines) + "\n").encode()
            out.write(b"M 100644 inline %s\n" % name.encode())
            out.write(b"data %d\n" % len(data))
            out.write(data)
        out.write(b"\n")
    out.write(b"done\n")


if __name__ == "__main__":
    main()
