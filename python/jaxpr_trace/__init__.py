"""Capture side of `jaxpr trace`: records every jaxpr a Python program traces.

`jaxpr trace` runs `python run.py OUT SCRIPT ARGS...` (run.py sits beside this
package); `install(OUT)` hooks JAX (and Catalyst when the program uses it),
then the script runs unchanged as `__main__`. Each event is appended to
OUT/events.jsonl and flushed at once, so a program that crashes or is killed
on timeout still leaves what it traced; `jaxpr trace` assembles the session
(session.json) from these events afterwards.

The hooks only observe: they call the original function with the original
arguments, return its result unchanged, and re-raise its exceptions. They
print nothing to the program's stdout/stderr.
"""

import json
import os
import re
import sys
import sysconfig

from . import recorded as _recorded

_state = None

# Frames in these folders are not "the user's": the interpreter's library,
# installed packages and the capture code.
_LIB_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        sysconfig.get_paths().get("stdlib"),
        sysconfig.get_paths().get("platstdlib"),
        sysconfig.get_paths().get("purelib"),
        sysconfig.get_paths().get("platlib"),
        # this package and the runner beside it
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    }
    if p
)


def is_user_file(path):
    if not path or path.startswith("<"):
        return False
    real = os.path.realpath(path)
    return not real.startswith(_LIB_DIRS) and "site-packages" not in real.split(os.sep)


# Files are created in the session folder, never opened when something is
# there already: a file or a symbolic link put in the folder by someone else
# (before the run or during it) is never written through or over.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class _State:
    def __init__(self, out):
        self.out = out
        # The folder (which `jaxpr trace` made and checked) is opened once,
        # not through a link, and every file is created relative to it, so a
        # link swapped in for the folder later is not followed either.
        self.dir_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        # O_APPEND: a child the program forks shares the file, and its
        # lines must not write over the parent's.
        self.events = self.create("events.jsonl", os.O_APPEND)
        self.names = {}
        # Exceptions already recorded (a tracing error crosses every
        # enclosing trace and the runner on its way out).
        self.seen_errors = set()
        self.depth = 0

    def emit(self, event):
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    def create(self, fname, flags=0):
        fd = os.open(fname, _CREATE | flags, 0o666, dir_fd=self.dir_fd)
        return os.fdopen(fd, "w", encoding="utf-8")

    def create_jaxpr_file(self, name):
        """A new file for a jaxpr of `name`: (file name, open file). A name
        that is taken (by a file or a link that `jaxpr trace` did not write)
        is skipped for the next one."""
        while True:
            fname = self.jaxpr_file(name)
            try:
                return fname, self.create(fname)
            except FileExistsError:
                continue

    def jaxpr_file(self, name):
        """A file name for the n-th jaxpr of `name` (loss.jaxpr, loss.1.jaxpr...)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "fn"
        n = self.names.get(safe, 0)
        self.names[safe] = n + 1
        return f"{safe}.jaxpr" if n == 0 else f"{safe}.{n}.jaxpr"


def user_function(fn):
    """The Python function under wrappers, as JAX finds it (`inspect.unwrap`
    and `functools.partial`), and under objects without code of their own: a
    bound method's `__func__`, a PennyLane QNode's `func`, Catalyst's
    `original_function`. None when there is no function with code under `fn`."""
    import functools

    seen = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        try:
            if isinstance(fn, functools.partial):
                fn = fn.func
                continue
            inner = getattr(fn, "__wrapped__", None)
            if inner is not None:
                fn = inner
                continue
            if getattr(fn, "__code__", None) is not None:
                return fn
            for attr in ("__func__", "func", "original_function"):
                inner = getattr(fn, attr, None)
                if inner is not None:
                    break
            fn = inner
        except Exception:  # noqa: BLE001 - a property of the program's object that raises
            return None
    return None


def code_file(fn):
    """The file the function under `fn`'s wrappers was defined in."""
    fn = user_function(fn)
    return fn.__code__.co_filename if fn is not None else None


def def_line(fn):
    """The line of `def` of a function (its code starts at the first decorator)."""
    fn = user_function(fn)
    if fn is None:
        return None
    code = fn.__code__
    try:
        import inspect

        lines, first = inspect.getsourcelines(fn)
        for i, text in enumerate(lines):
            if text.lstrip().startswith(("def ", "async def ")):
                return first + i
    except (OSError, TypeError):
        pass
    return code.co_firstlineno


def _aval_str(a):
    try:
        return a.str_short(short_dtypes=True)
    except Exception:  # noqa: BLE001 - an aval type that prints differently
        return str(a)


