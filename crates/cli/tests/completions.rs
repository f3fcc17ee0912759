//! `pronto completions` and `pronto man`: generated from the command
//! line's definition; the scripts are valid shell and complete the
//! commands, and the man page names every command.

use std::process::Command;

fn pronto(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .output()
        .expect("pronto");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The commands `pronto help` lists (the second word of each line of
/// its "Commands:" section), `help` itself left out.
fn commands() -> Vec<String> {
    let (ok, out, err) = pronto(&["--help"]);
    assert!(ok, "{err}");
    let list: Vec<String> = out
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect();
    for c in [
        "run",
        "check",
        "ls",
        "ports",
        "chain",
        "bench",
        "completions",
        "man",
    ] {
        assert!(list.iter().any(|x| x == c), "{c} in {list:?}");
    }
    list
}

#[test]
fn bash_completion_is_valid_and_completes_commands() {
    let (ok, script, err) = pronto(&["completions", "bash"]);
    assert!(ok, "{err}");
    let n = Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
        .expect("bash");
    assert!(n.status.success(), "{}", String::from_utf8_lossy(&n.stderr));
    // Load it in bash and complete `pronto cr<TAB>`, `pronto ch<TAB>` and
    // `pronto check --fo<TAB>`.
    let probe = format!(
        "{script}\n\
         COMP_WORDS=(pronto cr); COMP_CWORD=1; _pronto pronto cr pronto; echo \"${{COMPREPLY[@]}}\"\n\
         COMP_WORDS=(pronto ch); COMP_CWORD=1; _pronto pronto ch pronto; echo \"${{COMPREPLY[@]}}\"\n\
         COMP_WORDS=(pronto check --fo); COMP_CWORD=2; _pronto pronto --fo check; echo \"${{COMPREPLY[@]}}\"\n"
    );
    let o = Command::new("bash")
        .args(["-c", &probe])
        .output()
        .expect("bash");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "create\ncheck chain\n--format\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    let all = commands();
    let (ok, zsh, err) = pronto(&["completions", "zsh"]);
    assert!(ok, "{err}");
    assert!(zsh.starts_with("#compdef pronto\n"), "{zsh}");
    let (ok, fish, err) = pronto(&["completions", "fish"]);
    assert!(ok, "{err}");
    for c in &all {
        assert!(
            fish.contains(&format!("-a \"{c}\"")),
            "fish completes `{c}`"
        );
        assert!(zsh.contains(&format!("'{c}:")), "zsh completes `{c}`");
    }
    // An unknown shell is refused, naming the ones there are.
    let (ok, _, err) = pronto(&["completions", "tcsh"]);
    assert!(!ok);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
    assert!(err.contains("bash") && err.contains("fish"), "{err}");
}

#[test]
fn man_page_documents_every_command() {
    let all = commands();
    let (ok, page, err) = pronto(&["man"]);
    assert!(ok, "{err}");
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH pronto 1"), "{page}");
    for c in &all {
        assert!(
            // (roff escapes every hyphen, a command's own too.)
            page.contains(&format!("pronto\\-{}(1)", c.replace('-', "\\-"))),
            "man page names `{c}`"
        );
    }
    // With a directory: a page per command.
    let dir = std::env::temp_dir().join(format!("pronto-man-{}", std::process::id()));
    let (ok, _, err) = pronto(&["man", dir.to_str().expect("utf-8 path")]);
    let listed: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "{err}");
    assert!(listed.iter().any(|f| f == "pronto.1"), "{listed:?}");
    for c in &all {
        assert!(listed.contains(&format!("pronto-{c}.1")), "{c}: {listed:?}");
    }
}
