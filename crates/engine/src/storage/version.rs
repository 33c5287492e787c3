//! Version records (Hekaton section 2.1, Figure 1).
//!
//! One allocation per version, header first:
//!
//! ```text
//!  0           8           16          20    22  23  24
//! +-----------+-----------+-----------+-----+---+---+---------------------+-----------+-------------+
//! | Begin     | End       | value len | k   | n | p | link[0..n] (8 B ea) | key bytes | value bytes |
//! | AtomicU64 | AtomicU64 |   u32     | u16 |u8 |u8 | one per index       | (k bytes) |             |
//! +-----------+-----------+-----------+-----+---+---+---------------------+-----------+-------------+
//! ```
//!
//! (`p`: the in-place flag below.) The key's bytes are always stored in
//! the version, whether the [`Key`] held them inline or on the heap: a
//! version of a long key is longer, nothing else.
//!
//! A row of the Hekaton workload (one index, 8-byte key, 24-byte payload) is
//! exactly 64 bytes: one cache line, so reaching a row costs one miss for
//! the version once its bucket is in cache.
//!
//! `link[i]` chains the version into index `i` of its table (the paper's "Hash
//! ptr" field, one per index): every version is linked into every index.
//! Tables with ordered indexes add one word per ordered index after the
//! links, holding the slot that heads the version's chain there. Key
//! and value are immutable once the version is published; only Begin, End and
//! the links change, and only by atomic operations.

use super::word::INFINITY;
use crate::key::Key;
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::{self, NonNull};

/// The fixed header of a version; links and value follow it in the same allocation.
#[repr(C)]
pub struct Version {
    /// Start of the valid time: a timestamp or the creating transaction's id.
    pub begin: AtomicU64,
    /// End of the valid time: a timestamp (INFINITY if latest) or the id of
    /// the transaction updating or deleting it (the write lock, section 2.6).
    pub end: AtomicU64,
    value_len: u32,
    key_len: u16,
    n_links: u8,
    /// 1: a single-version record (value word-aligned, rewritten in place).
    in_place: u8,
}

const HEADER: usize = std::mem::size_of::<Version>();
const LINK: usize = std::mem::size_of::<AtomicPtr<Version>>();

// A link word doubles as a plain word (`Version::word`).
const _: () = assert!(
    LINK == std::mem::size_of::<AtomicU64>()
        && std::mem::align_of::<AtomicPtr<Version>>() == std::mem::align_of::<AtomicU64>()
);
// The link array starts right after the header and must be pointer-aligned.
const _: () = assert!(HEADER & (std::mem::align_of::<AtomicPtr<Version>>() - 1) == 0);

fn layout(n_links: usize, key_len: usize, value_len: usize) -> Layout {
    Layout::from_size_align(HEADER + n_links * LINK + key_len + value_len, 8).expect("version layout")
}

/// Where the value of a single-version record starts: word-aligned.
#[inline]
fn in_place_value_at(n_links: usize, key_len: usize) -> usize {
    (HEADER + n_links * LINK + key_len + 7) & !7
}

fn in_place_layout(n_links: usize, key_len: usize, value_len: usize) -> Layout {
    Layout::from_size_align(in_place_value_at(n_links, key_len) + value_len.div_ceil(8) * 8, 8).expect("record layout")
}

impl Version {
    /// Allocates a version with the given Begin word, End = INFINITY and null
    /// links. The caller owns it until it is published in an index.
    pub fn alloc(key: &Key, n_links: usize, value: &[u8], begin: u64) -> NonNull<Version> {
        let lay = layout(n_links, key.len(), value.len());
        let nn = Self::alloc_header(key, n_links, value.len(), lay, 0, begin);
        // SAFETY: fresh and ours; the value's bytes follow the key inside
        // the allocation (raw copy: they are not initialised yet).
        unsafe {
            let at = HEADER + n_links * LINK + key.len();
            ptr::copy_nonoverlapping(value.as_ptr(), (nn.as_ptr() as *mut u8).add(at), value.len());
        }
        nn
    }

