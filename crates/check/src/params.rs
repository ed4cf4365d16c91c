//! Typed values of the structured parameters several layers read: the
//! dimension numbers of `dot_general`, `gather`, `scatter` and
//! `conv_general_dilated`, the convolution's window, and the value of a
//! `constant` (a recorded constant a build writes into the program). Each is
//! decoded here, once; the checker reports what does not decode, and the
//! later layers (cost, both back ends through `jaxpr_lower`) take the same
//! values.

use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{Eqn, Expr, ExprKind};
use jaxpr_types::{DType, FloatKind};

/// A field of a dimension-numbers record that is not a tuple of integers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BadField(pub &'static str);

/// A field of `GatherDimensionNumbers(...)`/`ScatterDimensionNumbers(...)`;
/// absent fields (older printers) are empty.
fn int_field(dn: &Expr, field: &'static str) -> Result<Vec<i64>, BadField> {
    match dn.field(field) {
        None => Ok(Vec::new()),
        Some(e) => e.as_int_seq().ok_or(BadField(field)),
    }
}

/// `dot_general`'s `dimension_numbers=(([lc], [rc]), ([lb], [rb]))`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DotDims {
    pub lhs_contract: Vec<i64>,
    pub rhs_contract: Vec<i64>,
    pub lhs_batch: Vec<i64>,
    pub rhs_batch: Vec<i64>,
}

impl DotDims {
    pub fn decode(e: &Expr) -> Option<DotDims> {
        let [contract, batch] = e.as_seq()? else {
            return None;
        };
        let pair = |p: &Expr| -> Option<(Vec<i64>, Vec<i64>)> {
            match p.as_seq()? {
                [a, b] => Some((a.as_int_seq()?, b.as_int_seq()?)),
                _ => None,
            }
        };
        let (lhs_contract, rhs_contract) = pair(contract)?;
        let (lhs_batch, rhs_batch) = pair(batch)?;
        Some(DotDims {
            lhs_contract,
            rhs_contract,
            lhs_batch,
            rhs_batch,
        })
    }
}

/// `gather`'s `GatherDimensionNumbers(offset_dims=..., ...)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GatherDims {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub operand_batching_dims: Vec<i64>,
    pub start_indices_batching_dims: Vec<i64>,
}

impl GatherDims {
    pub fn decode(dn: &Expr) -> Result<GatherDims, BadField> {
        Ok(GatherDims {
            offset_dims: int_field(dn, "offset_dims")?,
            collapsed_slice_dims: int_field(dn, "collapsed_slice_dims")?,
            start_index_map: int_field(dn, "start_index_map")?,
            operand_batching_dims: int_field(dn, "operand_batching_dims")?,
            start_indices_batching_dims: int_field(dn, "start_indices_batching_dims")?,
        })
    }
}

/// `scatter*`'s `ScatterDimensionNumbers(update_window_dims=..., ...)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScatterDims {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
    pub operand_batching_dims: Vec<i64>,
    pub scatter_indices_batching_dims: Vec<i64>,
}

impl ScatterDims {
    pub fn decode(dn: &Expr) -> Result<ScatterDims, BadField> {
        Ok(ScatterDims {
            update_window_dims: int_field(dn, "update_window_dims")?,
            inserted_window_dims: int_field(dn, "inserted_window_dims")?,
            scatter_dims_to_operand_dims: int_field(dn, "scatter_dims_to_operand_dims")?,
            operand_batching_dims: int_field(dn, "operand_batching_dims")?,
            scatter_indices_batching_dims: int_field(dn, "scatter_indices_batching_dims")?,
        })
    }
}

impl ScatterDims {
    /// The size of the slice one index writes along each operand
    /// dimension: 1 along an inserted or batching dimension, else the
    /// updates' size along the next window dimension (`one` and `updates`
    /// in the caller's size type). `None` when the dimension numbers do
    /// not match the shapes.
    pub fn slice_sizes<T: Clone>(
        &self,
        operand_rank: usize,
        updates: &[T],
        one: T,
    ) -> Option<Vec<T>> {
        let mut window = self.update_window_dims.iter();
        (0..operand_rank as i64)
            .map(|d| {
                if self.inserted_window_dims.contains(&d) || self.operand_batching_dims.contains(&d)
                {
                    Some(one.clone())
                } else {
                    let axis = usize::try_from(*window.next()?).ok()?;
                    updates.get(axis).cloned()
                }
            })
            .collect()
    }
}

