//! Code comments point to the design in the repository's own `docs/`, and only there: every
//! `docs/<name>.md` a source file names exists, and no source file names a document the
//! repository does not carry (a specification kept elsewhere is not there for the next
//! engineer).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `*.md` names on `line`, with whatever path precedes each.
fn documents(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (end, _) in line.match_indices(".md") {
        let after = line[end + 3..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        let start = line[..end]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
            .map_or(0, |i| i + 1);
        if start < end {
            found.push(line[start..end + 3].to_string());
        }
    }
    found
}

#[test]
fn comments_cite_only_documents_the_repository_has() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["shared/src", "functions", "cli/src", "sim/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut wrong = Vec::new();
    for file in &files {
        let source = fs::read_to_string(file).expect("read source");
        for (n, line) in source.lines().enumerate() {
            for doc in documents(line) {
                if !root.join(&doc).is_file() {
                    wrong.push(format!(
                        "{}:{}: {doc}",
                        file.strip_prefix(&root).unwrap_or(file).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "documents cited but not in the repository:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_citation_is_read_with_its_path() {
    assert_eq!(
        documents("(docs/wake-protocol.md, \"Leases\") and quality.md."),
        vec![
            "docs/wake-protocol.md".to_string(),
            "quality.md".to_string()
        ]
    );
    assert!(documents("no documents.mdx here").is_empty());
}
