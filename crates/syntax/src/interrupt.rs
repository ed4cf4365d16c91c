//! Interrupting a long whole-file computation from outside.
//!
//! The salsa database cancels a query whose inputs changed by unwinding it
//! (`salsa::Cancelled`), but it can only do so when the query asks: a
//! whole-file parse or check of a large file is one query of several
//! hundred milliseconds, during which the language server could not apply
//! the next keystroke (setting a new text waits for every running query to
//! notice its cancellation). The parser and the checker know nothing of
//! salsa: they call [`checkpoint`] once per equation, and the database says
//! what a checkpoint does for the computation it runs ([`with_checkpoint`]).
//! Nothing is set outside such a computation, and a checkpoint then costs
//! one thread-local read.

use std::cell::Cell;
use std::ptr::NonNull;

thread_local! {
    static HOOK: Cell<Option<NonNull<dyn Fn()>>> = const { Cell::new(None) };
}

/// Runs `f` with `hook` called at each [`checkpoint`] on this thread. The
/// hook may unwind (that is how it interrupts `f`); whatever `f` built is
/// then dropped, so `f` must leave no shared state half-updated when it
/// unwinds at a checkpoint.
pub fn with_checkpoint<R>(hook: &dyn Fn(), f: impl FnOnce() -> R) -> R {
    /// Puts back the previous hook when `f` returns or unwinds.
    struct Restore(Option<NonNull<dyn Fn()>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.set(self.0);
        }
    }
    let ptr: NonNull<dyn Fn() + '_> = NonNull::from(hook);
    // SAFETY: only the lifetime is erased. The pointer is taken out of the
    // thread-local (by `Restore`, on return or unwinding) before `hook`
    // can go out of scope, and is only called on this thread meanwhile.
    let ptr: NonNull<dyn Fn()> = unsafe { std::mem::transmute(ptr) };
    let _restore = Restore(HOOK.replace(Some(ptr)));
    f()
}

/// Calls the hook of the enclosing [`with_checkpoint`], if any.
pub fn checkpoint() {
    if let Some(hook) = HOOK.get() {
        // SAFETY: see `with_checkpoint`: the hook is alive while set.
        unsafe { hook.as_ref()() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_runs_inside_only_and_an_unwinding_hook_is_taken_out() {
        let calls = Cell::new(0);
        checkpoint(); // nothing set: nothing happens
        with_checkpoint(&|| calls.set(calls.get() + 1), || {
            checkpoint();
            checkpoint();
        });
        assert_eq!(calls.get(), 2);
        checkpoint();
        assert_eq!(calls.get(), 2);
        let unwound = std::panic::catch_unwind(|| {
            with_checkpoint(&|| panic!("cancelled"), checkpoint);
        });
        assert!(unwound.is_err());
        checkpoint(); // the unwinding hook is no longer set
    }
}
