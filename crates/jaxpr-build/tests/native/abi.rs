//! The C ABI of `jaxpr build --emit native` libraries as the tests call
//! it: `jx_array`, the dtype codes, corpus values packed into and read out
//! of arrays, and running a library on examples with the corpus's
//! tolerances ([`tolerance`]; complex values compared by the modulus of
//! the difference). Shared by
//! `native.rs`, `complex.rs` and `jax_suite.rs`.
// Each test crate uses part of it.
#![allow(dead_code)]

use std::ffi::CStr;
use std::path::Path;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JxArray {
    pub data: *mut u8,
    pub dtype: i32,
    pub rank: i32,
    pub shape: [i64; 8],
}

pub type Entry = unsafe extern "C" fn(*const JxArray, i64, *mut JxArray, i64) -> i32;
pub type ErrorFn = unsafe extern "C" fn() -> *const std::ffi::c_char;
pub type FreeFn = unsafe extern "C" fn(*mut u8);
pub type CountFn = unsafe extern "C" fn() -> i64;

/// The ABI code and element size of a corpus dtype name, if the ABI has it.
pub fn code_of(dtype: &str) -> Option<(i32, usize)> {
    Some(match dtype {
        "bool" => (0, 1),
        "int8" => (1, 1),
        "int16" => (2, 2),
        "int32" => (3, 4),
        "int64" => (4, 8),
        "uint8" => (5, 1),
        "uint16" => (6, 2),
        "uint32" => (7, 4),
        "uint64" => (8, 8),
        "float16" => (9, 2),
        "bfloat16" => (10, 2),
        "float32" => (11, 4),
        "float64" => (12, 8),
        "complex64" => (13, 8),
        "complex128" => (14, 16),
        // A typed PRNG key is its key data, uint32 words.
        d if d.starts_with("key<") => (7, 4),
        _ => return None,
    })
}

pub fn code(dtype: &str) -> (i32, usize) {
    code_of(dtype).unwrap_or_else(|| panic!("dtype {dtype}"))
}

pub fn dtype_of_code(c: i32) -> Option<&'static str> {
    const NAMES: [&str; 13] = [
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "bfloat16", "float32", "float64",
    ];
    NAMES.get(usize::try_from(c).ok()?).copied()
}

/// `i`, `u`, `f` or `b`: values of one kind compare across widths.
pub fn kind(dtype: &str) -> char {
    dtype
        .chars()
        .next()
        .map_or('?', |c| if c == 'b' && dtype != "bool" { 'f' } else { c })
}

/// IEEE binary16 bits of `x`, rounded to nearest even.
pub fn f16_bits(x: f64) -> u16 {
    let f = x as f32;
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if f.is_nan() {
        return sign | 0x7e00;
    }
    let a = f.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 6.103_515_6e-5 {
        // subnormal: units of 2^-24, rounded to nearest even
        let q = (a as f64) * 16_777_216.0;
        let r = q.round_ties_even();
        return sign | r as u16;
    }
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let mant = b & 0x7f_ffff;
    let mut h = ((exp as u32) << 10) | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

pub fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let mant = (h & 0x3ff) as f64;
    sign * match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
    }
}

pub fn num(x: &serde_json::Value) -> f64 {
    match x {
        serde_json::Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            s => s.parse().unwrap(),
        },
        serde_json::Value::Bool(b) => *b as i64 as f64,
        x => x.as_f64().unwrap(),
    }
}

/// A complex corpus value, `[re, im]`.
pub fn complex(x: &serde_json::Value) -> (f64, f64) {
    (num(&x[0]), num(&x[1]))
}

pub fn items(v: &serde_json::Value) -> Vec<serde_json::Value> {
    match &v["data"] {
        serde_json::Value::Array(a) => a.clone(),
        x => vec![x.clone()],
    }
}

/// [`pack`] when the ABI has the value's dtype.
pub fn try_pack(v: &serde_json::Value) -> Option<(i32, Vec<i64>, Vec<u8>)> {
    code_of(v["dtype"].as_str()?)?;
    Some(pack(v))
}

