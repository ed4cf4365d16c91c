"""`jaxpr trace` runs `python run.py OUT (SCRIPT | -m MODULE) ARGS...`.

Installs the capture hooks, then runs the program the way `python SCRIPT
ARGS` would (as `__main__`, with its own sys.argv and sys.path[0]), records
an uncaught exception with its location, and exits with the program's
status. Exit status 97 means JAX could not be imported, 96 that the session
folder could not be written.
"""

import os
import runpy
import sys

NO_JAX = 97
NO_SESSION = 96


def _run_script(path):
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __spec__=None, __cached__=None)
    sys.modules["__main__"] = main
    with open(path, "rb") as f:
        source = f.read()
    exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out, target = sys.argv[1], sys.argv[2:]
    # The capture code is compiled without a __pycache__ in the session
    # folder: the interpreter would write it by path (through a link swapped
    # in for it), and the folder is to hold only what `jaxpr trace` created.
    # The program's own setting is back before it runs.
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    import jaxpr_trace
    import jaxpr_trace.catalyst_hook  # noqa: F401 - imported here for the same reason

    sys.dont_write_bytecode = dont_write

    try:
        jaxpr_trace.install(out)
    except ImportError as e:
        print(f"jaxpr trace: JAX cannot be imported by {sys.executable}: {e}", file=sys.stderr)
        return NO_JAX
    except OSError as e:
        # The session folder or events.jsonl was replaced (by a link, say)
        # after `jaxpr trace` checked it: nothing is written through it.
        print(f"jaxpr trace: cannot write the session in {out}: {e}", file=sys.stderr)
        return NO_SESSION
    # From here on the program sees what `python SCRIPT ARGS` would show it.
    if sys.path and os.path.abspath(sys.path[0]) == here:
        del sys.path[0]
    if target[0] == "-m":
        module, sys.argv = target[1], [target[1]] + target[2:]
        sys.path.insert(0, os.getcwd())
        run = lambda: runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        # As `python SCRIPT` does: argv[0] as typed, __file__ absolute.
        script = os.path.abspath(target[0])
        sys.argv = target
        sys.path.insert(0, os.path.dirname(script))
        run = lambda: _run_script(script)
    status, uncaught = 0, None
    try:
        run()
    except SystemExit as e:
        code = e.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
    except BaseException as e:  # noqa: BLE001 - reported as Python would, then recorded
        jaxpr_trace.record_error(e, "running the program")
        uncaught = e
        # The traceback starts where Python's would: in the program.
        tb = e.__traceback__
        while tb is not None and not jaxpr_trace.is_user_file(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        if tb is not None:
            e.with_traceback(tb)
        sys.excepthook(type(e), e, e.__traceback__)
        status = 1
    jaxpr_trace.finish(status, uncaught)
    return status


if __name__ == "__main__":
    sys.exit(main())
