"""What a user does right after `pip install jaxpr`, run by tests/wheel.rs.

    python smoke.py cli CORPUS OUT   # the installed commands and language server
    python smoke.py api CORPUS       # the Python API, with jax 0.10.2 importable
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def run(*args, ok=(0,)):
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode in ok, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def cli(corpus: Path, out: Path):
    jaxpr = shutil.which("jaxpr")
    assert jaxpr and Path(jaxpr).parent == Path(sys.executable).parent, f"jaxpr on PATH is {jaxpr}"
    done = run("jaxpr", "check", str(corpus / "catalyst/nested_dyn.jaxpr"))
    assert "checked 1 file: 0 errors, 1 warning" in done.stdout + done.stderr, done.stdout + done.stderr
    done = run("jaxpr", "check", "--format", "json", str(corpus / "invalid/broadcast_dims.jaxpr"), ok=(1,))
    codes = [d["code"] for d in json.loads(done.stdout)["files"][0]["diagnostics"]]
    assert "J0004" in codes, codes

    module = out / "mlp.mlir"
    run("jaxpr", "build", str(corpus / "jax/mlp.jaxpr"), "--emit", "stablehlo", "-o", str(module))
    assert "stablehlo.dot_general" in module.read_text()
    library = out / "libdyn_matmul.so"
    run("jaxpr", "build", str(corpus / "catalyst/dyn_matmul.jaxpr"), "--emit", "native", "-o", str(library))
    assert library.read_bytes()[:4] == b"\x7fELF"
    assert "dyn_matmul(const jx_array *inputs" in (out / "libdyn_matmul.h").read_text()

    lsp_diagnostics(corpus / "invalid/broadcast_dims.jaxpr")


def message(proc, body):
    data = json.dumps(body).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    proc.stdin.flush()


def read(proc):
    length = None
    while True:
        line = proc.stdout.readline()
        assert line, "jaxpr-lsp closed its output"
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def lsp_diagnostics(path: Path):
    proc = subprocess.Popen(["jaxpr-lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        message(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": None, "processId": None}})
        while read(proc).get("id") != 1:
            pass
        message(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        uri = path.resolve().as_uri()
        message(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "jaxpr", "version": 1, "text": path.read_text()}}})
        while True:
            m = read(proc)
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri:
                codes = [d.get("code") for d in m["params"]["diagnostics"]]
                assert "J0004" in codes, m
                break
        message(proc, {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
        message(proc, {"jsonrpc": "2.0", "method": "exit", "params": None})
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def api(corpus: Path):
    import jax
    import jaxpr

    assert jax.__version__ == "0.10.2", jax.__version__
    sys.path.insert(0, str(corpus / "jax"))
    import programs_jax  # the corpus's own programs

    checked = 0
    for name, (fn, examples, opts) in programs_jax.PROGRAMS.items():
        if opts.get("symbolic"):
            continue
        closed = jax.make_jaxpr(fn)(*examples[0])
        errors = [d for d in jaxpr.check(closed) if d.severity == "error"]
        assert not errors, f"{name}: " + "\n".join(map(str, errors))
        jaxpr.assert_valid(closed)
        signatures = jaxpr.types(closed)
        assert signatures and signatures[0].what == "main jaxpr", (name, signatures)
        assert signatures[0].in_type.startswith("(("), signatures[0]
        checked += 1
    assert checked >= 15, checked

    # A wrong program: the diagnostics of the CLI, and assert_valid fails.
    bad = (corpus / "invalid/broadcast_dims.jaxpr").read_text()
    found = jaxpr.check_text(bad)
    assert [(d.code, d.kind, d.line) for d in found if d.severity == "error"][0] == ("J0004", "shape-mismatch", 2), found

    # Bad input is a Python exception, not a crash.
    for value in (42, "not a jaxpr", None):
        try:
            jaxpr.check(value)
        except jaxpr.JaxprError as e:
            assert "expected a jax ClosedJaxpr" in str(e), e
        else:
            raise AssertionError(f"check({value!r}) raised nothing")

    class Unprintable:
        eqns = []

        def pretty_print(self, **kwargs):
            raise TypeError("pretty_print() got an unexpected keyword argument 'source_info'")

    try:
        jaxpr.check(Unprintable())
    except jaxpr.JaxprError as e:
        assert "cannot be printed by the installed JAX" in str(e), e
    else:
        raise AssertionError("an unprintable jaxpr raised nothing")

    closed = jax.make_jaxpr(lambda x: x + 1.0)(1.0)
    try:
        jaxpr.assert_valid(closed)
    except AssertionError as e:
        raise AssertionError(f"a valid jaxpr failed: {e}")


if __name__ == "__main__":
    mode, corpus = sys.argv[1], Path(sys.argv[2])
    if mode == "cli":
        cli(corpus, Path(sys.argv[3]))
    else:
        api(corpus)
    print(f"smoke {mode}: ok")
