//! `pronto completions bash|zsh`: shell completion scripts (commands,
//! their options, and instance names from the running daemon).

use std::process::ExitCode;

const BASH: &str = r#"# pronto completion for bash: eval "$(pronto completions bash)"
_pronto() {
    local cur prev cmd
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    cmd="${COMP_WORDS[1]}"
    local cmds="run check elements switch daemon demo chain bench create ls show rm config read write stats ports tenant completions --version --help"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        return
    fi
    case "$prev" in
        --config|-f|--file|--out|--state) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    case "$cmd" in
        run) COMPREPLY=($(compgen -W "-f --file -e --expression -h --handler -x --exit-handler -o --output -q --quit -t --time -w --no-warnings --simtime --threads --busy-poll --pool-limit --switch --name --mac --help" -- "$cur") $(compgen -f -- "$cur")) ;;
        check) COMPREPLY=($(compgen -f -- "$cur")) ;;
        elements) COMPREPLY=($(compgen -W "$(pronto elements 2>/dev/null)" -- "$cur")) ;;
        switch) COMPREPLY=($(compgen -W "ports --socket --no-learning --aging --threads --cpu --slots --ring --help" -- "$cur")) ;;
        daemon) COMPREPLY=($(compgen -W "--socket --listen --state --switch-threads --slots --ring --memory --warm --no-cgroup --uplink --help" -- "$cur")) ;;
        chain)
            if [ "$COMP_CWORD" -eq 2 ]; then
                COMPREPLY=($(compgen -W "profile plan config run apply help" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--dot --trace --out --sequential --stats --elements --name --chain --mergers --pin --merge-timeout --dry-run --socket --url --token" -- "$cur") $(compgen -f -- "$cur"))
            fi ;;
        bench) COMPREPLY=($(compgen -W "switch ports cores gen sink veth tcp boot handlers chain nfp consolidate --out help" -- "$cur")) ;;
        create) COMPREPLY=($(compgen -W "--config --mem --cpu --cpus --pids --iface --tenant --socket --url --token --json" -- "$cur")) ;;
        show|rm|config|read|write|stats)
            if [ "$COMP_CWORD" -eq 2 ]; then
                COMPREPLY=($(compgen -W "$(pronto ls --json 2>/dev/null | sed -n 's/^    "name": "\(.*\)",$/\1/p')" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--socket --url --token --tenant --json" -- "$cur") $(compgen -f -- "$cur"))
            fi ;;
        tenant) COMPREPLY=($(compgen -W "create ls rm" -- "$cur")) ;;
        completions) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    esac
}
complete -F _pronto pronto
"#;

const ZSH: &str = r#"#compdef pronto
# pronto completion for zsh: eval "$(pronto completions zsh)"
autoload -U bashcompinit && bashcompinit
"#;

/// Runs `pronto completions SHELL`.
pub fn main(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        Some("bash") => {
            print!("{BASH}");
            ExitCode::SUCCESS
        }
        Some("zsh") => {
            // zsh runs the bash completion through bashcompinit.
            print!("{ZSH}{BASH}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!(
                "pronto completions: expected `bash` or `zsh`, found {}",
                other.map_or("nothing".to_string(), |o| format!("`{o}`"))
            );
            ExitCode::from(1)
        }
    }
}
