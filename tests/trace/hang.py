import time

import jax.numpy as jnp


print(jnp.ones(2) + 1, flush=True)
while True:
    time.sleep(1)
