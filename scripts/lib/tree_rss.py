"""Runs a command and samples the summed resident memory of it and all its
descendants every 0.2 s: prints `PEAK_MIB WALL_S` to standard error's last
line and exits with the command's status.

    python tree_rss.py COMMAND [ARGS…]
"""

import os
import subprocess
import sys
import time


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


def main() -> None:
    started = time.monotonic()
    child = subprocess.Popen(sys.argv[1:])
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        time.sleep(0.2)
    print(f"{peak / 2**20:.0f} {time.monotonic() - started:.2f}", file=sys.stderr)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
