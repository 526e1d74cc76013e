//! The memory budget: how `--memory` is shared between the parts of a job,
//! and what the process actually used.
//!
//! The promise is about resident memory (RSS) of the whole process, so the
//! plan starts from what the process already holds when the job begins
//! (code, libraries, thread stacks), adds the code the job will page in
//! later (see `code_growth`), and keeps a margin for allocator slack.
//! Every large buffer is sized from the plan and allocated once.

/// Human-readable byte count: `1.5 GiB`, `64.0 MiB`, `512 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// Parses `16M`, `1G`, `1.5GiB`, `512k`, `1073741824` (binary units).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("'{text}' is not a size like 512M or 2G"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("'{text}': unknown unit '{unit}' (use K, M, G or T)")),
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 {
        return Err(format!("'{text}' is not a positive size"));
    }
    Ok(bytes as u64)
}

/// A line of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`); None off Linux.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident memory now.
pub fn current_rss() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// Peak resident memory of the process so far.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// CPU time of the whole process so far (user and system, all threads), in seconds.
pub fn cpu_seconds() -> Option<f64> {
    // SAFETY: `rusage` is plain integers, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we pass and reads nothing else.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0;
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ok.then(|| seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

/// Keeps glibc's allocator from holding on to freed memory: large blocks are
/// always mapped and returned on free (instead of the threshold creeping up
/// after the first big free), threads share two arenas rather than one
/// each, and an arena gives back what it frees at its top past 128 KiB.
/// Without this, RSS after a pass can stay at the pass's peak. (With 1 MiB
/// there, each arena kept up to that much free: `pairs -n 5` at `--memory
/// 16M` on the 20 Newsgroups peaked at 16.6 MiB, with 128 KiB at 15.4 MiB;
/// jobs at 1G and 2G on the Reddit comments took as long either way.)
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts allocator parameters; it is called before
    // any thread of ours exists and takes plain integers.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// Asks the kernel to read this binary's code from disk a page at a time,
/// as each page first runs (`MADV_RANDOM` on the binary's own mappings),
/// rather than in readahead windows. A page read ahead is mapped in with
/// its neighbours on the next fault, so a process started while its binary
/// was out of the page cache (after a build, or memory pressure) held
/// several MB more code than one started warm: at `--memory 16M` enough for
/// the plan to find no room for a job at all. Call it first thing in `main`.
pub fn page_in_code_as_it_runs() {
    for (start, len) in own_mappings() {
        // SAFETY: MADV_RANDOM changes only the kernel's readahead policy for
        // pages of this range, which is a mapping of this process (read from
        // /proc/self/maps); it changes no byte of memory, no protection and
        // no mapping, so no reference or pointer Rust holds is affected. A
        // range unmapped meanwhile makes madvise fail with ENOMEM, ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_RANDOM);
        }
    }
}

/// The mappings of this process's own binary: (start, length), from `/proc/self/maps`.
fn own_mappings() -> Vec<(usize, usize)> {
    let (Ok(exe), Ok(maps)) = (std::fs::read_link("/proc/self/exe"), std::fs::read_to_string("/proc/self/maps")) else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(|line| {
            // "start-end perms offset dev inode   path": addresses hold no '/'.
            let path = std::path::Path::new(&line[line.find('/')?..]);
            let (start, end) = line.split_whitespace().next()?.split_once('-')?;
            let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
            (path == exe && end > start).then_some((start, end - start))
        })
        .collect()
}

/// Gives the allocator's free memory back to the system before a plan
/// measures what the process holds: a job run after another in the same
/// process (`dupgram stage all`, the Python module, the tests) would else
/// be charged for the pages the one before freed but glibc kept, and at
/// `--memory 16M` find no room left. Also after a stage whose threads
/// freed large blocks the next stage's plan counts as free (glibc keeps a
/// worker thread's freed memory in that thread's arena).
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it
    // takes a plain integer and leaves every live allocation where it is.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How many files this process may hold open, less a margin.
pub fn open_file_allowance() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if ok { (limit.rlim_cur as usize).saturating_sub(64).clamp(16, 4096) } else { 256 }
}

/// The share of the budget each part of a job may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPlan {
    pub budget: u64,
    /// What is neither planned nor ours: code, stacks, allocator slack.
    pub reserve: u64,
    /// Reader: the largest zstd window accepted is 2^this bytes.
    pub zstd_window_log: u32,
    /// Bytes set aside for the zstd window (0 without zstd input).
    pub zstd_window: u64,
    /// Longest JSON or vertical line.
    pub max_record: usize,
    /// Bytes of text per batch handed to a worker.
    pub batch_bytes: usize,
    /// Batches alive at once (the pool).
    pub batches: usize,
}

/// Bytes of read-side buffers besides batches: decoded and raw buffers, a zstd block.
const READER_BUFFERS: u64 = 448 * 1024;

/// What the inputs need to be decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZstdNeed {
    /// No zstd input.
    None,
    /// The largest window the zstd inputs' headers announce.
    Window(u64),
    /// Standard input, which may be zstd: plan a moderate window.
    Unknown,
}

