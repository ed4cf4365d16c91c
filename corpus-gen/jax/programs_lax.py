"""lax_test: the elementwise ops table (`lax_test_util.lax_ops()`, `lax_out_dtype_ops()`)
at each dtype and shape group the test uses, and, for the structural primitives
(conv, dot_general, gather, scatter, reduce_window, sort, linalg, fft, ...), the
primitive harnesses of `test_harnesses.all_harnesses` at their concrete shapes."""
import collections, itertools
from functools import partial
from jax import lax
from common import runnable_dtypes, rng_for, dtname
from gen import Program

HARNESSES_PER_PRIMITIVE = 12


def programs(mods):
    from jax._src.internal_test_util import lax_test_util as u
    from jax._src.internal_test_util import test_harnesses as th
    lt = mods["lax_test"]
    for rec in u.lax_ops():
        for dt in runnable_dtypes(rec.dtypes):
            for group in u.compatible_shapes:
                shapes = next(itertools.combinations_with_replacement(group, rec.nargs)) \
                    if len(group) == 1 else list(itertools.combinations_with_replacement(group, rec.nargs))[-1]
                name = f"{rec.op}_{dtname(dt)}_{'_'.join('x'.join(map(str, s)) for s in shapes)}"
                rng = rec.rng_factory(rng_for(name))
                args = [rng(s, dt) for s in shapes]
                yield Program(name, getattr(lax, rec.op), args, f"lax_test.py:testOp[{rec.op}]")
    seen = set()
    for rec in u.lax_out_dtype_ops():
        for dt, out_dt in lt.preferred_type_combinations:
            dt, out_dt = runnable_dtypes([dt])[0], runnable_dtypes([out_dt])[0]
            if (dt, out_dt) in seen:
                continue
            seen.add((dt, out_dt))
            name = f"{rec.op}_out_dtype_{dtname(dt)}_{dtname(out_dt)}"
            rng = rec.rng_factory(rng_for(name))
            args = [rng((3, 4), dt), rng((3, 1), dt)]
            yield Program(name, partial(getattr(lax, rec.op), out_dtype=out_dt), args,
                          f"lax_test.py:testOpOutDtype[{rec.op}]")
    per = collections.Counter()
    elementwise = {r.op for r in u.lax_ops()}
    for h in th.all_harnesses:
        if h.group_name in elementwise or per[h.group_name] >= HARNESSES_PER_PRIMITIVE:
            continue
        per[h.group_name] += 1
        try:
            args = h.dyn_args_maker(rng_for(h.fullname))
        except Exception:
            continue
        yield Program(f"{h.group_name}_{h.name}", h.dyn_fun, args,
                      f"test_harnesses.py:{h.fullname}")