    /// Allocates `lay` and writes the header, null links and the key.
    fn alloc_header(
        key: &Key,
        n_links: usize,
        value_len: usize,
        lay: Layout,
        in_place: u8,
        begin: u64,
    ) -> NonNull<Version> {
        debug_assert!(n_links >= 1 && n_links <= u8::MAX as usize);
        let kb = key.as_bytes();
        let raw = spare::take(lay).unwrap_or_else(|| {
            // SAFETY: the layout has non-zero size (the header alone is > 0).
            unsafe { alloc(lay) }
        }) as *mut Version;
        let Some(nn) = NonNull::new(raw) else { handle_alloc_error(lay) };
        // SAFETY: `raw` points to a fresh allocation of `lay.size()` bytes with
        // alignment 8; header, links and key lie inside it.
        unsafe {
            raw.write(Version {
                begin: AtomicU64::new(begin),
                end: AtomicU64::new(INFINITY),
                value_len: value_len as u32,
                n_links: n_links as u8,
                key_len: kb.len() as u16,
                in_place,
            });
            let links = (raw as *mut u8).add(HEADER) as *mut AtomicPtr<Version>;
            for i in 0..n_links {
                links.add(i).write(AtomicPtr::new(ptr::null_mut()));
            }
            ptr::copy_nonoverlapping(kb.as_ptr(), (raw as *mut u8).add(HEADER + n_links * LINK), kb.len());
        }
        nn
    }

    /// Frees a version.
    ///
    /// # Safety
    /// `v` came from [`Version::alloc`], is unreachable from every index and
    /// no thread can still hold a reference (its epoch has passed, or the
    /// database is being dropped).
    pub unsafe fn free(v: *mut Version) {
        // SAFETY: per the contract `v` is a live allocation made with this
        // layout, and nobody can reach it any more: its memory may be reused.
        unsafe {
            let lay = (*v).layout();
            if let Err(p) = spare::keep(v as *mut u8, lay) {
                dealloc(p, lay);
            }
        }
    }

    /// Frees every version of `vs`, as [`Version::free`] each, visiting the
    /// thread's cache of spare blocks once for all of them.
    ///
    /// # Safety
    /// As for [`Version::free`], for every member of `vs` (each once).
    pub unsafe fn free_all(vs: impl Iterator<Item = *mut Version>) {
        // SAFETY: per the contract every `v` is live until handed over here,
        // where its layout is read just before its memory is reused.
        spare::keep_all(vs.map(|v| (v as *mut u8, unsafe { (*v).layout() })));
    }

    /// Index `i`'s chain pointer.
    #[inline]
    pub fn link(&self, i: usize) -> &AtomicPtr<Version> {
        assert!(i < self.n_links as usize);
        // SAFETY: the link array of `n_links` entries directly follows the
        // header inside this allocation, and `i` is in bounds.
        unsafe { &*((self as *const Version as *const u8).add(HEADER + i * LINK) as *const AtomicPtr<Version>) }
    }

    /// Number of link words.
    #[inline]
    pub fn n_links(&self) -> usize {
        self.n_links as usize
    }

    /// Link word `i` read as a plain word: the words a table adds after the
    /// links for its protocol (SSN's stamp word and readers bitmap), zero
    /// when the version is allocated.
    #[inline]
    pub fn word(&self, i: usize) -> &AtomicU64 {
        let l = self.link(i);
        // SAFETY: `AtomicPtr<Version>` and `AtomicU64` have the same size
        // and alignment on the 64-bit targets this crate builds for, every
        // bit pattern is a valid `u64`, and a word a table reserves for its
        // protocol is only ever accessed through this view.
        unsafe { &*(l as *const AtomicPtr<Version> as *const AtomicU64) }
    }