/// What a fresh dupgram process takes before any work (binary, stacks,
/// allocator), generously: a nominal plan counts this much.
const NOMINAL_BASE: u64 = 8 << 20;

/// The file-backed part of [`NOMINAL_BASE`]: code and libraries.
const NOMINAL_CODE: u64 = 6 << 20;

/// What the process holds resident when a job plans its memory.
#[derive(Debug, Clone, Copy)]
struct Start {
    /// All of it (`VmRSS`).
    resident: u64,
    /// The code a job may still page in: see [`code_growth`].
    code_growth: u64,
}

/// The file-backed memory (`RssFile`: the binary's code, the libraries')
/// when this process made its first plan.
static FIRST_CODE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// How much code a job planned now may still page in. A page of code
/// becomes resident the first time it runs, so a job's later passes (the
/// merge, the output) add to the RSS though they allocate nothing: at
/// `--memory 16M` the tests' build went from 5.8 MB file-backed at the plan
/// to 9.2–9.5 MB at the peak, the release build from 5.1 to 7.8–8.0 MB,
/// 55–64 % more. So the code is taken to grow to 3/2 of what the process
/// held at its first plan (bigger builds page in more) and no further: a
/// later job in the same process (tasks run one after another, the tests)
/// has most of it resident already, and is not charged for it twice. The
/// part over 3/2 is the reserve's fixed slack's to cover.
fn code_growth(first: u64, now: u64) -> u64 {
    (first / 2 * 3).saturating_sub(now)
}

impl MemoryPlan {
    /// The smallest `--memory` accepted.
    pub const MINIMUM: u64 = 16 << 20;

    pub fn new(budget: u64, threads: usize, zstd: ZstdNeed) -> Result<MemoryPlan, String> {
        return_freed_memory();
        let resident = current_rss().unwrap_or(4 << 20).max(2 << 20);
        let code = status_bytes("RssFile:").unwrap_or(NOMINAL_CODE).min(resident);
        let first = *FIRST_CODE.get_or_init(|| code);
        Self::with_base(budget, threads, zstd, Start { resident, code_growth: code_growth(first, code) })
    }

    /// The plan of a process that starts at a nominal size, whatever this
    /// one's is: the same for every task of a job, where a choice made from
    /// it must agree between tasks.
    pub fn nominal(budget: u64, threads: usize, zstd: ZstdNeed) -> Result<MemoryPlan, String> {
        Self::with_base(budget, threads, zstd, Start { resident: NOMINAL_BASE, code_growth: NOMINAL_CODE / 2 })
    }

    /// The zstd window this plan set aside, as a plan for another budget asks for it.
    pub fn zstd_need(&self) -> ZstdNeed {
        if self.zstd_window > 0 { ZstdNeed::Window(self.zstd_window) } else { ZstdNeed::None }
    }

    /// The least `--memory`, a whole number of 64 MiB, whose plan for a
    /// fresh process leaves `working` bytes of working memory: what a job
    /// refused for want of room can say it needs.
    pub fn least_budget_for(working: u64, threads: usize, zstd: ZstdNeed) -> u64 {
        const STEP: u64 = 64 << 20;
        let fits = |steps: u64| Self::nominal(steps * STEP, threads, zstd).is_ok_and(|p| p.working() >= working);
        // The working memory grows with the budget (all but a few percent of
        // it above the smallest budgets): search it in steps.
        let (mut short, mut enough) = (0, 1);
        while !fits(enough) && enough < 1 << 24 {
            (short, enough) = (enough, enough * 2);
        }
        while enough - short > 1 {
            let mid = short + (enough - short) / 2;
            if fits(mid) { enough = mid } else { short = mid }
        }
        enough * STEP
    }

    fn with_base(budget: u64, threads: usize, zstd: ZstdNeed, start: Start) -> Result<MemoryPlan, String> {
        if budget < Self::MINIMUM {
            return Err(format!("{} is below the minimum of {}", human_bytes(budget), human_bytes(Self::MINIMUM)));
        }
        // Allocator slack and thread stacks grow with the budget and thread count.
        let slack = (512 << 10) + budget / 32 + threads as u64 * (256 << 10);
        let reserve = start.resident + start.code_growth + slack;
        let usable = budget - reserve.min(budget);
        let zstd_window = match zstd {
            ZstdNeed::None => 0,
            ZstdNeed::Window(w) => w.max(1 << 10).next_power_of_two(),
            ZstdNeed::Unknown => (usable / 4).clamp(1 << 20, 8 << 20).next_power_of_two() / 2 * 2,
        };
        if zstd_window > usable / 2 {
            return Err(format!(
                "a zstd input needs a {} decompression window and only {} can be set aside for it; raise --memory or recompress with a smaller window (zstd --long=N / -M)",
                human_bytes(zstd_window),
                human_bytes(usable / 2)
            ));
        }
        let zstd_window_log = zstd_window.max(1 << 10).ilog2().min(31);
        let max_record = (usable / 16).clamp(256 << 10, 64 << 20) as usize;
        let batch_bytes = (usable / 128).clamp(64 << 10, 1 << 20) as usize;
        Ok(MemoryPlan {
            budget,
            reserve,
            zstd_window_log,
            zstd_window,
            max_record,
            batch_bytes,
            batches: 2 * threads + 2,
        })
    }

