//! Imports run one way inside every crate and inside the Python package (DESIGN §2): no
//! module imports a module that imports it, directly or around a longer circle.
//!
//! A Rust module's imports are its `crate::` paths (a `use`, a path in code or in a macro's
//! `$crate::`) and its top-level `super::` paths, outside comments and its `mod tests`. A name
//! the crate root re-exports (`crate::RunError`) is an import of the root, which imports every
//! module it re-exports from: so a module reaches what it uses through the module that defines
//! it, never through the root. A Python module's imports are its relative and `kestrel.`
//! imports, the lazy ones inside functions included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module graph: each module and the modules it imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// The source without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The leaves of a use tree (`a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`), each as
/// its segments; a rename (`x as y`) keeps `x`.
fn leaves(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start, mut out) = (0, 0, vec![]);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(&inner[start..]);
        return out
            .into_iter()
            .filter(|s| !s.trim().is_empty())
            .flat_map(leaves)
            .map(|l| prefix.iter().cloned().chain(l).collect())
            .collect();
    }
    let first = tree.split(" as ").next().unwrap_or(tree);
    vec![first.split("::").map(|s| s.trim().to_string()).collect()]
}

/// The `crate::` paths in `code` (their segments after `crate`).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = vec![];
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue; // `kestrel_crate::`, not a path of this crate
        }
        let rest = &code[at + "crate::".len()..];
        // A path runs through identifiers and `::`; a `{` then opens a tree up to its `}`.
        let mut end = rest.find(|c: char| !(ident(c) || c == ':')).unwrap_or(rest.len());
        if rest[end..].starts_with('{') {
            let mut depth = 0;
            for (i, c) in rest[end..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end += i + 1;
                    break;
                }
            }
        }
        let path = rest[..end].trim_end_matches(':');
        out.extend(leaves(path));
    }
    out
}

/// The module a file is (segments under `src/`; the root is empty).
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> =
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    if parts.last().is_some_and(|p| p == "lib" || p == "main" || p == "mod") {
        parts.pop();
    }
    Some(parts)
}

fn name(m: &[String]) -> String {
    if m.is_empty() { "(root)".into() } else { m.join("::") }
}

/// The module graph of the crate whose sources are in `src`.
fn rust_graph(src: &Path) -> Graph {
    let mut all = vec![];
    files(src, "rs", &mut all);
    let mods: BTreeMap<Vec<String>, PathBuf> =
        all.iter().filter_map(|f| Some((module_of(src, f)?, f.clone()))).collect();
    let resolve = |path: &[String]| -> Vec<String> {
        (0..=path.len()).rev().map(|i| path[..i].to_vec()).find(|p| mods.contains_key(p)).unwrap()
    };
    let mut g = Graph::new();
    for (m, file) in &mods {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut targets: Vec<Vec<String>> = crate_paths(&text);
        // Top-level `super::` (an inline module's own `super::` names its file's module).
        let inline = text.lines().any(|l| {
            let t = l.trim_start();
            (t.starts_with("mod ") || t.starts_with("pub mod ") || t.starts_with("pub(crate) mod "))
                && t.ends_with('{')
        });
        for l in text.lines() {
            if inline && l.starts_with([' ', '\t']) {
                continue;
            }
            for (at, _) in l.match_indices("super::") {
                let rest = &l[at + "super::".len()..];
                let seg: String =
                    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let mut p: Vec<String> = m[..m.len().saturating_sub(1)].to_vec();
                if !seg.is_empty() {
                    p.push(seg);
                }
                targets.push(p);
            }
        }
        // The root and `mod.rs` files import what they re-export.
        if file.ends_with("lib.rs") || file.ends_with("mod.rs") {
            for l in text.lines().filter(|l| l.starts_with("pub use ")) {
                let first = l["pub use ".len()..].trim_start_matches("self::");
                let seg: String =
                    first.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let mut p = m.clone();
                p.push(seg);
                targets.push(p);
            }
        }
        let edges = g.entry(name(m)).or_default();
        for t in targets {
            let to = resolve(&t);
            if &to != m {
                edges.insert(name(&to));
            }
        }
    }
    g
}

