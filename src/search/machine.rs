//! What the search asks of the machine beyond plain instructions: hints that start loading a
//! cache line before it is needed (tables probed at random addresses overlap their misses this
//! way), and how many cores there are to run threads on.

/// The machine's logical cores, as the system tells them (asked once: each asking reads
/// control-group files, some 30 us).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::LazyLock<usize> =
        std::sync::LazyLock::new(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    *CORES
}

/// Hints the CPU to start loading the cache line of `value`; tables probed at random addresses
/// (the transposition table, the breadth-first seen set) overlap their misses this way.
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    prefetch_at(value as *const T);
}

/// `prefetch` for an address that may lie outside any object (a hint only).
#[inline]
pub(crate) fn prefetch_at<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is only a hint; it never faults, whatever the address, and reads
        // nothing the program can observe. It is `unsafe` solely because it is a target-feature
        // intrinsic (SSE, always present on x86_64).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Hints the CPU to fetch the cache line at `at` for writing: a line another CPU wrote or read
/// last is then owned before the store comes, instead of the store waiting for it (and every
/// store behind it: stores complete in order). Where the CPU lacks the instruction, a read hint.
#[inline]
pub(crate) fn prefetch_write<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        if *HAS_PREFETCHW {
            // SAFETY: PREFETCHW (present, see `HAS_PREFETCHW`) only hints: it never faults,
            // whatever the address, and changes no register, flag or memory. Written out
            // because `_mm_prefetch::<_MM_HINT_ET0>` compiles to a read hint unless the whole
            // build enables the PRFCHW feature, and a read hint leaves the line shared: the
            // store still waits (forest-06-10_97 at two threads: 0.416 s with read hints,
            // 0.381 s with PREFETCHW on the dead cache and 0.406 s on the candidates).
            unsafe {
                std::arch::asm!(
                    "prefetchw [{0}]",
                    in(reg) at,
                    options(nostack, preserves_flags, readonly)
                );
            }
        } else {
            prefetch_at(at);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Whether the CPU has PREFETCHW (CPUID 8000_0001h, ECX bit 8): every AMD64 CPU, Intel's
/// since Broadwell.
#[cfg(target_arch = "x86_64")]
static HAS_PREFETCHW: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
    use std::arch::x86_64::__cpuid;
    __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
});
