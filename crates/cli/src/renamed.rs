//! The command-line spellings renamed since 0.1.0, still accepted through 0.2.x with a warning
//! naming the current one (`CHANGELOG.md`, "Renamed"), removed in 0.3.0. [`rewrite`] turns a
//! 0.1.0 command line into today's before it is parsed, so every old spelling runs the same
//! code as its new one; this table is the one list of them.

/// A flag renamed: the subcommands that had it, its 0.1.0 spelling and today's.
struct Flag {
    commands: &'static [[&'static str; 2]],
    old: &'static str,
    new: &'static str,
}

/// Every flag renamed since 0.1.0 that maps one to one.
const FLAGS: &[Flag] = &[
    Flag {
        commands: &[["mppi", "run"], ["mppi", "tune"], ["mppi", "qd"]],
        old: "--env",
        new: "--system",
    },
    Flag { commands: &[["mppi", "tune"], ["mppi", "qd"]], old: "--tune", new: "--knobs" },
    Flag { commands: &[["hunt", "train"]], old: "--agents", new: "--num-agents" },
    Flag { commands: &[["hunt", "train"]], old: "--worlds", new: "--num-worlds" },
    Flag { commands: &[["allo", "train"]], old: "--samples", new: "--num-samples" },
    Flag { commands: &[["actdyn", "run"]], old: "--policy", new: "--kind" },
];

/// The release that drops the old spellings.
const UNTIL: &str = "0.3.0";

