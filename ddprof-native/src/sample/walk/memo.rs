//! What one VM walk remembers while it runs ([`WalkMemo`]): the facts a frame read of its
//! method or nmethod, so that the next frame of the same one does not read them again.
//! Signal-safe: fixed arrays on the walking handler's stack, nothing allocated, nothing
//! kept across walks.

use crate::sample::vm::debuginfo;

/// A memo of one walk keyed by an 8-byte-aligned VM address (0: an empty slot): what a
/// frame read of its method or nmethod, asked again by the next frame of the same one.
/// Direct-mapped over `N` slots (a power of two); a collision only costs the loads again.
/// Never kept across walks: between two samples the VM can free and reuse the address.
pub(super) trait Keyed: Copy + Default {
    fn key(&self) -> usize;
}

pub(super) struct WalkMemo<T: Keyed, const N: usize> {
    slots: [T; N],
}

impl<T: Keyed, const N: usize> Default for WalkMemo<T, N> {
    fn default() -> Self {
        WalkMemo {
            slots: [T::default(); N],
        }
    }
}

impl<T: Keyed, const N: usize> WalkMemo<T, N> {
    fn slot(key: usize) -> usize {
        // Fibonacci hashing of the bits above the alignment; the top log2(N) bits.
        ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - N.trailing_zeros())) % N
    }

    pub(super) fn get(&self, key: usize) -> Option<T> {
        self.slots
            .get(Self::slot(key))
            .filter(|s| s.key() == key && key != 0)
            .copied()
    }

    pub(super) fn get_mut(&mut self, key: usize) -> Option<&mut T> {
        self.slots
            .get_mut(Self::slot(key))
            .filter(|s| s.key() == key && key != 0)
    }

    pub(super) fn put(&mut self, facts: T) {
        if let Some(slot) = self.slots.get_mut(Self::slot(facts.key())) {
            *slot = facts;
        }
    }
}

/// What an interpreted frame needs of its `Method*` beyond its jmethodID: that it reads as
/// a method (its holder chain), whether it is native, and where its bytecodes are (for the
/// bci). Six protected loads on cold metadata, the same for every frame of a method that
/// recurses or is called from many places: asked once per walk ([`InterpretedMethods`]).
#[derive(Clone, Copy, Default)]
pub(super) struct InterpretedMethod {
    /// 0: an empty slot.
    pub(super) method: usize,
    pub(super) native: bool,
    pub(super) bytecodes: (usize, usize),
}

impl Keyed for InterpretedMethod {
    fn key(&self) -> usize {
        self.method
    }
}

/// The interpreted methods met in one walk.
pub(super) type InterpretedMethods = WalkMemo<InterpretedMethod, 16>;

/// What a compiled frame reads of its nmethod's header: about six protected loads, and
/// about seven more for where its debug info is. A deep stack meets the same nmethods
/// again and again (recursion, a loop calling down the same path), at different pcs, so
/// [`Nmethods`] keeps them for the rest of the walk. An nmethod with an activation on the
/// walked stack cannot be freed while the walk runs, so its header is the same all along.
#[derive(Clone, Copy, Default)]
pub(super) struct NmethodFacts {
    /// The blob's address; 0: an empty slot.
    pub(super) blob: usize,
    /// `nmethod::_compile_id`: with the address, what tells this nmethod from a later one
    /// at the same address (the cross-walk cache, `super::nmethod_cache`, checks it).
    pub(super) compile_id: i32,
    pub(super) code_begin: usize,
    pub(super) frame_bytes: usize,
    pub(super) method: usize,
    pub(super) frame_type: u8,
    pub(super) complete: usize,
    /// Where the debug info is, once a frame needed it: `Some(None)` when unreadable.
    pub(super) debug: Option<Option<debuginfo::NmethodDebugInfo>>,
}

impl Keyed for NmethodFacts {
    fn key(&self) -> usize {
        self.blob
    }
}

/// The nmethods met in one walk.
pub(super) type Nmethods = WalkMemo<NmethodFacts, 16>;
