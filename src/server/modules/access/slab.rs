//! How much of a `limit_req_zone` or `limit_conn_zone` its entries may use,
//! as nginx's slab allocator (`ngx_slab.c`) would give it out: memory in
//! 4 KiB pages, each page cut into slots of one power of two, a page
//! descriptor per page. nowait keeps its tables on the heap, but bounds
//! them by this arithmetic, so that a zone holds about as many keys as
//! nginx's of the same size and refuses (or expires) at the same point.

/// nginx's page on x86-64 Linux.
const PAGE: usize = 4096;
/// The smallest slot (`ngx_slab_min_size`).
const MIN_SLOT: usize = 8;
/// `sizeof(ngx_slab_pool_t)` plus the slot and statistics arrays, rounded
/// up: the part of a zone nginx never hands out.
const POOL_OVERHEAD: usize = 1024;
/// `sizeof(ngx_slab_page_t)`: each page's descriptor.
const PAGE_DESCRIPTOR: usize = 24;
/// Pages that hold the zone's own structures (the tree's root and the
/// log context) rather than entries.
const RESERVED_PAGES: usize = 1;

/// The slot an allocation of `n` bytes takes: the next power of two (at
/// least [`MIN_SLOT`]); past half a page, whole pages.
pub fn slot(n: usize) -> usize {
    if n > PAGE / 2 {
        n.div_ceil(PAGE) * PAGE
    } else {
        n.next_power_of_two().max(MIN_SLOT)
    }
}

/// The bytes of slots a zone of `size` bytes can hand out to entries.
pub fn usable_bytes(size: u64) -> usize {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let pages = size.saturating_sub(POOL_OVERHEAD) / (PAGE + PAGE_DESCRIPTOR);
    pages.saturating_sub(RESERVED_PAGES) * PAGE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_powers_of_two_then_pages() {
        assert_eq!(slot(1), 8);
        assert_eq!(slot(92), 128);
        assert_eq!(slot(2048), 2048);
        assert_eq!(slot(2049), 4096);
        assert_eq!(slot(5000), 8192);
    }

    #[test]
    fn the_smallest_zone_has_a_few_pages() {
        // 32 KiB: seven pages, one kept for the zone's own structures.
        assert_eq!(usable_bytes(32 * 1024), 6 * PAGE);
        assert_eq!(usable_bytes(0), 0);
    }
}