    /// The primary key's bytes (immutable after publication).
    #[inline]
    pub fn key_bytes(&self) -> &[u8] {
        // SAFETY: `key_len` bytes follow the link array inside this
        // allocation and were initialised by `alloc`; they are never written again.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Version as *const u8).add(HEADER + self.n_links as usize * LINK),
                self.key_len as usize,
            )
        }
    }

    /// The row's primary key.
    #[inline]
    pub fn key(&self) -> Key {
        Key::from_bytes(self.key_bytes()).expect("stored keys fit")
    }

    /// The order of the row's primary key against `k`; a key longer than
    /// [`KEY_INLINE`](crate::KEY_INLINE) is compared in place rather than
    /// built (which allocates).
    #[inline]
    pub fn key_cmp(&self, k: &Key) -> std::cmp::Ordering {
        let b = self.key_bytes();
        if b.len() <= crate::KEY_INLINE {
            return self.key().cmp(k);
        }
        b.cmp(k.as_bytes())
    }

    /// The row's primary key hashed, as [`Key::hash64`] hashes it: its
    /// bucket in a primary hash index.
    #[inline]
    pub fn key_hash(&self) -> u64 {
        crate::key::hash_bytes(self.key_bytes())
    }

    /// True if the row's primary key is `k`.
    #[inline]
    pub fn key_eq(&self, k: &Key) -> bool {
        crate::key::bytes_eq(self.key_bytes(), k.as_bytes())
    }

    /// The value bytes of a version not yet published, to fill in place.
    ///
    /// # Safety
    /// `v` came from [`Version::alloc`] and is reachable from no index and
    /// no other thread: the caller owns it exclusively for the returned
    /// borrow.
    #[inline]
    pub unsafe fn value_mut<'a>(v: NonNull<Version>) -> &'a mut [u8] {
        let v = v.as_ptr();
        // SAFETY: per the contract nobody else can read or write the version;
        // `value_len` initialised bytes follow the key inside the allocation.
        unsafe {
            let at = HEADER + (*v).n_links as usize * LINK + (*v).key_len as usize;
            std::slice::from_raw_parts_mut((v as *mut u8).add(at), (*v).value_len as usize)
        }
    }

    /// The row value (immutable after publication). Not for single-version
    /// records: see [`Version::load_value`].
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.in_place == 0, "a single-version record's value is read with load_value");
        // SAFETY: `value_len` bytes follow the key inside this allocation and
        // were initialised by `alloc`; they are never written again.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Version as *const u8)
                    .add(HEADER + self.n_links as usize * LINK + self.key_len as usize),
                self.value_len as usize,
            )
        }
    }

    /// Bytes this version occupies (for memory accounting).
    pub fn footprint(&self) -> usize {
        self.layout().size()
    }

    fn layout(&self) -> Layout {
        if self.in_place != 0 {
            in_place_layout(self.n_links as usize, self.key_len as usize, self.value_len as usize)
        } else {
            layout(self.n_links as usize, self.key_len as usize, self.value_len as usize)
        }
    }

    /// Allocates a single-version record: like [`Version::alloc`], with the
    /// value in whole words so that it can be rewritten in place.
    pub fn alloc_in_place(key: &Key, n_links: usize, value: &[u8], begin: u64) -> NonNull<Version> {
        let lay = in_place_layout(n_links, key.len(), value.len());
        let nn = Self::alloc_header(key, n_links, value.len(), lay, 1, begin);
        // SAFETY: just allocated, not yet shared.
        unsafe { nn.as_ref() }.store_value(value);
        nn
    }

    /// The value words of a single-version record.
    #[inline]
    fn value_words(&self) -> &[AtomicU64] {
        debug_assert!(self.in_place != 0, "only single-version records are rewritten in place");
        // SAFETY: an in-place record's value area starts word-aligned at
        // `in_place_value_at` and spans `ceil(value_len / 8)` words inside
        // the allocation; it is only ever accessed through these atomics.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Version as *const u8)
                    .add(in_place_value_at(self.n_links as usize, self.key_len as usize))
                    as *const AtomicU64,
                (self.value_len as usize).div_ceil(8),
            )
        }
    }

    /// Copies the value of a single-version record into `out` (resized to
    /// the value's length). Relaxed loads: the caller brackets the copy with
    /// reads of the record's TID word (Silo's stable read, section 4.5).
    #[inline]
    pub fn load_value(&self, out: &mut Vec<u8>) {
        let n = self.value_len as usize;
        let words = self.value_words();
        // Every byte is overwritten below: keep what the buffer holds (no
        // clearing memset in the steady state, where sizes repeat).
        out.resize(words.len() * 8, 0);
        for (w, dst) in words.iter().zip(out.chunks_exact_mut(8)) {
            // Relaxed: ordered by the caller's fences around the copy.
            dst.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        out.truncate(n);
    }

    /// Copies the value of a single-version record into `out`, which has
    /// exactly the value's length (a buffer on the caller's stack: no
    /// allocation, no thread-local). Relaxed loads, as [`Version::load_value`].
    #[inline]
    pub fn copy_value(&self, out: &mut [u8]) {
        assert_eq!(out.len(), self.value_len as usize, "the buffer has the value's length");
        let words = self.value_words();
        let mut chunks = out.chunks_mut(8);
        for (w, dst) in words.iter().zip(&mut chunks) {
            // Relaxed: ordered by the caller's fences around the copy, if any.
            let b = w.load(Ordering::Relaxed).to_le_bytes();
            dst.copy_from_slice(&b[..dst.len()]);
        }
    }

    /// Overwrites the value of a single-version record; `value` has the
    /// record's length. The caller holds the record's lock.
    #[inline]
    pub fn store_value(&self, value: &[u8]) {
        assert_eq!(value.len(), self.value_len as usize, "an in-place write keeps the value's length");
        let words = self.value_words();
        let whole = value.len() / 8;
        for (w, src) in words.iter().zip(value.chunks_exact(8)) {
            // Relaxed: published by the Release store of the TID word.
            w.store(u64::from_le_bytes(src.try_into().expect("8 bytes")), Ordering::Relaxed);
        }
        let rest = &value[whole * 8..];
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            // Relaxed: as above.
            words[whole].store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
    }

    /// Calls `f` with the value: borrowed for a multi-version record, a
    /// copy for a single-version one (rewritten in place). For the key
    /// functions of secondary indexes: the bytes they read never change
    /// while the record is linked (an update that would change them
    /// replaces the record), so an unstable copy reads them right.
    #[inline]
    pub fn with_value<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        if self.in_place == 0 {
            return f(self.value());
        }
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut buf) => {
                self.load_value(&mut buf);
                f(&buf)
            }
            Err(_) => {
                let mut buf = Vec::new();
                self.load_value(&mut buf);
                f(&buf)
            }
        })
    }

    /// Length of the value.
    #[inline]
    pub fn value_len(&self) -> usize {
        self.value_len as usize
    }
}

