"""Starts a child process that would outlive it, writes the child's pid to
argv[1], then ends (argv[2] == "exit") or runs forever ("hang")."""

import subprocess
import sys
import time

import jax.numpy as jnp

child = subprocess.Popen(["/bin/sleep", "1000"])
with open(sys.argv[1], "w") as f:
    f.write(str(child.pid))
print(jnp.ones(2) + 1, flush=True)
if sys.argv[2] == "hang":
    while True:
        time.sleep(1)
