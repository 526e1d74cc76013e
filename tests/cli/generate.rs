//! `dupgram completions` and `dupgram man`, run as a user runs them.

use std::process::Command;

use crate::common::run;

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn bash_completion_script_completes_a_flag() {
    let (code, script, err) = run(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dupgram.bash");
    std::fs::write(&path, &script).unwrap();
    // Source it and ask what `dupgram dedup --attr<TAB>` completes to.
    let probe = format!(
        "source {}; COMP_WORDS=(dupgram dedup --attr); COMP_CWORD=2; _dupgram dupgram --attr dedup; echo \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = Command::new("bash").arg("-c").arg(&probe).output().expect("bash runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "--attributes");
}

#[test]
fn zsh_and_fish_scripts_parse_where_the_shells_are_installed() {
    for (shell, check) in [("zsh", vec!["-n"]), ("fish", vec!["--no-execute"])] {
        let (code, script, err) = run(&["completions", shell]);
        assert_eq!(code, 0, "{err}");
        assert!(script.contains("--attributes"), "{shell}");
        if !tool(shell) {
            eprintln!("{shell} is not installed: its script's syntax is not checked here");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script");
        std::fs::write(&path, &script).unwrap();
        let out = Command::new(shell).args(&check).arg(&path).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let (code, _, err) = run(&["completions", "powershell"]);
    assert_eq!(code, 2, "only bash, zsh and fish: {err}");
}

#[test]
fn man_page_renders() {
    let (code, page, err) = run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH dupgram 1") && page.contains(".SH \"DUPGRAM DEDUP\""));
    if !tool("groff") {
        eprintln!("groff is not installed: the page is not rendered here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dupgram.1");
    std::fs::write(&path, &page).unwrap();
    // -k reads UTF-8 (as man does); -ww reports every warning.
    let out = Command::new("groff").args(["-k", "-man", "-Tutf8", "-ww"]).arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "groff warns: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("--attributes") || text.contains("‐‐attributes"), "{}", &text[..200.min(text.len())]);
}

/// Each command's own options come under its first heading, not under the
/// "Input" heading of the shared reading options flattened into it.
#[test]
fn help_headings_hold_their_own_options() {
    for (command, own) in
        [("ngrams", "--min-count"), ("pairs", "--min-sscr"), ("dedup", "--threshold"), ("stats", "--html")]
    {
        let (code, help, _) = run(&[command, "--help"]);
        assert_eq!(code, 0);
        let heading_of = |flag: &str| {
            let option_line = |l: &str| {
                l.starts_with(&format!("      {flag} ")) || (l.starts_with("  -") && l.contains(&format!(", {flag} ")))
            };
            let at = help.lines().position(option_line);
            let at = at.unwrap_or_else(|| panic!("{command}: {flag} not in --help"));
            help.lines().take(at).filter(|l| l.ends_with(':') && !l.starts_with(' ')).last().unwrap_or("").to_owned()
        };
        assert_eq!(heading_of(own), "Options:", "{command} {own}");
        assert_eq!(heading_of("--output"), "Options:", "{command} --output");
        assert_eq!(heading_of("--text-field"), "Input:", "{command} --text-field");
        assert_eq!(heading_of("--memory"), "Resources:", "{command} --memory");
    }
}
