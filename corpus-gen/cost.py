"""Writes `cost.json` beside a corpus folder's programs: XLA's cost analysis
of JAX's lowering of each program (`xla_cost.py`), which `crates/cost/tests/xla.rs`
holds `jaxpr stats` to. Re-traces every program, and records a program only
when the jaxpr it prints is the one already in the folder, byte for byte:
the corpus' jaxprs are never rewritten.

usage:
  python cost.py jax-suite JAX_GIT_DIR tests/data/jax-suite [GROUP ...]
  python cost.py builds tests/data/builds
  python cost.py ecosystem tests/data/ecosystem [GROUP ...]

Shape-polymorphic programs (symbolic shapes) are left out: XLA analyses
only concrete shapes. `--memory` also compiles each program and records
`memory_analysis()` (slow; the memory benchmark reads it).
"""
import json, os, signal, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xla_cost  # noqa: E402

TIMEOUT_S = 60


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def write(folder, producer, programs, stats):
    with open(os.path.join(folder, "cost.json"), "w") as fh:
        json.dump({"producer": producer, "programs": programs}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"{folder}: {len(programs)} programs with XLA's cost, {stats}", flush=True)


def one(fn, args, text_path, printed, memory):
    """XLA's cost of `fn(*args)` if it prints the jaxpr in `text_path`, else the reason why not."""
    if not os.path.exists(text_path):
        return None, "no such program in the folder"
    with open(text_path) as fh:
        if fh.read() != printed:
            return None, "prints another jaxpr"
    return xla_cost.cost(fn, args, memory=memory), None


def jax_suite(git_dir, out, groups, memory):
    sys.path.insert(0, os.path.join(HERE, "jax"))
    import gen, importlib
    import jax
    from jax._src import test_util as jtu
    mods = gen.import_test_files(git_dir)
    signal.signal(signal.SIGALRM, _alarm)
    for group in groups or [g for g in gen.GROUPS if g != "shape_poly"]:
        module = importlib.import_module(f"programs_{group}")
        gdir = os.path.join(out, group)
        with open(os.path.join(gdir, "manifest.json")) as fh:
            skipped = {s["name"] for s in json.load(fh)["skipped"]}
        programs, taken, missing, t0 = {}, set(), {}, time.time()
        for prog in module.programs(mods):
            if prog.poly is not None:
                continue
            signal.alarm(TIMEOUT_S)
            try:
                ctx = jtu.global_config_context(**prog.flags) if prog.flags else _null()
                with ctx:
                    printed = str(jax.make_jaxpr(prog.fn)(*prog.args)) + "\n"
                    name = gen.safe_name(prog.name, taken)
                    figures, why = one(prog.fn, prog.args, os.path.join(gdir, name + ".jaxpr"), printed, memory)
            except Exception as e:  # the generator skipped it too, or XLA cannot analyse it
                if prog.name not in skipped:
                    missing[prog.name] = f"{type(e).__name__}: {e}"[:200]
                continue
            finally:
                signal.alarm(0)
            if figures is None:
                missing[name] = why
            else:
                programs[name] = figures
        write(gdir, f"jax {jax.__version__}", programs,
              f"{len(missing)} without ({time.time() - t0:.0f}s)")
        for k, v in list(missing.items())[:10]:
            print("  without:", k, v)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def builds(out, memory):
    sys.path.insert(0, os.path.join(HERE, "builds"))
    import jax
    import programs as builds_programs
    folder = os.path.join(out, f"jax-{jax.__version__}")
    found, missing = {}, {}
    for p in builds_programs.programs():
        if p.poly is not None:
            continue
        printed = str(jax.make_jaxpr(p.fn)(*p.args)) + "\n"
        figures, why = one(p.fn, p.args, os.path.join(folder, p.name + ".jaxpr"), printed, memory)
        if figures is None:
            missing[p.name] = why
        else:
            found[p.name] = figures
    write(folder, f"jax {jax.__version__}", found, f"{len(missing)} without: {missing}")


def ecosystem(out, groups, memory):
    """The ecosystem corpus (run with the venv that made it,
    corpus-gen/ecosystem/requirements.lock): each group's programs traced as
    `corpus-gen/ecosystem/gen.py` traces them."""
    sys.path.insert(0, os.path.join(HERE, "ecosystem"))
    import importlib
    import jax
    import folder
    import gen
    signal.signal(signal.SIGALRM, _alarm)
    for group in groups or gen.groups():
        gdir = os.path.join(out, group)
        if not os.path.isdir(gdir):
            continue
        module = importlib.import_module(f"programs_{group}")
        found, missing, t0 = {}, {}, time.time()
        for p in module.programs():
            if p.poly is not None:
                continue
            signal.alarm(TIMEOUT_S)
            try:
                printed = str(folder.trace(p)) + "\n"
                figures, why = one(p.fn, p.args, os.path.join(gdir, p.name + ".jaxpr"), printed, memory)
            except Exception as e:  # skipped by the generator too, or XLA cannot analyse it
                figures, why = None, f"{type(e).__name__}: {e}"[:200]
            finally:
                signal.alarm(0)
            jax.clear_caches()
            if figures is None:
                missing[p.name] = why
            else:
                found[p.name] = figures
        write(gdir, f"jax {jax.__version__}", found,
              f"{len(missing)} without ({time.time() - t0:.0f}s): {missing}")


def main():
    argv = [a for a in sys.argv[1:] if a != "--memory"]
    memory = "--memory" in sys.argv
    if argv[0] == "jax-suite":
        jax_suite(argv[1], argv[2], argv[3:], memory)
    elif argv[0] == "builds":
        builds(argv[1], memory)
    elif argv[0] == "ecosystem":
        ecosystem(argv[1], argv[2:], memory)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
