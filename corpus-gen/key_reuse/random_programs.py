"""Differential testing of J0013 against JAX's own key-reuse checker
(`jax.experimental.key_reuse._core.check_key_reuse_jaxpr`, jax 0.10.2).

Each seed makes one random program over PRNG keys: splits, `fold_in`, slices,
indexes, gathers and reshapes of split results, samplers, `vmap`, `scan`
(carried keys, keys as `xs`, keys read as constants), `cond`, `while_loop`,
`jit` (keys in and out), `checkpoint`, `custom_jvp`/`custom_vjp`, `clone`,
`wrap_key_data`/`key_data`; the program's key is a typed key or raw `uint32`
key data (`jax.random.PRNGKey`). Every choice is made from the seed while
tracing, never from the key's type, so a raw-key program traced again with
`jax.random.wrap_key_data` of the same data is its *typed twin*: the same
program over a typed key. JAX's verdict is its checker's on the program, or
on its twin for raw keys (which JAX's checker does not follow). Our verdict
is whether `jaxpr check --format json` reports J0013 on the printed program.

    PY=$(bash tests/trace/venv.sh jax 0.10.2)
    # the full run: programs, disagreements by kind, time (the folder is scratch)
    $PY corpus-gen/key_reuse/random_programs.py run 10000 /tmp/key-reuse-run target/release/jaxpr
    # the same programs and verdicts judged again by another build
    $PY corpus-gen/key_reuse/random_programs.py again 10000 /tmp/key-reuse-run target/release/jaxpr
    # the committed sample (fixed seeds) and JAX's verdicts
    $PY corpus-gen/key_reuse/random_programs.py sample 400 tests/data/key-reuse/random
"""
import json
import os
import random as pyrandom
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, random

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import verdict  # noqa: E402

SAMPLE_BASE = 0  # the committed sample's seeds: SAMPLE_BASE + i
RUN_BASE = 1_000_000  # the full run's seeds


def fsum(x):
    return jnp.sum(jnp.asarray(x, jnp.float32))


SAMPLERS = [
    lambda k: random.bits(k, (3,)),
    lambda k: random.uniform(k, (2,)),
    lambda k: random.normal(k),
    lambda k: random.bernoulli(k, 0.3, (2,)),
    lambda k: random.randint(k, (2,), 0, 9),
    lambda k: random.gamma(k, 2.0),
    lambda k: random.categorical(k, jnp.zeros(3)),
]


