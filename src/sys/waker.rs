//! Wakers that carry a number instead of a heap object.
//!
//! A connection parked between requests (`server::engine::h1::park`) leaves a waker in
//! its socket's registration with the reactor. A `std::task::Wake` waker
//! would be one `Arc` allocation per parked connection; these carry a
//! `usize` (which worker's queue, which slot) in the waker's data word and
//! call a plain function with it, so parking allocates nothing.
//!
//! What this module must not do: interpret the number. The function given
//! must be safe to call from any thread, any number of times.

use std::marker::PhantomData;
use std::task::{RawWaker, RawWakerVTable, Waker};

/// What a [`number_waker`] does when woken: `wake(data)`. Implemented by a
/// type with no values, so that the vtable is one `static` per kind.
pub trait NumberWake: 'static {
    /// Called on every wake with the waker's number; must be callable from
    /// any thread.
    fn wake(data: usize);
}

/// The vtable of the wakers of kind `W`.
struct Table<W>(PhantomData<W>);

impl<W: NumberWake> Table<W> {
    const VTABLE: RawWakerVTable =
        RawWakerVTable::new(clone::<W>, wake::<W>, wake::<W>, drop_nothing);
}

fn clone<W: NumberWake>(data: *const ()) -> RawWaker {
    RawWaker::new(data, &Table::<W>::VTABLE)
}

fn wake<W: NumberWake>(data: *const ()) {
    W::wake(data as usize);
}

fn drop_nothing(_: *const ()) {}

/// A waker that calls `W::wake(data)`. Cloning and dropping it cost
/// nothing; it owns no memory.
pub fn number_waker<W: NumberWake>(data: usize) -> Waker {
    // SAFETY: the data pointer is never dereferenced: it is a number the
    // vtable's functions pass on as a `usize`. Cloning makes an identical
    // waker, dropping frees nothing, and `W::wake` is required (by the
    // trait's contract) to be callable from any thread — which is all the
    // `RawWaker` contract asks of a waker that is `Send + Sync`.
    unsafe { Waker::from_raw(RawWaker::new(data as *const (), &Table::<W>::VTABLE)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    struct Add;
    impl NumberWake for Add {
        fn wake(data: usize) {
            SEEN.fetch_add(data, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_number_waker_calls_its_function_with_its_number() {
        let w = number_waker::<Add>(5);
        let c = w.clone();
        w.wake_by_ref();
        w.wake();
        c.wake();
        assert_eq!(SEEN.load(Ordering::SeqCst), 15);
    }
}
