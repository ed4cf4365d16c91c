//! The values of a program's constants, recorded beside its text.
//!
//! JAX prints a closed jaxpr's constants by name only: `let step_fn = {
//! lambda cq:f32[]; cr:f32[12,2]. let …` names `cq` and its type, never its
//! value, and the call site passes only the arguments. The Python API and
//! `jaxpr trace` write the values next to the text, in `NAME.constants.json`
//! (docs/python.md, "Constants"):
//!
//! ```json
//! {"format": "jaxpr-constants", "version": 1,
//!  "constants": {"cq": {"dtype": "float32", "shape": [], "hex": "0000803f", "nested": true}}}
//! ```
//!
//! keyed by the binder's printed name (JAX's printer gives every variable of
//! one printout its own name, nested jaxprs included), each value its
//! elements' little-endian bytes, row-major, in hex (a boolean one byte).
//! The build's rewrite ([`crate::discharge`]) turns each nested jaxpr's
//! constant binder into a `constant` equation holding those bytes; the
//! outermost jaxpr's constants stay inputs of the built function (the C
//! ABI's first inputs), their values recorded for its caller.

use crate::walk::{LowerError, LowerErrorKind, LowerResult};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One recorded value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Recorded {
    dtype: String,
    shape: Vec<i64>,
    hex: String,
}

/// The recorded values of a program's constants, by binder name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Constants {
    by_name: HashMap<String, Recorded>,
}

/// The file of recorded constants beside a jaxpr file: `NAME.constants.json`
/// for `NAME.jaxpr`.
pub fn beside(jaxpr: &Path) -> PathBuf {
    let stem = jaxpr.file_stem().unwrap_or_default().to_string_lossy();
    jaxpr.with_file_name(format!("{stem}.constants.json"))
}

impl Constants {
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether a value is recorded for the binder `name`.
    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The constants of a build of the jaxpr file `jaxpr`: those of
    /// `given` (`--constants`), else those of the file [`beside`] it when
    /// there is one, else none. A file that is given, or beside and
    /// unreadable or malformed, is an error: its values are not silently
    /// left out.
    pub fn for_file(jaxpr: &Path, given: Option<&Path>) -> Result<Constants, String> {
        match given {
            Some(p) => Constants::read(p),
            None => {
                let p = beside(jaxpr);
                if p.exists() {
                    Constants::read(&p)
                } else {
                    Ok(Constants::default())
                }
            }
        }
    }

    /// Reads a constants file; the error says what is wrong with it.
    pub fn read(path: &Path) -> Result<Constants, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Constants::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The constants of a file's text (the format above).
    pub fn parse(text: &str) -> Result<Constants, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("format").and_then(|f| f.as_str()) != Some("jaxpr-constants") {
            return Err("not a constants file (its `format` is not \"jaxpr-constants\")".into());
        }
        if v.get("version").and_then(|f| f.as_u64()) != Some(1) {
            return Err("a constants file of another version than 1".into());
        }
        let Some(entries) = v.get("constants").and_then(|c| c.as_object()) else {
            return Err("`constants` is not an object".into());
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
                Recorded {
                    dtype: dtype.to_string(),
                    shape,
                    hex: hex.to_ascii_lowercase(),
                },
            );
        }
        Ok(Constants { by_name })
    }

    /// The `constant` equation's parameters for the binder `name` of type
    /// `ty` (`data='0x…' dtype=… shape=(…)`), `None` when no value is
    /// recorded for it; an error when the recorded value is not one of
    /// that type.
    pub(crate) fn params_for(
        &self,
        name: &str,
        ty: &AType,
        at: TextRange,
    ) -> LowerResult<Option<String>> {
        let Some(r) = self.by_name.get(name) else {
            return Ok(None);
        };
        let refuse = |what: String| -> LowerResult<Option<String>> {
            Err(LowerError {
                range: at,
                message: format!("the recorded value of constant `{name}` {what}"),
                help: Some(
                    "the constants file was recorded for another printout of the program: record it again with the text (docs/python.md, \"Constants\")".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(dtype: DType, shape: &[i64]) -> AType {
        AType {
            dtype: Some(dtype),
            shape: shape.iter().map(|&d| Dim::Const(d)).collect(),
        }
    }

    const ONE: &str = r#"{"format": "jaxpr-constants", "version": 1, "constants":
        {"cq": {"dtype": "float32", "shape": [2], "hex": "0000803F00000040"}}}"#;

    #[test]
    fn a_recorded_value_gives_the_constant_equation_of_its_binder() {
        let c = Constants::parse(ONE).unwrap();
        let at = TextRange::new(0, 0);
        let f32 = DType::from_numpy("float32").unwrap();
        assert_eq!(
            c.params_for("cq", &ty(f32.clone(), &[2]), at).unwrap(),
            Some("constant[data='0x0000803f00000040' dtype=float32 shape=(2,)]".into())
        );
        assert_eq!(
            c.params_for("cr", &ty(f32.clone(), &[2]), at).unwrap(),
            None
        );
        let wrong_shape = c.params_for("cq", &ty(f32, &[3]), at).unwrap_err();
        assert!(
            wrong_shape.message.contains("shape [2]"),
            "{}",
            wrong_shape.message
        );
        let f64 = DType::from_numpy("float64").unwrap();
        let wrong_dtype = c.params_for("cq", &ty(f64, &[2]), at).unwrap_err();
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
            (r#"{"constants": {}}"#, "not a constants file"),
            (
                r#"{"format": "jaxpr-constants", "version": 2, "constants": {}}"#,
                "version",
            ),
            (
                r#"{"format": "jaxpr-constants", "version": 1, "constants": {"a": {"dtype": "float32", "shape": [-1], "hex": ""}}}"#,
                "`shape`",
            ),
            (
                r#"{"format": "jaxpr-constants", "version": 1, "constants": {"a": {"dtype": "float32", "shape": [], "hex": "zz"}}}"#,
                "`hex`",
            ),
        ] {
            let e = Constants::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn the_file_beside_a_jaxpr_is_named_after_it() {
        assert_eq!(
            beside(Path::new("/s/step_fn.jaxpr")),
            PathBuf::from("/s/step_fn.constants.json")
        );
    }
}
