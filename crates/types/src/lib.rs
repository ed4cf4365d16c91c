//! Semantic types: dtypes, dimensions (constants, dimension variables,
//! symbolic polynomials) and array types.

pub mod dtype;
pub mod poly;

pub use dtype::{DType, DTypeName, FloatKind, is_reference_head};
pub use poly::{Cmp, Poly};

use std::fmt;

/// Identifies one variable binder of a file (see `check::Vars`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// One dimension of a shape. `Copy`: shapes are cloned and dropped for
/// every operand and result the checker reads, and per-dimension clone and
/// drop code was a large part of a check.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Dim {
    Const(i64),
    /// A dimension variable: an integer scalar jaxpr variable (Catalyst style).
    Var(VarId),
    /// A symbolic dimension (jax.export style), never a constant polynomial.
    /// Interned ([`intern_poly`]): shapes are everywhere and symbolic
    /// dimensions are rare.
    Sym(&'static Poly),
    /// Not known: `None` in parameters, or a dimension that failed to resolve
    /// (already reported). Compares equal to everything to avoid cascades.
    Unknown,
}

impl Dim {
    /// Normalises a polynomial: constants become `Dim::Const`.
    pub fn from_poly(p: Poly) -> Dim {
        match p.as_constant() {
            Some(c) => Dim::Const(c),
            None => Dim::Sym(intern_poly(p)),
        }
    }
    pub fn as_const(&self) -> Option<i64> {
        match self {
            Dim::Const(c) => Some(*c),
            _ => None,
        }
    }
    /// The polynomial view of a constant or symbolic dimension.
    pub fn as_poly(&self) -> Option<Poly> {
        match self {
            Dim::Const(c) => Some(Poly::constant(*c)),
            Dim::Sym(p) => Some((*p).clone()),
            _ => None,
        }
    }
}

/// The one copy of polynomial `p`, kept for the rest of the process: what a
/// symbolic dimension refers to. Distinct polynomials are few (those a
/// file's types write, and what shape rules derive from them), so keeping
/// each for good costs little, even in the language server.
pub fn intern_poly(p: Poly) -> &'static Poly {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static POLYS: OnceLock<Mutex<HashSet<&'static Poly>>> = OnceLock::new();
    let mut polys = POLYS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&interned) = polys.get(&p) {
        return interned;
    }
    let interned: &'static Poly = Box::leak(Box::new(p));
    polys.insert(interned);
    interned
}

/// The dimensions of an array type. Inline up to rank 4 (nearly every shape
/// of a real program): a type is cloned for every operand and result an
/// equation reads, and a heap allocation for each was a large part of a
/// check's time.
pub type Shape = smallvec::SmallVec<[Dim; 4]>;

/// The type of an array value: dtype and shape. `dtype: None` stands for an
/// untyped (weakly typed) literal of older printers, which adapts to its context.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct AType {
    pub dtype: Option<DType>,
    pub shape: Shape,
}

impl AType {
    pub fn new(dtype: DType, shape: Shape) -> Self {
        AType {
            dtype: Some(dtype),
            shape,
        }
    }
    pub fn scalar(dtype: DType) -> Self {
        AType {
            dtype: Some(dtype),
            shape: Shape::new(),
        }
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    pub fn is_scalar(&self) -> bool {
        self.shape.is_empty()
    }
    /// An integer scalar: what a dimension variable must be.
    pub fn is_int_scalar(&self) -> bool {
        self.is_scalar() && self.dtype.as_ref().is_some_and(DType::is_int)
    }
    pub fn with_dtype(&self, dtype: DType) -> AType {
        AType {
            dtype: Some(dtype),
            shape: self.shape.clone(),
        }
    }
    pub fn with_shape(&self, shape: Shape) -> AType {
        AType {
            dtype: self.dtype.clone(),
            shape,
        }
    }
}

/// Renders types with dimension variables by name.
pub trait DimNames {
    fn var_name(&self, v: VarId) -> &str;

    fn dim(&self, d: &Dim) -> String {
        match d {
            Dim::Const(c) => c.to_string(),
            Dim::Var(v) => self.var_name(*v).to_string(),
            Dim::Sym(p) => p.to_string(),
            Dim::Unknown => "?".to_string(),
        }
    }
    fn shape(&self, s: &[Dim]) -> String {
        let dims: Vec<String> = s.iter().map(|d| self.dim(d)).collect();
        format!("[{}]", dims.join(","))
    }
    fn ty(&self, t: &AType) -> String {
        let dt = t
            .dtype
            .as_ref()
            .map_or_else(|| "weak".to_string(), |d| d.to_string());
        // A reference shows its array in braces: `Ref<vmem>{f32[8,16]}`.
        if let Some((head, elem)) = t.dtype.as_ref().and_then(DType::as_reference) {
            return format!("{head}{{{elem}{}}}", self.shape(&t.shape));
        }
        // A non-array value (Catalyst's `AbstractQbit()`) has no shape to show.
        if matches!(&t.dtype, Some(DType::Other(s)) if s.ends_with(')')) {
            return dt;
        }
        format!("{dt}{}", self.shape(&t.shape))
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Const(c) => write!(f, "{c}"),
            Dim::Var(v) => write!(f, "%{}", v.0),
            Dim::Sym(p) => write!(f, "{p}"),
            Dim::Unknown => f.write_str("?"),
        }
    }
}