/// The module graph of the Python package in `pkg` (`kestrel`, `kestrel.dist`, ...).
fn python_graph(pkg: &Path) -> Graph {
    let mut all = vec![];
    files(pkg, "py", &mut all);
    let module = |f: &Path| -> Vec<String> {
        let rel = f.strip_prefix(pkg.parent().unwrap()).unwrap().with_extension("");
        let mut p: Vec<String> =
            rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if p.last().is_some_and(|l| l == "__init__") {
            p.pop();
        }
        p
    };
    // The compiled extension (`_kestrel`, described by its stub) is a module too.
    let mut stubs = vec![];
    files(pkg, "pyi", &mut stubs);
    let mods: BTreeSet<Vec<String>> = all.iter().chain(&stubs).map(|f| module(f)).collect();
    let mut g = Graph::new();
    for f in &all {
        let m = module(f);
        let is_pkg = f.ends_with("__init__.py");
        let here: Vec<String> = if is_pkg { m.clone() } else { m[..m.len() - 1].to_vec() };
        let text = std::fs::read_to_string(f).unwrap();
        let edges = g.entry(m.join(".")).or_default();
        for line in text.lines() {
            let t = line.trim_start();
            let t = t.split('#').next().unwrap_or("");
            let (base, names): (Vec<String>, Vec<&str>) = if let Some(r) = t.strip_prefix("from ") {
                let Some((from, names)) = r.split_once(" import ") else { continue };
                let dots = from.chars().take_while(|c| *c == '.').count();
                let rest = &from[dots..];
                let mut b = if dots > 0 {
                    here[..here.len().saturating_sub(dots - 1)].to_vec()
                } else if rest == "kestrel" || rest.starts_with("kestrel.") {
                    vec![]
                } else {
                    continue;
                };
                b.extend(rest.split('.').filter(|s| !s.is_empty()).map(String::from));
                let names = names.trim_matches(|c| c == '(' || c == ')' || c == ' ');
                (b, names.split(',').map(|n| n.split(" as ").next().unwrap_or("").trim()).collect())
            } else if let Some(r) = t.strip_prefix("import kestrel") {
                let r = r.split([' ', ',']).next().unwrap_or("");
                let mut b = vec!["kestrel".to_string()];
                b.extend(r.split('.').filter(|s| !s.is_empty()).map(String::from));
                (b, vec![])
            } else {
                continue;
            };
            let mut targets = vec![];
            for n in &names {
                let mut sub = base.clone();
                sub.push(n.to_string());
                if mods.contains(&sub) {
                    targets.push(sub);
                } else {
                    targets.push(base.clone());
                }
            }
            if names.is_empty() {
                targets.push(base.clone());
            }
            for t in targets {
                // The module itself or the nearest package that exists.
                let to = (0..=t.len()).rev().map(|i| t[..i].to_vec()).find(|p| mods.contains(p));
                if let Some(to) = to
                    && to != m
                {
                    edges.insert(to.join("."));
                }
            }
        }
    }
    g
}

/// The circles of `g` (its strongly connected components of more than one module), each
/// with its edges.
fn circles(g: &Graph) -> Vec<String> {
    let nodes: Vec<&String> = g.keys().collect();
    let idx: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let (mut index, mut low, mut on) =
        (vec![usize::MAX; nodes.len()], vec![0; nodes.len()], vec![false; nodes.len()]);
    let (mut stack, mut counter, mut out) = (vec![], 0, vec![]);
    fn visit(
        v: usize,
        g: &Graph,
        nodes: &[&String],
        idx: &BTreeMap<&String, usize>,
        st: &mut (&mut Vec<usize>, &mut Vec<usize>, &mut Vec<bool>, &mut Vec<usize>, &mut usize),
        out: &mut Vec<Vec<usize>>,
    ) {
        st.0[v] = *st.4;
        st.1[v] = *st.4;
        *st.4 += 1;
        st.3.push(v);
        st.2[v] = true;
        for w in &g[nodes[v]] {
            let Some(&w) = idx.get(w) else { continue };
            if st.0[w] == usize::MAX {
                visit(w, g, nodes, idx, st, out);
                st.1[v] = st.1[v].min(st.1[w]);
            } else if st.2[w] {
                st.1[v] = st.1[v].min(st.0[w]);
            }
        }
        if st.1[v] == st.0[v] {
            let mut comp = vec![];
            while let Some(w) = st.3.pop() {
                st.2[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                out.push(comp);
            }
        }
    }
    let mut comps = vec![];
    for v in 0..nodes.len() {
        if index[v] == usize::MAX {
            let mut st = (&mut index, &mut low, &mut on, &mut stack, &mut counter);
            visit(v, g, &nodes, &idx, &mut st, &mut comps);
        }
    }
    for comp in comps {
        let members: BTreeSet<&String> = comp.iter().map(|&i| nodes[i]).collect();
        let edges: Vec<String> = members
            .iter()
            .map(|m| {
                let to: Vec<&str> =
                    g[*m].iter().filter(|t| members.contains(t)).map(String::as_str).collect();
                format!("{m} -> {}", to.join(", "))
            })
            .collect();
        out.push(edges.join("; "));
    }
    out
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut found = vec![];
    let mut crates = 0;
    for e in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let src = e.path().join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let g = rust_graph(&src);
        assert!(!g.is_empty(), "{}: no modules read", src.display());
        for c in circles(&g) {
            found.push(format!("{}: {c}", e.file_name().to_string_lossy()));
        }
    }
    assert!(crates >= 17, "read {crates} crates");
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_python_package_has_no_import_circle() {
    let pkg = crates_dir().join("py/python/kestrel");
    let g = python_graph(&pkg);
    assert!(g.len() >= 20, "read {} modules", g.len());
    let c = circles(&g);
    assert!(c.is_empty(), "import circles:\n{}", c.join("\n"));
}

/// No two public types of the workspace's libraries share a name (DESIGN §7): a reader who
/// meets `Trainer` or `EpochStats` knows which one it is.
#[test]
fn public_type_names_are_unique() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let mut all = vec![];
        files(&e.path().join("src"), "rs", &mut all);
        for f in all {
            let text = code(&std::fs::read_to_string(&f).unwrap());
            for l in text.lines() {
                let Some(rest) = ["pub struct ", "pub enum ", "pub trait ", "pub type "]
                    .iter()
                    .find_map(|p| l.strip_prefix(p))
                else {
                    continue;
                };
                let name: String =
                    rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let at = f.strip_prefix(crates_dir()).unwrap_or(&f).display().to_string();
                seen.entry(name).or_default().push(at);
            }
        }
    }
    assert!(seen.len() > 300, "read {} type names", seen.len());
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(n, at)| format!("{n}: {}", at.join(", ")))
        .collect();
    assert!(twice.is_empty(), "type names defined twice:\n{}", twice.join("\n"));
}