class Program:
    """One random program: `fn(key, x)`, every choice from `seed`."""

    def __init__(self, seed, raw):
        self.seed, self.raw = seed, raw

    def __call__(self, key, x):
        self.r = pyrandom.Random(self.seed)
        self.x = x
        self.outs = []
        self.block([(key, ())], depth=0, steps=self.r.randint(1, 4))
        return tuple(self.outs) or (jnp.float32(0),)

    # A pool entry is (key, shape): shape () a key, (n,) or (a, b) key arrays.
    # Raw key data has a trailing axis of 2 words, which `shape` leaves out.

    def pick(self, pool, used, want=None):
        """An entry of the pool, mostly one not used yet (of `want` rank)."""
        idx = [i for i, (_, s) in enumerate(pool) if want is None or len(s) in want]
        if not idx:
            return None
        fresh = [i for i in idx if i not in used]
        i = self.r.choice(fresh) if fresh and self.r.random() < 0.93 else self.r.choice(idx)
        used.add(i)
        return i

    def sample(self, k):
        return fsum(self.r.choice(SAMPLERS)(k))

    def sub(self, depth):
        """A nested program of one key returning a float32 scalar."""
        seed = self.r.randrange(1 << 30)
        steps = self.r.randint(1, 3)

        def f(k):
            saved = self.r, self.outs
            self.r, self.outs = pyrandom.Random(seed), []
            self.block([(k, ())], depth, steps)
            out = sum(self.outs, jnp.float32(0))
            self.r, self.outs = saved
            return out
        return f

    def block(self, pool, depth, steps):
        used = set()
        for _ in range(steps):
            i = self.pick(pool, used)
            k, shape = pool[i]
            if shape == ():
                self.on_key(pool, k, depth)
            else:
                self.on_array(pool, k, shape, depth)

    @staticmethod
    def reshape(ks, shape):
        # Of the array itself: the typed twin traces a raw program with keys.
        typed = jnp.issubdtype(ks.dtype, jax.dtypes.prng_key)
        return ks.reshape(shape + (() if typed else (2,)))

    def on_key(self, pool, k, depth):
        r = self.r
        ops = ["use", "use", "split", "split_tuple", "fold_in", "clone", "jit_pass"]
        if depth < 2:
            ops += ["jit", "jit_keys", "cond", "scan_split", "scan_nosplit", "scan_fold",
                    "scan_const", "while_split", "while_nosplit", "checkpoint",
                    "custom_jvp", "custom_vjp"]
        if not self.raw:
            ops += ["rewrap"]
        op = r.choice(ops)
        if op == "use":
            self.outs.append(self.sample(k))
        elif op == "split":
            n = r.choice([2, 3, 4])
            pool.append((random.split(k, n), (n,)))
        elif op == "split_tuple":
            a, b = random.split(k)
            pool += [(a, ()), (b, ())]
        elif op == "fold_in":
            pool.append((random.fold_in(k, r.randrange(5)), ()))
        elif op == "clone":
            pool.append((random.clone(k), ()))
        elif op == "jit_pass":
            pool.append((jax.jit(lambda kk: kk)(k), ()))
        elif op == "rewrap":
            pool.append((random.wrap_key_data(random.key_data(k)), ()))
        elif op == "jit":
            self.outs.append(jax.jit(self.sub(depth + 1))(k))
        elif op == "jit_keys":
            n = r.choice([2, 3])
            f = self.sub(depth + 1)
            if r.random() < 0.7:
                g = lambda kk: (lambda a, b: (random.split(a, n), f(b)))(*random.split(kk))
            else:
                g = lambda kk: (random.split(kk, n), f(kk))
            ks, y = jax.jit(g)(k)
            self.outs.append(y)
            pool.append((ks, (n,)))
        elif op == "cond":
            f, g = self.sub(depth + 1), self.sub(depth + 1)
            self.outs.append(lax.cond(self.x > 0, f, g, k))
        elif op.startswith("scan"):
            f = self.sub(depth + 1)
            if op == "scan_split":
                def body(c, _):
                    c, s = random.split(c)
                    return c, f(s)
            elif op == "scan_nosplit":
                def body(c, _):
                    return c, f(c)
            elif op == "scan_fold":
                def body(c, _):
                    return random.fold_in(c, 1), f(c)
            else:
                def body(c, _):
                    return c + f(k), None
                self.outs.append(lax.scan(body, jnp.float32(0), None, length=2)[0])
                return
            c, ys = lax.scan(body, k, None, length=r.choice([1, 3]))
            self.outs.append(fsum(ys))
            pool.append((c, ()))
        elif op.startswith("while"):
            f = self.sub(depth + 1)
            split = op == "while_split"

            def wbody(s):
                c, i, acc = s
                if split:
                    c, sub = random.split(c)
                else:
                    sub = c
                return c, i + 1, acc + f(sub)
            c, _, acc = lax.while_loop(lambda s: s[1] < 3, wbody, (k, 0, jnp.float32(0)))
            self.outs.append(acc)
            pool.append((c, ()))
        elif op == "checkpoint":
            self.outs.append(jax.checkpoint(self.sub(depth + 1))(k))
        elif op == "custom_jvp":
            g = self.sub(depth + 1)
            f = jax.custom_jvp(lambda x, kk: x * g(kk), nondiff_argnums=(1,))
            f.defjvp(lambda kk, p, t: (f(p[0], kk), t[0]))
            self.outs.append(f(self.x, k))
        elif op == "custom_vjp":
            g = self.sub(depth + 1)
            f = jax.custom_vjp(lambda x, kk: x * g(kk))
            f.defvjp(lambda x, kk: (f(x, kk), None), lambda res, ct: (ct, None))
            self.outs.append(f(self.x, k))

    def on_array(self, pool, ks, shape, depth):
        r = self.r
        n = shape[0]
        ops = ["index", "index", "index_neg", "slice", "stride", "gather", "dyn_index",
               "vmap_use", "scan_xs", "iterate"]
        if len(shape) == 1 and n % 2 == 0:
            ops.append("reshape")
        if len(shape) == 1:
            ops += ["vmap_split", "jit_index"]
        if not self.raw:
            ops.append("data_row")
        op = r.choice(ops)
        if op == "index":
            pool.append((ks[r.randrange(n)], shape[1:]))
        elif op == "index_neg":
            pool.append((ks[-1], shape[1:]))
        elif op == "slice":
            a = r.randrange(n)
            b = r.randrange(a + 1, n + 1)
            pool.append((ks[a:b], (b - a,) + shape[1:]))
        elif op == "stride":
            pool.append((ks[::2], ((n + 1) // 2,) + shape[1:]))
        elif op == "gather":
            rows = [r.randrange(n) for _ in range(r.choice([1, 2]))]
            pool.append((ks[jnp.array(rows)], (len(rows),) + shape[1:]))
        elif op == "dyn_index":
            i = jnp.int32(self.x > 0) if r.random() < 0.5 else r.randrange(n)
            pool.append((lax.dynamic_index_in_dim(ks, i, keepdims=False), shape[1:]))
        elif op == "iterate":
            pool += [(row, shape[1:]) for row in ks]
        elif op == "reshape":
            pool.append((self.reshape(ks, (2, n // 2)), (2, n // 2)))
        elif op == "vmap_split":
            pool.append((jax.vmap(random.split)(ks), (n, 2)))
        elif op == "jit_index":
            i = r.randrange(n)
            pool.append((jax.jit(lambda kk: kk[i])(ks), ()))
        elif op == "data_row":
            i = r.randrange(n)
            pool.append((random.wrap_key_data(random.key_data(ks)[i]), shape[1:]))
        elif op == "vmap_use":
            f = self.sub(depth + 1) if depth < 2 and r.random() < 0.4 else self.sample
            for _ in shape:
                f = jax.vmap(f)
            self.outs.append(fsum(f(ks)))
        elif op == "scan_xs":
            f = self.sub(depth + 1) if depth < 2 and r.random() < 0.4 else self.sample
            g = f
            for _ in shape[1:]:
                g = jax.vmap(g)
            c, _ = lax.scan(lambda c, kk: (c + fsum(g(kk)), None), jnp.float32(0), ks)
            self.outs.append(c)


def trace(seed, raw):
    """(text, JAX's verdict, its message) of the program of `seed`: the
    verdict on the program, or on its typed twin for raw key data."""
    p = Program(seed, raw)
    data = random.key_data(random.key(seed % 97))
    key = np.asarray(data) if raw else random.wrap_key_data(data)
    x = np.float32(0.5)
    cj = jax.make_jaxpr(p)(key, x)
    judged = jax.make_jaxpr(p)(random.wrap_key_data(key), x) if raw else cj
    reuse, why = verdict(judged.jaxpr)
    return str(cj) + "\n", reuse, why


def programs(base, count, out):
    """Writes the programs of seeds base..base+count to `out`; returns their
    JAX verdicts by file name and the programs JAX could not trace."""
    os.makedirs(out, exist_ok=True)
    verdicts, failed = {}, {}
    for seed in range(base, base + count):
        raw = pyrandom.Random(seed ^ 0x5EED).random() < 0.5
        name = f"{'raw' if raw else 'key'}_{seed}.jaxpr"
        try:
            text, reuse, why = trace(seed, raw)
        except Exception as e:  # noqa: BLE001 - a program JAX refuses is counted, not judged
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            continue
        with open(os.path.join(out, name), "w") as fh:
            fh.write(text)
        verdicts[name] = {"jax_key_reuse": reuse, "jax_message": why, "raw_keys": raw}
        if seed % 200 == 0:
            jax.clear_caches()
    return verdicts, failed


def ours(jaxpr_bin, folder):
    """{file name: (J0013 found, error messages)} of `jaxpr check` on a folder."""
    res = subprocess.run([jaxpr_bin, "check", "--format", "json", folder],
                         capture_output=True, text=True)
    report = json.loads(res.stdout)
    found = {}
    for f in report["files"]:
        d = f["diagnostics"]
        found[os.path.basename(f["path"])] = (
            any(x["code"] == "J0013" for x in d),
            [x["message"] for x in d if x["severity"] == "error"])
    return found


def run(count, scratch, jaxpr_bin, chunk=500, again=False):
    """The full run; `again`: judge the programs and verdicts a run kept in
    `scratch` by `jaxpr_bin` (another build), without tracing them anew."""
    t0 = time.time()
    total = {"programs": 0, "jax_reuse": 0, "raw": 0, "missed": [], "false": [], "errors": [],
             "untraceable": {}}
    for base in range(RUN_BASE, RUN_BASE + count, chunk):
        folder = os.path.join(scratch, f"chunk{base}")
        kept = os.path.join(folder, "verdicts.json")
        if again:
            with open(kept) as fh:
                verdicts, failed = json.load(fh)
        else:
            verdicts, failed = programs(base, min(chunk, RUN_BASE + count - base), folder)
            with open(kept, "w") as fh:
                json.dump([verdicts, failed], fh)
        total["untraceable"].update(failed)
        found = ours(jaxpr_bin, folder)
        for name, v in verdicts.items():
            got, errors = found[name]
            total["programs"] += 1
            total["jax_reuse"] += v["jax_key_reuse"]
            total["raw"] += v["raw_keys"]
            if errors:
                total["errors"].append((name, errors[:2]))
            if got and not v["jax_key_reuse"]:
                total["false"].append(os.path.join(folder, name))
            elif v["jax_key_reuse"] and not got:
                total["missed"].append((os.path.join(folder, name), v["jax_message"]))
        print(f"{total['programs']} programs, {total['jax_reuse']} reuses by JAX, "
              f"{len(total['missed'])} missed, {len(total['false'])} false, "
              f"{len(total['errors'])} with errors, {len(total['untraceable'])} untraceable, "
              f"{time.time() - t0:.0f} s", flush=True)
    total["seconds"] = round(time.time() - t0)
    with open(os.path.join(scratch, "summary.json"), "w") as fh:
        json.dump(total, fh, indent=1)


def sample(count, out):
    for f in os.listdir(out) if os.path.isdir(out) else []:
        os.remove(os.path.join(out, f))
    verdicts, failed = programs(SAMPLE_BASE, count, out)
    with open(os.path.join(out, "verdicts.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}",
                   "generator": "corpus-gen/key_reuse/random_programs.py",
                   "seeds": [SAMPLE_BASE, SAMPLE_BASE + count],
                   "verdicts": verdicts}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"{len(verdicts)} programs ({sum(v['raw_keys'] for v in verdicts.values())} raw), "
          f"{sum(v['jax_key_reuse'] for v in verdicts.values())} reuses by JAX, "
          f"{len(failed)} untraceable")


if __name__ == "__main__":
    if sys.argv[1] in ("run", "again"):
        run(int(sys.argv[2]), sys.argv[3], sys.argv[4], again=sys.argv[1] == "again")
    else:
        sample(int(sys.argv[2]), sys.argv[3])