/// Packs a corpus value into bytes (row-major, the ABI's element types); a
/// key array gets a trailing axis of its key data.
pub fn pack(v: &serde_json::Value) -> (i32, Vec<i64>, Vec<u8>) {
    let dtype = v["dtype"].as_str().unwrap();
    let (c, _) = code(dtype);
    let mut shape: Vec<i64> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect();
    if dtype.starts_with("key<") {
        let count: i64 = shape.iter().product();
        shape.push(items(v).len() as i64 / count.max(1));
    }
    let mut bytes = Vec::new();
    for x in items(v) {
        let int = || match &x {
            serde_json::Value::Bool(b) => *b as i64,
            x => x.as_i64().unwrap_or_else(|| num(x) as i64),
        };
        let uint = || x.as_u64().unwrap_or_else(|| int() as u64);
        match c {
            0 | 1 | 5 => bytes.push(int() as u8),
            2 | 6 => bytes.extend((int() as u16).to_le_bytes()),
            3 | 7 => bytes.extend((int() as u32).to_le_bytes()),
            4 => bytes.extend(int().to_le_bytes()),
            8 => bytes.extend(uint().to_le_bytes()),
            9 => bytes.extend(f16_bits(num(&x)).to_le_bytes()),
            10 => bytes.extend(&(num(&x) as f32).to_le_bytes()[2..]),
            11 => bytes.extend((num(&x) as f32).to_le_bytes()),
            12 => bytes.extend(num(&x).to_le_bytes()),
            13 => {
                let (re, im) = complex(&x);
                bytes.extend((re as f32).to_le_bytes());
                bytes.extend((im as f32).to_le_bytes());
            }
            14 => {
                let (re, im) = complex(&x);
                bytes.extend(re.to_le_bytes());
                bytes.extend(im.to_le_bytes());
            }
            _ => panic!("dtype code {c} in a test input"),
        }
    }
    (c, shape, bytes)
}

/// Element `i` of an output as f64.
pub fn element(a: &JxArray, i: usize) -> f64 {
    unsafe {
        let p = a.data;
        match a.dtype {
            0 | 5 => *p.add(i) as f64,
            1 => *(p.add(i) as *const i8) as f64,
            2 => (p.add(2 * i) as *const i16).read_unaligned() as f64,
            6 => (p.add(2 * i) as *const u16).read_unaligned() as f64,
            3 => (p.add(4 * i) as *const i32).read_unaligned() as f64,
            7 => (p.add(4 * i) as *const u32).read_unaligned() as f64,
            4 => (p.add(8 * i) as *const i64).read_unaligned() as f64,
            8 => (p.add(8 * i) as *const u64).read_unaligned() as f64,
            9 => f16_value((p.add(2 * i) as *const u16).read_unaligned()),
            10 => {
                let h = (p.add(2 * i) as *const u16).read_unaligned();
                f32::from_bits((h as u32) << 16) as f64
            }
            11 => (p.add(4 * i) as *const f32).read_unaligned() as f64,
            12 => (p.add(8 * i) as *const f64).read_unaligned(),
            c => panic!("dtype code {c} (complex values are read by complex_element)"),
        }
    }
}

/// Element `i` of a complex output (`c64`, `c128`): its parts.
pub fn complex_element(a: &JxArray, i: usize) -> (f64, f64) {
    unsafe {
        let p = a.data;
        match a.dtype {
            13 => {
                let q = p.add(8 * i) as *const f32;
                (q.read_unaligned() as f64, q.add(1).read_unaligned() as f64)
            }
            14 => {
                let q = p.add(16 * i) as *const f64;
                (q.read_unaligned(), q.add(1).read_unaligned())
            }
            c => panic!("dtype code {c} is not complex"),
        }
    }
}

pub struct Lib {
    lib: libloading::Library,
    name: String,
}