/// What a `mode=FILL_OR_DROP` gather gives for a slice out of range (JAX's
/// `_gather_fill`): its `fill_value` when it has one, else NaN for an
/// inexact dtype (complex included: `nan+0j`), the largest value for an
/// unsigned one and `True` for booleans, the lowest for a signed integer.
#[derive(Clone, Copy, Debug)]
pub enum GatherFill<'e> {
    /// The printed `fill_value`.
    Given(&'e Expr),
    Nan,
    Highest,
    Lowest,
}

impl<'e> GatherFill<'e> {
    /// The fill of a gather `e` whose result is of dtype `dt`.
    pub fn of(e: &'e Eqn, dt: &DType) -> GatherFill<'e> {
        match e.param("fill_value").map(|p| &p.value) {
            Some(v) if !v.is_none() => GatherFill::Given(v),
            _ if dt.is_inexact() => GatherFill::Nan,
            _ if matches!(dt, DType::UInt(_) | DType::Bool) => GatherFill::Highest,
            _ => GatherFill::Lowest,
        }
    }
}

/// How a `gather` or `scatter*` treats a start index out of range (its
/// `mode`, printed `GatherScatterMode.CLIP` by every version; a number is
/// read as the enum's value, `GatherScatterMode(1)` being `CLIP`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexMode {
    /// Clamped into range (JAX clamps the indices before the instruction).
    Clip,
    /// A gather fills the out-of-range slice; a scatter drops its update.
    FillOrDrop,
    /// The caller promises every index is in range.
    PromiseInBounds,
    /// `ONE_HOT` (jax >= 0.6): a gather computed as a one-hot product.
    OneHot,
}

impl IndexMode {
    /// The `mode` of a gather or scatter equation, if it has a readable one.
    pub fn of(e: &Eqn) -> Option<IndexMode> {
        IndexMode::decode(&e.param("mode")?.value)
    }
    pub fn decode(e: &Expr) -> Option<IndexMode> {
        let name = match &e.kind {
            ExprKind::Int(1) => return Some(IndexMode::Clip),
            ExprKind::Int(2) => return Some(IndexMode::FillOrDrop),
            ExprKind::Int(3) => return Some(IndexMode::PromiseInBounds),
            ExprKind::Int(4) => return Some(IndexMode::OneHot),
            _ => e.as_path()?,
        };
        match name.rsplit('.').next().unwrap_or(name) {
            "CLIP" => Some(IndexMode::Clip),
            "FILL_OR_DROP" => Some(IndexMode::FillOrDrop),
            "PROMISE_IN_BOUNDS" => Some(IndexMode::PromiseInBounds),
            "ONE_HOT" => Some(IndexMode::OneHot),
            _ => None,
        }
    }
}

/// `conv_general_dilated`'s `dimension_numbers`: where the batch, feature
/// and spatial dimensions of the operands and the result are. Each spec is
/// a permutation of the operands' dimensions `0..rank` (the only way to
/// make one is [`ConvSpecs::decode`], which checks it), so a holder indexes
/// shapes of that rank with it freely: `lhs` is (batch, feature,
/// spatial...), `rhs` (output feature, input feature, spatial...), `out`
/// (batch, feature, spatial...).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ConvSpecs {
    lhs: Vec<usize>,
    rhs: Vec<usize>,
    out: Vec<usize>,
}

/// Why `conv_general_dilated`'s `dimension_numbers` does not decode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BadConvSpecs {
    /// Not one of the forms [`ConvSpecs::decode`] reads.
    Form,
    /// This spec (`lhs_spec`, `rhs_spec` or `out_spec`, the first in that
    /// order) is not a permutation of `0..rank`.
    NotPermutation(&'static str),
}

