//! No file imports a file that imports it back, directly or around a loop, in any crate of the
//! workspace (docs/architecture.md, "Layers"): the libraries, the functions, the CLI, the
//! simulator, every test and bench binary. `layers.rs` checks the modules of a crate; this
//! checks its files, where a parent (`mod.rs`) and its children can also import each other.
//!
//! A file imports another when it names it: a `use` (re-exports included) or a path in its
//! code (`crate::a::b`, `super::x`, a child module `x::f`). A path to an item that a module
//! re-exports is followed to the file that defines it, so `use crate::domain::AgentKey` imports
//! `domain/key.rs`, not `domain/mod.rs`. Comments, unit tests (`#[cfg(test)]` and what follows
//! it, `tests.rs`, `tests/` folders) and method calls are not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module path inside its crate (`[]`: the crate root).
type Module = Vec<String>;

/// One crate's files, and what each module defines and re-exports.
#[derive(Default)]
struct Files {
    path: BTreeMap<Module, PathBuf>,
    code: BTreeMap<Module, String>,
    /// Items a module defines (`struct`, `fn`, `mod`, ...).
    defines: BTreeMap<Module, BTreeSet<String>>,
    /// Names a module re-exports, and the path each stands for; and its glob re-exports.
    reexports: BTreeMap<Module, (BTreeMap<String, String>, Vec<String>)>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every folder that holds a crate root (`lib.rs` or `main.rs`), build output left out.
fn crate_roots(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("lib.rs").is_file() || dir.join("main.rs").is_file() {
        out.push(dir.to_path_buf());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !matches!(
            name,
            "target" | "node_modules" | ".git" | "clients" | "console"
        ) {
            crate_roots(&entry, out);
        }
    }
}

/// The code of a source: comments and everything from its first `#[cfg(test)]` on removed.
fn code_of(source: &str) -> String {
    let end = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|m| source.find(m))
        .min()
        .unwrap_or(source.len());
    source[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `a::{b, c::{d, e as f}}` as its paths (`a::b`, `a::c::d`, `a::c::e as f`).
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let (prefix, inner) = (
        &tree[..open],
        &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())],
    );
    let (mut parts, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
        .iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p))
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

/// The trees of every `use` in `code`, with whether it re-exports (`pub use`).
fn uses(code: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find("use ") {
        let start = at + i;
        at = start + 4;
        if code[..start].chars().last().is_some_and(is_ident) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        // The word before `use`: `pub`, or `pub(crate)` and the like.
        let word = code[..start]
            .split_whitespace()
            .next_back()
            .unwrap_or_default();
        let public = word == "pub" || word.starts_with("pub(");
        out.push((public, code[at..at + end].to_string()));
        at += end;
    }
    out
}

/// Every path in `code` that starts at `crate`, `super` or `self`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(start) {
            let from = at + i;
            at = from + start.len();
            if code[..from]
                .chars()
                .last()
                .is_some_and(|c| is_ident(c) || c == ':')
            {
                continue;
            }
            let path: String = code[from..]
                .chars()
                .take_while(|&c| is_ident(c) || c == ':')
                .collect();
            // `super::{a, b}` is a `use`, read whole by [`uses`].
            let path = path.trim_end_matches(':');
            if path.contains("::") {
                out.push(path.to_string());
            }
        }
    }
    out
}

impl Files {
    fn of(root: &Path) -> Files {
        let mut files = Files::default();
        let library = root.join("lib.rs").is_file();
        let mut all = Vec::new();
        sources(root, &mut all);
        for file in all {
            let relative = file.strip_prefix(root).expect("under the root");
            let mut module: Module = relative
                .with_extension("")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if module.iter().any(|c| c == "tests") || library && module == ["main"] {
                continue;
            }
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let code = code_of(&fs::read_to_string(&file).expect("read source"));
            let mut defines = BTreeSet::new();
            for word in [
                "struct", "enum", "fn", "trait", "type", "const", "static", "mod",
            ] {
                let mut rest = code.as_str();
                while let Some(i) = rest.find(&format!("{word} ")) {
                    let before = rest[..i].chars().last();
                    rest = &rest[i + word.len() + 1..];
                    if before.is_some_and(is_ident) {
                        continue;
                    }
                    let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
                    defines.insert(name);
                }
            }
            let (mut named, mut globs) = (BTreeMap::new(), Vec::new());
            for (_, tree) in uses(&code).into_iter().filter(|(public, _)| *public) {
                for path in expand(&tree) {
                    let (path, alias) = match path.split_once(" as ") {
                        Some((p, a)) => (p.trim().to_string(), a.trim().to_string()),
                        None => {
                            let last = path.rsplit("::").next().unwrap_or_default();
                            (path.trim().to_string(), last.trim().to_string())
                        }
                    };
                    match path.strip_suffix("::*") {
                        Some(glob) => globs.push(glob.to_string()),
                        None => _ = named.insert(alias, path),
                    }
                }
            }
            files.path.insert(module.clone(), file);
            files.code.insert(module.clone(), code);
            files.defines.insert(module.clone(), defines);
            files.reexports.insert(module, (named, globs));
        }
        files
    }

