//! Rename, scoped as the checker resolves names: a variable is renamed at
//! its binder and every use in its own jaxpr (an inner jaxpr's variable of
//! the same name is another variable), dimension variables in every type
//! that mentions them; a symbolic dimension everywhere in the file; a
//! `let`-bound jaxpr at its `let` and every `jaxpr=NAME`.

use super::{Target, highlights, target_at};
use jaxpr_check::{Analysis, JaxprOrigin};
use jaxpr_syntax::TextRange;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenameError(pub String);

/// The range of the renamable name at `offset` and its current text.
pub fn prepare_rename(a: &Analysis, offset: u32) -> Option<(TextRange, String)> {
    let (range, t) = target_at(a, offset)?;
    let name = match t {
        Target::Var(v) => a.var(v).name.to_string(),
        Target::Symbol(s) => s,
        Target::Jaxpr(j) => match &a.jaxpr(j).origin {
            JaxprOrigin::Let { name, .. } if range != a.jaxpr(j).lambda_range => name.to_string(),
            _ => return None,
        },
        Target::Primitive(_) => return None,
    };
    Some((range, name))
}

fn is_identifier(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Ranges to replace with `new_name`.
pub fn rename(a: &Analysis, offset: u32, new_name: &str) -> Result<Vec<TextRange>, RenameError> {
    let err = |m: String| Err(RenameError(m));
    let Some((_, t)) = target_at(a, offset) else {
        return err("nothing to rename here".into());
    };
    if !is_identifier(new_name) || matches!(new_name, "lambda" | "let" | "_") {
        return err(format!("`{new_name}` is not a valid jaxpr variable name"));
    }
    match &t {
        Target::Var(v) => {
            let info = a.var(*v);
            if info.name == new_name {
                return Ok(Vec::new());
            }
            if let Some(other) = a
                .vars
                .iter()
                .find(|w| w.jaxpr == info.jaxpr && w.name == new_name)
            {
                return err(format!(
                    "`{new_name}` is already bound in this jaxpr ({})",
                    other.name
                ));
            }
            let j = a.jaxpr(info.jaxpr);
            if a.symbols.get(new_name).is_some_and(|s| {
                s.uses
                    .iter()
                    .any(|r| j.range.start <= r.start && r.end <= j.range.end)
            }) {
                return err(format!(
                    "`{new_name}` is a symbolic dimension used in this jaxpr"
                ));
            }
        }
        Target::Symbol(s) => {
            if s == new_name {
                return Ok(Vec::new());
            }
            if a.symbols.contains_key(new_name)
                || a.vars
                    .iter()
                    .any(|w| w.name == new_name && w.ty.is_int_scalar())
            {
                return err(format!(
                    "`{new_name}` already names a dimension in this file"
                ));
            }
        }
        Target::Jaxpr(_) => {
            if a.jaxprs
                .iter()
                .any(|j| matches!(&j.origin, JaxprOrigin::Let { name, .. } if name == new_name))
            {
                return err(format!("a jaxpr named `{new_name}` already exists"));
            }
        }
        Target::Primitive(_) => return err("primitives cannot be renamed".into()),
    }
    if prepare_rename(a, offset).is_none() {
        return err("this cannot be renamed".into());
    }
    Ok(highlights(a, offset).into_iter().map(|(r, _)| r).collect())
}
