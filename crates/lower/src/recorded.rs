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
//!
//! JAX also prints a reference access without two facts: a slice's stride
//! (`pl.ds(0, 4, stride=2)` prints as `0:0+4`) and the mask of a Pallas
//! store whose result is unused (`o[:,:] <- v`). `accesses` lists each
//! access that has either, keyed by the printed names of its reference, its
//! result (null when dropped) and its stored value (null for a load):
//!
//! ```json
//! "accesses": [{"ref": "d", "out": null, "value": "i", "strides": [[1, 1]], "mask": "g"}]
//! ```
//!
//! A file with `accesses` lists every access that has either: one not
//! listed has strides of 1 and prints its mask. Without the key, only the
//! text is known ([`Accesses::NotRecorded`]).
//!
//! A library primitive that its library lowers as its own Python
//! implementation (equinox's `create_vprim`, whose lowering is
//! `mlir.lower_fun(impl)`: lineax's `linear_solve`) prints its meaning as
//! Python objects in its parameters. `implementations` holds, for each such
//! equation, keyed by the printed name of its first named result, that
//! implementation traced by JAX at the equation's operand types and printed
//! with names of its own, with the values of its constants keyed by them:
//!
//! ```json
//! "implementations": {"y": {"primitive": "linear_solve",
//!   "text": "{ lambda a:f32[4,4]; b:f32[4,4] c:i32[4] d:f32[4]. let ... }",
//!   "constants": {"a": {"dtype": "float32", "shape": [4, 4], "hex": "..."}}}}
//! ```

use crate::walk::{LowerError, LowerErrorKind, LowerResult};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The help of a record that does not fit the text it is read with.
pub(crate) const RECORD_AGAIN: &str = "the recorded file was made for another printout of the program: record it again with the text (docs/python.md, \"Recorded beside the text\")";

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
    accesses: Accesses,
    implementations: HashMap<String, Implementation>,
}

/// A library primitive's equation as its library lowers it: its Python
/// implementation, traced by JAX at the equation's operand types (the
/// module's documentation has the format).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implementation {
    /// The primitive's name, as the equation prints it.
    pub primitive: String,
    /// The implementation's jaxpr, printed with names of its own: its
    /// binders take the equation's operands, its results are the
    /// equation's.
    pub text: String,
    /// The values of the implementation's constants, keyed by those names
    /// (its outermost ones included: they are built into the program).
    pub recorded: Recorded,
}

/// What was recorded of a program's reference accesses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Accesses {
    /// Nothing: the text alone says what an access does.
    #[default]
    NotRecorded,
    /// Every access that has a stride other than 1 or a mask JAX does not
    /// print; the others have neither.
    Recorded(Vec<Access>),
}

/// One reference access as recorded: what its printout lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The printed name of the reference.
    pub reference: String,
    /// The printed name of its result, `None` when it is dropped.
    pub out: Option<String>,
    /// The printed name of the stored value, `None` for a load (or a
    /// literal value).
    pub value: Option<String>,
    /// Each indexer's strides, one per dimension.
    pub strides: Vec<Vec<i64>>,
    /// The mask of a store JAX printed without it: `Some(None)` when the
    /// mask has no printed name (a literal).
    pub mask: Option<Option<String>>,
}

