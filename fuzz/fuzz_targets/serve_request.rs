//! The requests of `kyozume serve`'s API fuzzed: see `kyozume::fuzzing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kyozume::fuzzing::run("serve_request", data);
});
