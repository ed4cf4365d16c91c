//! Typed values of the structured parameters several layers read: the
//! dimension numbers of `dot_general`, `gather` and `scatter`. Each is
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
