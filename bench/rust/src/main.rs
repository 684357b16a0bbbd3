//! binary-trees (Computer Language Benchmarks Game rules) with bumpalo + rayon:
//! the Rust peer of memres's benchmark suite (bench/, the "rust bumpalo" row).
//!
//! Usage: binary-trees-bumpalo [DEPTH] [--threads N]
//!   DEPTH       maximum depth n (default 21; at least 6 is used, as the rules say)
//!   --threads N size of the rayon pool (default 1: a single-threaded run;
//!               0: rayon's default, i.e. RAYON_NUM_THREADS or all cores)
//!
//! As in the fastest Rust entries, every tree lives in a `bumpalo::Bump`.  The
//! trees of one depth are split evenly across the pool's workers; each worker
//! slot owns one Bump for the whole run and resets it before building each of
//! its trees, so after the first few trees a slot builds a tree with no call to
//! the system allocator at all.  The stretch tree and the long-lived tree each
//! have their own Bump.
//!
//! Output is exactly the game's lines; "check" is the node count of a tree.

use bumpalo::Bump;
use rayon::prelude::*;
use std::process::exit;

const MIN_DEPTH: u32 = 4;

struct Node<'a> {
    left: Option<&'a Node<'a>>,
    right: Option<&'a Node<'a>>,
}

fn bottom_up_tree(arena: &Bump, depth: u32) -> &Node<'_> {
    if depth > 0 {
        let left = bottom_up_tree(arena, depth - 1);
        let right = bottom_up_tree(arena, depth - 1);
        arena.alloc(Node {
            left: Some(left),
            right: Some(right),
        })
    } else {
        arena.alloc(Node {
            left: None,
            right: None,
        })
    }
}

fn item_check(tree: &Node<'_>) -> u64 {
    match (tree.left, tree.right) {
        (Some(l), Some(r)) => 1 + item_check(l) + item_check(r),
        _ => 1,
    }
}

/// Builds and checks `count` trees of `depth`, resetting `arena` before each.
fn run_slot(arena: &mut Bump, depth: u32, count: u64) -> u64 {
    let mut check = 0;
    for _ in 0..count {
        arena.reset();
        check += item_check(bottom_up_tree(arena, depth));
    }
    check
}

fn usage(msg: &str) -> ! {
    eprintln!("binary-trees-bumpalo: {}", msg);
    eprintln!("usage: binary-trees-bumpalo [DEPTH] [--threads N]   (DEPTH default 21; N default 1, 0 = all cores)");
    exit(2);
}

fn parse_args() -> (u32, usize) {
    let mut depth: Option<u32> = None;
    let mut threads: usize = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let thread_arg = if a == "--threads" || a == "-t" {
            Some(args.next().unwrap_or_else(|| usage("--threads needs a value")))
        } else {
            a.strip_prefix("--threads=").map(str::to_owned)
        };
        if let Some(v) = thread_arg {
            threads = v
                .parse()
                .unwrap_or_else(|_| usage(&format!("bad thread count '{}'", v)));
        } else if a == "-h" || a == "--help" {
            usage("binary-trees with bumpalo arenas and a rayon pool");
        } else if depth.is_none() {
            let d: u32 = a
                .parse()
                .unwrap_or_else(|_| usage(&format!("bad depth '{}'", a)));
            if d > 30 {
                usage("depth must be at most 30");
            }
            depth = Some(d);
        } else {
            usage(&format!("unexpected argument '{}'", a));
        }
    }
    (depth.unwrap_or(21), threads)
}

fn main() {
    let (n, threads) = parse_args();
    let max_depth = n.max(MIN_DEPTH + 2);

    // No pool at all for the single-threaded comparison: everything runs on
    // the main thread.
    let pool = if threads == 1 {
        None
    } else {
        let p = rayon::ThreadPoolBuilder::new()
            .num_threads(threads) // 0: rayon's default
            .build()
            .unwrap_or_else(|e| {
                eprintln!("binary-trees-bumpalo: cannot start thread pool: {}", e);
                exit(1);
            });
        Some(p)
    };
    let workers = pool.as_ref().map_or(1, |p| p.current_num_threads().max(1));

    {
        let stretch_depth = max_depth + 1;
        let arena = Bump::new();
        let check = item_check(bottom_up_tree(&arena, stretch_depth));
        println!("stretch tree of depth {}\t check: {}", stretch_depth, check);
    }

    let long_lived_arena = Bump::new();
    let long_lived_tree = bottom_up_tree(&long_lived_arena, max_depth);

    // One Bump per worker slot, kept for the whole run.
    let mut arenas: Vec<Bump> = (0..workers).map(|_| Bump::new()).collect();

    let mut depth = MIN_DEPTH;
    while depth <= max_depth {
        let iterations: u64 = 1u64 << (max_depth - depth + MIN_DEPTH);
        let slots = arenas.len() as u64;
        let check: u64 = match &pool {
            None => run_slot(&mut arenas[0], depth, iterations),
            Some(pool) => pool.install(|| {
                arenas
                    .par_iter_mut()
                    .enumerate()
                    .map(|(i, arena)| {
                        let i = i as u64;
                        let count = iterations / slots + u64::from(i < iterations % slots);
                        run_slot(arena, depth, count)
                    })
                    .sum()
            }),
        };
        println!("{}\t trees of depth {}\t check: {}", iterations, depth, check);
        depth += 2;
    }

    println!(
        "long lived tree of depth {}\t check: {}",
        max_depth,
        item_check(long_lived_tree)
    );
}
