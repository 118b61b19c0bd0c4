//! Inputs the fuzzers found (or that stand for what they test), each run through its target
//! again: `tests/data/fuzz/<target>/<input>`. A crash the fuzzers find is saved here once fixed,
//! so that it stays fixed.

use std::path::Path;

#[test]
fn every_saved_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut ran = 0;
    for dir in std::fs::read_dir(&root).expect("tests/data/fuzz") {
        let dir = dir.unwrap().path();
        let target = dir.file_name().unwrap().to_string_lossy().into_owned();
        for input in std::fs::read_dir(&dir).unwrap() {
            let input = input.unwrap().path();
            let data = std::fs::read(&input).unwrap();
            kyozume::peak_memory::reset();
            assert!(
                kyozume::fuzzing::run(&target, &data),
                "{}: no fuzz target {target}",
                input.display()
            );
            // What the fuzzers run under (`-rss_limit_mb=2048`), with room to spare: a damaged
            // count must not ask for gigabytes.
            if let Some(mb) = kyozume::peak_memory::megabytes() {
                assert!(mb < 1024, "{}: peak {mb} MB", input.display());
            }
            ran += 1;
        }
    }
    // Each target has at least one input, so that a renamed target cannot go unrun.
    for (name, _) in kyozume::fuzzing::TARGETS {
        assert!(root.join(name).is_dir(), "no inputs for the target {name}");
    }
    assert!(ran >= kyozume::fuzzing::TARGETS.len());
}