/// A per-thread cache of freed version blocks, by exact size.
///
/// Garbage collection frees old versions of random rows, scattered over the
/// allocator's pages: handing each back, and taking a fresh block for every
/// new version, touches a cold page header each time. The updater that
/// collects garbage is usually the next to allocate, so it keeps a few
/// hundred blocks of the sizes it frees and reuses them directly.
mod spare {
    use std::alloc::{dealloc, Layout};
    use std::cell::RefCell;

    /// Blocks kept per size.
    const CAP: usize = 512;
    /// Sizes kept per thread.
    const SIZES: usize = 4;

    struct Spare {
        lists: [(usize, Vec<*mut u8>); SIZES],
    }

    impl Drop for Spare {
        fn drop(&mut self) {
            for (size, blocks) in &mut self.lists {
                for &p in blocks.iter() {
                    // SAFETY: every kept block came from `alloc` with this
                    // size and alignment 8, and is owned by this cache alone.
                    unsafe { dealloc(p, Layout::from_size_align_unchecked(*size, 8)) };
                }
            }
        }
    }

    thread_local! {
        static SPARE: RefCell<Spare> = RefCell::new(Spare { lists: Default::default() });
    }

    /// A kept block of exactly `lay`'s size, if any.
    #[inline]
    pub(super) fn take(lay: Layout) -> Option<*mut u8> {
        SPARE
            .try_with(|s| {
                let mut s = s.borrow_mut();
                s.lists.iter_mut().find(|(size, _)| *size == lay.size()).and_then(|(_, v)| v.pop())
            })
            .ok()
            .flatten()
    }

    /// Keeps a block for reuse, or gives it back (`Err`) when the cache for
    /// its size is full, has no room for another size, or the thread is exiting.
    #[inline]
    pub(super) fn keep(p: *mut u8, lay: Layout) -> Result<(), *mut u8> {
        SPARE.try_with(|s| s.borrow_mut().keep(p, lay)).unwrap_or(Err(p))
    }

