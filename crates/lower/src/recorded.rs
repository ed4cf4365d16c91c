//! What a program's text lacks, recorded beside it from the live program.
//!
//! JAX prints a closed jaxpr's constants by name only: `let step_fn = {
//! lambda cq:f32[]; cr:f32[12,2]. let …` names `cq` and its type, never its
//! value, and the call site passes only the arguments. And jax >= 0.6
//! prints a Pallas kernel's `BlockMapping` without its index map, so the
//! text does not say which block each grid point reads and writes. The
//! Python API and `jaxpr trace` write both next to the text, in
//! `NAME.recorded.json` (docs/python.md, "Recorded beside the text"):
//!
//! ```json
//! {"format": "jaxpr-recorded", "version": 1,
//!  "constants": {"cq": {"dtype": "float32", "shape": [], "hex": "0000803f", "nested": true}},
//!  "kernels": {"e": {"grid": [2], "blocks": [[[0], [0]], [[1], [1]]]}}}
//! ```
//!
//! Constants are keyed by the binder's printed name (JAX's printer gives
//! every variable of one printout its own name, nested jaxprs included),
//! each value its elements' little-endian bytes, row-major, in hex (a
//! boolean one byte). The build's rewrite ([`crate::discharge`]) turns each
//! nested jaxpr's constant binder into a `constant` equation holding those
//! bytes; the outermost jaxpr's constants stay inputs of the built function
//! (the C ABI's first inputs), their values recorded for its caller.
//! Kernels are keyed by the name of the kernel jaxpr's first binder, with
//! the block indices each block mapping selects at each grid point, as
//! JAX's index maps computed them.

use crate::walk::{LowerError, LowerErrorKind, LowerResult};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One recorded value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Constant {
    dtype: String,
    shape: Vec<i64>,
    hex: String,
}

/// The recorded values of a program's constants, by binder name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    constants: HashMap<String, Constant>,
    kernels: HashMap<String, Kernel>,
}

/// A Pallas kernel's grid and the block each of its block mappings
/// selects at each grid point, as JAX's index maps computed them when the
/// program was traced (jax >= 0.6 prints a `BlockMapping` without its index
/// map). Keyed by the name of the kernel jaxpr's first binder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub grid: Vec<i64>,
    /// `blocks[p][k]`: the block indices of mapping `k` at grid point `p`
    /// (row-major: the last grid axis moves fastest).
    pub blocks: Vec<Vec<Vec<i64>>>,
}

/// The file of recorded constants beside a jaxpr file: `NAME.recorded.json`
/// for `NAME.jaxpr`.
pub fn beside(jaxpr: &Path) -> PathBuf {
    let stem = jaxpr.file_stem().unwrap_or_default().to_string_lossy();
    jaxpr.with_file_name(format!("{stem}.recorded.json"))
}

