"""Writes the ecosystem corpus: programs written as the JAX libraries' own
documentation and examples write them (flax, optax, equinox, diffrax, ...),
printed by the JAX that runs this script, and for the build set the values
JAX computes for them.

usage: python gen.py OUT_DIR [GROUP ...]

Writes OUT_DIR/GROUP/ for each module `programs_GROUP.py` beside this file
(or only the GROUPs named), in the format of tests/data/jax-suite
(corpus-gen/jax/README.md): NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`,
traced at symbolic shapes for the shape-polymorphic ones), manifest.json, and
values.json.gz with JAX's values (`jax.jit(f)(*args)`, 64-bit types off) for
the programs of the build set: those whose inputs and outputs are all plain
arrays and whose printed text holds every value it computes with (see
`text_lacks`; the others say why in `outside_build_set`). A program the
library cannot trace here, or whose jaxpr is larger than MAX_CHARS, is
listed under `skipped` with the reason.

usage: python gen.py --classify OUT_DIR

Re-derives the build-set fields (`build`, `outside_build_set`) of the
manifests under OUT_DIR from the jaxprs written there, without tracing:
what `generate` would write for the same texts.
"""
import importlib, importlib.metadata, json, os, re, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import folder  # noqa: E402

# What the text lacks, recorded as the Python API and `jaxpr trace` record it.
recorded = folder.load(os.path.join(os.path.dirname(os.path.dirname(HERE)), "wheel", "python", "jaxpr",
                                    "_recorded.py"), "recorded")

# A jaxpr longer than this is left out: the corpus stays a few MB, and such a
# program tests nothing its smaller siblings do not.
MAX_CHARS = 200_000
# A build-set program whose inputs and outputs hold more elements than this
# has no values (its jaxpr is kept); the programs' sizes are chosen below it.
MAX_ELEMENTS = 6_000

# What a printed jaxpr cannot hold, so that no back end can build the program
# from its text (the build refuses it with a J0012 naming the limit,
# docs/build-refusals.md): a nested closed jaxpr's constants, which JAX's
# printer writes as binders before the `;` (`jaxpr={ lambda ez:f32[]; ...`,
# `let f = { lambda a:bool[]; ...`) with no values, the call site passing
# only the arguments; and a `_` that is read, which JAX's printer writes for
# every variable the outermost jaxpr does not use (a `jit`'s nested jaxpr
# takes the names of the call's operands and results, `_` included). A `_`
# is not read where a nested jaxpr returns it and its call drops the result
# (`_:f32[4,4] b:f32[4] = jit[... in (b, _) }]`) and passes it nowhere else:
# the results of a call-like primitive (the registry's `Call` family,
# `CALLS`) and of a `cond`, one per output of the nested jaxpr, and the
# stacked outputs of a `scan` (after its `num_carry` carried values). The
# back ends build those as zeros (`unread_output` in crates/lower).
NESTED_CONSTANTS = re.compile(r"(?<!^)\{ lambda ([^;]*);", re.M)
UNNAMED_VALUE = re.compile(r"(?<=[ (,])_(?=[ ,)]|$)", re.M)
NOT_ARRAYS = "its inputs or outputs are not all plain arrays (typed PRNG keys, library objects)"
CALLS = {"checkpoint", "remat", "remat2", "closed_call", "composite", "core_call", "custom_jvp_call",
         "custom_lin", "custom_linear_solve", "custom_vjp_call", "custom_vjp_call_jaxpr", "jit", "pjit",
         "shard_map", "xla_call", "xla_pmap", "func"}
BINDER = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*):\S+$")


def groups():
    return sorted(f[len("programs_"):-3] for f in os.listdir(HERE)
                  if f.startswith("programs_") and f.endswith(".py"))


def jaxpr_spans(text):
    """Each `{ lambda ... }` of `text` as (start, end), braces counted (the
    parameter values JAX prints as text hold balanced ones)."""
    spans, stack = [], []
    for m in re.finditer(r"\{ lambda\b|\{|\}", text):
        if m.group() != "}":
            stack.append(m.start() if m.group() != "{" else None)
        elif stack and (start := stack.pop()) is not None:
            spans.append((start, m.end()))
    return spans


