//! What diagnostics suggest: for an undefined name, the enclosing jaxpr
//! that binds it or a similar name in scope; for dimensions that differ,
//! where each dimension variable was bound.

use crate::checker::Checker;
use crate::dims;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{Dim, VarId};

/// How many hints are kept apart for the names bound later; past that, a
/// new name drops them all (each binding compares itself with each).
const HINTS_KEPT: usize = 64;

/// Whether `a` and `b` are equal or one insertion, deletion or substitution
/// apart (what `near_names` finds, and more: any bytes).
pub fn within_one_edit(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let head = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        short[head..].iter().skip(1).eq(long[head..].iter().skip(1))
    } else {
        short[head..] == long[head + 1..]
    }
}

/// The hint on an undefined name: where an enclosing jaxpr binds it, or a
/// similar name in scope.
#[derive(Clone)]
pub(crate) enum Hint {
    Outer(VarId),
    Near(String),
    None,
}

impl Checker {
    /// Drops the hints a name new to the scope could change: only those of
    /// the undefined names it is similar to (clearing them all at every
    /// binding recomputed the hint of an undefined name used on every line
    /// at each of those lines).
    pub(crate) fn forget_hints_near(&mut self, name: &str) {
        if self.hints.is_empty() {
            return;
        }
        if self.hints.len() > HINTS_KEPT {
            self.hints.clear();
        } else {
            self.hints.retain(|u, _| !within_one_edit(u, name));
        }
    }

    pub(crate) fn undefined(&mut self, n: &ast::Name) {
        let mut d = Diagnostic::error(
            DiagKind::UndefinedVariable,
            n.range,
            format!("`{}` is not defined", n.text),
        );
        let hint = match self.hints.get(&n.text) {
            Some(h) => h.clone(),
            None => {
                let h = if let Some(v) = self.env.outer.iter().rev().find_map(|s| s.get(&n.text)) {
                    Hint::Outer(*v)
                } else {
                    // A near name defined here, for typos.
                    let near = near_names(&n.text, |k| self.env.names.contains_key(k));
                    near.into_iter().next().map_or(Hint::None, Hint::Near)
                };
                self.hints.insert(n.text.clone(), h.clone());
                h
            }
        };
        match hint {
            Hint::Outer(v) => {
                let info = self.a.var(v);
                d = d
                    .with_related(info.range, format!("`{}` is defined in an enclosing jaxpr", info.name))
                    .with_help("jaxprs are closed: a nested jaxpr sees only its own binders; pass the value in as an operand (a constant of the nested jaxpr)");
            }
            Hint::Near(k) => {
                d = d.with_help(format!("a variable with a similar name exists: `{k}`"));
            }
            Hint::None => {}
        }
        self.push_diag(d);
    }

    /// Adds where each dimension variable involved was bound, and a hint.
    pub(crate) fn explain_dims(
        &self,
        mut d: Diagnostic,
        dims: &[&Dim],
        why: dims::Why,
    ) -> Diagnostic {
        let mut seen = Vec::new();
        for dim in dims {
            if let Dim::Var(v) = dim
                && !seen.contains(v)
            {
                seen.push(*v);
                let info = self.a.var(*v);
                let mut msg = format!("dimension variable `{}` is bound here", info.name);
                if let Some(o) = self.a.origins.get(v) {
                    msg.push_str(if o.carried {
                        " (loop-carried)"
                    } else {
                        " (a constant of the loop or call)"
                    });
                }
                d = d.with_related(info.range, msg);
            }
            // A symbol that a variable in scope is also named (JAX's `a, b, c`
            // naming meets the user's symbols): say which `b` the type means.
            if let Dim::Sym(p) = dim {
                for sym in p.symbols() {
                    if let Some(&v) = self.env.names.get(&*sym)
                        && self.input_symbols.contains(&*sym)
                        && !seen.contains(&v)
                    {
                        seen.push(v);
                        let msg = format!(
                            "`{sym}` in these types is the symbolic dimension `{sym}` of the inputs, not the variable `{sym}` bound here"
                        );
                        d = d.with_related(self.a.var(v).range, msg);
                    }
                }
            }
        }
        if let Some(help) = why.help(self) {
            d = d.with_help(help);
        }
        d
    }
}

/// Names longer than this get no similar-name hint.
const NEAR_MAX: usize = 32;

/// The names one insertion, deletion or substitution away from `name` for
/// which `defined` holds, sorted. The candidates are generated and looked
/// up, so the cost does not grow with the number of names in scope (a scan
/// of the scope for every undefined name was quadratic on large broken
/// files); names are identifiers, so the candidates' letters are too.
pub fn near_names(name: &str, mut defined: impl FnMut(&str) -> bool) -> Vec<String> {
    const LETTERS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
    let b = name.as_bytes();
    if b.len() > NEAR_MAX || !b.iter().all(|c| LETTERS.contains(c)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Only identifier bytes (ASCII): the candidates are built as strings.
    let mut cand = String::with_capacity(b.len() + 1);
    let mut try_it = |cand: &str, out: &mut Vec<String>| {
        // `_` binds nothing that can be named, so it is never a suggestion.
        if !cand.is_empty() && cand != "_" && cand != name && defined(cand) {
            out.push(cand.to_string());
        }
    };
    for i in 0..=b.len() {
        if i < b.len() {
            cand.clear();
            cand.push_str(&name[..i]);
            cand.push_str(&name[i + 1..]);
            try_it(&cand, &mut out);
        }
        for &c in LETTERS {
            cand.clear();
            cand.push_str(&name[..i]);
            cand.push(c as char);
            cand.push_str(&name[i..]);
            try_it(&cand, &mut out);
            if i < b.len() && b[i] != c {
                cand.clear();
                cand.push_str(&name[..i]);
                cand.push(c as char);
                cand.push_str(&name[i + 1..]);
                try_it(&cand, &mut out);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_one_edit_is_equal_or_one_insertion_deletion_or_substitution() {
        for (a, b) in [
            ("w", "w"),
            ("w", "ww"),
            ("ww", "w"),
            ("abc", "abd"),
            ("abc", "ac"),
            ("", "x"),
        ] {
            assert!(within_one_edit(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("w", "v0"),
            ("abc", "acb"),
            ("abc", "a"),
            ("ab", "ba"),
            ("abcd", "abdc"),
        ] {
            assert!(!within_one_edit(a, b), "{a} {b}");
        }
        // The same relation as `near_names` on identifiers.
        let scope = ["a", "ab", "abc", "b", "xbc", "abcd", "bc"];
        for u in ["a", "ab", "abc", "zz", "bd"] {
            let near = near_names(u, |k| scope.contains(&k));
            let within: Vec<String> = (scope.iter())
                .filter(|k| **k != u && within_one_edit(u, k))
                .map(|k| k.to_string())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(near, within, "{u}");
        }
    }
}