/// What the recorded accesses say of one access in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessFacts<'r> {
    /// Nothing is recorded for the program.
    Unknown,
    /// Strides of 1 and the mask as printed.
    Plain,
    /// This record.
    Recorded(&'r Access),
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
        self.constants.is_empty()
            && self.kernels.is_empty()
            && self.accesses == Accesses::NotRecorded
            && self.implementations.is_empty()
    }

    /// The recorded implementation of the library equation whose first
    /// named result prints as `first_named_result`.
    pub fn implementation(&self, first_named_result: &str) -> Option<&Implementation> {
        self.implementations.get(first_named_result)
    }

    /// What is recorded of the access to reference `reference` whose result
    /// is `out` (`None` when dropped) and whose stored value is `value`:
    /// an error when two records match it and differ (the printout cannot
    /// tell which one is this access).
    pub fn access(
        &self,
        reference: &str,
        out: Option<&str>,
        value: Option<&str>,
    ) -> Result<AccessFacts<'_>, String> {
        let Accesses::Recorded(all) = &self.accesses else {
            return Ok(AccessFacts::Unknown);
        };
        let mut matching = all.iter().filter(|a| {
            a.reference == reference && a.out.as_deref() == out && a.value.as_deref() == value
        });
        let Some(first) = matching.next() else {
            return Ok(AccessFacts::Plain);
        };
        if matching.any(|a| a != first) {
            return Err(format!(
                "two recorded accesses of `{reference}` match this one and differ (strides or mask), so which one it is is not known"
            ));
        }
        Ok(AccessFacts::Recorded(first))
    }

    /// The recorded blocks of the kernel whose jaxpr's first binder is
    /// `first_binder`.
    pub fn kernel(&self, first_binder: &str) -> Option<&Kernel> {
        self.kernels.get(first_binder)
    }

    pub(crate) fn constants_are_empty(&self) -> bool {
        self.constants.is_empty()
    }

    /// The constants whose recorded elements are all one value, with that
    /// value, by binder name ([`jaxpr_check::params::ConstantData::splat`]).
    pub fn splat_constants(&self) -> std::collections::BTreeMap<String, f64> {
        self.constants
            .iter()
            .filter_map(|(name, r)| {
                let dtype = DType::from_numpy(&r.dtype)?;
                let data =
                    jaxpr_check::params::ConstantData::from_hex(dtype, r.shape.clone(), &r.hex)?;
                Some((name.clone(), data.splat()?))
            })
            .collect()
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
        let by_name = constants(v.get("constants"))?;
        let kernels = match v.get("kernels") {
            None => HashMap::new(),
            Some(k) => k
                .as_object()
                .ok_or("`kernels` is not an object")?
                .iter()
                .map(|(name, k)| Ok((name.clone(), kernel(name, k)?)))
                .collect::<Result<_, String>>()?,
        };
        let accesses = match v.get("accesses") {
            None => Accesses::NotRecorded,
            Some(a) => Accesses::Recorded(
                a.as_array()
                    .ok_or("`accesses` is not a list")?
                    .iter()
                    .enumerate()
                    .map(|(i, a)| access(i, a))
                    .collect::<Result<_, String>>()?,
            ),
        };
        let implementations = match v.get("implementations") {
            None => HashMap::new(),
            Some(i) => i
                .as_object()
                .ok_or("`implementations` is not an object")?
                .iter()
                .map(|(name, i)| Ok((name.clone(), implementation(name, i)?)))
                .collect::<Result<_, String>>()?,
        };
        Ok(Recorded {
            constants: by_name,
            kernels,
            accesses,
            implementations,
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
                help: Some(RECORD_AGAIN.into()),
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

/// Recorded constants by binder name (the module's documentation has the
/// format); none when the key is absent.
fn constants(entries: Option<&serde_json::Value>) -> Result<HashMap<String, Constant>, String> {
    let Some(entries) = entries else {
        return Ok(HashMap::new());
    };
    let entries = entries.as_object().ok_or("`constants` is not an object")?;
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
    Ok(by_name)
}

/// A recorded implementation (the module's documentation has the format).
fn implementation(name: &str, i: &serde_json::Value) -> Result<Implementation, String> {
    let bad = |what: &str| format!("implementation `{name}`: {what}");
    let text_of = |key: &str| {
        i.get(key)
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .ok_or_else(|| bad(&format!("`{key}` is not a string")))
    };
    Ok(Implementation {
        primitive: text_of("primitive")?,
        text: text_of("text")?,
        recorded: Recorded {
            constants: constants(i.get("constants")).map_err(|e| bad(&e))?,
            ..Recorded::default()
        },
    })
}

/// A recorded access (the module's documentation has the format).
fn access(i: usize, a: &serde_json::Value) -> Result<Access, String> {
    let bad = |what: &str| format!("access {i}: {what}");
    // A name, or null.
    let name = |key: &str| -> Result<Option<String>, String> {
        match a.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(&format!("`{key}` is not a name or null"))),
        }
    };
    let reference = name("ref")?.ok_or_else(|| bad("`ref` is not a name"))?;
    let strides = a
        .get("strides")
        .and_then(|s| s.as_array())
        .and_then(|ixs| {
            ixs.iter()
                .map(|ix| {
                    ix.as_array()?
                        .iter()
                        .map(|d| d.as_i64().filter(|&d| d > 0))
                        .collect()
                })
                .collect::<Option<Vec<Vec<i64>>>>()
        })
        .ok_or_else(|| bad("`strides` is not a list of lists of positive strides"))?;
    let mask = match a.get("mask") {
        None => None,
        Some(_) => Some(name("mask")?),
    };
    Ok(Access {
        reference,
        out: name("out")?,
        value: name("value")?,
        strides,
        mask,
    })
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
            (
                r#"{"format": "jaxpr-recorded", "version": 1, "accesses": [{"ref": "d", "strides": [[0]]}]}"#,
                "access 0: `strides`",
            ),
            (
                r#"{"format": "jaxpr-recorded", "version": 1, "accesses": [{"ref": 3, "strides": []}]}"#,
                "access 0: `ref`",
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

    #[test]
    fn an_access_is_found_by_its_names_and_one_not_listed_is_plain() {
        let r = Recorded::parse(
            r#"{"format": "jaxpr-recorded", "version": 1, "accesses": [
                {"ref": "d", "out": null, "value": "i", "strides": [[1, 1]], "mask": "g"},
                {"ref": "c", "out": "e", "value": null, "strides": [[2, 1]]},
                {"ref": "c", "out": null, "value": "k", "strides": [[1]], "mask": null},
                {"ref": "x", "out": null, "value": "v", "strides": [[1]], "mask": "m"},
                {"ref": "x", "out": null, "value": "v", "strides": [[1]], "mask": "n"}]}"#,
        )
        .unwrap();
        let AccessFacts::Recorded(store) = r.access("d", None, Some("i")).unwrap() else {
            panic!("the masked store is recorded");
        };
        assert_eq!(store.mask, Some(Some("g".into())));
        let AccessFacts::Recorded(load) = r.access("c", Some("e"), None).unwrap() else {
            panic!("the strided load is recorded");
        };
        assert_eq!(
            (load.strides.clone(), load.mask.clone()),
            (vec![vec![2, 1]], None)
        );
        let AccessFacts::Recorded(literal) = r.access("c", None, Some("k")).unwrap() else {
            panic!("the store of a literal mask is recorded");
        };
        assert_eq!(literal.mask, Some(None));
        assert_eq!(r.access("d", Some("e"), None).unwrap(), AccessFacts::Plain);
        let two = r.access("x", None, Some("v")).unwrap_err();
        assert!(two.contains("two recorded accesses of `x`"), "{two}");
        assert_eq!(
            Recorded::parse(ONE)
                .unwrap()
                .access("d", None, None)
                .unwrap(),
            AccessFacts::Unknown
        );
    }
}
