//! The C ABI of native libraries (`docs/native.md`) as the tests call it:
//! `jx_array`, the entry points' types, dtype codes, and corpus values
//! packed into and read out of the ABI's element types.
#![allow(dead_code)]

use serde_json::Value;

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

/// The ABI's dtype code and element size (`docs/native.md`); a typed PRNG
/// key is its key data, uint32 words.
pub fn code(dtype: &str) -> Option<(i32, usize)> {
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
        d if d.starts_with("key<") => (7, 4),
        _ => return None,
    })
}

pub fn dtype_of_code(c: i32) -> Option<&'static str> {
    const NAMES: [&str; 13] = [
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
        "bfloat16", "float32", "float64",
    ];
    NAMES.get(usize::try_from(c).ok()?).copied()
}

/// `i`, `u`, `f` or `b`: values of one kind compare across widths.
pub fn kind(dtype: &str) -> char {
    dtype.chars().next().map_or('?', |c| if c == 'b' && dtype != "bool" { 'f' } else { c })
}

pub fn num(x: &Value) -> f64 {
    match x {
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            s => s.parse().unwrap(),
        },
        Value::Bool(b) => *b as i64 as f64,
        x => x.as_f64().unwrap(),
    }
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

/// The elements of a corpus value (a scalar's `data` is the element).
pub fn items(v: &Value) -> Vec<Value> {
    match &v["data"] {
        Value::Array(a) => a.clone(),
        x => vec![x.clone()],
    }
}

/// A corpus value as the ABI's bytes (row-major); `None` for a dtype the
/// ABI has no code for.
pub fn pack(v: &Value) -> Option<(i32, Vec<i64>, Vec<u8>)> {
    let dtype = v["dtype"].as_str().unwrap();
    let (c, _) = code(dtype)?;
    let mut shape: Vec<i64> = v["shape"].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
    let data = items(v);
    if dtype.starts_with("key<") {
        let count: i64 = shape.iter().product();
        shape.push(data.len() as i64 / count.max(1));
    }
    let mut bytes = Vec::new();
    for x in &data {
        let int = || match x {
            Value::Bool(b) => *b as i64,
            x => x.as_i64().unwrap_or_else(|| num(x) as i64),
        };
        match c {
            0 | 1 | 5 => bytes.push(int() as u8),
            2 | 6 => bytes.extend((int() as u16).to_le_bytes()),
            3 | 7 => bytes.extend((int() as u32).to_le_bytes()),
            4 => bytes.extend(int().to_le_bytes()),
            8 => bytes.extend(x.as_u64().unwrap_or_else(|| int() as u64).to_le_bytes()),
            9 => bytes.extend(f16_bits(num(x)).to_le_bytes()),
            10 => bytes.extend(&(num(x) as f32).to_le_bytes()[2..]),
            11 => bytes.extend((num(x) as f32).to_le_bytes()),
            _ => bytes.extend(num(x).to_le_bytes()),
        }
    }
    Some((c, shape, bytes))
}

/// Element `i` of an output as f64 (u64 and i64 exactly up to 2^53, which
/// covers the comparison of integers the corpus holds).
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
            10 => f32::from_bits(((p.add(2 * i) as *const u16).read_unaligned() as u32) << 16) as f64,
            11 => (p.add(4 * i) as *const f32).read_unaligned() as f64,
            _ => (p.add(8 * i) as *const f64).read_unaligned(),
        }
    }
}