impl Recorded {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.constants.is_empty() && self.kernels.is_empty()
    }

    /// The recorded blocks of the kernel whose jaxpr's first binder is
    /// `first_binder`.
    pub fn kernel(&self, first_binder: &str) -> Option<&Kernel> {
        self.kernels.get(first_binder)
    }

    pub(crate) fn constants_are_empty(&self) -> bool {
        self.constants.is_empty()
    }

    /// Whether a value is recorded for the constant binder `name`.
    pub fn has_constant(&self, name: &str) -> bool {
        self.constants.contains_key(name)
    }

    /// The constants of a build of the jaxpr file `jaxpr`: those of
    /// `given` (`--constants`), else those of the file [`beside`] it when
    /// there is one, else none. A file that is given, or beside and
    /// unreadable or malformed, is an error: its values are not silently
    /// left out.
    pub fn for_file(jaxpr: &Path, given: Option<&Path>) -> Result<Recorded, String> {
        match given {
            Some(p) => Recorded::read(p),
            None => {
                let p = beside(jaxpr);
                if p.exists() {
                    Recorded::read(&p)
                } else {
                    Ok(Recorded::default())
                }
            }
        }
    }

    /// Reads a recorded file; the error says what is wrong with it.
    pub fn read(path: &Path) -> Result<Recorded, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Recorded::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The constants of a file's text (the format above).
    pub fn parse(text: &str) -> Result<Recorded, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("format").and_then(|f| f.as_str()) != Some("jaxpr-recorded") {
            return Err("not a recorded file (its `format` is not \"jaxpr-recorded\")".into());
        }
        if v.get("version").and_then(|f| f.as_u64()) != Some(1) {
            return Err("a recorded file of another version than 1".into());
        }
        let empty = serde_json::Map::new();
        let entries = match v.get("constants") {
            None => &empty,
            Some(c) => c.as_object().ok_or("`constants` is not an object")?,
        };
        let mut by_name = HashMap::with_capacity(entries.len());
        for (name, e) in entries {
            let bad = |what: &str| format!("constant `{name}`: {what}");
            let dtype = e
                .get("dtype")
                .and_then(|d| d.as_str())
                .ok_or_else(|| bad("`dtype` is not a string"))?;
            let shape = e
                .get("shape")
                .and_then(|s| s.as_array())
                .and_then(|s| s.iter().map(|d| d.as_i64()).collect::<Option<Vec<i64>>>())
                .filter(|s| s.iter().all(|&d| d >= 0))
                .ok_or_else(|| bad("`shape` is not a list of sizes"))?;
            let hex = e
                .get("hex")
                .and_then(|h| h.as_str())
                .filter(|h| h.len() % 2 == 0 && h.bytes().all(|c| c.is_ascii_hexdigit()))
                .ok_or_else(|| bad("`hex` is not a string of hex bytes"))?;
            by_name.insert(
                name.clone(),
                Constant {
                    dtype: dtype.to_string(),
                    shape,
                    hex: hex.to_ascii_lowercase(),
                },
            );
        }
        let kernels = match v.get("kernels") {
            None => HashMap::new(),
            Some(k) => k
                .as_object()
                .ok_or("`kernels` is not an object")?
                .iter()
                .map(|(name, k)| Ok((name.clone(), kernel(name, k)?)))
                .collect::<Result<_, String>>()?,
        };
        Ok(Recorded {
            constants: by_name,
            kernels,
        })
    }

    /// The `constant` equation's parameters for the binder `name` of type
    /// `ty` (`data='0x…' dtype=… shape=(…)`), `None` when no value is
    /// recorded for it; an error when the recorded value is not one of
    /// that type.
    pub(crate) fn constant_params(
        &self,
        name: &str,
        ty: &AType,
        at: TextRange,
    ) -> LowerResult<Option<String>> {
        let Some(r) = self.constants.get(name) else {
            return Ok(None);
        };
        let refuse = |what: String| -> LowerResult<Option<String>> {
            Err(LowerError {
                range: at,
                message: format!("the recorded value of constant `{name}` {what}"),
                help: Some(
                    "the recorded file was made for another printout of the program: record it again with the text (docs/python.md, \"Recorded beside the text\")".into(),
                ),
                kind: LowerErrorKind::Refused,
            })
        };
        let Some(dtype) = DType::from_numpy(&r.dtype) else {
            return refuse(format!("has the dtype `{}`, which is not one", r.dtype));
        };
        if ty.dtype.as_ref() != Some(&dtype) {
            let declared = ty.dtype.as_ref().map_or("?".to_string(), |d| d.to_string());
            return refuse(format!("is {dtype}, but `{name}` is {declared}"));
        }
        let declared: Option<Vec<i64>> = ty
            .shape
            .iter()
            .map(|d| match d {
                Dim::Const(c) => Some(*c),
                _ => None,
            })
            .collect();
        if declared.as_deref() != Some(&r.shape[..]) {
            return refuse(format!(
                "has the shape {:?}, not the one `{name}` is declared with",
                r.shape
            ));
        }
        let Some(width) = jaxpr_check::params::ConstantData::element_bytes(&dtype) else {
            return refuse(format!("is of dtype {dtype}, which a constant cannot hold"));
        };
        let elements: i64 = r.shape.iter().product();
        if r.hex.len() as i64 != elements * width as i64 * 2 {
            return refuse(format!(
                "has {} bytes, not the {} of {elements} element(s) of {dtype}",
                r.hex.len() / 2,
                elements * width as i64
            ));
        }
        let dims: Vec<String> = r.shape.iter().map(i64::to_string).collect();
        let trailing = if dims.len() == 1 { "," } else { "" };
        Ok(Some(format!(
            "constant[data='0x{}' dtype={} shape=({}{trailing})]",
            r.hex,
            r.dtype,
            dims.join(", ")
        )))
    }
}