impl Lib {
    pub fn open(path: &Path, name: &str) -> Lib {
        Lib {
            lib: unsafe { libloading::Library::new(path) }.unwrap(),
            name: name.to_string(),
        }
    }
    pub fn sym<T: Copy>(&self, suffix: &str) -> T {
        let n = format!("{}{suffix}", self.name);
        unsafe { *self.lib.get::<T>(n.as_bytes()).unwrap() }
    }
    /// Calls the library: Ok(outputs) or Err(message).
    pub fn call(&self, inputs: &[JxArray], n_out: i64) -> Result<Vec<JxArray>, String> {
        let f: Entry = self.sym("");
        let mut outs = vec![
            JxArray {
                data: std::ptr::null_mut(),
                dtype: -1,
                rank: -1,
                shape: [0; 8],
            };
            n_out.max(1) as usize
        ];
        let rc = unsafe {
            f(
                inputs.as_ptr(),
                inputs.len() as i64,
                outs.as_mut_ptr(),
                n_out,
            )
        };
        if rc == 0 {
            outs.truncate(n_out as usize);
            return Ok(outs);
        }
        // Nothing is written to the outputs on failure.
        assert!(outs.iter().all(|o| o.data.is_null() && o.rank == -1));
        let e: ErrorFn = self.sym("_error");
        Err(unsafe { CStr::from_ptr(e()) }
            .to_string_lossy()
            .into_owned())
    }
    pub fn free(&self, outs: Vec<JxArray>) {
        let free: FreeFn = self.sym("_free");
        for o in outs {
            unsafe { free(o.data) };
        }
    }
}

pub fn arrays(bufs: &mut [(i32, Vec<i64>, Vec<u8>)]) -> Vec<JxArray> {
    bufs.iter_mut()
        .map(|(c, shape, bytes)| {
            let mut s = [0i64; 8];
            s[..shape.len()].copy_from_slice(shape);
            JxArray {
                data: bytes.as_mut_ptr(),
                dtype: *c,
                rank: shape.len() as i32,
                shape: s,
            }
        })
        .collect()
}

/// Relative and absolute tolerance per dtype: a few units in the last place
/// of the dtype, as JAX's own tests allow between back ends (transcendental
/// functions are libm's natively, XLA's own approximations on XLA).
pub fn tolerance(dtype: &str) -> (f64, f64) {
    match dtype {
        "bfloat16" => (2e-2, 2e-2),
        "float16" | "complex32" => (4e-3, 4e-3),
        "float32" | "complex64" => (2e-5, 1e-5),
        "float64" | "complex128" => (1e-11, 1e-12),
        _ => (0.0, 0.0),
    }
}

/// A real result against the expected one, within [`tolerance`].
pub fn close(got: f64, want: f64, dtype: &str) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    let (rtol, atol) = tolerance(dtype);
    (got - want).abs() <= atol + rtol * want.abs()
}

/// A real result against JAX's `want`: within [`tolerance`] or, where the
/// program's double-precision value `twin` is known, within twice XLA's own
/// distance from it (the program's sensitivity to rounding), whichever is
/// larger: an ill-conditioned program is judged fairly, a well-conditioned
/// one at its dtype's bound.
pub fn close_to_twin(got: f64, want: f64, twin: Option<f64>, dtype: &str) -> bool {
    if close(got, want, dtype) {
        return true;
    }
    match twin {
        Some(t) if t.is_finite() && want.is_finite() && got.is_finite() => {
            (got - want).abs() <= 2.0 * (want - t).abs()
        }
        _ => false,
    }
}

/// A complex result against the expected one: within the tolerance of its
/// parts' dtype on the modulus of the difference (a part near 0 next to a
/// large one is as exact as XLA's own formulas make it); NaN and infinite
/// parts part by part.
pub fn close_complex(got: (f64, f64), want: (f64, f64), dtype: &str) -> bool {
    let part = if dtype == "complex64" {
        "float32"
    } else {
        "float64"
    };
    if !(want.0.is_finite() && want.1.is_finite()) {
        return close(got.0, want.0, part) && close(got.1, want.1, part);
    }
    let (rtol, atol) = tolerance(dtype);
    let modulus = want.0.hypot(want.1);
    (got.0 - want.0).hypot(got.1 - want.1) <= atol + rtol * modulus
}

