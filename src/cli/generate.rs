//! `dupgram completions` and `dupgram man`: shell completions and the man
//! page, generated from the clap definitions, so they cannot drift from
//! `--help` (as ripgrep generates its man page from its flag definitions).

use std::io::Write;

use clap::{Args, CommandFactory, ValueEnum};

use super::Cli;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

/// Print a shell completion script to standard output.
///
/// Install (one of):
///   dupgram completions bash > ~/.local/share/bash-completion/completions/dupgram
///   dupgram completions zsh > ~/.zfunc/_dupgram    (with fpath+=~/.zfunc before compinit)
///   dupgram completions fish > ~/.config/fish/completions/dupgram.fish
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: ShellArg,
}

/// Print the man page (roff) to standard output: every command and option.
///
/// Install:
///   dupgram man > ~/.local/share/man/man1/dupgram.1
/// Read without installing:
///   dupgram man | man -l -
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ManArgs {}

pub fn completions(args: CompletionsArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(&completion_script(args.shell))?;
    Ok(out.flush()?)
}

pub fn man(_args: ManArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(&man_page()?)?;
    Ok(out.flush()?)
}

fn completion_script(shell: ShellArg) -> Vec<u8> {
    let shell = match shell {
        ShellArg::Bash => clap_complete::Shell::Bash,
        ShellArg::Zsh => clap_complete::Shell::Zsh,
        ShellArg::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dupgram", &mut script);
    script
}

/// One page: the top-level command, then a section per subcommand, nested
/// ones too (its synopsis, description and options, their headings one level down).
fn man_page() -> std::io::Result<Vec<u8>> {
    let mut cmd = Cli::command();
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    commands_list(&cmd, "SH", &mut page)?;
    man.render_version_section(&mut page)?;
    for sub in cmd.get_subcommands() {
        subcommand_sections(sub, &mut page)?;
    }
    Ok(page)
}

/// The subcommands of `cmd`, each with what it does and where this page
/// describes it (clap_mangen's own list points to one page per command).
fn commands_list(cmd: &clap::Command, heading: &str, page: &mut Vec<u8>) -> std::io::Result<()> {
    use clap_mangen::roff::{Roff, bold, roman};
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    if subs.is_empty() {
        return Ok(());
    }
    let mut roff = Roff::default();
    roff.control(heading, ["COMMANDS"]);
    for sub in subs {
        let mut about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        if !about.is_empty() && !about.ends_with('.') {
            about.push('.');
        }
        let place = match sub.get_name() {
            "help" => String::new(),
            _ => format!(" See {} below.", sub.get_bin_name().unwrap_or_else(|| sub.get_name()).to_uppercase()),
        };
        roff.control("TP", []).text([bold(sub.get_name())]).text([roman(format!("{about}{place}"))]);
    }
    roff.to_writer(page)
}

/// A section for `cmd` and for each of its subcommands, but clap's `help`,
/// which only names the others and is listed where its parent is.
fn subcommand_sections(cmd: &clap::Command, page: &mut Vec<u8>) -> std::io::Result<()> {
    if cmd.is_hide_set() || cmd.get_name() == "help" {
        return Ok(());
    }
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    writeln!(page, ".SH \"{}\"", name.to_uppercase())?;
    let man = clap_mangen::Man::new(cmd.clone());
    let mut parts = Vec::new();
    man.render_synopsis_section(&mut parts)?;
    man.render_description_section(&mut parts)?;
    man.render_options_section(&mut parts)?;
    for line in String::from_utf8_lossy(&parts).lines() {
        match line.strip_prefix(".SH ") {
            Some(heading) => writeln!(page, ".SS {heading}")?,
            None => writeln!(page, "{line}")?,
        }
    }
    commands_list(cmd, "SS", page)?;
    for sub in cmd.get_subcommands() {
        subcommand_sections(sub, page)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Command;

    use super::*;

    /// A command reached from the top, with the names of its flags (`--long`, `-s`).
    struct Node {
        path: Vec<String>,
        flags: Vec<String>,
    }

    fn walk(cmd: &Command, path: Vec<String>, out: &mut Vec<Node>) {
        let flags = cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .flat_map(|a| {
                let long = a.get_long().map(|l| format!("--{l}"));
                let short = a.get_short().map(|s| format!("-{s}"));
                long.into_iter().chain(short)
            })
            .collect();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut p = path.clone();
            p.push(sub.get_name().to_owned());
            walk(sub, p, out);
        }
        out.push(Node { path, flags });
    }

    /// Every command of the clap tree, nested ones too.
    fn tree() -> Vec<Node> {
        let mut cmd = Cli::command();
        cmd.build();
        let mut nodes = Vec::new();
        walk(&cmd, Vec::new(), &mut nodes);
        // The tree is what the definitions say, not an empty walk.
        let names: Vec<String> = nodes.iter().map(|n| n.path.join(" ")).collect();
        for expected in [
            "ngrams",
            "pairs",
            "dedup",
            "stats",
            "slurm",
            "slurm pairs",
            "stage",
            "update",
            "completions",
            "man",
            "help",
        ] {
            assert!(names.iter().any(|n| n == expected), "{expected} in {names:?}");
        }
        let dedup = nodes.iter().find(|n| n.path == ["dedup"]).unwrap();
        assert!(dedup.flags.iter().any(|f| f == "--attributes") && dedup.flags.iter().any(|f| f == "-o"));
        nodes
    }

    /// Whether the command is clap's `help` or one of the commands it names (no flags of their own).
    fn under_help(node: &Node) -> bool {
        node.path.iter().any(|p| p == "help")
    }

    fn text(shell: ShellArg) -> String {
        String::from_utf8(completion_script(shell)).unwrap()
    }

    /// The words bash offers after the command at `path`.
    fn bash_opts<'s>(script: &'s str, path: &[String]) -> Vec<&'s str> {
        let case = ["dupgram".to_owned()].into_iter().chain(path.iter().cloned()).collect::<Vec<_>>();
        let label = format!("        {})\n", case.join("__subcmd__"));
        let block = script.split(&label).nth(1).unwrap_or_else(|| panic!("bash: no case {label:?}"));
        let opts = block.lines().next().and_then(|l| l.trim().strip_prefix("opts=\"")).expect("an opts line");
        opts.trim_end_matches('"').split_whitespace().collect()
    }

    #[test]
    fn bash_completes_every_subcommand_and_flag() {
        let script = text(ShellArg::Bash);
        for node in tree() {
            let words = bash_opts(&script, &node.path);
            for flag in &node.flags {
                assert!(words.contains(&flag.as_str()), "bash: {flag} of {:?}", node.path);
            }
            if let Some((name, parent)) = node.path.split_last() {
                assert!(bash_opts(&script, parent).contains(&name.as_str()), "bash: {:?}", node.path);
            }
        }
    }

    #[test]
    fn zsh_completes_every_subcommand_and_flag() {
        let script = text(ShellArg::Zsh);
        for node in tree() {
            let Some(name) = node.path.last() else { continue };
            // The blocks of this name (a command and `help`'s entry for it share it): one has all the flags.
            let label = format!("({name})\n_arguments");
            let blocks: Vec<&str> = script.split(&label).skip(1).map(|b| b.split("\n;;").next().unwrap_or(b)).collect();
            assert!(!blocks.is_empty(), "zsh: no block for {:?}", node.path);
            // 'FLAG[…, or after its exclusions (…)FLAG[…, or repeatable '*FLAG[…
            let has = |block: &str, flag: &str| {
                ["'", ")", "*"]
                    .iter()
                    .any(|before| ["[", "=", "+"].iter().any(|after| block.contains(&format!("{before}{flag}{after}"))))
            };
            assert!(
                blocks.iter().any(|b| node.flags.iter().all(|f| has(b, f))),
                "zsh: flags {:?} of {:?}",
                node.flags,
                node.path
            );
        }
    }

    #[test]
    fn fish_completes_every_subcommand_and_flag() {
        let script = text(ShellArg::Fish);
        for node in tree() {
            if let Some(name) = node.path.last() {
                assert!(script.contains(&format!("-f -a \"{name}\"")), "fish: subcommand {:?}", node.path);
            }
            let condition = match node.path.as_slice() {
                [] => "\"__fish_dupgram_needs_command\"".to_owned(),
                [name] => format!("\"__fish_dupgram_using_subcommand {name}"),
                [parent, name] => {
                    format!("\"__fish_dupgram_using_subcommand {parent}; and __fish_seen_subcommand_from {name}\"")
                }
                deeper => {
                    assert!(under_help(&node) && node.flags.is_empty(), "{deeper:?}");
                    continue;
                }
            };
            let prefix = format!("complete -c dupgram -n {condition}");
            let lines: Vec<&str> = script.lines().filter(|l| l.starts_with(&prefix)).collect();
            for flag in &node.flags {
                let wanted = match flag.strip_prefix("--") {
                    Some(long) => format!(" -l {long}"),
                    None => format!(" -s {}", &flag[1..]),
                };
                assert!(
                    lines.iter().any(|l| l.contains(&format!("{wanted} ")) || l.ends_with(&wanted)),
                    "fish: {flag} of {:?}",
                    node.path
                );
            }
        }
    }

    #[test]
    fn the_man_page_has_every_subcommand_and_flag() {
        let page = String::from_utf8(man_page().unwrap()).unwrap();
        assert!(page.contains("\n.TH dupgram 1 "), "{}", &page[..80]);
        let roff = |text: &str| format!("\\fB{}\\fR", text.replace('-', "\\-"));
        let section = |path: &[String]| -> String {
            let rest = match path {
                [] => page.as_str(),
                _ => {
                    let heading = format!(".SH \"DUPGRAM {}\"\n", path.join(" ").to_uppercase());
                    page.split(&heading).nth(1).unwrap_or_else(|| panic!("man: no section {heading:?}"))
                }
            };
            rest.split(".SH \"DUPGRAM ").next().unwrap().to_owned()
        };
        for node in tree() {
            if under_help(&node) {
                // clap's `help` names the other commands; it is listed, and has no flags to describe.
                assert!(node.flags.is_empty(), "{:?}", node.path);
                if let Some((last, parent)) = node.path.split_last()
                    && last == "help"
                    && !parent.iter().any(|p| p == "help")
                {
                    assert!(section(parent).contains(&roff("help")), "man: {:?}", node.path);
                }
                continue;
            }
            let own = section(&node.path);
            for flag in &node.flags {
                assert!(own.contains(&roff(flag)), "man: {flag} of {:?}", node.path);
            }
            if let Some((name, parent)) = node.path.split_last() {
                assert!(section(parent).contains(&roff(name)), "man: {:?} in its parent's section", node.path);
            }
        }
    }
}
