//! `dupgram slurm` / `dupgram stage`: the staged job equals the one-machine
//! one byte for byte, resumes after a kill, and refuses changed inputs.
//! (The same through a real Slurm: `scripts/slurm-check.sh`, run by CI.)

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One-machine `dupgram ngrams` on `inputs` with `extra` options: the output and the lexicon.
fn one_machine(dir: &Path, inputs: &[&Path], extra: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let (out, lexicon) = (dir.join("one.tsv"), dir.join("one.tsv.lex"));
    let mut args: Vec<&str> = vec!["ngrams"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-q", "-o", s(&out), "--lexicon", s(&lexicon)]);
    args.extend(extra);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    (std::fs::read(&out).unwrap(), std::fs::read(dir.join("one.tsv.lex")).unwrap())
}

/// `dupgram slurm ngrams … --local`: every task in this process.
fn staged(dir: &Path, name: &str, inputs: &[&Path], extra: &[&str], shards: &str, buckets: &str) -> (i32, String) {
    let (out, lexicon) = (dir.join(format!("{name}.tsv")), dir.join(format!("{name}.tsv.lex")));
    let work = dir.join(format!("{name}.work"));
    let mut args: Vec<&str> = vec!["slurm", "ngrams"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-o", s(&out), "--lexicon", s(&lexicon), "--workdir", s(&work)]);
    args.extend(["--shards", shards, "--buckets", buckets, "--local"]);
    args.extend(extra);
    let (code, _, stderr) = run(&args);
    (code, stderr)
}

fn assert_same(dir: &Path, name: &str, expect: &(Vec<u8>, Vec<u8>), what: &str) {
    let got = std::fs::read(dir.join(format!("{name}.tsv"))).unwrap();
    assert!(got == expect.0, "{what}: staged output differs ({} vs {} bytes)", got.len(), expect.0.len());
    let lexicon = std::fs::read(dir.join(format!("{name}.tsv.lex"))).unwrap();
    assert!(lexicon == expect.1, "{what}: staged lexicon differs");
}

#[test]
fn staged_jobs_equal_the_one_machine_job() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let texts = generated(&big, 60_000, 11, 400);
    let text = dir.path().join("big.txt");
    std::fs::write(&text, texts.iter().map(|t| format!("{t}\n")).collect::<String>()).unwrap();
    let small: Vec<PathBuf> = (0..5)
        .map(|i| {
            let p = dir.path().join(format!("part{i}.jsonl"));
            generated(&p, 6_000, 20 + i, 200);
            p
        })
        .collect();
    let zst = dir.path().join("part.jsonl.zst");
    std::fs::write(&zst, zstd::encode_all(std::fs::read(&small[0]).unwrap().as_slice(), 3).unwrap()).unwrap();
    let parts: Vec<&Path> = small.iter().map(PathBuf::as_path).collect();
    // (name, inputs, options, shards, buckets)
    type Case<'a> = (&'a str, Vec<&'a Path>, Vec<&'a str>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        // One plain file cut into byte ranges; many runs per shard.
        ("ranges", vec![&big], vec!["-n", "6", "--memory", "20M", "--threads", "2"], "4", "4"),
        ("ranges7x3", vec![&big], vec!["-n", "3", "--memory", "24M"], "7", "3"),
        // Whole files, more files than shards; a compressed one among them.
        ("files", [parts.clone(), vec![&zst]].concat(), vec!["-n", "5", "--memory", "32M"], "3", "5"),
        // Stop words by rank are chosen from the whole corpus (no sieve then).
        ("stoptop", vec![&big], vec!["-n", "4", "--stop-top", "20", "--min-count", "3"], "3", "2"),
        ("nosieve", vec![&big], vec!["-n", "8", "--no-sieve"], "2", "1"),
        // Plain text, one document per line, cut into ranges too.
        ("text", vec![&text], vec!["-n", "5", "--memory", "20M"], "5", "2"),
    ];
    for (name, inputs, extra, shards, buckets) in cases {
        let expect = one_machine(dir.path(), &inputs, &extra);
        assert!(!expect.0.is_empty(), "{name}: the corpus has duplicates");
        let (code, stderr) = staged(dir.path(), name, &inputs, &extra, shards, buckets);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(stderr.contains("duplicate n-grams"), "{name}: a summary: {stderr}");
        assert_same(dir.path(), name, &expect, name);
        let work = dir.path().join(format!("{name}.work"));
        assert!(leftovers(&work.join("runs")).is_empty(), "{name}: runs removed after finish");
        assert!(leftovers(&work.join("tmp")).is_empty(), "{name}: no temporary files left");
    }
}

