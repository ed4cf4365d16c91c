//! A panic while lowering is a bug of the back end (an `.expect` on IR it
//! could not build, an index out of range), never a crash of the build: each
//! back end lowers every equation through [`catching_eqn`], which turns a
//! panic into J0016 (`internal-error`) at that equation, with the panic's
//! message and where in the back end it happened. The innermost equation
//! being lowered is the one named: an equation of a nested jaxpr catches the
//! panic before the equation calling it sees it.
//!
//! While an equation is lowered the panic hook prints nothing on its thread
//! (the message goes to the diagnostic instead); on other threads, and
//! outside a lowering, the hook that was installed before runs as before.

use crate::walk::{LowerResult, internal};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, PanicHookInfo, catch_unwind};

thread_local! {
    /// How many lowerings on this thread catch panics (nested jaxprs nest them).
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// The last panic caught on this thread, as the hook described it.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Lowers equation `e` with `lower`; a panic in it is J0016 at the equation.
pub fn catching_eqn<T>(e: &ast::Eqn, lower: impl FnOnce() -> LowerResult<T>) -> LowerResult<T> {
    let name = e.primitive.text.as_str();
    catching(e.range, &format!("lowering `{name}`"), || {
        #[cfg(feature = "inject-panic")]
        inject::at(name);
        lower()
    })
}

/// Runs `f`; a panic in it is J0016 at `at`, its message saying what was
/// being done (`doing`: "lowering `sin`").
pub fn catching<T>(
    at: TextRange,
    doing: &str,
    f: impl FnOnce() -> LowerResult<T>,
) -> LowerResult<T> {
    install_hook();
    CATCHING.with(|c| c.set(c.get() + 1));
    // Decremented on the way out, whether `f` returned or unwound.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            CATCHING.with(|c| c.set(c.get() - 1));
        }
    }
    let leave = Leave;
    // The back end's state after a panic is not looked at again: the build
    // stops with the error.
    let result = catch_unwind(AssertUnwindSafe(f));
    drop(leave);
    result.unwrap_or_else(|payload| {
        let what = CAUGHT
            .with(|m| m.borrow_mut().take())
            .or_else(|| payload_text(payload.as_ref()).map(str::to_owned))
            .unwrap_or_else(|| "a panic without a message".to_owned());
        internal(at, format!("the back end panicked {doing}: {what}"))
    })
}

/// The panic's message, or None when its payload is not text.
fn payload_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Installs, once per process, the hook that records a panic inside
/// [`catching`] instead of printing it, and hands every other panic to the
/// hook installed before.
fn install_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if CATCHING.with(Cell::get) == 0 {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("a panic without a message");
            let described = match info.location() {
                Some(l) => format!("{message} (at {}:{}:{})", l.file(), l.line(), l.column()),
                None => message.to_owned(),
            };
            CAUGHT.with(|m| *m.borrow_mut() = Some(described));
        }));
    });
}

/// A panic injected into the lowering of one primitive, for the tests that
/// hold both back ends to reporting it (feature `inject-panic`, which only
/// `jaxpr-build`'s tests turn on): `JAXPR_INJECT_PANIC=NAME` panics when an
/// equation of primitive `NAME` is lowered.
#[cfg(feature = "inject-panic")]
mod inject {
    pub(super) fn at(name: &str) {
        static TARGET: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let target = TARGET.get_or_init(|| std::env::var("JAXPR_INJECT_PANIC").ok());
        if target.as_deref() == Some(name) {
            panic!("injected panic (JAXPR_INJECT_PANIC={name})");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::catching;
    use crate::walk::LowerResult;
    use jaxpr_syntax::TextRange;
    use jaxpr_syntax::diagnostics::DiagKind;

    /// A panic is J0016 at the range given, with its message, where it
    /// happened and the help line; the innermost catch reports it, and the
    /// catches nest and unwind back to none.
    #[test]
    fn a_panic_is_an_internal_error_at_the_innermost_catch() {
        let (outer, inner) = (TextRange::new(0, 40), TextRange::new(10, 20));
        let r: LowerResult<()> = catching(outer, "lowering `pjit`", || {
            catching(inner, "lowering `sin`", || -> LowerResult<()> {
                let v: Vec<u8> = Vec::new();
                let _ = v.first().expect("no first byte");
                Ok(())
            })
        });
        let d = r.unwrap_err().into_diagnostic();
        assert_eq!((d.kind, d.range), (DiagKind::InternalError, inner));
        assert!(
            d.message
                .starts_with("the back end panicked lowering `sin`: no first byte (at crates/lower/src/panics.rs:"),
            "{}",
            d.message
        );
        assert!(d.help.is_some_and(|h| h.contains("a bug in jaxpr")));
        assert_eq!(super::CATCHING.with(std::cell::Cell::get), 0);
        // What returns normally is returned, errors included.
        assert!(catching(outer, "lowering `sin`", || Ok(3)).is_ok_and(|x| x == 3));
    }
}
