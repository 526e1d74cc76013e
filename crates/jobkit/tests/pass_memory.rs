//! A pass begun is not charged for the pages the passes before it freed
//! (a binary of its own: the resident size it reads is the whole process's).

use dupgram_jobkit::Control;
use dupgram_jobkit::memory::current_rss;

#[test]
fn a_pass_gives_back_the_pages_freed_before_it() {
    const BLOCKS: usize = 48 * 1024;
    let control = Control::default();
    // Small blocks, kept by the allocator once freed; the block allocated
    // after them keeps the heap's top, so freeing does not shrink it.
    let blocks: Vec<Box<[u8; 1024]>> = (0..BLOCKS).map(|i| Box::new([i as u8; 1024])).collect();
    let top = Box::new([1u8; 1024]);
    drop(std::hint::black_box(blocks));
    let before = current_rss().expect("a resident size");
    control.start_pass("counting", None);
    let after = current_rss().expect("a resident size");
    std::hint::black_box(&top);
    assert_eq!(control.progress.phase(), "counting");
    assert!(
        before > after + (BLOCKS as u64) * 1024 / 2,
        "{before} bytes resident before the pass, {after} after: the freed 48 MiB were kept"
    );
}