def _user_location(tb):
    """Innermost frame of the traceback in the user's code: (file, line, col, function)."""
    best = None
    while tb is not None:
        code, lineno, lasti = tb.tb_frame.f_code, tb.tb_lineno, tb.tb_lasti
        tb = tb.tb_next
        if is_user_file(code.co_filename):
            col = None
            try:
                # The instruction that raised (tb_lasti: a byte offset; one
                # position per 2-byte code unit).
                positions = list(code.co_positions())
                pos = positions[lasti // 2]
                # 0-based UTF-8 offset, as JAX prints columns in source info
                col = pos[2]
            except Exception:  # noqa: BLE001 - positions are optional (python -X no_debug_ranges)
                pass
            best = (os.path.abspath(code.co_filename), lineno, col, code.co_name)
    return best


def record_error(exc, during):
    st = _state
    if st is None or id(exc) in st.seen_errors:
        return
    st.seen_errors.add(id(exc))
    # JAX filters its own frames out of tracebacks; the unfiltered one, when
    # kept, hangs off __cause__ — the user's frames are in both.
    loc = _user_location(exc.__traceback__)
    if loc is None and exc.__cause__ is not None:
        loc = _user_location(exc.__cause__.__traceback__)
    file, line, col, fn = loc if loc else (None, None, None, None)
    message = str(exc)
    # JAX appends a long "The stack trace below excludes JAX-internal frames" note.
    message = message.split("\n--------------------")[0].strip()
    st.emit(
        {
            "event": "error",
            "kind": type(exc).__name__,
            "message": message,
            "file": file,
            "line": line,
            "col": col,
            "function": fn,
            "during": during,
        }
    )


def _print(jaxpr):
    """The jaxpr with source-info comments, one equation a line. A jaxpr that
    fits in the width is printed on one line (`let b = sin a; c = ...`) with
    its comments gathered after it, which loses which equation each belongs
    to; a narrower width makes the printer break it."""
    for width in (80, 60, 40, 20, 1):
        text = jaxpr.pretty_print(source_info=True, name_stack=True, width=width)
        first = text.split("\n", 1)[0].rstrip()
        if first.endswith("let") or " let " not in first:
            return text
    return text


def record_function(kind, name, file, line, closed_jaxpr, in_avals=None, arg_names=None):
    st = _state
    if st is None:
        return
    try:
        text, recorded = _recorded.printed(closed_jaxpr, lambda: _print(closed_jaxpr.jaxpr))
    except Exception as e:  # noqa: BLE001 - recording must never break the program
        _internal_error(e)
        text, recorded = _print(closed_jaxpr.jaxpr), _recorded.NOTHING
    fname, f = st.create_jaxpr_file(name)
    with f:
        f.write(text + "\n")
    if _recorded.anything(recorded):
        # Beside the text, as `jaxpr build` looks for it (NAME.recorded.json).
        try:
            with st.create(fname[: -len(".jaxpr")] + ".recorded.json") as c:
                json.dump(_recorded.document(recorded), c, separators=(",", ":"), sort_keys=True)
        except Exception as e:  # noqa: BLE001 - recording must never break the program
            _internal_error(e)
    avals = in_avals if in_avals is not None else closed_jaxpr.in_avals
    st.emit(
        {
            "event": "function",
            "kind": kind,
            "name": name,
            "file": os.path.abspath(file) if file else None,
            "line": line,
            "in_avals": [_aval_str(a) for a in avals],
            "out_avals": [_aval_str(a) for a in closed_jaxpr.out_avals],
            "arg_names": list(arg_names) if arg_names else None,
            "jaxpr": fname,
        }
    )


_SRC_INFO = re.compile(r"([^ ]+)( at (.+):(\d+))?$")


def _debug_fields(dbg, fn):
    """(name, file, line) of a traced function, from JAX's debug info: a
    `DebugInfo` with `func_filename`/`func_lineno` (jax >= 0.6), or one with
    only `func_src_info`, "loss at /w/prog.py:3" (`TracingDebugInfo` of jax
    0.4, `DebugInfo` of 0.5); else from the function itself."""
    src = getattr(dbg, "func_src_info", None)
    m = _SRC_INFO.match(src) if isinstance(src, str) else None
    name = getattr(dbg, "func_name", None) or (m.group(1) if m else None)
    file = getattr(dbg, "func_filename", None) or (m.group(3) if m else None)
    line = getattr(dbg, "func_lineno", None) or (int(m.group(4)) if m and m.group(4) else None)
    if file is None:
        file = code_file(fn)
    if name is None:
        name = getattr(user_function(fn), "__name__", None)
    return name or "fn", file, def_line(fn) or line


def _observe(dbg, fn, run, jaxpr_of, in_avals=None):
    """Runs one jit trace (`run()`), recording its jaxpr (`jaxpr_of(result)`,
    None when already recorded), or its error, when the traced function is
    the program's own. Returns what `run` returns."""
    try:
        name, file, line = _debug_fields(dbg, fn)
        user = is_user_file(file)
    except Exception as e:  # noqa: BLE001 - recording must never break the program
        _internal_error(e)
        name, file, line, user = "fn", None, None, False
    try:
        result = run()
    except Exception as e:
        if user:
            record_error(e, f"tracing {name}")
        raise
    if user:
        try:
            jaxpr = jaxpr_of(result)
            if jaxpr is not None:
                record_function(
                    "jit", name, file, line, jaxpr,
                    in_avals=in_avals, arg_names=getattr(dbg, "arg_names", None),
                )
        except Exception as e:  # noqa: BLE001 - recording must never break the program
            _internal_error(e)
    return result


def wraps(original, wrapper):
    """`wrapper` in `original`'s place, with everything JAX reads on it:
    its name and, through `__dict__`, the attributes a cache decorator
    hangs on it (`lu.cache`'s `cache_clear`, which JAX's `atexit` clean-up
    calls, and `evict_function`; `cache_info`)."""
    import functools

    functools.update_wrapper(wrapper, original)
    return wrapper


def _hook_jax():
    """Hooks the one place every `jit` trace goes through (jax.jit calls,
    `.trace()`/`.lower()`, jits nested in other traces): a cache miss of the
    jit cache, so each trace is recorded once and nothing is traced twice.
    `_trace_for_jit` in jax >= 0.9; `_create_pjit_jaxpr` in 0.4.28 to 0.8
    (Catalyst's jax), whose debug info is the function's own from 0.5 on
    (`fun.debug_info`) and an argument of its own before."""
    from jax._src import pjit, source_info_util, traceback_util

    # Frames of this package never become an equation's source location,
    # and JAX leaves them out of the tracebacks it shows, like its own.
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    source_info_util.register_exclusion(here)
    traceback_util.register_exclusion(here)

    trace_for_jit = getattr(pjit, "_trace_for_jit", None)
    if trace_for_jit is not None:

        def _trace_for_jit(fun, ji, ctx_mesh, dbg, avals, *rest, **kw):
            return _observe(
                dbg, fun, lambda: trace_for_jit(fun, ji, ctx_mesh, dbg, avals, *rest, **kw),
                lambda p: p.params["jaxpr"], in_avals=avals,
            )

        pjit._trace_for_jit = wraps(trace_for_jit, _trace_for_jit)
        return True

    create_pjit_jaxpr = getattr(pjit, "_create_pjit_jaxpr", None)
    if create_pjit_jaxpr is None:
        return False
    # This one sits behind its own cache and is called on cache hits too:
    # each jaxpr is recorded once (kept here, so its id stays its own).
    recorded = {}

    def first_time(result):
        if id(result[0]) in recorded:
            return None
        recorded[id(result[0])] = result[0]
        return result[0]

    def _create_pjit_jaxpr(fun, *rest, **kw):
        dbg = getattr(fun, "debug_info", None)
        if dbg is None:
            # jax 0.4: `_create_pjit_jaxpr(fun, in_type, attr_data, debug_info, ...)`
            dbg = kw.get("debug_info") or next(
                (a for a in rest if hasattr(a, "func_src_info")), None)
        return _observe(
            dbg, getattr(fun, "f", None),
            lambda: create_pjit_jaxpr(fun, *rest, **kw), first_time,
        )

    pjit._create_pjit_jaxpr = wraps(create_pjit_jaxpr, _create_pjit_jaxpr)
    return True


def emit(event):
    if _state is not None:
        _state.emit(event)


def _internal_error(e):
    if _state is not None:
        _state.emit({"event": "internal-error", "message": f"{type(e).__name__}: {e}"})


def install(out):
    global _state
    _state = _State(out)
    import jax

    versions = {"jax": jax.__version__}
    hooked = _hook_jax()
    # Catalyst is hooked when (and only if) the program imports it: importing
    # it here would cost seconds and could change JAX's configuration.
    from . import catalyst_hook

    catalyst_hook.install_when_imported()
    _state.emit(
        {
            "event": "start",
            "python": sys.executable,
            "python_version": sys.version.split()[0],
            "versions": versions,
            "jit_hook": hooked,
        }
    )


def finish(status, uncaught=None):
    """The last event: the exit status and the exception that ended the
    program, if one did (it may have been recorded earlier as a tracing error)."""
    if _state is not None:
        event = {"event": "exit", "status": status}
        if uncaught is not None:
            loc = _user_location(uncaught.__traceback__) or (None, None, None, None)
            event["uncaught"] = {
                "kind": type(uncaught).__name__,
                "message": str(uncaught).split("\n")[0],
                "file": loc[0],
                "line": loc[1],
            }
        _state.emit(event)
        _state.events.close()