/// Runs every example of a case; returns the mismatches.
pub fn run_examples(lib: &Lib, case: &Path) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case.with_extension("json")).unwrap())
            .unwrap();
    run_values(
        lib,
        v["examples"].as_array().unwrap(),
        &case.display().to_string(),
        false,
    )
}

/// Runs the library on `examples` (`inputs`, `outputs`) of the program
/// `what`; returns the mismatches. With `single`, double-width results
/// compare at single precision's tolerance (values computed in single
/// precision, for a program widened from it).
pub fn run_values(
    lib: &Lib,
    examples: &[serde_json::Value],
    what: &str,
    single: bool,
) -> Vec<String> {
    let n_in: CountFn = lib.sym("_num_inputs");
    let n_out: CountFn = lib.sym("_num_outputs");
    let (n_in, n_out) = unsafe { (n_in(), n_out()) };
    let mut bad = Vec::new();
    for (k, ex) in examples.iter().enumerate() {
        let ins = ex["inputs"].as_array().unwrap();
        let wants = ex["outputs"].as_array().unwrap();
        assert_eq!(ins.len() as i64, n_in, "{what}");
        assert_eq!(wants.len() as i64, n_out, "{what}");
        let mut bufs: Vec<_> = ins.iter().map(pack).collect();
        let outs = match lib.call(&arrays(&mut bufs), n_out) {
            Ok(o) => o,
            Err(e) => {
                bad.push(format!("example {k}: {e}"));
                continue;
            }
        };
        for (j, (o, w)) in outs.iter().zip(wants).enumerate() {
            let dtype = w["dtype"].as_str().unwrap();
            let shape: Vec<i64> = o.shape[..o.rank as usize].to_vec();
            let wshape: Vec<i64> = w["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_i64().unwrap())
                .collect();
            if o.dtype != code(dtype).0 || shape != wshape {
                bad.push(format!(
                    "example {k} output {j}: code {} {shape:?}, expected {dtype} {wshape:?}",
                    o.dtype
                ));
                continue;
            }
            let dtype = match (single, dtype) {
                (true, "float64") => "float32",
                (true, "complex128") => "complex64",
                _ => dtype,
            };
            for (i, x) in items(w).iter().enumerate() {
                if matches!(dtype, "complex64" | "complex128") {
                    let (got, want) = (complex_element(o, i), complex(x));
                    if !close_complex(got, want, dtype) {
                        bad.push(format!(
                            "example {k} output {j}[{i}]: {got:?}, expected {want:?}"
                        ));
                        break;
                    }
                    continue;
                }
                let (got, want) = (element(o, i), num(x));
                if !close(got, want, dtype) {
                    bad.push(format!(
                        "example {k} output {j}[{i}]: {got}, expected {want}"
                    ));
                    break;
                }
            }
        }
        lib.free(outs);
    }
    bad
}

pub fn code_size(dtype: i32) -> usize {
    [1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16][dtype as usize]
}

/// The examples of a Catalyst case (its `.json`) as the library takes them: the jaxpr's constants
/// (Catalyst's closed jaxpr holds them; the text only declares them) before
/// each example's inputs. Only the examples of the last trace: qjit traces
/// again for arguments of other shapes, and the jaxpr printed is the last.
pub fn catalyst_examples(meta: &serde_json::Value) -> Vec<serde_json::Value> {
    let consts = meta["consts"].as_array().cloned().unwrap_or_default();
    let all = meta["examples"].as_array().unwrap();
    let shapes = |ex: &serde_json::Value| -> Vec<serde_json::Value> {
        ex["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["shape"].clone())
            .collect()
    };
    let last = shapes(all.last().unwrap());
    all.iter()
        .filter(|ex| shapes(ex) == last)
        .map(|ex| {
            let mut ex = ex.clone();
            let inputs: Vec<serde_json::Value> = consts
                .iter()
                .chain(ex["inputs"].as_array().unwrap())
                .cloned()
                .collect();
            ex["inputs"] = serde_json::Value::Array(inputs);
            ex
        })
        .collect()
}