impl ConvSpecs {
    const NAMES: [&'static str; 3] = ["lhs_spec", "rhs_spec", "out_spec"];

    /// The dimension numbers of a convolution of operands of rank `rank`.
    /// JAX prints them as `ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2),
    /// rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))` (every version from
    /// 0.4.30 to 0.10.2: `lax.conv_general_dilated` turns each spelling it
    /// takes into that named tuple before binding). Also read: the three
    /// specs as a call's three positional arguments (when its keywords are
    /// not those three), a plain tuple or list of the three, and `None`,
    /// lax's default (NCHW, OIHW, NCHW: each spec the identity).
    pub fn decode(dn: &Expr, rank: usize) -> Result<ConvSpecs, BadConvSpecs> {
        if dn.is_none() {
            let identity: Vec<usize> = (0..rank).collect();
            return Ok(ConvSpecs {
                lhs: identity.clone(),
                rhs: identity.clone(),
                out: identity,
            });
        }
        let parts: [&Expr; 3] = match &dn.kind {
            ExprKind::Call(c) => match Self::NAMES.map(|n| dn.field(n)) {
                [Some(l), Some(r), Some(o)] => [l, r, o],
                _ => match &c.args[..] {
                    [l, r, o] => [&l.value, &r.value, &o.value],
                    _ => return Err(BadConvSpecs::Form),
                },
            },
            ExprKind::Tuple(items) | ExprKind::List(items) => match &items[..] {
                [l, r, o] => [l, r, o],
                _ => return Err(BadConvSpecs::Form),
            },
            _ => return Err(BadConvSpecs::Form),
        };
        let permutation = |spec: &Expr| -> Option<Vec<usize>> {
            let spec: Vec<usize> = spec
                .as_int_seq()?
                .into_iter()
                .map(|d| usize::try_from(d).ok())
                .collect::<Option<_>>()?;
            let mut sorted = spec.clone();
            sorted.sort_unstable();
            sorted.into_iter().eq(0..rank).then_some(spec)
        };
        let [lhs, rhs, out] = std::array::from_fn(|k| {
            permutation(parts[k]).ok_or(BadConvSpecs::NotPermutation(Self::NAMES[k]))
        });
        Ok(ConvSpecs {
            lhs: lhs?,
            rhs: rhs?,
            out: out?,
        })
    }
    /// The lhs's dimensions: batch, feature, then the spatial ones.
    pub fn lhs(&self) -> &[usize] {
        &self.lhs
    }
    /// The rhs's dimensions: output feature, input feature, then the
    /// spatial ones.
    pub fn rhs(&self) -> &[usize] {
        &self.rhs
    }
    /// The result's dimensions: batch, feature, then the spatial ones.
    pub fn out(&self) -> &[usize] {
        &self.out
    }
    /// The rank of the operands and the result.
    pub fn rank(&self) -> usize {
        self.lhs.len()
    }
}

/// `conv_general_dilated`'s window and feature groups, per spatial
/// dimension in the order of the [`ConvSpecs`]' spatial dimensions.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ConvWindow {
    pub strides: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub lhs_dilation: Vec<i64>,
    pub rhs_dilation: Vec<i64>,
    pub feature_group_count: i64,
    pub batch_group_count: i64,
}

