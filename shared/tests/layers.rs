//! The crate's layers point one way (docs/architecture.md): every top-level module of
//! `shared/src` may use the modules listed before it in [`LAYERS`] and none after it. This test
//! reads the sources and fails on an import that points up, so a cycle cannot come back
//! unnoticed. Unit tests (`#[cfg(test)] mod tests`, inline or in a `tests.rs`) and comments
//! are not imports.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top; the order `lib.rs` lists them in.
const LAYERS: &[&str] = &[
    "timestamp",
    "secret",
    "metrics",
    "deadline",
    "domain",
    "agentkit",
    "store",
    "error",
    "identity",
    "http",
    "registry_cache",
    "locate",
    "lock",
    "view",
    "offboarding",
    "index_sync",
    "sleep",
    "wake",
    "deploy",
    "config",
    "bootstrap",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`None`: `lib.rs`, the map itself).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib").then(|| name.to_string())
}

/// The modules `source` names as `crate::<module>`, with their line numbers, leaving out
/// comments and the unit tests at the end of a file.
fn imports(source: &str) -> Vec<(usize, String)> {
    let code = match source.find("#[cfg(test)]\nmod tests") {
        Some(i) => &source[..i],
        None => source,
    };
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.split("//").next().unwrap_or_default();
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((n + 1, name));
            }
        }
    }
    found
}

#[test]
fn every_module_is_placed_in_a_layer() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut unplaced: Vec<String> = files
        .iter()
        .filter_map(|f| module_of(f))
        .filter(|m| !LAYERS.contains(&m.as_str()))
        .collect();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (and from the map in lib.rs): {unplaced:?}"
    );
}

#[test]
fn no_module_imports_one_above_it() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut upward = Vec::new();
    for file in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let Some(&own) = rank.get(module.as_str()) else {
            continue;
        };
        let source = fs::read_to_string(file).expect("read source");
        for (line, target) in imports(&source) {
            if target == module {
                continue;
            }
            match rank.get(target.as_str()) {
                Some(&theirs) if theirs < own => {}
                _ => upward.push(format!(
                    "{}:{line}: {module} imports {target}",
                    file.strip_prefix(src()).unwrap_or(file).display()
                )),
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_crate_map_lists_the_layers_in_order() {
    let lib = fs::read_to_string(src().join("lib.rs")).expect("read lib.rs");
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert_eq!(
        declared, LAYERS,
        "lib.rs declares its modules bottom to top"
    );
}

#[test]
fn the_check_sees_an_upward_import() {
    // The checker itself: a line naming a module is found, a comment is not.
    let found = imports("use crate::wake::Wake; // crate::config\n#[cfg(test)]\nmod tests {\n use crate::bootstrap;\n}");
    assert_eq!(found, vec![(1, "wake".to_string())]);
}
