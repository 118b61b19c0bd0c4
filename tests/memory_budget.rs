//! `USI_Hash` is the engine's memory budget: the table, the helpers' tables, the breadth-first
//! pass and its threads' vectors all fit in it, at every thread count. Checked on the process's
//! peak resident memory (`kyozume solve --json` reports it; Linux only), for problems whose
//! breadth-first levels outgrow a small hash within seconds, at one and two threads. The bound
//! checked, the hash plus 48 MB plus 8 MB a thread, is tighter than the documented one (64 MB
//! plus 64 MB a thread): before the threads' vectors were counted, two threads on these
//! problems took 100-200 MB at a 32 MB hash.

#![cfg(target_os = "linux")]

use std::process::Command;

/// Wide breadth-first levels (加藤徹 4197 and chain 207, from `bench/suite.tsv`) and a bushy
/// problem that deepening solves.
const PROBLEMS: [&str; 3] = [
    "2S6/1S1S1G1GG/S1LpNNpNN/rL7/R1PP5/3k5/8P/2l1pp1l+p/K2b2b1g b 3P7p 1",
    "8l/l1SS1PGP1/1PPNP1Pp1/4b2sk/Rg7/2s1gn2P/3nN4/1lg3l2/K1+B3r2 b 10P 1",
    "9/9/9/9/9/9/4k4/9/9 b S2N2P2r2b4g3s2n4l16p 1",
];

/// The peak memory `kyozume solve` reports for `sfen` (MB), given two seconds.
fn peak_mb(sfen: &str, hash_mb: usize, threads: usize) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_kyozume"))
        .args(["solve", "--json", "--time-limit", "2", "--solutions", "2"])
        .args(["--hash", &hash_mb.to_string()])
        .args(["--threads", &threads.to_string(), sfen])
        .output()
        .expect("kyozume runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON report");
    report["peak_mb"]
        .as_u64()
        .unwrap_or_else(|| panic!("no peak memory in {text}"))
}

#[test]
fn the_process_stays_within_the_hash_at_one_and_two_threads() {
    for sfen in PROBLEMS {
        for hash_mb in [32, 64] {
            for threads in [1, 2] {
                let peak = peak_mb(sfen, hash_mb, threads);
                let bound = hash_mb as u64 + 48 + 8 * threads as u64;
                assert!(
                    peak <= bound,
                    "{sfen} at {hash_mb} MB and {threads} thread(s): {peak} MB (bound {bound})"
                );
            }
        }
    }
}
