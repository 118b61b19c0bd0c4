//! The `usi_session` reader fuzzed: see `kyozume::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kyozume::fuzzing::run("usi_session", data);
});
