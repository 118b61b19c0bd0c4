//! The `sfen` reader fuzzed: see `kyozume::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kyozume::fuzzing::run("sfen", data);
});
