//! The crate's layers point one way (docs/architecture.md): every top-level module of
//! `shared/src` may use the modules listed before it in [`LAYERS`] and none after it. This test
//! reads the sources and fails on an import that points up, so a cycle cannot come back
//! unnoticed. Unit tests (`#[cfg(test)] mod tests`, inline or in a `tests.rs`) and comments
//! are not imports.
//!
//! And the whole workspace (every crate: `shared`, `sim`, `cli`, `tests`, `functions/*`): no
//! import circle among the top-level modules of a crate (`crate::x`) nor among the sibling
//! modules of any folder (`super::x`), and no source file over 500 lines.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top; the order `lib.rs` lists them in.
const LAYERS: &[&str] = &[
    "ambient",
    "domain",
    "invocation",
    "aws_calls",
    "aws_json",
    "calendar",
    "agentkit",
    "store",
    "budget",
    "error",
    "usage",
    "events",
    "identity",
    "http",
    "locate",
    "lock",
    "view",
    "offboarding",
    "index_sync",
    "schedule",
    "fanout",
    "sleep",
    "wake",
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

// ---------------------------------------------------------------------------------------------
// The whole workspace: no import circle in any crate, at any level, and no file over 500 lines.

/// The workspace root (this crate lives in `shared/`).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every crate's `src` directory in the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut out = Vec::new();
    for top in ["shared", "sim", "cli", "tests"] {
        out.push(root.join(top).join("src"));
    }
    let functions = root.join("functions");
    let mut names: Vec<_> = fs::read_dir(&functions)
        .expect("read functions/")
        .map(|e| e.expect("dir entry").path())
        .collect();
    names.sort();
    out.extend(names.into_iter().map(|p| p.join("src")));
    out.retain(|p| p.is_dir());
    out
}

/// The modules a directory holds: `name.rs` or `name/` (not `mod.rs`, `lib.rs`, `main.rs`,
/// `tests.rs`).
fn modules_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| {
            let p = e.expect("dir entry").path();
            let name = p.file_stem()?.to_str()?.to_string();
            let module = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
            (module && !["mod", "lib", "main", "tests"].contains(&name.as_str())).then_some(name)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The code of `file` without comments and its trailing unit tests.
fn code_of(file: &Path) -> String {
    let source = fs::read_to_string(file).expect("read source");
    let code = match source.find("#[cfg(test)]\nmod tests") {
        Some(i) => source[..i].to_string(),
        None => source,
    };
    code.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module names `code` reaches through `prefix` (e.g. `crate::`, `super::`).
fn reached(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.push(name);
        }
    }
    found
}

/// A circle in `edges` (module → modules it imports), if any, as the path around it.
fn circle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(node.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}

/// The files of module `name` in `dir` (the file itself, or everything under its folder).
fn files_of(dir: &Path, name: &str) -> Vec<PathBuf> {
    let file = dir.join(format!("{name}.rs"));
    let mut out = Vec::new();
    if file.is_file() {
        out.push(file);
    }
    let folder = dir.join(name);
    if folder.is_dir() {
        let mut all = Vec::new();
        rust_files(&folder, &mut all);
        out.extend(all);
    }
    out
}

/// The circles among the modules of `dir` (then of each module folder inside it): at the
/// top of a crate through `crate::`, inside a folder among siblings through `super::`.
fn circles_under(dir: &Path, top: bool, found: &mut Vec<String>) {
    let modules = modules_in(dir);
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for module in &modules {
        let mut to: Vec<String> = Vec::new();
        for file in files_of(dir, module) {
            let code = code_of(&file);
            let names = if top {
                reached(&code, "crate::")
            } else if file.parent() == Some(dir) {
                // A sibling file: `super::x` is the folder's module x.
                reached(&code, "super::")
            } else {
                Vec::new()
            };
            to.extend(
                names
                    .into_iter()
                    .filter(|n| n != module && modules.contains(n)),
            );
        }
        to.sort();
        to.dedup();
        edges.insert(module.clone(), to);
    }
    if let Some(c) = circle(&edges) {
        found.push(format!("{}: {}", dir.display(), c.join(" → ")));
    }
    for module in &modules {
        let folder = dir.join(module);
        if folder.is_dir() {
            circles_under(&folder, false, found);
        }
    }
}

#[test]
fn no_import_circle_anywhere_in_the_workspace() {
    let mut found = Vec::new();
    for src in crate_sources() {
        circles_under(&src, true, &mut found);
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_check_sees_a_circle() {
    let mut edges = BTreeMap::new();
    edges.insert("deletion".to_string(), vec!["sweep".to_string()]);
    edges.insert("sweep".to_string(), vec!["deletion".to_string()]);
    edges.insert("http".to_string(), vec!["deletion".to_string()]);
    assert!(circle(&edges).is_some());
    edges.insert("sweep".to_string(), Vec::new());
    assert!(circle(&edges).is_none());
    assert_eq!(
        reached(
            "use crate::sweep::X; let a = my_crate::deletion; crate::Delete",
            "crate::"
        ),
        ["sweep"]
    );
}

/// Longest a source file may be: a reader sees one thing in one file.
const MAX_LINES: usize = 500;

/// The files that may be longer, each one protocol read top to bottom (as object_store's
/// `aws/dynamo.rs` is), up to [`MAX_PROTOCOL_LINES`]; their module docs must say so.
const PROTOCOL_FILES: [&str; 2] = ["shared/src/lock/agent.rs", "shared/src/wake/mod.rs"];
const MAX_PROTOCOL_LINES: usize = 1_100;

#[test]
fn no_file_over_500_lines() {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["shared", "sim", "cli", "tests", "functions"] {
        let path = root.join(dir);
        if path.is_dir() {
            rust_files_all(&path, &mut files);
        }
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = fs::read_to_string(f).ok()?;
            let lines = text.lines().count();
            let protocol = PROTOCOL_FILES.iter().any(|p| f.ends_with(p))
                && text
                    .lines()
                    .take_while(|l| l.starts_with("//!"))
                    .any(|l| l.contains("One protocol"));
            let max = if protocol {
                MAX_PROTOCOL_LINES
            } else {
                MAX_LINES
            };
            (lines > max).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// Every `.rs` file under `dir` (tests included), leaving out build output.
fn rust_files_all(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if name != "target" && name != "node_modules" {
                rust_files_all(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_workspace_check_finds_the_circle_the_delete_function_once_had() {
    // deletion/settings.rs named crate::sweep, and sweep.rs crate::deletion.
    let src = std::env::temp_dir().join(format!("snapwake-layers-{}", std::process::id()));
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(src.join("deletion")).expect("temp dir");
    let write = |path: &str, text: &str| fs::write(src.join(path), text).expect("write");
    write("lib.rs", "mod deletion;\nmod sweep;\n");
    write("deletion/mod.rs", "mod settings;\n");
    write(
        "deletion/settings.rs",
        "pub struct S { pub sweep: crate::sweep::SweepSettings }\n",
    );
    write("sweep.rs", "use crate::deletion::Deleter;\n");
    let mut found = Vec::new();
    circles_under(&src, true, &mut found);
    let _ = fs::remove_dir_all(&src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("deletion → sweep → deletion"),
        "{found:?}"
    );
}
