//! JAX's state statements, as `jax/_src/state/primitives.py` prints the
//! equations of `get`, `swap` and `addupdate` (and Pallas's `masked_load`
//! and `masked_swap`, `jax/_src/pallas/primitives.py`):
//!
//! ```text
//! g:f32[8,16] <- d[...]                 get        (a load)
//! k:f32[8,16], f[...] <- f[...], j      swap
//! f[b,:] <- a                           swap whose old value is dropped (a store)
//! f[0,:] += a                           addupdate
//! v:f32[8] <- x[i:i+8] mask=m other=o   masked_load
//! ```
//!
//! A reference's indexers are those of `NDIndexer.pretty_print`: `[...]`
//! (no transform), then per dimension a scalar index (a variable or an
//! integer) or a slice (`_pp_slice`: `:`, `a:`, `:b`, `a:b`, `v:v+n`); other
//! transforms print in braces (`{bitcast(i32)}`). Each statement becomes an
//! [`Eqn`] whose operands are JAX's (`ref value? index-vars... mask? other?`)
//! and whose [`Eqn::state`] keeps how it was written.

use super::{List, Parser, Reported, T, boxed};
use crate::TextRange;
use crate::ast::*;

impl Parser<'_, '_> {
    /// `<-` or `+=` at token `i` (two adjacent tokens): whether it is `+=`.
    pub(super) fn arrow_at(&mut self, i: usize) -> Option<bool> {
        let (a, b) = (
            self.tokens.get(i, self.pos),
            self.tokens.get(i + 1, self.pos),
        );
        if a.range.end != b.range.start || b.newline_before {
            return None;
        }
        match (a.kind, b.kind) {
            (T::LAngle, T::Minus) => Some(false),
            (T::Plus, T::Eq) => Some(true),
            _ => None,
        }
    }