impl ConvWindow {
    /// From the equation's parameters (`param(name)`); None when one is
    /// absent or not integers (symbolic padding).
    pub fn decode<'e>(param: impl Fn(&str) -> Option<&'e Expr>) -> Option<ConvWindow> {
        let padding = param("padding")?
            .as_seq()?
            .iter()
            .map(|p| match p.as_int_seq()?[..] {
                [lo, hi] => Some((lo, hi)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let ints = |name| param(name).and_then(Expr::as_int_seq);
        Some(ConvWindow {
            strides: ints("window_strides")?,
            lhs_dilation: ints("lhs_dilation").unwrap_or_else(|| vec![1; padding.len()]),
            rhs_dilation: ints("rhs_dilation").unwrap_or_else(|| vec![1; padding.len()]),
            padding,
            feature_group_count: param("feature_group_count").map_or(Some(1), Expr::as_int)?,
            batch_group_count: param("batch_group_count").map_or(Some(1), Expr::as_int)?,
        })
    }
}

/// `pad`'s `padding_config` as printed: one `(low, high, interior)`
/// triple per axis, each entry an integer or a symbolic dimension. One
/// reading for the checker, both back ends and the cost model.
#[derive(Clone, Debug)]
pub struct PaddingConfig<'e> {
    pub triples: Vec<[&'e Expr; 3]>,
}

impl<'e> PaddingConfig<'e> {
    /// What a back end says of a `padding_config` that is not triples.
    pub const MALFORMED: &'static str = "`padding_config` must be triples (low, high, interior)";

    /// None when the parameter is not a tuple of triples.
    pub fn decode(e: &'e Expr) -> Option<PaddingConfig<'e>> {
        let triples = e
            .as_seq()?
            .iter()
            .map(|t| match t.as_seq()? {
                [lo, hi, interior] => Some([lo, hi, interior]),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PaddingConfig { triples })
    }

    /// Every entry, when all are integers (no symbolic dimension).
    pub fn ints(&self) -> Option<Vec<[i64; 3]>> {
        self.triples
            .iter()
            .map(|[lo, hi, interior]| Some([lo.as_int()?, hi.as_int()?, interior.as_int()?]))
            .collect()
    }
}

/// The window of a window reduction (`reduce_window_sum` and the others,
/// `reduce_window`, `select_and_gather_add`, `select_and_scatter_add`) as
/// integers, one entry per dimension of the operand: the strides and
/// dilations 1 and the padding 0 where the equation prints none (JAX omits
/// what a primitive does not take: `select_and_scatter_add` has no
/// dilations).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct WindowParams {
    pub dims: Vec<i64>,
    pub strides: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub base_dilation: Vec<i64>,
    pub window_dilation: Vec<i64>,
}

impl WindowParams {
    /// From the equation's parameters (`param(name)`) for an operand of
    /// `rank`; None when one is not integers (symbolic), has another
    /// length, or a stride or dilation is below 1.
    pub fn decode<'e>(
        param: impl Fn(&str) -> Option<&'e Expr>,
        rank: usize,
    ) -> Option<WindowParams> {
        let given = |name: &str| param(name).filter(|e| !e.is_none());
        let ints_or_ones = |name: &str| match given(name) {
            Some(e) => e.as_int_seq(),
            None => Some(vec![1; rank]),
        };
        let padding = match given("padding") {
            Some(e) => e
                .as_seq()?
                .iter()
                .map(|p| match p.as_int_seq()?[..] {
                    [lo, hi] => Some((lo, hi)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
            None => vec![(0, 0); rank],
        };
        let w = WindowParams {
            dims: given("window_dimensions")?.as_int_seq()?,
            strides: ints_or_ones("window_strides")?,
            padding,
            base_dilation: ints_or_ones("base_dilation")?,
            window_dilation: ints_or_ones("window_dilation")?,
        };
        let lengths = [
            w.dims.len(),
            w.strides.len(),
            w.padding.len(),
            w.base_dilation.len(),
            w.window_dilation.len(),
        ];
        let positive = w
            .strides
            .iter()
            .chain(&w.base_dilation)
            .chain(&w.window_dilation)
            .all(|&d| d >= 1);
        (lengths.iter().all(|&k| k == rank) && positive).then_some(w)
    }

    /// The window's dimensions, strides, padding, base and window
    /// dilations.
    pub fn parts(&self) -> (&[i64], &[i64], &[(i64, i64)], &[i64], &[i64]) {
        (
            &self.dims,
            &self.strides,
            &self.padding,
            &self.base_dilation,
            &self.window_dilation,
        )
    }
}

/// The value of a `constant` equation (`constant[data='0x…' dtype=float32
/// shape=(2, 3)]`): `shape` elements of `dtype`, row-major, each in
/// little-endian bytes (a `bool` one byte, 0 or 1), the whole in hex.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ConstantData {
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub bytes: Vec<u8>,
}

impl ConstantData {
    /// The bytes of one element of `dtype`, for the dtypes a constant holds
    /// (booleans, integers, floats of 16 bits and more, complex numbers).
    pub fn element_bytes(dtype: &DType) -> Option<usize> {
        match dtype {
            DType::Bool | DType::Int(_) | DType::UInt(_) | DType::Complex(_) => {}
            DType::Float(_) if dtype.bits()? >= 16 => {}
            _ => return None,
        }
        Some(dtype.bits()? as usize / 8)
    }

    /// From the equation's parameters (`param(name)`): the field that is
    /// missing, malformed, or (`data`) not `shape` elements of `dtype`.
    pub fn decode<'e>(param: impl Fn(&str) -> Option<&'e Expr>) -> Result<ConstantData, BadField> {
        let dtype = match param("dtype").map(|e| &e.kind) {
            Some(ExprKind::Path(p)) => DType::from_numpy(p).ok_or(BadField("dtype"))?,
            _ => return Err(BadField("dtype")),
        };
        Self::element_bytes(&dtype).ok_or(BadField("dtype"))?;
        let shape = param("shape")
            .and_then(Expr::as_int_seq)
            .filter(|s| s.iter().all(|&d| d >= 0))
            .filter(|s| {
                s.iter()
                    .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
                    .is_some()
            })
            .ok_or(BadField("shape"))?;
        let hex = match param("data").map(|e| &e.kind) {
            Some(ExprKind::Str(s)) => s.strip_prefix("0x").ok_or(BadField("data"))?,
            _ => return Err(BadField("data")),
        };
        Self::from_hex(dtype, shape, hex).ok_or(BadField("data"))
    }

    /// `shape` elements of `dtype` from their little-endian bytes in hex;
    /// `None` when they are not that many, or not hex, or (booleans) not 0
    /// or 1.
    pub fn from_hex(dtype: DType, shape: Vec<i64>, hex: &str) -> Option<ConstantData> {
        let width = Self::element_bytes(&dtype)?;
        let elements = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))?;
        if Some(hex.len()) != elements.checked_mul(width * 2) {
            return None;
        }
        let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        let bytes = hex
            .as_bytes()
            .chunks_exact(2)
            .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
            .collect::<Option<Vec<u8>>>()?;
        if dtype == DType::Bool && bytes.iter().any(|&b| b > 1) {
            return None;
        }
        Some(ConstantData {
            dtype,
            shape,
            bytes,
        })
    }

    /// The one value of a constant whose elements are all equal (a splat),
    /// as a number (`true` is 1); `None` for another constant, an empty
    /// one, or a complex or 8-bit float dtype.
    pub fn splat(&self) -> Option<f64> {
        let width = Self::element_bytes(&self.dtype)?;
        let mut elements = self.bytes.chunks_exact(width);
        let first = elements.next()?;
        if elements.any(|e| e != first) {
            return None;
        }
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(first);
        let bits = u64::from_le_bytes(word);
        Some(match (&self.dtype, width) {
            (DType::Bool, _) => bits as f64,
            (DType::UInt(_), _) => bits as f64,
            // Sign-extended from the element's width.
            (DType::Int(_), _) => ((bits << (64 - 8 * width)) as i64 >> (64 - 8 * width)) as f64,
            (DType::Float(FloatKind::F64), 8) => f64::from_bits(bits),
            (DType::Float(FloatKind::F32), 4) => f64::from(f32::from_bits(bits as u32)),
            (DType::Float(FloatKind::BF16), 2) => f64::from(f32::from_bits((bits as u32) << 16)),
            (DType::Float(FloatKind::F16), 2) => half_to_f64(bits as u16),
            _ => return None,
        })
    }
}

/// An IEEE binary16 number's value.
fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        0x1f if fraction == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

/// One dimension of a Pallas block shape as JAX prints it in a
/// `BlockMapping`: an integer (jax 0.4), `Blocked(block_size=N)`, or a
/// dimension the kernel's reference drops: `None`, `Squeezed()`, `Mapped`
/// (jax 0.4.38 to 0.5) or `<jax._src.pallas.core.Mapped object at 0x...>`
/// (jax 0.4.30).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockDim {
    Size(i64),
    Squeezed,
    /// `Blocked` without an integer size.
    BlockedWithoutSize,
    /// Another indexing mode (`Element`, `BoundedSlice`, ...).
    Other,
}

