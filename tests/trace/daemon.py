"""Starts two daemons that leave the program's process group and session,
writes their pids to argv[1] (one a line), then ends with exit status 3
(argv[2] == "exit") or runs forever ("hang"). One daemon is the program's
own child after `setsid()`; the other forks once more after `setsid()` and
its parent ends at once, so it is nobody's child (the classic double fork).
Each sleeps far longer than any test runs. The program's own clean-up (an
atexit handler) prints a line, and so does the program, so a test can see
that neither is changed by the trace."""

import atexit
import os
import sys
import time

pid_file, how = sys.argv[1], sys.argv[2]
atexit.register(lambda: print("clean-up ran", flush=True))


def become_daemon(report_fd):
    # Off the terminal and out of the program's session and group; stdio
    # away from the pipes `jaxpr trace` and the test read.
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.write(report_fd, f"{os.getpid()}\n".encode())
    os.close(report_fd)
    time.sleep(1000)
    os._exit(0)


r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    become_daemon(w)
if os.fork() == 0:
    os.close(r)
    os.setsid()
    if os.fork() == 0:
        become_daemon(w)
    os._exit(0)
os.close(w)
pids = []
with os.fdopen(r) as f:
    for line in f:
        pids.append(int(line))
with open(pid_file + ".tmp", "w") as f:
    f.write("".join(f"{p}\n" for p in pids))
os.rename(pid_file + ".tmp", pid_file)
print(f"started {len(pids)} daemons", flush=True)
if how == "hang":
    while True:
        time.sleep(1)
sys.exit(3)