    /// Keeps or gives back every block `blocks` yields (as `keep` each),
    /// visiting the thread's cache once for all of them.
    pub(super) fn keep_all(mut blocks: impl Iterator<Item = (*mut u8, Layout)>) {
        // The cache is gone when the thread is exiting: every block goes back.
        let _ = SPARE.try_with(|s| {
            let mut s = s.borrow_mut();
            for (p, lay) in &mut blocks {
                if let Err(p) = s.keep(p, lay) {
                    // SAFETY: as in `Version::free`: `p` was allocated with `lay`.
                    unsafe { dealloc(p, lay) };
                }
            }
        });
        for (p, lay) in blocks {
            // SAFETY: as above.
            unsafe { dealloc(p, lay) };
        }
    }

    impl Spare {
        // Always: `keep_all`'s loop over a collected batch calls it per
        // version (measured: out of line, a third more instructions per
        // freed version).
        #[inline(always)]
        fn keep(&mut self, p: *mut u8, lay: Layout) -> Result<(), *mut u8> {
            debug_assert_eq!(lay.align(), 8);
            let slot = match self.lists.iter().position(|(size, _)| *size == lay.size()) {
                Some(i) => i,
                None => self.lists.iter().position(|(size, _)| *size == 0).ok_or(p)?,
            };
            let (size, v) = &mut self.lists[slot];
            if v.len() >= CAP {
                return Err(p);
            }
            if *size == 0 {
                *size = lay.size();
                v.reserve_exact(CAP);
            }
            v.push(p);
            Ok(())
        }
    }
}

/// A raw version pointer that may cross threads inside the engine. Whoever
/// dereferences it must hold an epoch guard or otherwise know it is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VPtr(pub *mut Version);

// SAFETY: versions are shared between threads by design: all mutable fields are
// atomics, and the rest is immutable after publication.
unsafe impl Send for VPtr {}
// SAFETY: as above.
unsafe impl Sync for VPtr {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::atomic::Ordering;

    /// Freed blocks are reused for versions of the same size, never for
    /// another size, and every reused block is fully re-initialised; the
    /// cache gives its blocks back when its thread exits.
    #[test]
    fn freed_blocks_are_reused_by_exact_size() {
        std::thread::spawn(|| {
            let a = Version::alloc(&Key::from(1), 1, &[7u8; 24], 2).as_ptr();
            // SAFETY: never published.
            unsafe { Version::free(a) };
            let b = Version::alloc(&Key::from(2), 1, &[8u8; 24], 4).as_ptr();
            assert_eq!(a, b, "same size: the freed block comes back");
            // SAFETY: freshly allocated, unshared.
            let r = unsafe { &*b };
            assert_eq!((r.key(), r.value(), r.begin.load(Ordering::Relaxed)), (Key::from(2), &[8u8; 24][..], 4));
            assert!(r.link(0).load(Ordering::Relaxed).is_null());
            let c = Version::alloc(&Key::from(3), 1, &[9u8; 40], 6).as_ptr();
            assert_ne!(b, c, "another size never gets a cached block");
            // Fill one size past the cache's capacity, then free it all.
            let many: Vec<_> = (0..2000).map(|i| Version::alloc(&Key::from(i), 2, b"v", 8).as_ptr()).collect();
            for v in many.into_iter().chain([b, c]) {
                // SAFETY: never published, freed once.
                unsafe { Version::free(v) };
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn alloc_layout_round_trips() {
        let v = Version::alloc(&Key::from(9), 3, b"hello world", 4);
        // SAFETY: freshly allocated, unshared.
        let r = unsafe { v.as_ref() };
        assert_eq!(r.value(), b"hello world");
        assert_eq!(r.key(), Key::from(9));
        assert_eq!(std::mem::size_of::<Version>() + 8 + 8 + 24, 64, "a Hekaton row is one cache line");
        assert_eq!(r.begin.load(Ordering::Relaxed), 4);
        assert_eq!(r.end.load(Ordering::Relaxed), INFINITY);
        for i in 0..3 {
            assert!(r.link(i).load(Ordering::Relaxed).is_null());
        }
        // SAFETY: never published.
        unsafe { Version::free(v.as_ptr()) };
        let e = Version::alloc(&Key::EMPTY, 1, b"", 0);
        // SAFETY: as above.
        unsafe {
            assert_eq!(e.as_ref().value(), b"");
            Version::free(e.as_ptr());
        }
    }
}