/// A recorded kernel: `{"grid": [2, 2], "blocks": [[[0, 0], [0, 0]], ...]}`.
fn kernel(name: &str, k: &serde_json::Value) -> Result<Kernel, String> {
    let bad = |what: &str| format!("kernel `{name}`: {what}");
    let ints = |v: &serde_json::Value| -> Option<Vec<i64>> {
        v.as_array()?.iter().map(|x| x.as_i64()).collect()
    };
    let grid = k
        .get("grid")
        .and_then(ints)
        .filter(|g| g.iter().all(|&n| n > 0))
        .ok_or_else(|| bad("`grid` is not a list of sizes"))?;
    let points = grid
        .iter()
        .try_fold(1i64, |n, &g| n.checked_mul(g))
        .ok_or_else(|| bad("`grid` is too large"))?;
    let blocks = k
        .get("blocks")
        .and_then(|b| b.as_array())
        .and_then(|rows| {
            rows.iter()
                .map(|row| row.as_array()?.iter().map(ints).collect::<Option<Vec<_>>>())
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| bad("`blocks` is not a list of each grid point's block indices"))?;
    if blocks.len() as i64 != points {
        return Err(bad(&format!(
            "{} grid points' blocks for a grid of {points} points",
            blocks.len()
        )));
    }
    Ok(Kernel { grid, blocks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(dtype: DType, shape: &[i64]) -> AType {
        AType {
            dtype: Some(dtype),
            shape: shape.iter().map(|&d| Dim::Const(d)).collect(),
        }
    }

    const ONE: &str = r#"{"format": "jaxpr-recorded", "version": 1, "constants":
        {"cq": {"dtype": "float32", "shape": [2], "hex": "0000803F00000040"}}}"#;

    #[test]
    fn a_recorded_value_gives_the_constant_equation_of_its_binder() {
        let c = Recorded::parse(ONE).unwrap();
        let at = TextRange::new(0, 0);
        let f32 = DType::from_numpy("float32").unwrap();
        assert_eq!(
            c.constant_params("cq", &ty(f32.clone(), &[2]), at).unwrap(),
            Some("constant[data='0x0000803f00000040' dtype=float32 shape=(2,)]".into())
        );
        assert_eq!(
            c.constant_params("cr", &ty(f32.clone(), &[2]), at).unwrap(),
            None
        );
        let wrong_shape = c.constant_params("cq", &ty(f32, &[3]), at).unwrap_err();
        assert!(
            wrong_shape.message.contains("shape [2]"),
            "{}",
            wrong_shape.message
        );
        let f64 = DType::from_numpy("float64").unwrap();
        let wrong_dtype = c.constant_params("cq", &ty(f64, &[2]), at).unwrap_err();
        assert!(
            wrong_dtype.message.contains("is f32, but `cq` is f64"),
            "{}",
            wrong_dtype.message
        );
    }

    #[test]
    fn a_malformed_file_says_what_is_wrong() {
        for (text, says) in [
            ("[", "not JSON"),
            (r#"{"constants": {}}"#, "not a recorded file"),
            (
                r#"{"format": "jaxpr-recorded", "version": 2, "constants": {}}"#,
                "version",
            ),
            (
                r#"{"format": "jaxpr-recorded", "version": 1, "constants": {"a": {"dtype": "float32", "shape": [-1], "hex": ""}}}"#,
                "`shape`",
            ),
            (
                r#"{"format": "jaxpr-recorded", "version": 1, "constants": {"a": {"dtype": "float32", "shape": [], "hex": "zz"}}}"#,
                "`hex`",
            ),
        ] {
            let e = Recorded::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_file_beside_a_jaxpr_is_named_after_it() {
        assert_eq!(
            beside(Path::new("/s/step_fn.jaxpr")),
            PathBuf::from("/s/step_fn.recorded.json")
        );
    }
}
