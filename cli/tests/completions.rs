//! `snapwake completions <shell>`: a script for bash, zsh and fish naming every subcommand and
//! option (the offboarding's `--yes` and `snapwake agents` among them); bash's parses.

use std::process::Command;

fn completions(shell: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["completions", shell])
        .output()
        .expect("run snapwake");
    assert!(out.status.success(), "{shell}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn every_shell_gets_every_subcommand_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let script = completions(shell);
        // Options without their dashes: fish writes `-l dry-run`.
        for word in [
            "serve",
            "offboard",
            "sweep",
            "invoke",
            "yes",
            "dry-run",
            "agents",
            "wake",
            "local-user",
        ] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
}

#[test]
fn the_bash_script_parses() {
    let path = std::env::temp_dir().join(format!("snapwake-{}.bash", std::process::id()));
    std::fs::write(&path, completions("bash")).expect("write");
    let checked = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash");
    let _ = std::fs::remove_file(&path);
    assert!(checked.status.success(), "{checked:?}");
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["completions", "cmd.exe"])
        .output()
        .expect("run snapwake");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