def blanked(text, start, end, inner):
    """`text[start:end]` with the jaxprs `inner` (spans inside it) blanked
    out, lines kept."""
    chars = list(text[start:end])
    for s, e in inner:
        for i in range(s - start, e - start):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def call_site(parent_text, at):
    """The equation of `parent_text` (its nested jaxprs blanked) whose
    parameters hold the jaxpr at offset `at`: (primitive, the parameter,
    binder names, the text from its `[` on), or None."""
    depth, i = 0, at - 1
    while i >= 0:
        depth += {"]": 1, "[": -1}.get(parent_text[i], 0)
        if depth < 0:
            break
        i -= 1
    if i < 0:
        return None
    param = re.search(r"(\w+)=\s*\(?\s*$", parent_text[:at])
    head = re.search(r"([\w\-]+)$", parent_text[:i])
    if not param or not head:
        return None
    before = parent_text[:head.start()]
    eq = re.search(r"=\s*$", before)
    binders = []
    if eq:
        lines = before[:eq.start()].split("\n")
        for k, line in enumerate(reversed(lines)):
            tokens = line.split()
            if not all(BINDER.match(t) for t in tokens) or (k > 0 and not tokens):
                break
            binders = [t.split(":")[0] for t in tokens] + binders
    return head.group(1), param.group(1), binders, parent_text[i:]


def reads_unnamed(text):
    """Whether an equation reads a `_`, or a jaxpr returns one that its
    call does not drop (see `CALLS`)."""
    spans = jaxpr_spans(text)
    inside = {sp: [o for o in spans if sp[0] < o[0] and o[1] <= sp[1]] for sp in spans}
    parent = {sp: min((o for o in spans if o[0] < sp[0] and sp[1] <= o[1]), key=lambda o: o[1] - o[0], default=None)
              for sp in spans}
    for sp in spans:
        own = blanked(text, *sp, inside[sp])
        m = re.search(r"\bin\s*\((.*)\)\s*\}\s*$", own, re.S) or re.search(r"\bin\s+(.*?)\s*\}\s*$", own, re.S)
        body, outs = (own[:m.start()], [o.strip() for o in m.group(1).split(",") if o.strip()]) if m else (own, [])
        if UNNAMED_VALUE.search(body):
            return True
        if "_" not in outs:
            continue
        site = None
        if parent[sp] is not None:
            p = parent[sp]
            site = call_site(blanked(text, *p, [o for o in inside[p] if o != sp]), sp[0] - p[0])
        if site is None:
            return True
        primitive, param, binders, params = site
        carried = re.search(r"\bnum_carry=(\d+)", params)
        for k, o in enumerate(outs):
            if o != "_":
                continue
            unread = len(binders) == len(outs) and binders[k] == "_" and (
                primitive in CALLS
                or (primitive == "cond" and param in ("branches", "branch_jaxprs"))
                or (primitive == "scan" and param == "jaxpr" and carried and k >= int(carried.group(1))))
            if not unread:
                return True
    return False


def without_implemented(text, implementations):
    """`text` without the parameters of each equation whose implementation
    is recorded (`implementations`, by its first named result): the build
    replaces the equation by its implementation, so what its parameters
    print (lineax's `linear_solve`'s operator and its constants) is not
    built."""
    for name, imp in implementations.items():
        m = re.search(rf"(?:^|\s){re.escape(name)}:[^\s=]+[^=\n]*= {re.escape(imp['primitive'])}\[", text, re.M)
        if m is None:
            continue
        depth = 0
        for end in range(m.end() - 1, len(text)):
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            if depth == 0:
                break
        text = text[:m.end()] + text[end:]
    return text


def without_unreferenced_lets(text):
    """`text` without the jaxprs it names apart (`let NAME = { ... } in`)
    and never calls by that name: JAX's printer names apart every nested
    jaxpr of more than ten equations, also one referred to only from inside
    a parameter printed with Python's `repr` (lineax's operator in
    `linear_solve`'s `static`), and nothing builds those."""
    lets = list(re.finditer(r"^let (\w+) = \{.*?\}\s+in$", text, re.M | re.S))
    for m in reversed(lets):
        rest = text[:m.start()] + text[m.end():]
        if re.search(rf"(?<![\w.]){re.escape(m.group(1))}(?![\w.])", rest) is None:
            text = rest
    return text


