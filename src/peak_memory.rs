//! The process's peak resident memory, as the system counts it: on Linux the kernel's
//! high-water mark (`VmHWM`), which [`reset`] starts anew through `/proc/self/clear_refs`.
//! Elsewhere nothing is known. Tables are mapped lazily, so this is the memory a search really
//! touched, not the hash size asked for.

/// Starts a new high-water mark (best effort: without it the figure is the peak so far).
pub fn reset() {
    #[cfg(target_os = "linux")]
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The high-water mark in MB, if the system tells it.
pub fn megabytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.div_ceil(1024))
}