impl BlockDim {
    pub fn decode(e: &Expr) -> BlockDim {
        if let Some(n) = e.as_int() {
            return BlockDim::Size(n);
        }
        match &e.kind {
            ExprKind::Path(p) if matches!(p.as_ref(), "None" | "Mapped") => BlockDim::Squeezed,
            ExprKind::Call(c) if c.callee.as_ref() == "Squeezed" => BlockDim::Squeezed,
            ExprKind::Str(s) if s.contains("core.Mapped ") || s.contains("core.Squeezed ") => {
                BlockDim::Squeezed
            }
            ExprKind::Call(c) if c.callee.as_ref() == "Blocked" => {
                match e.field("block_size").and_then(Expr::as_int) {
                    Some(n) => BlockDim::Size(n),
                    None => BlockDim::BlockedWithoutSize,
                }
            }
            _ => BlockDim::Other,
        }
    }
}

/// A `BlockMapping`'s index map as jax <= 0.5 prints it
/// (`index_map_jaxpr={ lambda ; a:i32[] b:i32[]. let  in (a, 0) }`): the
/// block index of each dimension, one per output of the map.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IndexMap {
    /// How many indices the map takes (one per grid axis, then the scalar
    /// prefetch operands).
    pub takes: usize,
    pub outs: Vec<IndexMapOut>,
    /// The printed `index_map_jaxpr`, and each output's range in it.
    pub range: TextRange,
    pub out_ranges: Vec<TextRange>,
    /// Whether the map computes with equations or constants.
    pub has_equations: bool,
}

