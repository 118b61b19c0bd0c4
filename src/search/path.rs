//! The set of positions on the current search path, for O(1) repetition tests at any depth.

/// Open addressing with linear probing on full 128-bit keys; `ply + 1` is stored so that 0 marks
/// an empty slot. Deletion shifts later entries back, so no tombstones accumulate.
pub struct PathSet {
    keys: Vec<u128>,
    plies: Vec<u32>,
    len: usize,
}

impl PathSet {
    pub fn new() -> PathSet {
        PathSet::with_slots(1 << 12)
    }

    fn with_slots(n: usize) -> PathSet {
        PathSet {
            keys: vec![0; n],
            plies: vec![0; n],
            len: 0,
        }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.keys.len() - 1
    }

    #[inline]
    fn home(&self, key: u128) -> usize {
        (key as usize) & self.mask()
    }

    /// The ply at which `key` stands on the path, if it does.
    #[inline]
    pub fn get(&self, key: u128) -> Option<u32> {
        let mut i = self.home(key);
        loop {
            match self.plies[i] {
                0 => return None,
                p if self.keys[i] == key => return Some(p - 1),
                _ => i = (i + 1) & self.mask(),
            }
        }
    }

    /// Adds `key` at `ply`; the key must not be present.
    #[inline]
    pub fn insert(&mut self, key: u128, ply: u32) {
        if 2 * (self.len + 1) > self.keys.len() {
            self.grow();
        }
        let mut i = self.home(key);
        while self.plies[i] != 0 {
            debug_assert!(self.keys[i] != key, "position already on the path");
            i = (i + 1) & self.mask();
        }
        self.keys[i] = key;
        self.plies[i] = ply + 1;
        self.len += 1;
    }

    /// Removes `key`, which must be present.
    #[inline]
    pub fn remove(&mut self, key: u128) {
        let mask = self.mask();
        let mut i = self.home(key);
        while self.keys[i] != key || self.plies[i] == 0 {
            debug_assert!(self.plies[i] != 0, "removing a key not on the path");
            i = (i + 1) & mask;
        }
        // Backward-shift deletion: move later members of the probe run into the hole.
        let mut hole = i;
        let mut j = (i + 1) & mask;
        while self.plies[j] != 0 {
            let home = self.home(self.keys[j]);
            // Move j into the hole if its home is not cyclically within (hole, j].
            let dist_home = j.wrapping_sub(home) & mask;
            let dist_hole = j.wrapping_sub(hole) & mask;
            if dist_home >= dist_hole {
                self.keys[hole] = self.keys[j];
                self.plies[hole] = self.plies[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.plies[hole] = 0;
        self.keys[hole] = 0;
        self.len -= 1;
    }

    pub fn clear(&mut self) {
        self.keys.iter_mut().for_each(|k| *k = 0);
        self.plies.iter_mut().for_each(|p| *p = 0);
        self.len = 0;
    }

    fn grow(&mut self) {
        let mut bigger = PathSet::with_slots(self.keys.len() * 2);
        for i in 0..self.keys.len() {
            if self.plies[i] != 0 {
                bigger.insert(self.keys[i], self.plies[i] - 1);
            }
        }
        *self = bigger;
    }
}

impl Default for PathSet {
    fn default() -> Self {
        PathSet::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_map_under_stack_usage_and_collisions() {
        let mut set = PathSet::new();
        // Keys sharing low bits collide on purpose.
        let key = |i: u32| ((i as u128) << 64) | ((i % 7) as u128);
        for i in 0..10_000 {
            set.insert(key(i), i);
        }
        for i in 0..10_000 {
            assert_eq!(set.get(key(i)), Some(i));
        }
        assert_eq!(set.get(key(10_001)), None);
        for i in (5_000..10_000).rev() {
            set.remove(key(i));
            assert_eq!(set.get(key(i)), None);
        }
        for i in 0..5_000 {
            assert_eq!(set.get(key(i)), Some(i));
        }
        // Removal out of stack order as well.
        for i in (0..5_000).step_by(2) {
            set.remove(key(i));
        }
        for i in 0..5_000 {
            assert_eq!(set.get(key(i)), (i % 2 == 1).then_some(i));
        }
    }
}
