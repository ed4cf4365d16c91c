"""Runs a library built by `jaxpr build --emit native` through ctypes on
every example of a corpus case and compares with the recorded outputs.
Standard library only. Usage: run.py LIB NAME CASE.json
Exit 0 when every example matches; prints one line per mismatch."""
import ctypes, json, math, struct, sys

CODES = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5,
         "uint16": 6, "uint32": 7, "uint64": 8, "float16": 9, "bfloat16": 10,
         "float32": 11, "float64": 12}
FMT = {0: "?", 1: "b", 2: "h", 3: "i", 4: "q", 5: "B", 6: "H", 7: "I", 8: "Q",
       9: "e", 11: "f", 12: "d"}
NAMES = {v: k for k, v in CODES.items()}


class JxArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 8)]


def num(x):
    return float(x) if isinstance(x, str) else x


def pack(v, keep):
    code = CODES[v["dtype"]]
    data = v["data"] if isinstance(v["data"], list) else [v["data"]]
    if code == 10:
        raw = b"".join(struct.pack("<f", num(x))[2:] for x in data)
    else:
        raw = struct.pack("<%d%s" % (len(data), FMT[code]), *[num(x) for x in data])
    buf = ctypes.create_string_buffer(raw, max(len(raw), 1))
    keep.append(buf)
    a = JxArray()
    a.data = ctypes.cast(buf, ctypes.c_void_p)
    a.dtype = code
    a.rank = len(v["shape"])
    for i, d in enumerate(v["shape"]):
        a.shape[i] = d
    return a


def unpack(a):
    shape = [a.shape[i] for i in range(a.rank)]
    n = 1
    for d in shape:
        n *= d
    if a.dtype == 10:
        size = 2
    else:
        size = struct.calcsize(FMT[a.dtype])
    raw = ctypes.string_at(a.data, n * size) if n else b""
    if a.dtype == 10:
        data = [struct.unpack("<f", b"\0\0" + raw[2 * i:2 * i + 2])[0] for i in range(n)]
    else:
        data = list(struct.unpack("<%d%s" % (n, FMT[a.dtype]), raw))
    return NAMES[a.dtype], shape, data


def close(x, y, dtype):
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        x, y = float(num(x)), float(num(y))
        if math.isnan(y):
            return math.isnan(x)
        if math.isinf(y):
            return x == y
        rtol = {"float64": 1e-12, "float32": 1e-5}.get(dtype, 1e-2)
        return abs(x - y) <= rtol * abs(y) + rtol * 1e-3
    return num(x) == num(y) if dtype != "bool" else bool(x) == bool(y)


def load(lib_path, name, mode=ctypes.DEFAULT_MODE):
    """The library's entry, NAME_error, NAME_free and its input and output counts."""
    lib = ctypes.CDLL(lib_path, mode=mode)
    f = getattr(lib, name)
    f.restype = ctypes.c_int32
    f.argtypes = [ctypes.POINTER(JxArray), ctypes.c_int64, ctypes.POINTER(JxArray), ctypes.c_int64]
    err = getattr(lib, name + "_error")
    err.restype = ctypes.c_char_p
    free = getattr(lib, name + "_free")
    free.argtypes = [ctypes.c_void_p]
    return f, err, free, getattr(lib, name + "_num_inputs")(), getattr(lib, name + "_num_outputs")()


def main():
    lib_path, name, case = sys.argv[1:4]
    f, err, free, n_in, n_out = load(lib_path, name)
    bad = 0
    for k, ex in enumerate(json.load(open(case))["examples"]):
        keep = []
        ins = (JxArray * max(len(ex["inputs"]), 1))(*[pack(v, keep) for v in ex["inputs"]])
        outs = (JxArray * max(n_out, 1))()
        if len(ex["inputs"]) != n_in or len(ex["outputs"]) != n_out:
            print("example %d: library has %d inputs/%d outputs, example %d/%d"
                  % (k, n_in, n_out, len(ex["inputs"]), len(ex["outputs"])))
            bad += 1
            continue
        rc = f(ins, len(ex["inputs"]), outs, n_out)
        if rc != 0:
            print("example %d: returned %d: %s" % (k, rc, err().decode()))
            bad += 1
            continue
        for j, want in enumerate(ex["outputs"]):
            dtype, shape, data = unpack(outs[j])
            wdata = want["data"] if isinstance(want["data"], list) else [want["data"]]
            if dtype != want["dtype"] or shape != want["shape"]:
                print("example %d output %d: %s%s, expected %s%s" % (k, j, dtype, shape, want["dtype"], want["shape"]))
                bad += 1
            elif not all(close(x, y, dtype) for x, y in zip(data, wdata)):
                print("example %d output %d: %s, expected %s" % (k, j, data[:8], wdata[:8]))
                bad += 1
            free(outs[j].data)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