/// `args` (the program name first) with every 0.1.0 spelling replaced by today's, and one
/// warning per replacement (printed to stderr by the caller); an old spelling whose value has
/// no new form is an error naming what to write instead.
pub fn rewrite(args: Vec<String>) -> Result<(Vec<String>, Vec<String>), String> {
    let cmd = [args.get(1).map(String::as_str), args.get(2).map(String::as_str)];
    let is = |a: &str, b: &str| cmd == [Some(a), Some(b)];
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut warnings = Vec::new();
    let mut it = args.iter().cloned().enumerate().peekable();
    while let Some((i, arg)) = it.next() {
        if arg == "--" {
            // Everything after `--` is a value, passed as it is.
            out.push(arg);
            out.extend(it.by_ref().map(|(_, a)| a));
            break;
        }
        if i < 3 {
            out.push(arg);
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if let Some(f) =
            FLAGS.iter().find(|f| f.old == name && f.commands.iter().any(|[a, b]| is(a, b)))
        {
            warnings.push(format!(
                "warning: `kestrel {} {}` is spelt `{}` since 0.2.0; `{}` is accepted until {UNTIL}",
                cmd[0].unwrap_or(""),
                f.old,
                f.new,
                f.old
            ));
            out.push(match inline {
                Some(v) => format!("{}={v}", f.new),
                None => f.new.to_string(),
            });
            continue;
        }
        if is("actdyn", "compare") && name == "--seeds" {
            let value = match inline {
                Some(v) => v,
                None => it.next().map(|(_, v)| v).ok_or("--seeds: a value (A..B) is needed")?,
            };
            let (seed, count) = seed_range(&value)?;
            warnings.push(format!(
                "warning: `kestrel actdyn compare --seeds {value}` is spelt `--seed {seed} --num-seeds \
                 {count}` since 0.2.0; `--seeds` is accepted until {UNTIL}"
            ));
            out.extend([
                "--seed".into(),
                seed.to_string(),
                "--num-seeds".into(),
                count.to_string(),
            ]);
            continue;
        }
        if is("arc", "replay") && !arg.starts_with('-') && !follows_option(&out) {
            warnings.push(format!(
                "warning: `kestrel arc replay FILE` is spelt `kestrel arc replay --traces FILE` since \
                 0.2.0 (the replays are written into a run folder under --out-dir); the bare FILE is \
                 accepted until {UNTIL}"
            ));
            out.extend(["--traces".into(), arg]);
            continue;
        }
        out.push(arg);
    }
    Ok((out, warnings))
}

/// 0.1.0's `--seeds` value as (first seed, count): `A..B` (B excluded) or a comma list of
/// consecutive seeds; today's `--seed`/`--num-seeds` run consecutive seeds only.
fn seed_range(v: &str) -> Result<(u64, u64), String> {
    let bad = |why: &str| {
        format!(
            "--seeds = {v}: {why}; 0.2.0 runs `--num-seeds N` consecutive seeds from `--seed A` \
             (0.1.0's `--seeds A..B` is `--seed A --num-seeds B-A`)"
        )
    };
    let int = |s: &str| s.trim().parse::<u64>().map_err(|_| bad(&format!("{s:?} is not a seed")));
    if let Some((a, b)) = v.split_once("..") {
        let (a, b) = (int(a)?, int(b)?);
        if b <= a {
            return Err(bad("B must be above A (B is excluded)"));
        }
        return Ok((a, b - a));
    }
    let seeds = v.split(',').map(int).collect::<Result<Vec<_>, _>>()?;
    let first = seeds[0];
    if seeds.iter().enumerate().any(|(i, &s)| Some(s) != first.checked_add(i as u64)) {
        return Err(bad("a list that is not consecutive seeds has no 0.2.0 spelling"));
    }
    Ok((first, seeds.len() as u64))
}

/// Whether the last argument written is an option that takes the next one as its value
/// (`--out-dir runs`), so a bare word after it is that value, not a file.
fn follows_option(out: &[String]) -> bool {
    out.last().is_some_and(|a| {
        a.starts_with("--") && !a.contains('=') && !matches!(a.as_str(), "--help" | "--strict")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn every_old_flag_becomes_its_new_one_with_a_warning() {
        for (old, new) in [
            ("kestrel mppi run --env nav2d", "kestrel mppi run --system nav2d"),
            (
                "kestrel mppi tune --tune=lambda --env pendulum",
                "kestrel mppi tune --knobs=lambda --system pendulum",
            ),
            (
                "kestrel hunt train --agents 3 --worlds 2",
                "kestrel hunt train --num-agents 3 --num-worlds 2",
            ),
            ("kestrel allo train --samples 500", "kestrel allo train --num-samples 500"),
            ("kestrel actdyn run --policy lazy", "kestrel actdyn run --kind lazy"),
            (
                "kestrel actdyn compare --seeds 3..7",
                "kestrel actdyn compare --seed 3 --num-seeds 4",
            ),
            (
                "kestrel actdyn compare --seeds=0,1,2",
                "kestrel actdyn compare --seed 0 --num-seeds 3",
            ),
            (
                "kestrel arc replay t.jsonl --out-dir r",
                "kestrel arc replay --traces t.jsonl --out-dir r",
            ),
        ] {
            let (got, warnings) = rewrite(argv(old)).unwrap();
            assert_eq!(got, argv(new), "{old}");
            let n = if old.contains("--worlds") || old.contains("--env pendulum") { 2 } else { 1 };
            assert_eq!(warnings.len(), n, "{old}: {warnings:?}");
            assert!(warnings.iter().all(|w| w.contains("accepted until 0.3.0")), "{warnings:?}");
        }
    }

    #[test]
    fn other_commands_and_current_spellings_are_left_alone() {
        for s in [
            "kestrel mppi run --system nav2d",
            "kestrel evo run --env x",
            "kestrel hunt play --agents 2",
            "kestrel arc replay --traces t.jsonl --out-dir r",
            "kestrel arc replay --out-dir r --traces t.jsonl",
            "kestrel mppi run -- --env",
            "kestrel --version",
        ] {
            let (got, warnings) = rewrite(argv(s)).unwrap();
            assert_eq!(got, argv(s));
            assert!(warnings.is_empty(), "{s}: {warnings:?}");
        }
    }

    #[test]
    fn an_old_value_without_a_new_form_says_what_to_write() {
        for (s, want) in [
            ("kestrel actdyn compare --seeds 1,5,9", "not consecutive"),
            ("kestrel actdyn compare --seeds 5..5", "B must be above A"),
            ("kestrel actdyn compare --seeds x..3", "\"x\" is not a seed"),
            ("kestrel actdyn compare --seeds", "a value"),
        ] {
            let e = rewrite(argv(s)).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
            if !s.ends_with("--seeds") {
                assert!(e.contains("--seed A --num-seeds B-A"), "{e}");
            }
        }
    }
}