#[test]
fn vertical_files_are_cut_at_documents() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("c.jsonl");
    let texts = generated(&jsonl, 30_000, 4, 300);
    let vertical: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("<doc id=\"{i}\">\n<p>\n{}\n</p>\n</doc>\n", t.replace(' ', "\n")))
        .collect();
    let vert = dir.path().join("c.vert");
    std::fs::write(&vert, vertical).unwrap();
    let expect = one_machine(dir.path(), &[&vert], &["-n", "7"]);
    let (code, stderr) = staged(dir.path(), "vert", &[&vert], &["-n", "7"], "5", "3");
    assert_eq!(code, 0, "{stderr}");
    assert_same(dir.path(), "vert", &expect, "vertical");
}

#[test]
fn a_map_task_killed_midway_is_redone_and_the_output_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 1_500_000, 9, 3000);
    // A map task's sieve is planned for every task alike, from a nominal
    // process: at 16M a debug build's own 14.5 MiB left the task run by
    // `stage all` no room for chunks some of the time.
    let options = ["-n", "10", "--memory", "20M", "--threads", "1"];
    let expect = one_machine(dir.path(), &[&corpus], &options);
    let work = dir.path().join("job.work");
    let out = dir.path().join("job.tsv");
    let lexicon = dir.path().join("job.tsv.lex");
    // Plan only, then run the stages by hand as a scheduler would.
    let mut plan =
        vec!["slurm", "ngrams", s(&corpus), "-o", s(&out), "--lexicon", s(&lexicon), "-q", "--workdir", s(&work)];
    plan.extend(["--shards", "2", "--buckets", "3", "--dry-run", "--partition", "batch", "--sbatch=--time=1:00:00"]);
    plan.extend(options);
    let (code, _, stderr) = run(&plan);
    assert_eq!(code, 0, "{stderr}");
    let script = std::fs::read_to_string(work.join("slurm/map.sbatch")).unwrap();
    for line in ["#SBATCH --array=0-1", "#SBATCH --mem=20M", "#SBATCH --partition=batch", "#SBATCH --time=1:00:00"] {
        assert!(script.lines().any(|l| l == line), "{line} in {script}");
    }
    assert!(work.join("slurm/reduce.sbatch").is_file() && !work.join("slurm/pairs.sbatch").exists());
    for stage in [["lexicon", "0"], ["lexicon", "1"], ["vocab", "0"]] {
        let (code, _, stderr) = run(&["stage", stage[0], "--workdir", s(&work), "--index", stage[1]]);
        assert_eq!(code, 0, "{stderr}");
    }
    // A reduce before its maps is refused.
    let (code, _, stderr) = run(&["stage", "reduce", "--workdir", s(&work), "--index", "0"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("needs map-0000, which has not finished"), "{stderr}");

    // Kill it once it has written its first run, well before the end.
    let runs = work.join("runs");
    kill_once_a_run_is_written(&["stage", "map", "--workdir", s(&work), "--index", "0"], &runs);
    assert!(!work.join("tasks/map-0000.json").exists(), "the task was killed before it finished");
    assert!(!leftovers(&runs).is_empty(), "it left its temporary runs behind");

    // SIGTERM (what Slurm sends on scancel or a time limit): a clean stop, exit 130, nothing left.
    let child = dupgram()
        .args(["stage", "map", "--workdir", s(&work), "--index", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first_run = |shard: &str| {
        leftovers(&runs).iter().any(|d| {
            d.file_name().unwrap().to_string_lossy().starts_with(shard)
                && leftovers(d).iter().any(|f| f.extension().is_some_and(|e| e == "dgr"))
        })
    };
    let started = std::time::Instant::now();
    while !first_run("map-0001") && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(2));
    }
    // Sent from here, not by a `kill` process: under a loaded test run, starting
    // one took long enough for the task to finish first now and then.
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) only sends a signal; it reads and writes no memory of
    // this process, and `pid` is our own child, not yet waited for.
    let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM sent");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(!first_run("map-0001"), "its temporary runs are removed");
    assert!(!work.join("tasks/map-0001.json").exists());

    let (code, _, stderr) = run(&["stage", "all", "--workdir", s(&work)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("lexicon-0001   already done"), "{stderr}");
    assert!(stderr.contains("map-0000       done"), "{stderr}");
    // The killed task's leftovers were removed when it ran again, and it said so.
    assert!(stderr.contains(&format!("left in {} by killed dupgram jobs", runs.display())), "{stderr}");
    assert!(!leftovers(&runs).iter().any(|d| d.file_name().unwrap().to_string_lossy().starts_with("map-0000.tmp")));
    assert_same(dir.path(), "job", &expect, "after a kill");
    // Run again: everything is done, nothing is redone.
    let (code, _, stderr) = run(&["stage", "all", "--workdir", s(&work)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.matches("already done").count(), 2 + 1 + 2 + 3 + 1, "{stderr}");
}

#[test]
fn a_plan_only_job_writes_no_scripts_and_its_stages_run_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let parts: Vec<PathBuf> = (0..3)
        .map(|i| {
            let p = dir.path().join(format!("part{i}.jsonl"));
            generated(&p, 5_000, 40 + i, 200);
            p
        })
        .collect();
    let inputs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let expect = one_machine(dir.path(), &inputs, &["-n", "6"]);
    let (work, out, lexicon) = (dir.path().join("w"), dir.path().join("job.tsv"), dir.path().join("job.tsv.lex"));
    let mut plan: Vec<&str> = vec!["slurm", "ngrams"];
    plan.extend(inputs.iter().map(|p| s(p)));
    plan.extend(["-n", "6", "-q", "-o", s(&out), "--lexicon", s(&lexicon), "--workdir", s(&work)]);
    plan.extend(["--shards", "3", "--buckets", "2"]);
    let (code, _, stderr) = run(&[plan.as_slice(), &["--plan-only", "--local"]].concat());
    assert_ne!(code, 0, "--plan-only and --local conflict: {stderr}");
    let (code, _, stderr) = run(&[plan.as_slice(), &["--plan-only"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(work.join("job.json").is_file());
    assert!(leftovers(&work.join("slurm")).is_empty(), "no scripts");
    assert!(!out.exists());
    let tasks = [("lexicon", 3), ("vocab", 1), ("map", 3), ("reduce", 2), ("finish", 1)];
    for (stage, count) in tasks {
        for i in 0..count {
            let (code, _, stderr) = run(&["stage", stage, "--workdir", s(&work), "--index", &i.to_string()]);
            assert_eq!(code, 0, "{stage} {i}: {stderr}");
        }
    }
    assert_same(dir.path(), "job", &expect, "planned only, run by hand");
}

/// A growing vocabulary (most words seen once, as in web text) through the
/// stages at a real budget too small for a shard's words, nothing forced:
/// each task run by hand, as a scheduler runs it (a process of its own), its
/// lexicon tasks' tables frozen, the output the one-machine job's, and
/// every task's peak memory within the budget.
#[test]
fn staged_tasks_keep_to_the_budget_whatever_the_vocabulary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.txt");
    // 3M tokens: enough words that a lexicon task holding its shard's whole
    // vocabulary stops at this budget.
    let texts = texts(open_vocabulary(7, 3_000_000));
    std::fs::write(&path, texts.join("\n") + "\n").unwrap();
    let options = ["-n", "3", "--memory", "24M", "--threads", "1"];
    let expect = one_machine(dir.path(), &[&path], &options);
    let (work, out, lexicon) = (dir.path().join("w"), dir.path().join("job.tsv"), dir.path().join("job.tsv.lex"));
    let mut plan: Vec<&str> = vec!["slurm", "ngrams", s(&path), "-q", "-o", s(&out), "--lexicon", s(&lexicon)];
    plan.extend(["--workdir", s(&work), "--shards", "3", "--buckets", "2", "--plan-only"]);
    plan.extend(options);
    let (code, _, stderr) = run(&plan);
    assert_eq!(code, 0, "{stderr}");
    for (stage, count) in [("lexicon", 3), ("vocab", 1), ("map", 3), ("reduce", 2), ("finish", 1)] {
        for i in 0..count {
            let (code, _, stderr) = run(&["stage", stage, "--workdir", s(&work), "--index", &i.to_string()]);
            assert_eq!(code, 0, "{stage} {i}: {stderr}");
        }
    }
    assert_same(dir.path(), "job", &expect, "a growing vocabulary in 24M");
    let mut frozen = 0;
    for entry in std::fs::read_dir(work.join("tasks")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        let record: serde_json::Value = serde_json::from_str(body).unwrap();
        let rss = record["stats"]["peak_rss"].as_u64().unwrap();
        assert!(rss < 24 << 20, "{}: {rss} bytes", record["task"]);
        frozen += u64::from(record["stats"]["overflow_words"].as_u64().unwrap() > 0);
    }
    assert_eq!(frozen, 3, "every lexicon task's table froze");
}

#[test]
fn changed_inputs_and_other_jobs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 20_000, 2, 300);
    let work = dir.path().join("w");
    let out = dir.path().join("o.tsv");
    let plan = |n: &str| {
        run(&["slurm", "ngrams", s(&corpus), "-n", n, "-o", s(&out), "--workdir", s(&work), "--dry-run", "-q"])
    };
    assert_eq!(plan("5").0, 0);
    let (code, _, stderr) = plan("6");
    assert_eq!(code, 1);
    assert!(stderr.contains("already holds another job"), "{stderr}");
    let (code, _, stderr) = run(&["stage", "lexicon", "--workdir", s(&work), "--index", "0"]);
    assert_eq!(code, 0, "{stderr}");

    // A day's text appended to the planned file.
    let mut f = std::fs::OpenOptions::new().append(true).open(&corpus).unwrap();
    std::io::Write::write_all(&mut f, b"{\"text\": \"one more document\"}\n").unwrap();
    let (code, _, stderr) = run(&["stage", "lexicon", "--workdir", s(&work), "--index", "1"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("changed since the job was planned") && stderr.contains("size was"), "{stderr}");
    let (code, _, stderr) = plan("5");
    assert_eq!(code, 1, "resubmitting the same job notices the change too: {stderr}");
    assert!(!out.exists());

    let (code, _, stderr) =
        run(&["slurm", "ngrams", s(&corpus), "-o", s(&out), "--workdir", s(&dir.path().join("z")), "--shards", "0"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--shards and --buckets must be at least 1"), "{stderr}");
    let (code, _, stderr) = run(&["stage", "map", "--workdir", s(&work), "--index", "9"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("this job has 4 shards"), "{stderr}");
    let (code, _, stderr) = run(&["stage", "vocab", "--workdir", s(&dir.path().join("nothing"))]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no job planned here"), "{stderr}");
    // A damaged plan is refused, not trusted.
    let job = work.join("job.json");
    let mut text = std::fs::read(&job).unwrap();
    let at = text.len() - 10;
    text[at] ^= 1;
    std::fs::write(&job, text).unwrap();
    let (code, _, stderr) = run(&["stage", "vocab", "--workdir", s(&work)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("job.json") && stderr.contains("checksum mismatch"), "{stderr}");
    let (code, _, stderr) = run(&["slurm", "ngrams", "-", "-o", s(&out), "--workdir", s(&work), "--local"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("standard input cannot be cut"), "{stderr}");
}

#[test]
fn staged_pairs_equal_one_machine_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 40_000, 8, 300);
    let one = (dir.path().join("one.tsv"), dir.path().join("one.clusters"));
    let options = ["-n", "5", "--min-sscr", "0.2", "--memory", "32M", "-q"];
    let mut args = vec!["pairs", s(&corpus), "-o", s(&one.0), "--clusters", s(&one.1)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let staged = (dir.path().join("staged.tsv"), dir.path().join("staged.clusters"));
    let work = dir.path().join("w");
    let mut args = vec!["slurm", "pairs", s(&corpus), "-o", s(&staged.0), "--clusters", s(&staged.1)];
    args.extend(["--workdir", s(&work), "--shards", "3", "--buckets", "2", "--local"]);
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    for task in ["index-0002", "postings-0001", "candidates-0001", "score-0002", "finish"] {
        assert!(stderr.contains(&format!("{task:<14} done")), "{task}: {stderr}");
    }
    let pairs = std::fs::read_to_string(&one.0).unwrap();
    assert!(pairs.lines().count() > 10, "the corpus has similar documents: {pairs}");
    assert_eq!(std::fs::read_to_string(&staged.0).unwrap(), pairs);
    assert_eq!(std::fs::read(&staged.1).unwrap(), std::fs::read(&one.1).unwrap());
    let (code, _, stderr) = run(&["stage", "score", "--workdir", s(&work), "--index", "1"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("score-0001     already done"), "{stderr}");
    let (code, _, stderr) = run(&["stage", "reduce", "--workdir", s(&work)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("this job (pairs) has no task reduce-0000"), "{stderr}");
}

#[test]
fn staged_pairs_expand_groups_as_one_machine_does() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    let texts = generated(&corpus, 30_000, 9, 300);
    let copies = texts.iter().enumerate().filter(|(i, t)| texts[..*i].contains(t)).count();
    assert!(copies > 3, "the generator's exact copies make groups");
    let options = ["-n", "5", "--min-sscr", "0.2", "--memory", "32M", "-q", "--expand-groups"];
    let (one, grouped, staged) = (dir.path().join("one.tsv"), dir.path().join("g.tsv"), dir.path().join("s.tsv"));
    let mut args = vec!["pairs", s(&corpus), "-o", s(&one)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let mut args = vec!["pairs", s(&corpus), "-o", s(&grouped)];
    args.extend(&options[..options.len() - 1]);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let work = dir.path().join("w");
    let mut args = vec!["slurm", "pairs", s(&corpus), "-o", s(&staged)];
    args.extend(["--workdir", s(&work), "--shards", "3", "--buckets", "2", "--local"]);
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let one = std::fs::read_to_string(&one).unwrap();
    assert!(one.lines().count() > std::fs::read_to_string(&grouped).unwrap().lines().count(), "copies added");
    assert_eq!(std::fs::read_to_string(&staged).unwrap(), one);
}

/// Runs `dupgram args` and kills it (SIGKILL) once a run file appears in a
/// task directory under `dir` (or after a minute).
fn kill_once_a_run_is_written(args: &[&str], dir: &Path) {
    let mut child = dupgram().args(args).stderr(std::process::Stdio::null()).spawn().unwrap();
    let started = std::time::Instant::now();
    loop {
        let written =
            leftovers(dir).iter().any(|d| leftovers(d).iter().any(|f| f.extension().is_some_and(|e| e == "dgr")));
        if written || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Sorted lines: an update numbers new words after old ones, so its lines
/// come in another order than a fresh count's.
fn sorted_lines(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn base_plus_updates_equals_a_full_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let texts = generated(&path("all.jsonl"), 60_000, 13, 500);
    let lines: Vec<String> = std::fs::read_to_string(path("all.jsonl")).unwrap().lines().map(str::to_owned).collect();
    let cut = |name: &str, range: std::ops::Range<usize>| {
        std::fs::write(path(name), lines[range].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    };
    let (a, b) = (lines.len() * 8 / 10, lines.len() * 9 / 10);
    cut("base.jsonl", 0..a);
    cut("day1.jsonl", a..b);
    cut("day2.jsonl", b..lines.len());
    let work = path("w");
    let options = ["-n", "6", "--memory", "24M", "-q"];
    let (base, base_out) = (path("base.jsonl"), path("base.tsv"));
    let mut plan = vec!["slurm", "ngrams", s(&base), "-o", s(&base_out), "--workdir", s(&work)];
    plan.extend(["--shards", "2", "--buckets", "3", "--local", "--keep-state"]);
    plan.extend(options);
    let (code, _, stderr) = run(&plan);
    assert_eq!(code, 0, "{stderr}");

    let full = |upto: usize, name: &str| {
        let texts: Vec<String> = texts[..upto].to_vec();
        let mut expect: Vec<String> = naive(&texts, 6).into_iter().map(|(g, c)| format!("{g}\t{c}")).collect();
        expect.sort();
        assert!(!expect.is_empty(), "{name}");
        expect
    };
    let mut before: Vec<String> = full(a, "base");
    // Day 1 adds a segment of its own counts; day 2, at two segments a bucket, merges them into one.
    for (day, upto, max_segments, segments) in
        [("day1.jsonl", b, "8", "6 segments"), ("day2.jsonl", lines.len(), "2", "3 segments")]
    {
        let (today, all) = (path(&format!("{day}.new.tsv")), path(&format!("{day}.all.tsv")));
        let input = path(day);
        let mut args = vec!["update", "--workdir", s(&work), s(&input), "-o", s(&today), "--all", s(&all)];
        let stats = path(&format!("{day}.json"));
        args.extend(["--max-segments", max_segments, "--stats-json", s(&stats)]);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains(segments), "{stderr}");
        let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(stats["newly_duplicated"].as_u64().unwrap() as usize, sorted_lines(&today).len());
        assert!(stderr.contains("newly"), "a summary: {stderr}");
        let expect = full(upto, day);
        assert_eq!(sorted_lines(&all), expect, "{day}: base + updates = a full count");
        // Newly duplicated: in the full count now, and under --min-count before.
        let old: std::collections::HashSet<&str> = before.iter().map(|l| l.rsplit_once('\t').unwrap().0).collect();
        let new: Vec<String> =
            expect.iter().filter(|l| !old.contains(l.rsplit_once('\t').unwrap().0)).cloned().collect();
        assert!(!new.is_empty());
        assert_eq!(sorted_lines(&today), new, "{day}: the n-grams that became duplicated");
        before = expect;
    }
    assert!(work.join("state/gen-0002/lexicon.lex").is_file());
    assert!(work.join("state/gen-0002/bucket-0000.dgr").is_file());
    for old in ["state/gen-0000", "state/gen-0001"] {
        assert!(!work.join(old).exists(), "{old}: generations no segment lies in are removed");
    }

    // The same file twice would count its n-grams twice.
    let (code, _, stderr) = run(&["update", "--workdir", s(&work), s(&path("day1.jsonl")), "-o", s(&path("x.tsv"))]);
    assert_eq!(code, 1);
    assert!(stderr.contains("counted this file already"), "{stderr}");
    assert!(!path("x.tsv").exists());
}

#[test]
fn updates_need_a_kept_state_and_survive_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 20_000, 3, 300);
    let day = dir.path().join("day.jsonl");
    generated(&day, 5_000, 4, 300);
    let plain = dir.path().join("plain");
    let out = dir.path().join("o.tsv");
    let (code, _, stderr) =
        run(&["slurm", "ngrams", s(&corpus), "-o", s(&out), "--workdir", s(&plain), "--local", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(&["update", "--workdir", s(&plain), s(&day)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("plan it with --keep-state"), "{stderr}");

    let kept = dir.path().join("kept");
    let (code, _, stderr) =
        run(&["slurm", "ngrams", s(&corpus), "-o", s(&out), "--workdir", s(&kept), "--local", "--keep-state", "-q"]);
    assert_eq!(code, 0, "{stderr}");
    // A malformed line in the new documents stops the update, naming file and line; the state stays.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"text\": \"fine\"}\n{\"text\": broken\n").unwrap();
    let (code, _, stderr) = run(&["update", "--workdir", s(&kept), s(&bad), "-o", s(&dir.path().join("no.tsv"))]);
    assert_eq!(code, 1);
    assert!(stderr.contains("bad.jsonl") && stderr.contains("line 2"), "{stderr}");
    assert!(!dir.path().join("no.tsv").exists());
    assert!(kept.join("state/gen-0000/bucket-0000.dgr").is_file() && !kept.join("tasks/update-0001.json").exists());
    // What a killed update leaves: a half-written next generation, its lock
    // free, named with the ID of a process that is gone (above any pid_max).
    let half = kept.join(format!("state/gen-0001.tmp-{}-XYZ123", (1 << 22) + 1));
    std::fs::create_dir_all(&half).unwrap();
    std::fs::write(half.join("dupgram.lock"), b"").unwrap();
    std::fs::write(half.join("bucket-0000.dgr"), b"half").unwrap();
    let today = dir.path().join("today.tsv");
    let (code, _, stderr) = run(&["update", "--workdir", s(&kept), s(&day), "-o", s(&today), "-q"]);
    assert_eq!(code, 0, "{stderr}");
    let notice = format!(
        "dupgram: removed 1 temporary directory (4 B) left in {} by killed dupgram jobs",
        kept.join("state").display()
    );
    assert!(stderr.contains(&notice), "{stderr}");
    assert!(!half.exists());
    assert!(kept.join("state/gen-0001/bucket-0000.dgr").is_file());
    assert!(today.is_file());
}

#[test]
fn updates_list_the_new_documents_that_share_older_text() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, docs: &[(&str, &str)]| {
        let path = dir.path().join(name);
        let text: String =
            docs.iter().map(|(id, t)| format!("{}\n", serde_json::json!({ "id": id, "text": t }))).collect();
        std::fs::write(&path, text).unwrap();
        path
    };
    let base = write(
        "base.jsonl",
        &[
            ("a", "alpha beta gamma delta epsilon zeta eta theta"),
            ("b", "one two three four five six"),
            ("c", "red green blue cyan magenta yellow"),
        ],
    );
    let day = write(
        "day.jsonl",
        &[
            // The first six words of a, then new ones: 6 of 10 tokens covered.
            ("from-a", "Alpha beta gamma delta epsilon zeta kappa lambda mu nu"),
            ("new", "sun moon star comet planet"),
            // A copy of b with a tab in its ID.
            ("copy\tof-b", "one two three four five six"),
            // Two new documents sharing text only with each other: not listed.
            ("twin-1", "north south east west up down"),
            ("twin-2", "north south east west left right"),
        ],
    );
    let work = dir.path().join("w");
    let out = dir.path().join("o.tsv");
    let (code, _, stderr) = run(&[
        "slurm",
        "ngrams",
        s(&base),
        "-n",
        "3",
        "-o",
        s(&out),
        "--workdir",
        s(&work),
        "--local",
        "--keep-state",
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let docs = dir.path().join("docs.tsv");
    let (code, _, stderr) =
        run(&["update", "--workdir", s(&work), s(&day), "-o", s(&dir.path().join("new.tsv")), "--documents", s(&docs)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("in 2 new documents"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&docs).unwrap(),
        "id\ttokens\tcovered\tcover\nfrom-a\t10\t6\t0.600000\ncopy\\tof-b\t6\t6\t1.000000\n"
    );
}

#[test]
fn a_pairs_index_task_killed_midway_is_redone_and_the_pairs_are_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 600_000, 12, 3000);
    // An index task holds a stream reader and a side file reader (about
    // 0.9 MiB) besides its postings: at 16M a debug build's own 14.5 MiB
    // left it no room some of the time.
    let options = ["-n", "6", "--min-sscr", "0.3", "--memory", "20M", "--threads", "1", "-q"];
    let one = dir.path().join("one.tsv");
    let mut args = vec!["pairs", s(&corpus), "-o", s(&one)];
    args.extend(options);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let work = dir.path().join("job.work");
    let out = dir.path().join("job.tsv");
    let mut plan = vec!["slurm", "pairs", s(&corpus), "-o", s(&out), "--workdir", s(&work), "--dry-run"];
    plan.extend(["--shards", "2", "--buckets", "2"]);
    plan.extend(options);
    let (code, _, stderr) = run(&plan);
    assert_eq!(code, 0, "{stderr}");
    for stage in ["lexicon", "candidates", "score"] {
        assert!(work.join(format!("slurm/{stage}.sbatch")).is_file(), "{stage}");
    }
    for stage in [["lexicon", "0"], ["lexicon", "1"], ["vocab", "0"]] {
        let (code, _, stderr) = run(&["stage", stage[0], "--workdir", s(&work), "--index", stage[1]]);
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, _, stderr) = run(&["stage", "score", "--workdir", s(&work), "--index", "1"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("needs candidates-0000, which has not finished"), "{stderr}");

    // Kill it once it has written its first postings run, well before the end.
    let postings = work.join("pairs/postings");
    kill_once_a_run_is_written(&["stage", "index", "--workdir", s(&work), "--index", "0"], &postings);
    assert!(!work.join("tasks/index-0000.json").exists(), "the task was killed before it finished");
    assert!(!leftovers(&postings).is_empty(), "it left its temporary runs behind");
    let (code, _, stderr) = run(&["stage", "all", "--workdir", s(&work)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("index-0000     done") && stderr.contains("vocab          already done"), "{stderr}");
    let pairs = std::fs::read_to_string(&one).unwrap();
    assert!(pairs.lines().count() > 10, "{pairs}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), pairs);
    assert!(leftovers(&work.join("pairs")).is_empty(), "finish removes the pairs spill");
}

/// Lines `a<TAB>b<TAB>...` of a pairs file (header left out) whose `a` is in `older` and `b` in `newer`.
fn cross_pairs(path: &Path, older: &[String], newer: &[String]) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .filter(|l| {
            let mut f = l.split('\t');
            let (a, b) = (f.next().unwrap().to_owned(), f.next().unwrap().to_owned());
            older.contains(&a) && newer.contains(&b)
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn updates_with_postings_score_the_pairs_with_older_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    // Exact copies within each part and across them: groups of identical
    // documents with older and new members, one over --max-group-pairs 3.
    let spec = dupgram_testkit::CorpusSpec {
        seed: 21,
        tokens: 50_000,
        vocabulary: 600,
        mean_doc_len: 70,
        exact_copies: 0.05,
        ..Default::default()
    };
    let mut texts = texts(spec);
    let (a, b) = (texts.len() * 7 / 10, texts.len() * 85 / 100);
    let (x, y, z) = (texts[3].clone(), texts[10].clone(), texts[a + 2].clone());
    for (at, text) in [(b + 5, &x), (a + 9, &y), (a + 3, &x), (b + 1, &y), (a + 12, &y), (a + 30, &y), (b + 2, &z)] {
        texts[at] = text.clone();
    }
    let docs: Vec<(String, String)> = texts.into_iter().enumerate().map(|(i, t)| (format!("d{i}"), t)).collect();
    let parts = [("base.jsonl", 0..a), ("day1.jsonl", a..b), ("day2.jsonl", b..docs.len())];
    for (name, range) in &parts {
        let lines: String = docs[range.clone()]
            .iter()
            .map(|(id, text)| format!("{}\n", serde_json::json!({ "id": id, "text": text })))
            .collect();
        std::fs::write(path(name), lines).unwrap();
    }
    let ids = |range: std::ops::Range<usize>| docs[range].iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    let work = path("w");
    let (code, _, stderr) = run(&[
        "slurm",
        "ngrams",
        s(&path("base.jsonl")),
        "-n",
        "5",
        "-q",
        "-o",
        s(&path("base.tsv")),
        "--workdir",
        s(&work),
        "--shards",
        "2",
        "--buckets",
        "3",
        "--keep-state",
        "--keep-postings",
        "--local",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run(&["ngrams", s(&path("base.jsonl")), "-n", "5", "-q", "-o", s(&path("one.tsv"))]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read(path("base.tsv")).unwrap(), std::fs::read(path("one.tsv")).unwrap());
    let expanding = path("w-expand");
    let copied = std::process::Command::new("cp").args(["-a", s(&work), s(&expanding)]).status().unwrap();
    assert!(copied.success());
    // Every option the update takes, the same for the full pairs run: grouped, then expanded.
    let grouped = ["--min-sscr", "0.05", "--min-ssr", "0.01", "--min-cover", "0.1", "--max-df", "50"];
    let options = [&grouped[..], &["--max-group-pairs", "3"]].concat();
    let expanded = [&options[..], &["--expand-groups"]].concat();
    let runs = [
        ("day1", 0..a, "1", &work, &options[..]),
        ("day2", 0..b, "8", &work, &options[..]),
        ("day1", 0..a, "1", &expanding, &expanded[..]),
        ("day2", 0..b, "8", &expanding, &expanded[..]),
    ];
    let mut sizes = Vec::new();
    for (day, older, max_segments, work, options) in runs {
        let mut args = vec!["update", "--workdir", s(work), "-q", "--max-segments", max_segments];
        let (input, pairs, all) = (path(&format!("{day}.jsonl")), path(&format!("{day}.pairs")), path("all.tsv"));
        args.extend([s(&input), "-o", "/dev/null", "--all", s(&all), "--pairs", s(&pairs)]);
        args.extend(options);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        // The whole corpus so far, on one machine.
        let so_far: Vec<PathBuf> = parts.iter().take(if day == "day1" { 2 } else { 3 }).map(|p| path(p.0)).collect();
        let mut args: Vec<&str> = vec!["pairs"];
        args.extend(so_far.iter().map(|p| s(p)));
        let full = path("full.pairs");
        args.extend(["-n", "5", "-q", "-o", s(&full)]);
        args.extend(options);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let new = ids(older.end..if day == "day1" { b } else { docs.len() });
        let expected = cross_pairs(&full, &ids(older), &new);
        assert!(expected.len() > 10, "{day}: too few pairs to tell anything");
        let got: Vec<String> = std::fs::read_to_string(&pairs).unwrap().lines().skip(1).map(str::to_owned).collect();
        assert_eq!(got, expected, "{day} {options:?}");
        sizes.push(got.len());
        let mut args: Vec<&str> = vec!["ngrams"];
        args.extend(so_far.iter().map(|p| s(p)));
        let count = path("full.tsv");
        args.extend(["-n", "5", "-q", "-o", s(&count)]);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(sorted_lines(&all), sorted_lines(&count), "{day}");
    }
    assert!(sizes[2] > sizes[0] && sizes[3] > sizes[1], "copies' pairs added: {sizes:?}");
    // Every generation holds the table of the whole corpus.
    for g in 0..3 {
        assert!(work.join(format!("state/gen-0002/docs-{g:04}.table")).is_file());
    }
}

#[test]
fn pairs_need_a_postings_state() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("c.jsonl");
    generated(&corpus, 5_000, 3, 300);
    let work = dir.path().join("w");
    let out = dir.path().join("o.tsv");
    let (code, _, stderr) =
        run(&["slurm", "ngrams", s(&corpus), "-q", "-o", s(&out), "--workdir", s(&work), "--keep-state", "--local"]);
    assert_eq!(code, 0, "{stderr}");
    let day = dir.path().join("day.jsonl");
    generated(&day, 2_000, 4, 300);
    let pairs = dir.path().join("p.tsv");
    let (code, _, stderr) = run(&["update", "--workdir", s(&work), s(&day), "-q", "--pairs", s(&pairs)]);
    assert_eq!(code, 1);
    assert!(stderr.contains("plan it with --keep-postings"), "{stderr}");
    let (code, _, stderr) =
        run(&["slurm", "ngrams", s(&corpus), "-o", s(&out), "--workdir", s(&work), "--keep-postings"]);
    assert_eq!(code, 2, "--keep-postings needs --keep-state: {stderr}");
    let (code, _, stderr) = run(&["update", "--workdir", s(&work), s(&day), "--min-sscr", "0.5"]);
    assert_eq!(code, 2, "--min-sscr needs --pairs: {stderr}");
}