    /// Bytes left for the job's own structures once reading is paid for.
    /// A batch may hold a whole record, and a record's text may be copied once when unescaped.
    pub fn working(&self) -> u64 {
        let reading = self.zstd_window
            + READER_BUFFERS
            + 2 * self.max_record as u64
            + self.batches as u64 * self.batch_bytes as u64 * 3 / 2;
        self.budget.saturating_sub(self.reserve + reading)
    }
}

#[cfg(test)]
mod tests {
    /// The test binary's own mappings are found, and advised to be read a
    /// page at a time (`rr` in their `VmFlags`).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_binary_pages_its_code_in_as_it_runs() {
        let own = super::own_mappings();
        assert!(!own.is_empty(), "no mapping of the test binary found");
        super::page_in_code_as_it_runs();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut advised = 0;
        let mut current = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((start, _)) = range.split_once('-')
                && let Ok(start) = usize::from_str_radix(start, 16)
            {
                current = Some(start);
            } else if let Some(flags) = line.strip_prefix("VmFlags:")
                && current.is_some_and(|c| own.iter().any(|&(s, _)| s == c))
            {
                assert!(flags.split_whitespace().any(|f| f == "rr"), "{current:x?}: {flags}");
                advised += 1;
            }
        }
        assert_eq!(advised, own.len(), "every mapping of the binary advised");
    }

    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        // Spin until the clock shows the work; on a loaded machine that takes
        // longer than the work itself, so the wall-clock bound is generous
        // and only there to fail a clock that never moves.
        let before = cpu_seconds().unwrap();
        let mut x = 1u64;
        let started = std::time::Instant::now();
        let mut after = before;
        while after <= before + 0.02 && started.elapsed().as_secs() < 60 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = cpu_seconds().unwrap();
        }
        assert!(after > before + 0.02, "{before} → {after}");
    }

    #[test]
    fn code_is_charged_once_per_process() {
        // The first plan: half as much again as is resident.
        assert_eq!(code_growth(6 << 20, 6 << 20), 3 << 20);
        // A later one, after a job paged in 2 MB: only the rest.
        assert_eq!(code_growth(6 << 20, 8 << 20), 1 << 20);
        // Past the ceiling: nothing more.
        assert_eq!(code_growth(6 << 20, 10 << 20), 0);
        let fresh = MemoryPlan::with_base(64 << 20, 2, ZstdNeed::None, FRESH).unwrap();
        let warm = MemoryPlan::with_base(64 << 20, 2, ZstdNeed::None, Start { code_growth: 0, ..FRESH }).unwrap();
        assert_eq!(fresh.reserve - warm.reserve, FRESH.code_growth);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("16M"), Ok(16 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5X").is_err());
        assert!(parse_bytes("0").is_err());
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    /// A fresh release process: 5.9 MB resident, 5.1 MB of it code.
    const FRESH: Start = Start { resident: 6 << 20, code_growth: 5 << 19 };

    #[test]
    fn plans_leave_room_to_work() {
        for budget in [16u64 << 20, 64 << 20, 1 << 30, 8 << 30] {
            for zstd in [ZstdNeed::None, ZstdNeed::Window(2 << 20), ZstdNeed::Unknown] {
                // A fresh process's size: this test process's own depends
                // on what the tests beside it hold at the moment.
                let plan = MemoryPlan::with_base(budget, 2, zstd, FRESH).unwrap();
                // At the minimum the code and the reading take most of it.
                let floor = if budget == MemoryPlan::MINIMUM { 2 << 20 } else { budget / 4 };
                assert!(plan.working() > floor, "{budget}: {plan:?} leaves {}", plan.working());
                assert!(plan.zstd_window <= budget / 4);
            }
        }
        assert!(MemoryPlan::with_base(8 << 20, 2, ZstdNeed::None, FRESH).is_err());
        let err = MemoryPlan::with_base(16 << 20, 2, ZstdNeed::Window(128 << 20), FRESH).unwrap_err();
        assert!(err.contains("128.0 MiB decompression window"), "{err}");
    }

    /// The budget named for a working memory is the least step that leaves it.
    #[test]
    fn the_least_budget_for_a_working_memory_leaves_it() {
        let working = |budget| MemoryPlan::nominal(budget, 2, ZstdNeed::None).unwrap().working();
        for need in [1 << 20, 100 << 20, 1 << 30, 3_000_000_000] {
            let least = MemoryPlan::least_budget_for(need, 2, ZstdNeed::None);
            assert_eq!(least % (64 << 20), 0);
            assert!(working(least) >= need, "{need}: {least}");
            assert!(least == 64 << 20 || working(least - (64 << 20)) < need, "{need}: {least}");
        }
    }
}
