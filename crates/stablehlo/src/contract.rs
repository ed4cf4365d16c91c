//! Contractions: `dot_general` and `conv_general_dilated`.

use super::{Lower, ModuleBlock, ModuleValue};
use jaxpr_lower::LowerResult;

use super::ops::*;

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn dot_general(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let dims = cx.dot_dims()?;
        let (lc, rc, lb, rb) = (
            &dims.lhs_contract,
            &dims.rhs_contract,
            &dims.lhs_batch,
            &dims.rhs_batch,
        );
        let out_dt = cx.out_dtype(0)?;
        let (mut l, mut r) = (cx.args[0].v, cx.args[1].v);
        if cx.arg_dtype(0)? != cx.arg_dtype(1)? {
            l = self.convert(b, l, &out_dt)?;
            r = self.convert(b, r, &out_dt)?;
        }
        let mut dn = String::from("#stablehlo.dot<");
        let fields = [
            ("lhs_batching_dimensions", lb),
            ("rhs_batching_dimensions", rb),
            ("lhs_contracting_dimensions", lc),
            ("rhs_contracting_dimensions", rc),
        ];
        for (i, (k, v)) in fields.iter().filter(|(_, v)| !v.is_empty()).enumerate() {
            if i > 0 {
                dn.push_str(", ");
            }
            dn.push_str(k);
            dn.push_str(" = [");
            push_joined(&mut dn, v);
            dn.push(']');
        }
        dn.push('>');
        let mut attrs = vec![("dot_dimension_numbers", dn)];
        if let Some(pc) = precision_config(cx) {
            attrs.push(("precision_config", pc));
        }
        self.op1(
            b,
            "stablehlo.dot_general",
            &[l, r],
            self.out_ty(cx, 0)?,
            &attrs,
        )
    }

    pub(crate) fn conv(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let specs = cx.conv_specs()?;
        let (ls, rs, os) = (specs.lhs(), specs.rhs(), specs.out());
        let dims = format!(
            "#stablehlo.conv<raw input_batch_dimension = {}, input_feature_dimension = {}, input_spatial_dimensions = {}, \
             kernel_input_feature_dimension = {}, kernel_output_feature_dimension = {}, kernel_spatial_dimensions = {}, \
             output_batch_dimension = {}, output_feature_dimension = {}, output_spatial_dimensions = {}>",
            ls[0],
            ls[1],
            list(&ls[2..]),
            rs[1],
            rs[0],
            list(&rs[2..]),
            os[0],
            os[1],
            list(&os[2..])
        );
        let window = cx.conv_window()?;
        let mut attrs = vec![
            ("window_strides", arr(&window.strides)),
            ("padding", padding_attr(&window.padding)),
            ("lhs_dilation", arr(&window.lhs_dilation)),
            ("rhs_dilation", arr(&window.rhs_dilation)),
            ("dimension_numbers", dims),
            (
                "feature_group_count",
                format!("{} : i64", window.feature_group_count),
            ),
            (
                "batch_group_count",
                format!("{} : i64", window.batch_group_count),
            ),
        ];
        if let Some(pc) = precision_config(cx) {
            attrs.push(("precision_config", pc));
        }
        self.op1(
            b,
            "stablehlo.convolution",
            &[cx.args[0].v, cx.args[1].v],
            self.out_ty(cx, 0)?,
            &attrs,
        )
    }
}
