//! A memory plan is not charged for the pages a job before it freed (a
//! binary of its own: the resident size it reads is the whole process's).

use dupgram_jobkit::memory::{MemoryPlan, ZstdNeed, current_rss};

#[test]
fn a_plan_gives_back_the_pages_freed_before_it() {
    const BLOCKS: usize = 48 * 1024;
    // Small blocks, kept by the allocator once freed; the block allocated
    // after them keeps the heap's top, so freeing does not shrink it.
    let blocks: Vec<Box<[u8; 1024]>> = (0..BLOCKS).map(|i| Box::new([i as u8; 1024])).collect();
    let top = Box::new([1u8; 1024]);
    drop(std::hint::black_box(blocks));
    let before = current_rss().expect("a resident size");
    MemoryPlan::new(1 << 30, 2, ZstdNeed::None).expect("a plan");
    let after = current_rss().expect("a resident size");
    std::hint::black_box(&top);
    assert!(
        before > after + (BLOCKS as u64) * 1024 / 2,
        "{before} bytes resident before the plan, {after} after: the freed 48 MiB were kept"
    );
}
