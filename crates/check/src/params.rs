//! Typed values of the structured parameters several layers read: the
//! dimension numbers of `dot_general`, `gather` and `scatter`, and
//! `conv_general_dilated`'s window. Each is
//! decoded here, once; the checker reports what does not decode, and the
//! later layers (cost, both back ends through `jaxpr_lower`) take the same
//! values.

use jaxpr_syntax::ast::Expr;

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

/// `conv_general_dilated`'s window and dimension numbers, per spatial
/// dimension in the specs' order: `lhs_spec` is (batch, feature, spatial...),
/// `rhs_spec` (output feature, input feature, spatial...), `out_spec`
/// (batch, feature, spatial...).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ConvDims {
    pub lhs_spec: Vec<i64>,
    pub rhs_spec: Vec<i64>,
    pub out_spec: Vec<i64>,
    pub strides: Vec<i64>,
    pub padding: Vec<(i64, i64)>,
    pub lhs_dilation: Vec<i64>,
    pub rhs_dilation: Vec<i64>,
    pub feature_group_count: i64,
    pub batch_group_count: i64,
}

impl ConvDims {
    /// From the equation's parameters (`param(name)`); None when one is
    /// absent or not integers (symbolic padding).
    pub fn decode<'e>(param: impl Fn(&str) -> Option<&'e Expr>) -> Option<ConvDims> {
        let dn = param("dimension_numbers")?;
        let spec = |name| dn.field(name).and_then(Expr::as_int_seq);
        let padding = param("padding")?
            .as_seq()?
            .iter()
            .map(|p| match p.as_int_seq()?[..] {
                [lo, hi] => Some((lo, hi)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let ints = |name| param(name).and_then(Expr::as_int_seq);
        Some(ConvDims {
            lhs_spec: spec("lhs_spec")?,
            rhs_spec: spec("rhs_spec")?,
            out_spec: spec("out_spec")?,
            strides: ints("window_strides")?,
            lhs_dilation: ints("lhs_dilation").unwrap_or_else(|| vec![1; padding.len()]),
            rhs_dilation: ints("rhs_dilation").unwrap_or_else(|| vec![1; padding.len()]),
            padding,
            feature_group_count: param("feature_group_count").map_or(Some(1), Expr::as_int)?,
            batch_group_count: param("batch_group_count").map_or(Some(1), Expr::as_int)?,
        })
    }
}