def text_lacks(text, constants=(), implementations=None):
    """Why `text`, with the values of the constants named in `constants`
    and the implementations in `implementations` (recorded beside it in
    NAME.recorded.json), does not hold every value its program computes
    with, or None."""
    reasons = []
    text = without_unreferenced_lets(without_implemented(text, implementations or {}))
    nested = [b.split(":", 1)[0] for m in NESTED_CONSTANTS.finditer(text) for b in m.group(1).split()]
    if any(name not in constants for name in nested):
        reasons.append("a nested jaxpr's constants are printed by name only, without their values")
    if reads_unnamed(text):
        reasons.append("a value it reads or returns to its caller is printed as `_`, which names no variable")
    return "; ".join(reasons) or None


def classify(entry, text, has_values, constants=(), implementations=None):
    """Sets `entry`'s `build` (in the build set: plain arrays, values
    recorded, a text that holds them all) and `outside_build_set` (why not,
    when the reason is the program's, not its size: `no_values` says that)."""
    entry.pop("outside_build_set", None)
    lacks = text_lacks(text, constants, implementations)
    if "no_values" in entry:
        entry["build"] = False
    elif not has_values:
        entry["build"] = False
        entry["outside_build_set"] = NOT_ARRAYS
    elif lacks:
        entry["build"] = False
        entry["outside_build_set"] = f"its text cannot be built: {lacks}"
    else:
        entry["build"] = True


def elements(value):
    return sum(len(v["data"]) for v in value[0]["inputs"] + value[0]["outputs"])


def generate(out_root, group):
    import jax
    module = importlib.import_module(f"programs_{group}")
    versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in ["jax", *module.DISTRIBUTIONS])
    manifest, values, texts, skipped, constants, implemented = {}, {}, {}, {}, {}, {}
    for p in module.programs():
        try:
            cj = folder.trace(p)
            text, (consts, _, _, impls) = recorded.printed(cj, lambda: str(cj))
            # The outermost jaxpr's constants are inputs, with the values.
            consts = {k: v for k, v in consts.items() if v["nested"]}
            if len(text) > MAX_CHARS:
                skipped[p.name] = f"its jaxpr has {len(text)} characters (more than {MAX_CHARS})"
                continue
            entry = folder.entry(p, cj)
            if p.build:
                v = folder.values(p, cj)
                if elements(v) <= MAX_ELEMENTS:
                    values[p.name] = v
                else:
                    entry["no_values"] = f"{elements(v)} elements in its inputs and outputs"
            classify(entry, text, p.name in values, consts, impls)
        except Exception as e:  # the library cannot trace it here: recorded, not fatal
            traceback.print_exc()
            skipped[p.name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            continue
        texts[p.name], manifest[p.name] = text, entry
        if consts or impls:
            constants[p.name], implemented[p.name] = consts, impls
        jax.clear_caches()
    out = os.path.join(out_root, group)
    folder.write(out, versions, manifest, values, texts, extra={"skipped": skipped})
    for name, consts in constants.items():
        recorded.write(os.path.join(out, name + ".recorded.json"), (consts, {}, None, implemented[name]))
    print(f"{out}: {len(manifest)} programs, {len(values)} with values, {len(skipped)} skipped")
    for name, why in skipped.items():
        print(f"  skipped {name}: {why}")


def reclassify(out_root):
    """`--classify`: the build-set fields of every manifest under
    `out_root`, from its texts and recorded values."""
    import gzip
    for g in sorted(os.listdir(out_root)):
        path = os.path.join(out_root, g, "manifest.json")
        if not os.path.exists(path):
            continue
        with open(path) as fh:
            manifest = json.load(fh)
        with gzip.open(os.path.join(out_root, g, "values.json.gz")) as fh:
            recorded = json.load(fh)
        for name, entry in manifest["programs"].items():
            with open(os.path.join(out_root, g, name + ".jaxpr")) as fh:
                text = fh.read().rstrip("\n")
            consts = os.path.join(out_root, g, name + ".recorded.json")
            beside = json.load(open(consts)) if os.path.exists(consts) else {}
            classify(entry, text, name in recorded, beside.get("constants", {}),
                     beside.get("implementations", {}))
        with open(path, "w") as fh:
            json.dump(manifest, fh, indent=1, sort_keys=True)
            fh.write("\n")


def main():
    if sys.argv[1] == "--classify":
        reclassify(sys.argv[2])
        return
    names = sys.argv[2:] or groups()
    for g in names:
        generate(sys.argv[1], g)


if __name__ == "__main__":
    main()