/// One output of an index map.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexMapOut {
    /// The map's `k`-th index (the grid point along axis `k`).
    Index(usize),
    /// A constant block index.
    Const(i64),
    /// Computed by the map's equations, or not an integer.
    Computed,
}

impl IndexMap {
    /// The index map of block mapping `m`, `None` when it prints none
    /// (jax >= 0.6); the printed value's range when it is not a jaxpr.
    pub fn decode(m: &Expr) -> Option<Result<IndexMap, TextRange>> {
        let f = m.field("index_map_jaxpr")?;
        let ExprKind::Jaxpr(j) = &f.kind else {
            return Some(Err(f.range));
        };
        let names: Vec<&str> = j.invars.iter().map(|b| &*b.name.text).collect();
        let outs = j
            .outvars
            .iter()
            .map(|o| match o {
                jaxpr_syntax::ast::Atom::Lit(l) => l
                    .value
                    .parse::<i64>()
                    .map_or(IndexMapOut::Computed, IndexMapOut::Const),
                jaxpr_syntax::ast::Atom::Var(n) => names
                    .iter()
                    .position(|x| *x == &*n.text)
                    .map_or(IndexMapOut::Computed, IndexMapOut::Index),
            })
            .collect();
        Some(Ok(IndexMap {
            takes: j.invars.len(),
            outs,
            range: f.range,
            out_ranges: j.outvars.iter().map(|o| o.range()).collect(),
            has_equations: !j.eqns.is_empty() || !j.constvars.is_empty(),
        }))
    }