    /// After a reference `r[...]{...}` that starts at token `i` (a name and
    /// at least one adjacent bracketed transform, on one line): the index
    /// after it.
    pub(super) fn place_end(&mut self, i: usize) -> Option<usize> {
        if self.kind_at(i) != T::Ident {
            return None;
        }
        let mut j = i + 1;
        loop {
            let (prev, t) = (
                self.tokens.get(j - 1, self.pos),
                self.tokens.get(j, self.pos),
            );
            let closer = match t.kind {
                T::LBracket => T::RBracket,
                T::LBrace => T::RBrace,
                _ => break,
            };
            if t.range.start != prev.range.end || t.newline_before {
                break;
            }
            let mut depth = 0usize;
            loop {
                j += 1;
                let u = self.tokens.get(j, self.pos);
                if u.kind == T::Eof || u.newline_before {
                    return None;
                }
                if u.kind == t.kind {
                    depth += 1;
                } else if u.kind == closer {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
            }
            j += 1;
        }
        (j > i + 1).then_some(j)
    }

    /// Does a store or an add-update (`r[idx] <- v`, `r[idx] += v`) start at token `i`?
    pub(super) fn is_place_stmt(&mut self, i: usize) -> bool {
        self.place_end(i)
            .is_some_and(|j| self.arrow_at(j).is_some())
    }

    fn arrow(&mut self) -> Result<(TextRange, bool), Reported> {
        let Some(add) = self.arrow_at(self.pos) else {
            return Err(self.error_here("`<-` or `+=`"));
        };
        let a = self.bump();
        let b = self.bump();
        Ok((a.range.cover(b.range), add))
    }

    /// A store or an add-update, at the reference.
    pub(super) fn place_stmt(&mut self, start: u32) -> Result<Eqn, Reported> {
        let place = self.ref_place()?;
        let (arrow, add) = self.arrow()?;
        let value = self.atom()?;
        let (mask, other) = self.mask_other()?;
        let kind = if add {
            StateKind::AddUpdate
        } else {
            StateKind::Store
        };
        Ok(self.state_eqn(
            start,
            List::new(),
            kind,
            place,
            arrow,
            Some(value),
            mask,
            other,
        ))
    }

    /// A load or a swap, after its result (at `<-` or `,`).
    pub(super) fn result_stmt(
        &mut self,
        start: u32,
        outs: &mut List<Binder>,
    ) -> Result<Eqn, Reported> {
        if self.eat(T::Comma).is_some() {
            let place = self.ref_place()?;
            let (arrow, add) = self.arrow()?;
            if add {
                return Err(self.error_at(arrow, "expected `<-` in a swap, found `+=`"));
            }
            let again = self.ref_place()?;
            if again.var.text != place.var.text {
                return Err(self.error_at(
                    again.range,
                    format!(
                        "a swap reads and writes one reference: expected `{}`",
                        place.var.text
                    ),
                ));
            }
            self.expect(T::Comma, "`,` and the value stored")?;
            let value = self.atom()?;
            let (mask, other) = self.mask_other()?;
            return Ok(self.state_eqn(
                start,
                std::mem::take(outs),
                StateKind::Swap,
                place,
                arrow,
                Some(value),
                mask,
                other,
            ));
        }
        let (arrow, add) = self.arrow()?;
        if add {
            return Err(self.error_at(arrow, "expected `<-` after a load's result, found `+=`"));
        }
        let place = self.ref_place()?;
        let (mask, other) = self.mask_other()?;
        Ok(self.state_eqn(
            start,
            std::mem::take(outs),
            StateKind::Load,
            place,
            arrow,
            None,
            mask,
            other,
        ))
    }

    /// Pallas's ` mask=m other=o`, on the statement's line.
    fn mask_other(&mut self) -> Result<(Option<Atom>, Option<Atom>), Reported> {
        let mut mask = None;
        let mut other = None;
        loop {
            let t = self.nth(0);
            if t.kind != T::Ident || t.newline_before || self.kind_at(self.pos + 1) != T::Eq {
                break;
            }
            let slot = match self.slice(t.range) {
                "mask" => &mut mask,
                "other" => &mut other,
                _ => break,
            };
            if slot.is_some() {
                return Err(self.error_here("one `mask=` and one `other=`"));
            }
            self.bump();
            self.bump();
            *slot = Some(self.atom()?);
        }
        Ok((mask, other))
    }

    #[allow(clippy::too_many_arguments)]
    fn state_eqn(
        &mut self,
        start: u32,
        outs: List<Binder>,
        kind: StateKind,
        place: RefPlace,
        arrow: TextRange,
        value: Option<Atom>,
        mask: Option<Atom>,
        other: Option<Atom>,
    ) -> Eqn {
        let masked = mask.is_some() || other.is_some();
        let name = match kind {
            StateKind::Load if masked => "masked_load",
            StateKind::Load => "get",
            StateKind::Swap | StateKind::Store if masked => "masked_swap",
            StateKind::Swap | StateKind::Store => "swap",
            StateKind::AddUpdate => "addupdate",
        };
        let mut args = List::new();
        args.push(Atom::Var(place.var.clone()));
        args.extend(value.clone());
        for t in &place.transforms {
            if let RefTransform::Index(ix, _) = t {
                for i in ix.iter() {
                    let atoms = match i {
                        Indexer::At(a) => [Some(a), None],
                        Indexer::Slice { start, stop, .. } => [start.as_ref(), stop.as_ref()],
                    };
                    args.extend(
                        atoms
                            .into_iter()
                            .flatten()
                            .filter(|a| matches!(a, Atom::Var(_)))
                            .cloned(),
                    );
                }
            }
        }
        args.extend(mask.clone());
        args.extend(other.clone());
        Eqn {
            outs: boxed(outs),
            primitive: Name {
                text: name.into(),
                range: arrow,
            },
            params: Box::default(),
            params_range: None,
            args: boxed(args),
            comments: Box::default(),
            range: TextRange::new(start, self.prev_end()),
            incomplete: false,
            state: Some(Box::new(StateAccess {
                kind,
                place,
                arrow,
                value,
                mask,
                other,
            })),
        }
    }

    /// `r[...]`, `r[i,a:b]`, `r{bitcast(i32)}[0]`.
    fn ref_place(&mut self) -> Result<RefPlace, Reported> {
        if !self.at(T::Ident) {
            return Err(self.error_here("a reference such as `r[...]`"));
        }
        let var = self.name();
        let mut transforms = List::new();
        loop {
            let t = self.nth(0);
            if t.range.start != self.prev_end() || t.newline_before {
                break;
            }
            match t.kind {
                T::LBracket => {
                    self.bump();
                    if self.at(T::Dot) {
                        for _ in 0..3 {
                            self.expect(T::Dot, "`...`")?;
                        }
                        self.expect(T::RBracket, "`]` after `...`")?;
                        continue;
                    }
                    let mut ix = List::new();
                    while !self.at(T::RBracket) {
                        ix.push(self.indexer()?);
                        if self.eat(T::Comma).is_none() && !self.at(T::RBracket) {
                            return Err(self.error_here("`,` or `]` among the indexers"));
                        }
                    }
                    let close = self.bump();
                    transforms.push(RefTransform::Index(boxed(ix), t.range.cover(close.range)));
                }
                T::LBrace => {
                    self.bump();
                    let mut depth = 0usize;
                    loop {
                        let u = self.nth(0);
                        if u.kind == T::Eof || u.newline_before {
                            return Err(self.error_here("`}` closing the transform"));
                        }
                        self.bump();
                        match u.kind {
                            T::LBrace => depth += 1,
                            T::RBrace if depth == 0 => break,
                            T::RBrace => depth -= 1,
                            _ => {}
                        }
                    }
                    let range = TextRange::new(t.range.start, self.prev_end());
                    let inner = TextRange::new(t.range.end, range.end - 1);
                    transforms.push(RefTransform::Other(self.slice(inner).into(), range));
                }
                _ => break,
            }
        }
        let range = TextRange::new(var.range.start, self.prev_end());
        Ok(RefPlace {
            var,
            transforms: boxed(transforms),
            range,
        })
    }

    /// One dimension's indexer: `i`, `3`, `:`, `a:`, `:b`, `a:b`, `v:v+n`.
    fn indexer(&mut self) -> Result<Indexer, Reported> {
        let from = self.nth(0).range.start;
        let start = if self.at(T::Colon) {
            None
        } else {
            let a = self.index_atom()?;
            if !self.at(T::Colon) {
                return Ok(Indexer::At(a));
            }
            Some(a)
        };
        self.bump(); // :
        let mut stop = None;
        let mut plus = false;
        if !matches!(self.nth(0).kind, T::Comma | T::RBracket) {
            let s = self.index_atom()?;
            stop = Some(s);
            if self.eat(T::Plus).is_some() {
                // `v:v+n`: the start again, then the size.
                plus = true;
                stop = Some(self.index_atom()?);
            }
        }
        Ok(Indexer::Slice {
            start,
            stop,
            plus,
            range: TextRange::new(from, self.prev_end()),
        })
    }

    /// A variable or an integer (JAX prints an indexer's literals without dtype).
    fn index_atom(&mut self) -> Result<Atom, Reported> {
        let t = self.nth(0);
        match t.kind {
            T::Ident => Ok(Atom::Var(self.name())),
            T::Int | T::Minus => {
                let start = t.range.start;
                if t.kind == T::Minus {
                    self.bump();
                    if !self.at(T::Int) {
                        return Err(self.error_here("an integer after `-`"));
                    }
                }
                self.bump();
                let range = TextRange::new(start, self.prev_end());
                Ok(Atom::Lit(Box::new(Literal {
                    value: self.slice(range).into(),
                    ty: None,
                    range,
                })))
            }
            _ => Err(self.error_here("an index (a variable or an integer)")),
        }
    }
}
