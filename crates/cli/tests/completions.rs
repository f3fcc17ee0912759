//! `pronto completions`: the scripts are valid shell and complete the
//! commands.

use std::process::Command;

#[test]
fn bash_completion_is_valid_and_completes_commands() {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["completions", "bash"])
        .output()
        .expect("pronto");
    assert!(o.status.success());
    let script = String::from_utf8(o.stdout).expect("text");
    // Load it in bash and complete `pronto cr<TAB>` and `pronto bench b<TAB>`.
    let probe = format!(
        "{script}\nCOMP_WORDS=(pronto cr); COMP_CWORD=1; _pronto; echo \"${{COMPREPLY[@]}}\"\n\
         COMP_WORDS=(pronto bench b); COMP_CWORD=2; _pronto; echo \"${{COMPREPLY[@]}}\"\n"
    );
    let o = Command::new("bash")
        .args(["-c", &probe])
        .output()
        .expect("bash");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "create\nboot\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["completions", "fish"])
        .output()
        .expect("pronto");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "pronto completions: expected `bash` or `zsh`, found `fish`\n"
    );
}