    /// The file `path`, named from `module`, stands for: the deepest module it names, then
    /// through that module's re-exports to the file defining the item.
    fn resolve(&self, module: &Module, path: &str, depth: usize) -> Option<Module> {
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let (mut full, rest): (Module, &[&str]) = match segments.first()? {
            &"crate" => (Vec::new(), &segments[1..]),
            &"self" => (module.clone(), &segments[1..]),
            &"super" => {
                let mut base = module.clone();
                let ups = segments.iter().take_while(|s| **s == "super").count();
                for _ in 0..ups {
                    base.pop();
                }
                (base, &segments[ups..])
            }
            first => {
                let mut child = module.clone();
                child.push(first.to_string());
                if !self.path.contains_key(&child) {
                    return None;
                }
                (module.clone(), &segments[..])
            }
        };
        full.extend(rest.iter().map(|s| s.to_string()));
        let found = (0..=full.len())
            .rev()
            .map(|n| full[..n].to_vec())
            .find(|m| self.path.contains_key(m))?;
        let name = full.last().cloned().unwrap_or_default();
        if depth > 8 || found.len() == full.len() || self.defines[&found].contains(&name) {
            return Some(found);
        }
        let (named, globs) = &self.reexports[&found];
        if let Some(target) = named.get(&name) {
            return self.resolve(&found, target, depth + 1).or(Some(found));
        }
        for glob in globs {
            if let Some(m) = self.resolve(&found, glob, depth + 1) {
                if self.defines[&m].contains(&name) {
                    return Some(m);
                }
            }
        }
        Some(found)
    }

    /// Which files each file imports.
    fn edges(&self) -> BTreeMap<String, Vec<String>> {
        let name = |m: &Module| {
            if m.is_empty() {
                "<root>".to_string()
            } else {
                m.join("::")
            }
        };
        let mut edges = BTreeMap::new();
        for (module, code) in &self.code {
            let mut named: Vec<String> = uses(code)
                .into_iter()
                .flat_map(|(_, tree)| expand(&tree))
                .map(|p| {
                    p.split(" as ")
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_string()
                })
                .collect();
            named.extend(paths(code));
            // A child module named bare (`holder::hold`).
            for (i, _) in code.match_indices("::") {
                let word: String = code[..i]
                    .chars()
                    .rev()
                    .take_while(|&c| is_ident(c))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let before = code[..i - word.len()].chars().last();
                if !word.is_empty() && !before.is_some_and(|c| c == ':' || is_ident(c)) {
                    let mut child = module.clone();
                    child.push(word.clone());
                    if self.path.contains_key(&child) {
                        named.push(word);
                    }
                }
            }
            let mut to: Vec<String> = named
                .iter()
                .filter_map(|p| self.resolve(module, p.trim_end_matches("::*"), 0))
                .filter(|m| m != module)
                .map(|m| name(&m))
                .collect();
            to.sort();
            to.dedup();
            edges.insert(name(module), to);
        }
        edges
    }
}

/// Every `.rs` file under `dir`, not into nested crates.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            let nested = path.join("Cargo.toml").is_file();
            if !nested {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A circle in `edges`, if any, as the path around it.
fn circle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    let (mut done, mut path) = (BTreeSet::new(), Vec::new());
    fn visit(
        node: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut around = path[at..].to_vec();
            around.push(node.to_string());
            return Some(around);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(around) = visit(next, edges, path, done) {
                return Some(around);
            }
        }
        path.pop();
        None
    }
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut path, &mut done))
}

fn circles_in(root: &Path) -> Option<String> {
    let around = circle(&Files::of(root).edges())?;
    Some(format!("{}: {}", root.display(), around.join(" → ")))
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let mut roots = Vec::new();
    crate_roots(&workspace(), &mut roots);
    assert!(roots.len() > 10, "crates found: {roots:?}");
    let found: Vec<String> = roots.iter().filter_map(|r| circles_in(r)).collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_parent_and_child_that_import_each_other() {
    let root = std::env::temp_dir().join(format!("snapwake-file-circles-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join("lock")).expect("temp dir");
    let write = |path: &str, text: &str| fs::write(root.join(path), text).expect("write");
    write("lib.rs", "pub mod lock;\npub mod wake;\n");
    // The parent re-exports its child; the child imports what the parent defines.
    write(
        "lock/mod.rs",
        "mod agent;\npub use agent::Held;\npub struct Settings;\n",
    );
    write("lock/agent.rs", "use super::Settings;\npub struct Held;\n");
    // Through a re-export: `crate::lock::Held` is `lock/agent.rs`, not `lock/mod.rs`.
    write("wake.rs", "use crate::lock::Held;\n");
    let found = circles_in(&root);
    let edges = Files::of(&root).edges();
    let _ = fs::remove_dir_all(&root);
    assert_eq!(edges["wake"], vec!["lock::agent".to_string()], "{edges:?}");
    let found = found.expect("the circle lock ↔ lock::agent");
    assert!(
        found.contains("lock") && found.contains("lock::agent"),
        "{found}"
    );
}
