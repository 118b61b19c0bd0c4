//! The length a problem is asked within: a bound, or the length its composer states.

use crate::shogi::Stipulation;

/// A bound on the solutions' length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// Solutions of at most this many plies (`--max-plies`, `MaxPlies`): "none within N" is an
    /// answer.
    AtMost(u32),
    /// The stated length (`--plies`, a file's `手数＝N` or `N手`): searched within it, and the
    /// answer judged against it (完全, 余詰, 早詰, 不詰).
    Stated(u32),
}

impl Length {
    pub fn plies(self) -> u32 {
        match self {
            Length::AtMost(n) | Length::Stated(n) => n,
        }
    }

    /// Why `length` cannot be `stipulation`'s stated length, if it is one and cannot (its
    /// parity; a bound alone may have either).
    pub fn error(length: Option<Length>, stipulation: Stipulation) -> Option<String> {
        match length {
            Some(Length::Stated(n)) => stipulation.length_error(n),
            _ => None,
        }
    }
}
