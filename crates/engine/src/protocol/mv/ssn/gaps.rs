//! Scans' reads of gap pseudo-versions (SSN section 6; the pseudo-versions
//! themselves are `index::gaps`).

use super::*;

/// Registers a read of a pseudo-version (a scan of `kind`, section 6).
pub(crate) fn read_gap(st: &mut SsnLocal, slot: u32, gaps: &Gaps, kind: &ScanKind) {
    let pv = match kind {
        ScanKind::Eq(k) => gaps.of_key(k),
        ScanKind::Range(lo, hi) => gaps.of_range(lo, hi),
    };
    let p = pv as *const PseudoVersion;
    if st.gaps.last() == Some(&p) {
        return;
    }
    register(&pv.readers, slot);
    st.gaps.push(p);
}