    /// The block indices at grid point `point`, `None` where one is
    /// computed by the map's equations (or `point` has no such axis).
    pub fn eval(&self, point: &[i64]) -> Option<Vec<i64>> {
        self.outs
            .iter()
            .map(|o| match *o {
                IndexMapOut::Index(k) => point.get(k).copied(),
                IndexMapOut::Const(c) => Some(c),
                IndexMapOut::Computed => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{BadConvSpecs, ConstantData, ConvSpecs, WindowParams};
    use jaxpr_types::DType;

    /// A splat's value from its little-endian bytes, for each dtype width
    /// and kind (numpy's bytes: `np.full(3, v, dtype).tobytes().hex()`).
    #[test]
    fn a_splat_constant_has_one_value() {
        let splat = |dtype: &str, shape: Vec<i64>, hex: &str| {
            ConstantData::from_hex(DType::from_numpy(dtype).unwrap(), shape, hex)
                .and_then(|c| c.splat())
        };
        assert_eq!(splat("int32", vec![2], "0100000001000000"), Some(1.0));
        assert_eq!(splat("int8", vec![3], "fefefe"), Some(-2.0));
        assert_eq!(splat("int16", vec![1], "00ff"), Some(-256.0));
        assert_eq!(splat("uint8", vec![2], "ffff"), Some(255.0));
        assert_eq!(splat("bool", vec![2, 2], "01010101"), Some(1.0));
        assert_eq!(splat("float32", vec![2], "0000c03f0000c03f"), Some(1.5));
        assert_eq!(splat("float16", vec![2], "003e003e"), Some(1.5));
        assert_eq!(splat("float16", vec![1], "0100"), Some(2f64.powi(-24)));
        assert_eq!(splat("float16", vec![1], "00fc"), Some(f64::NEG_INFINITY));
        assert_eq!(splat("bfloat16", vec![2], "c0bfc0bf"), Some(-1.5));
        assert_eq!(splat("float64", vec![1], "000000000000f83f"), Some(1.5));
        // Not a splat, empty, malformed or of too few bytes.
        assert_eq!(splat("int32", vec![2], "0100000002000000"), None);
        assert_eq!(splat("int32", vec![0], ""), None);
        assert_eq!(splat("int32", vec![2], "01000000"), None);
        assert_eq!(splat("bool", vec![1], "02"), None);
        assert_eq!(splat("int32", vec![-1], ""), None);
    }

    /// `dimension_numbers=DN` of a convolution, decoded for rank `rank`.
    fn conv_specs(dn: &str, rank: usize) -> Result<ConvSpecs, BadConvSpecs> {
        let text = format!(
            "{{ lambda ; a:f32[1] b:f32[1]. let c:f32[1] = conv_general_dilated[dimension_numbers={dn}] a b in (c,) }}"
        );
        let p = jaxpr_syntax::parse(&text);
        assert!(p.errors.is_empty(), "{dn}: {:?}", p.errors);
        let eqn = &p.file.main.as_ref().unwrap().eqns[0];
        ConvSpecs::decode(&eqn.param("dimension_numbers").unwrap().value, rank)
    }

    fn specs(s: &ConvSpecs) -> [&[usize]; 3] {
        [s.lhs(), s.rhs(), s.out()]
    }

    #[test]
    fn conv_dimension_numbers_in_every_form_decode_to_the_same_specs() {
        let nhwc: [&[usize]; 3] = [&[0, 3, 1, 2], &[3, 2, 0, 1], &[0, 3, 1, 2]];
        for dn in [
            "ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))",
            "ConvDimensionNumbers(out_spec=(0, 3, 1, 2), lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1))",
            "ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))",
            "((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))",
            "[(0, 3, 1, 2), [3, 2, 0, 1], (0, 3, 1, 2)]",
        ] {
            assert_eq!(specs(&conv_specs(dn, 4).unwrap()), nhwc, "{dn}");
        }
        // `None` is lax's default, NCHW/OIHW/NCHW: the identity at any rank.
        let none = conv_specs("None", 3).unwrap();
        assert_eq!(specs(&none), [&[0, 1, 2][..]; 3]);
    }

    #[test]
    fn conv_dimension_numbers_that_are_not_permutations_name_the_first_spec() {
        let not = BadConvSpecs::NotPermutation;
        for (dn, rank, bad) in [
            ("((0, 1, 2), (0, 1, 2), (0, 1, 1))", 3, not("out_spec")),
            ("((0, 1, 2), (0, 1, 3), (0, 1, 1))", 3, not("rhs_spec")),
            ("((0, -1, 2), (0, 1, 3), (0, 1, 1))", 3, not("lhs_spec")),
            // A permutation of another rank.
            ("((0, 1, 2, 3), (0, 1, 2), (0, 1, 2))", 3, not("lhs_spec")),
            ("((0, 1, 2), x, (0, 1, 2))", 3, not("rhs_spec")),
            (
                "ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2))",
                3,
                BadConvSpecs::Form,
            ),
            ("((0, 1, 2), (0, 1, 2))", 3, BadConvSpecs::Form),
            ("7", 3, BadConvSpecs::Form),
        ] {
            assert_eq!(conv_specs(dn, rank), Err(bad), "{dn}");
        }
    }

    /// A window reduction's parameters `params`, decoded for rank `rank`.
    fn window(params: &str, rank: usize) -> Option<WindowParams> {
        let text = format!(
            "{{ lambda ; a:f32[1] b:f32[]. let c:f32[1] = reduce_window_sum[{params}] a in (c,) }}"
        );
        let p = jaxpr_syntax::parse(&text);
        assert!(p.errors.is_empty(), "{params}: {:?}", p.errors);
        let eqn = &p.file.main.as_ref().unwrap().eqns[0];
        WindowParams::decode(|name| eqn.param(name).map(|p| &p.value), rank)
    }

    #[test]
    fn a_window_is_integers_one_per_dimension_with_defaults_for_what_is_not_printed() {
        let w = window(
            "window_dimensions=(2, 3) window_strides=(1, 2) padding=((0, 1), (1, 0))",
            2,
        )
        .unwrap();
        assert_eq!(w.dims, vec![2, 3]);
        assert_eq!(w.strides, vec![1, 2]);
        assert_eq!(w.padding, vec![(0, 1), (1, 0)]);
        assert_eq!(
            (w.base_dilation, w.window_dilation),
            (vec![1, 1], vec![1, 1])
        );
        let w = window("window_dimensions=(2,) base_dilation=None", 1).unwrap();
        assert_eq!((w.strides, w.padding), (vec![1], vec![(0, 0)]));
        // Symbolic padding, a length other than the rank, a zero stride.
        assert!(window("window_dimensions=(2,) padding=((b, 0),)", 1).is_none());
        assert!(window("window_dimensions=(2, 2)", 1).is_none());
        assert!(window("window_dimensions=(2,) window_strides=(0,)", 1).is_none());
    }
}