/// Every config enum reads and writes its values in one case, kebab-case (the README's "One
/// spelling"): an enum that derives `Deserialize` says `rename_all = "kebab-case"` (or reads
/// itself from a string, `try_from`, or has no names of its own, `untagged`). A peer's own spelling is an `alias`, never written.
#[test]
fn config_enums_are_kebab_case() {
    let (mut bad, mut checked) = (vec![], 0);
    for e in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let mut all = vec![];
        files(&e.path().join("src"), "rs", &mut all);
        for f in all {
            let text = code(&std::fs::read_to_string(&f).unwrap());
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                let Some(rest) = l.trim_start().strip_prefix("pub enum ") else { continue };
                let attrs: Vec<&str> = lines[..i]
                    .iter()
                    .rev()
                    .map(|l| l.trim())
                    .take_while(|l| !(l.ends_with('}') || l.ends_with(';') || l.ends_with('{')))
                    .collect();
                let attrs = [attrs.concat()];
                let derives =
                    attrs.iter().any(|a| a.contains("derive(") && a.contains("Deserialize"));
                let kebab = attrs.iter().any(|a| {
                    a.contains("rename_all = \"kebab-case\"")
                        || a.contains("try_from")
                        || a.contains("untagged")
                });
                checked += usize::from(derives);
                if derives && !kebab {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
                    bad.push(format!("{}: {name}", f.display()));
                }
            }
        }
    }
    assert!(checked > 40, "read {checked} config enums");
    assert!(bad.is_empty(), "enums not in kebab-case:\n{}", bad.join("\n"));
}

/// The checks find what they look for: a root re-export used by the module it comes from, a
/// two-module circle through `super::`, and a lazy Python import.
#[test]
fn the_checks_see_circles() {
    let dir = std::env::temp_dir().join(format!("kestrel-imports-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("m")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod m;\npub use a::Thing;\n").unwrap();
    std::fs::write(
        src.join("a.rs"),
        "pub struct Thing;\nfn f() -> crate::Thing { crate::Thing }\n",
    )
    .unwrap();
    std::fs::write(src.join("m/mod.rs"), "mod b;\nuse b::X;\n// crate::a is a comment\n").unwrap();
    std::fs::write(src.join("m/b.rs"), "use super::Y;\npub struct X;\n").unwrap();
    let c = circles(&rust_graph(&src));
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].contains("(root) -> a") && c[0].contains("a -> (root)"), "{c:?}");
    // `m` imports `b` (`b::X` is not a crate path, so only `b`'s `super::` counts): no circle
    // unless `m` names `crate::m::b`.
    std::fs::write(src.join("m/mod.rs"), "mod b;\nuse crate::m::b::X;\npub struct Y;\n").unwrap();
    let c = circles(&rust_graph(&src));
    assert!(c.iter().any(|c| c.contains("m -> m::b") && c.contains("m::b -> m")), "{c:?}");
    let pkg = dir.join("kestrel");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("x.py"), "from .y import f\n").unwrap();
    std::fs::write(pkg.join("y.py"), "def f():\n    from .x import g  # lazy\n").unwrap();
    let c = circles(&python_graph(&pkg));
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].contains("kestrel.x -> kestrel.y"), "{c:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
