//! The key set's tests: growth, freezing, forgetting, the threads' shares and checkpoints.

use super::super::bucket;
use super::*;

/// Spreads test keys over the key space.
const MIX: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835;

/// The `i`th test key (odd, so never a zero word).
fn key(i: u128) -> u128 {
    i.wrapping_mul(MIX) | 1
}

fn value_in(entry: &Entry) -> u128 {
    entry >> Tag::BITS
}

/// Inserts `per_level` new keys (`key(i)`, i = level * per_level + j) on each of
/// `levels`, frozen after each level if `freeze`.
fn fill_levels(set: &mut KeySet, levels: std::ops::Range<u128>, per_level: u128, freeze: bool) {
    for level in levels {
        set.set_level(level as u32);
        for j in 0..per_level {
            assert_eq!(
                set.insert(key(level * per_level + j), usize::MAX, false),
                Ok(true)
            );
        }
        if freeze {
            assert!(set.freeze_all(None, &|| false).is_ok());
        }
    }
}

/// Shards grown ahead are copied a few at a time: the copies hold at most what they are
/// allowed (and one shard past it), at least one shard is copied when any is due, and none
/// beyond the memory given.
#[test]
fn shards_grown_ahead_are_staggered() {
    let mut set = KeySet::new();
    let key = |i: u128| i.wrapping_mul(MIX) ^ (i << 120);
    let due = |set: &KeySet| {
        (0..KeySet::SHARDS)
            .filter(|&s| set.shards[s].grown_ahead(usize::MAX).is_some())
            .count()
    };
    let mut i = 0u128;
    while due(&set) < 16 {
        assert!(i < 2_000_000, "shards never came near full together");
        set.insert(key(i), usize::MAX, false).unwrap();
        i += 1;
    }
    let due = due(&set);
    let mut out = Vec::new();
    set.grow_ahead(0..KeySet::SHARDS, usize::MAX, usize::MAX, &mut out);
    assert_eq!(out.len(), due, "unbounded, every shard due is copied");
    let largest = out.iter().map(|(_, g)| g.held_bytes()).max().unwrap();
    let all: usize = out.iter().map(|(_, g)| g.held_bytes()).sum();
    for most in [0, 1, all / 4, all / 2] {
        set.grow_ahead(0..KeySet::SHARDS, usize::MAX, most, &mut out);
        let held: usize = out.iter().map(|(_, g)| g.held_bytes()).sum();
        assert!(!out.is_empty(), "at most {most}: none copied");
        assert!(
            held < most.max(1) + largest,
            "at most {most}: {held} bytes copied"
        );
        assert!(out.len() < due, "at most {most}: all {due} copied");
    }
    set.grow_ahead(0..KeySet::SHARDS, largest / 2, usize::MAX, &mut out);
    let held: usize = out.iter().map(|(_, g)| g.bytes).sum();
    assert!(
        held <= largest / 2,
        "{held} bytes grown within {}",
        largest / 2
    );
    // Each copy is the shard with every key, bigger: put in, the keys are all there.
    set.grow_ahead(0..KeySet::SHARDS, usize::MAX, usize::MAX, &mut out);
    for (shard, grown) in out.drain(..) {
        set.shards[shard].put_grown(grown);
    }
    for j in 0..i {
        assert_eq!(set.insert(key(j), usize::MAX, false), Ok(false));
    }
}

#[test]
fn key_set_keeps_every_key_through_growth() {
    let mut set = KeySet::new();
    let key = |i: u128| i.wrapping_mul(MIX) ^ (i << 120);
    for i in 0..200_000u128 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    for i in 0..200_000u128 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(false));
    }
    assert_eq!(set.len(), 200_000);
    // Keys that differ only in bits the set keeps must stay distinct; keys whose low 64 bits
    // are zero are kept as a stand-in.
    let a = 1u128 << 100;
    assert_eq!(set.insert(a, usize::MAX, false), Ok(true));
    assert_eq!(set.insert(a | (1 << 63), usize::MAX, false), Ok(true));
    assert_eq!(set.insert(a | (1 << 120), usize::MAX, false), Ok(true));
    // (key(0) is 0 itself, inserted above.)
    assert_eq!(set.insert(0, usize::MAX, false), Ok(false));
    assert_eq!(set.insert(a, usize::MAX, false), Ok(false));
    assert!(set.contains(a) && set.contains(0) && set.contains(key(7)));
    assert!(!set.contains(a | 1 << 62));
    // A budget too small to grow is reported, not exceeded.
    let mut small = KeySet::new();
    let budget = small.bytes();
    let full = (0..100_000u128).try_for_each(|i| small.insert(key(i), budget, true).map(|_| ()));
    assert_eq!(full, Err(()));
    assert!(small.bytes() <= budget);
}

/// A freeze that cannot free an eighth of the set still goes ahead if it frees a
/// thirty-second (cramming the shards instead slows every look-up), and not for less.
#[test]
fn a_freeze_frees_less_rather_than_let_the_shards_cram() {
    let mut set = KeySet::new();
    // Level 0 is kept for good: no term ends, so only the tables' keys can be frozen.
    set.set_level(0);
    for i in 0..200_000 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    assert!(set.freeze(None, &|| false).is_ok_and(|freed| freed > 0));
    let frozen_only = set.bytes();
    // A few keys in the tables: too little to be worth a freeze.
    for i in 200_000..201_000 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    assert_eq!(set.freeze(None, &|| false), Ok(0));
    // More: freezing them frees less than an eighth of the set but more than a 32nd.
    for i in 201_000..230_000 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    let before = set.bytes();
    assert!(before - frozen_only > before / MIN_FREEZE_SAVING);
    let freed = set.freeze(None, &|| false).unwrap();
    assert!(freed >= before / LAST_FREEZE_SAVING && freed < before / MIN_FREEZE_SAVING);
    assert!((0..230_000).all(|i| set.contains(key(i))));
    assert!(!set.contains(key(230_000)));
}

#[test]
fn near_the_budget_shards_grow_less_then_fill_up() {
    // A shard of 160 buckets (960 slots), with memory to grow by a sixteenth (not enough
    // for its siblings to grow as with ample memory), then none. It fills past
    // `FULL_PERCENT` to `TIGHT_FULL_PERCENT` before it grows.
    let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
    shard.grow(160).unwrap();
    let mut inserted = Vec::new();
    let mut allowance = (160 + 170) * BUCKET_BYTES;
    let mut i = 0;
    while shard.len() < 960 * TIGHT_FULL_PERCENT / 100 {
        if shard.insert(key(i), &mut allowance, false) == Ok(true) {
            inserted.push(key(i));
        }
        i += 1;
    }
    assert_eq!(shard.table.buckets(), 160);
    assert_eq!(
        shard.insert(key(i), &mut allowance, false),
        Ok(true),
        "grows a little"
    );
    inserted.push(key(i));
    assert_eq!(shard.table.buckets(), 170);
    // No memory left: fills to 90%, then says so.
    let mut none = 0;
    let mut result = Ok(true);
    while result.is_ok() {
        i += 1;
        result = shard.insert(key(i), &mut none, true);
        if result == Ok(true) {
            inserted.push(key(i));
        }
    }
    assert_eq!(shard.table.buckets(), 170);
    assert_eq!(shard.len(), shard.table.slots() * CRAMMED_PERCENT / 100);
    assert!(inserted.iter().all(|&k| shard.contains(k)));
    assert_eq!(shard.len(), inserted.len());
}

/// Keys kept aside (their home and the buckets after it full) count against the shard's
/// allowance as they are kept: what the insertions took from it is what the table grew by.
#[test]
fn keys_kept_aside_count_against_the_allowance() {
    let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
    shard.grow(bucket::COMPACT_FROM + 101).unwrap();
    let before = shard.table.bytes();
    let given = 1 << 20;
    let mut allowance = given;
    // Small words all have the first bucket for their home: past sixteen buckets' worth,
    // they go aside, far below the load at which the shard would grow.
    for word in 1..=2_000u128 {
        assert_eq!(shard.insert(word, &mut allowance, false), Ok(true));
    }
    let KeyTable::Compact(_) = &shard.table else {
        panic!("a compact table");
    };
    assert_eq!(shard.table.buckets(), bucket::COMPACT_FROM + 101);
    assert!(shard.table.bytes() > before, "nothing kept aside");
    assert_eq!(given - allowance, shard.table.bytes() - before);
    assert!((1..=2_000u128).all(|word| shard.contains(word)));
}

/// The three spellings of shard ownership agree: the owner's list from `split_among` holds
/// shard `s` at `place_among_owned(s)`, and `shards_of` names the same shards.
#[test]
fn shard_ownership_has_one_rule() {
    for owners in [1, 2, 3, 4, 7, 64, 100] {
        let mut set = KeySet::new();
        let shards = set.shards.len();
        let starts: Vec<*const Shard> = set.shards.iter().map(|s| s as *const Shard).collect();
        let split = set.split_among(owners);
        assert_eq!(split.len(), owners);
        assert_eq!(split.iter().map(Vec::len).sum::<usize>(), shards);
        for (shard, &start) in starts.iter().enumerate() {
            let owner = owner_of(shard, owners);
            let held: &Shard = split[owner][place_among_owned(shard, owners)];
            assert!(
                std::ptr::eq(held, start),
                "shard {shard} of {owners} owners"
            );
        }
        for (owner, mine) in split.iter().enumerate() {
            let named: Vec<usize> = shards_of(owner, owners, shards).collect();
            assert_eq!(named.len(), mine.len());
            for (place, &shard) in named.iter().enumerate() {
                assert!(std::ptr::eq(&*mine[place], starts[shard]));
            }
        }
    }
}

/// A shard is grown ahead only once nearly full and within the allowance, by what an
/// insertion would grow it by, and keeps every key; the copy must go in before any other
/// key does.
#[test]
fn a_shard_grown_ahead_keeps_its_keys() {
    let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
    shard.grow(200).unwrap();
    let mut allowance = usize::MAX;
    let mut i = 0;
    while shard.len() * 100 < 1200 * AHEAD_PERCENT - 100 {
        shard.insert(key(i), &mut allowance, false).unwrap();
        i += 1;
        assert!(shard.grown_ahead(usize::MAX).is_none(), "not due at {i}");
    }
    shard.insert(key(i), &mut allowance, false).unwrap();
    i += 1;
    assert!(
        shard.grown_ahead(400 * BUCKET_BYTES).is_none(),
        "not within the allowance"
    );
    let grown = shard.grown_ahead(usize::MAX).expect("due");
    assert_eq!(grown.bytes, 50 * BUCKET_BYTES);
    shard.put_grown(grown);
    assert_eq!(shard.table.buckets(), 250);
    assert_eq!(shard.len(), i as usize);
    assert!((0..i).all(|k| shard.contains(key(k))));
    let grown = shard.grown_ahead(usize::MAX);
    assert!(grown.is_none(), "four fifths as full now");
    // A copy taken before an insertion would lose the key: refused.
    while shard.len() * 100 < 1500 * AHEAD_PERCENT {
        shard.insert(key(i), &mut allowance, false).unwrap();
        i += 1;
    }
    let grown = shard.grown_ahead(usize::MAX).expect("due");
    shard.insert(key(i), &mut allowance, false).unwrap();
    let late = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shard.put_grown(grown)));
    assert!(late.is_err());
}

#[test]
fn a_shards_words_come_out_ascending_whatever_its_clusters() {
    use std::collections::BTreeSet;
    for (buckets, keys, seed) in [(170, 700, 1u64), (170, 900, 2), (11, 57, 3), (840, 4400, 4)] {
        let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
        shard.grow(buckets).unwrap();
        let mut words = BTreeSet::new();
        let mut x = seed;
        let mut none = 0;
        while words.len() < keys {
            x = x
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            // A third crowd the top of the word space: their home is the last bucket, and
            // they run on into the first ones, among words whose homes are there.
            let word = if x % 3 == 0 {
                u64::MAX - (x >> 40)
            } else {
                x | 1
            };
            if shard.insert(word as u128, &mut none, true) == Ok(true) {
                words.insert(word);
            }
        }
        assert!(
            (shard.table.first_words().iter()).any(|&w| bucket::home(w, buckets) > 0),
            "the insertions ran past the end"
        );
        let sorted = shard.sorted_entries(&|| false).unwrap();
        let sorted = sorted.iter().map(|e| (value_in(e) >> EXT_BITS) as u64);
        assert!(
            sorted.eq(words.iter().copied()),
            "{buckets} buckets, {keys} keys"
        );
        assert_eq!(shard.sorted_entries(&|| true), Err(NotFrozen::Stopped));
    }
}

/// Keys are told apart by 80 bits: the shard's 6, the word's 64 and 10 more.
#[test]
fn keys_differing_in_any_of_80_bits_stay_apart() {
    let a = 0x0123_4567_89ab_cdef_u128 | 5 << 90;
    for frozen in [false, true] {
        let mut set = KeySet::new();
        let kept = [0, 64, 70, 73, 122, 127].map(|bit| a ^ 1 << bit);
        for &key in &kept {
            assert_eq!(set.insert(key, usize::MAX, false), Ok(true), "{key:x}");
        }
        if frozen {
            assert!(set.freeze_all(None, &|| false).is_ok());
        }
        for &key in &kept {
            assert!(set.contains(key), "{key:x}");
            // Bits 74 to 121 are not kept.
            assert_eq!(set.insert(key ^ 1 << 80, usize::MAX, false), Ok(false));
        }
        assert!(!set.contains(a ^ 1 << 65) && !set.contains(a ^ 1 << 3));
    }
}

/// Frozen, keys of one level in 16 stay for good; those of the other spaced levels (one
/// in `keep_every`) go once their block's newest level is `4 * kept_for` back, the others
/// once theirs is `kept_for` back; a checkpoint's copy keeps every set as it was.
#[test]
fn keys_go_once_their_term_is_over_and_those_kept_for_good_stay() {
    for every in [2u32, 4] {
        let forgetting = Forgetting {
            kept_for: 4,
            keep_every: every,
        };
        let mut set = KeySet::with_census(None, forgetting);
        fill_levels(&mut set, 0..40, 1000, true);
        // Frozen at level 39: kept long until 16 levels after the newest level kept long
        // in their block of 4, short for 4 after their own (blocks of one level).
        let for_good = |level: u128| level.is_multiple_of(16);
        let long = |level: u128| !for_good(level) && level.is_multiple_of(u128::from(every));
        let newest_in_block = |level: u128| {
            (level / 4 * 4..=level / 4 * 4 + 3)
                .filter(|&l| long(l))
                .max()
        };
        let expected = |level: u128, at: u128| {
            for_good(level)
                || (long(level) && newest_in_block(level).is_some_and(|n| n + 16 >= at))
                || level + 4 >= at
        };
        let held = |set: &KeySet, at: u128| {
            (0..40u128).all(|level| {
                (0..1000).all(|j| set.contains(key(level * 1000 + j)) == expected(level, at))
            })
        };
        assert!(held(&set, 39), "every {every}");
        let kept_levels = (0..40).filter(|&l| expected(l, 39)).count();
        assert_eq!(set.len(), kept_levels * 1000);
        let mut copy = Vec::new();
        let written = set.write_values(&mut copy).unwrap();
        assert_eq!(written, copy.len() as u64);
        let mut again = KeySet::read_values(
            &mut copy.as_slice(),
            None,
            forgetting,
            39,
            copy.len() as u64,
        )
        .unwrap();
        assert!(held(&again, 39));
        again.set_level(44);
        assert!(again.freeze_all(None, &|| false).is_ok());
        assert!(held(&again, 44), "resumed, every {every}");
        again.set_level(60);
        assert!(again.freeze_all(None, &|| false).is_ok());
        assert_eq!(again.len(), 3000);
        // Cut short or out of order: an error, not a set.
        assert!(KeySet::read_values(
            &mut &copy[..copy.len() - 3],
            None,
            forgetting,
            39,
            copy.len() as u64 - 3
        )
        .is_err());
        // (Shard 0's first two keys, after its tags' headers and its count.)
        let tags = u64::from_le_bytes(copy[..8].try_into().unwrap()) as usize;
        let first = 8 + 12 * tags + 8;
        let (a, b) = (first..first + 10, first + 10..first + 20);
        let mut swapped = copy.clone();
        swapped[a.clone()].copy_from_slice(&copy[b.clone()]);
        swapped[b].copy_from_slice(&copy[a]);
        assert!(KeySet::read_values(
            &mut swapped.as_slice(),
            None,
            forgetting,
            39,
            swapped.len() as u64
        )
        .is_err());
    }
}

/// A table that spans more levels than its tags tell apart is frozen conservatively: no
/// key goes before its term is over, and keys of long ago do go.
#[test]
fn keys_of_a_table_spanning_many_levels_go_no_sooner_than_their_term() {
    let forgetting = Forgetting {
        kept_for: 4,
        keep_every: 16,
    };
    let mut set = KeySet::with_census(None, forgetting);
    fill_levels(&mut set, 0..41, 100, false);
    assert!(set.freeze_all(None, &|| false).is_ok());
    let held = |level: u128| (0..100).all(|j| set.contains(key(level * 100 + j)));
    for level in 0..=40u128 {
        if level.is_multiple_of(16) || level + 4 >= 40 {
            assert!(held(level), "level {level}");
        }
    }
    // Levels 1-3 share their tags with 33-35, let go of at 40.
    assert!((1..=3).all(|level| !held(level)));
    assert!(set.len() < 41 * 100);
}

/// A checkpoint's keys kept long or short with a damaged tag header are refused.
#[test]
fn a_damaged_set_header_is_refused() {
    let forgetting = Forgetting::default();
    let mut set = KeySet::with_census(None, forgetting);
    set.set_level(1);
    // A key of shard 0: its tag's header comes first.
    assert_eq!(set.insert(12345, usize::MAX, false), Ok(true));
    let mut copy = Vec::new();
    set.write_values(&mut copy).unwrap();
    assert_eq!(u64::from_le_bytes(copy[..8].try_into().unwrap()), 1);
    assert!(
        KeySet::read_values(&mut copy.as_slice(), None, forgetting, 1, copy.len() as u64).is_ok()
    );
    let damaged = |at: usize, value: u32| {
        let mut bad = copy.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        KeySet::read_values(&mut bad.as_slice(), None, forgetting, 1, bad.len() as u64).is_err()
    };
    let tag = u32::from_le_bytes(copy[8..12].try_into().unwrap());
    assert!(damaged(8, Tag::FOR_GOOD.bits()), "a tag kept for good");
    assert!(damaged(8, tag + 1), "the keys' tag not named");
    assert!(damaged(12, 2), "oldest after newest");
    // The key's own tag: one no key can have, or another's.
    let entry_at = 8 + 12 + 8;
    let with_tag = |bits: u8| {
        let mut bad = copy.clone();
        bad[entry_at] = bad[entry_at] & !0x3f | bits;
        KeySet::read_values(&mut bad.as_slice(), None, forgetting, 1, bad.len() as u64).is_err()
    };
    assert!(!with_tag(tag as u8), "the key as written");
    assert!(with_tag(1), "a tag no key has");
    assert!(with_tag(tag as u8 + 1), "a tag without a header");
}

/// Once the keys kept for good take half of what the set took before a freeze, only every
/// fourth level's are kept for good from then on; at three quarters every eighth, at seven
/// eighths every sixteenth; keys kept later are transient or not by that spacing.
#[test]
fn levels_kept_for_good_space_out_as_they_fill_the_set() {
    let every = |set: &KeySet| set.clock.keep_every();
    let for_good = |set: &KeySet| -> usize { set.shards.iter().map(Shard::spaced_bytes).sum() };
    let fill = |set: &mut KeySet, level: u32, keys: std::ops::Range<u128>| {
        set.set_level(level);
        for i in keys {
            assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
        }
    };
    let mut set = KeySet::new();
    fill(&mut set, 0, 0..200_000);
    let room = set.bytes();
    assert!(set.freeze(None, &|| false).is_ok_and(|freed| freed > 0));
    let share = for_good(&set) as f64 / room as f64;
    let expected = match share {
        s if s <= 0.5 => 2,
        s if s <= 0.75 => 4,
        s if s <= 0.875 => 8,
        _ => 16,
    };
    assert_eq!(
        every(&set),
        expected,
        "kept for good: {share:.3} of the set"
    );
    // A few keys more: those kept for good take nearly all, every sixteenth level from now.
    // (Too few to be worth a freeze: the spacing is widened all the same.)
    fill(&mut set, 2, 200_000..202_000);
    assert_eq!(set.freeze(None, &|| false), Ok(0));
    assert_eq!(every(&set), 16);
    let transient = |set: &KeySet| -> usize {
        set.shards
            .iter()
            .map(|s| s.tally.of_term(Term::Short))
            .sum()
    };
    let before = transient(&set);
    fill(&mut set, 16, 202_000..203_000);
    fill(&mut set, 17, 203_000..203_500);
    fill(&mut set, 18, 203_500..204_000);
    assert_eq!(transient(&set) - before, 1000);
    assert!((0..204_000).all(|i| set.contains(key(i))));
    // Asked for, the spacing is a power of two from 2 to 16 (every 16th level kept for
    // good is what ends ghosts).
    for (asked, spacing) in [(0, 2), (3, 4), (16, 16), (64, 16)] {
        let forgetting = Forgetting {
            kept_for: 4,
            keep_every: asked,
        };
        assert_eq!(every(&KeySet::with_census(None, forgetting)), spacing);
    }
}

/// A set with keys `0..300_000` of `key` frozen (enough for every shard to freeze) and
/// `300_000..301_000` in the tables.
fn partly_frozen(key: impl Fn(u128) -> u128) -> KeySet {
    let mut set = KeySet::new();
    for i in 0..300_000u128 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    assert!(set.freeze(None, &|| false).is_ok());
    for i in 300_000..301_000u128 {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    set
}

#[test]
fn an_insertion_past_the_frozen_set_still_finds_the_tables_keys() {
    let mut set = partly_frozen(key);
    let mut insert = |i: u128| {
        let shard = &mut set.shards[shard_of(key(i))];
        assert!(shard.frozen.is_some());
        let mut allowance = usize::MAX;
        shard.insert_with(key(i), &mut allowance, false, FrozenLookUp::Done)
    };
    // In a table: found there; new: inserted, then found.
    assert!((300_000..301_000).all(|i| insert(i) == Ok(false)));
    assert!((301_000..302_000).all(|i| insert(i) == Ok(true)));
    assert!((301_000..302_000).all(|i| insert(i) == Ok(false)));
    assert!((0..302_000).all(|i| set.contains(key(i))));
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "missing from the frozen set")]
fn an_insertion_told_a_frozen_key_was_missing_is_caught() {
    let mut set = partly_frozen(key);
    let shard = &mut set.shards[shard_of(key(5))];
    let mut allowance = usize::MAX;
    let _ = shard.insert_with(key(5), &mut allowance, false, FrozenLookUp::Done);
}

/// Keys of the freezes' tests (`key(i)` for i below it).
const FREEZE_KEYS: u128 = 300_000;

/// A set of the first `FREEZE_KEYS` test keys, none frozen.
fn set_to_freeze() -> KeySet {
    let mut set = KeySet::new();
    for i in 0..FREEZE_KEYS {
        assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
    }
    set
}

/// Whether `set` holds every key `set_to_freeze` put in it, and no more.
fn all_there(set: &KeySet) -> bool {
    (0..FREEZE_KEYS).all(|i| set.contains(key(i))) && set.len() == FREEZE_KEYS as usize
}

#[test]
fn a_stopped_freeze_leaves_every_key_in_place() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut set = set_to_freeze();
    let bytes = set.bytes();
    assert_eq!(set.freeze(None, &|| true), Err(NotFrozen::Stopped));
    assert!(all_there(&set) && set.bytes() == bytes);
    // Stopped after ten shards: those are frozen, the others as they were.
    let polls = AtomicUsize::new(0);
    let after_ten = || polls.fetch_add(1, Ordering::Relaxed) >= 10;
    assert_eq!(set.freeze(None, &after_ten), Err(NotFrozen::Stopped));
    assert!(all_there(&set));
    assert!(set.bytes() < bytes);
    assert_eq!(set.shards.iter().filter(|s| s.frozen.is_some()).count(), 10);
    // Not stopped: all frozen, and the set still takes new keys.
    let frozen = set.freeze(None, &|| false);
    assert!(frozen.is_ok_and(|freed| freed > 0));
    assert!(set.shards.iter().all(|s| s.frozen.is_some()));
    assert!(all_there(&set));
    assert_eq!(set.insert(key(FREEZE_KEYS), usize::MAX, false), Ok(true));
    assert_eq!(set.insert(key(5), usize::MAX, false), Ok(false));
}

/// A freeze that cannot have the memory for a frozen set says so, and leaves every key where
/// it was; given the memory, the same set freezes. (Debug builds took it for a miscount and
/// panicked; release builds reported it as a stop, and four callers had to ask the interrupt
/// which it was.)
#[test]
fn a_freeze_without_memory_says_so_and_leaves_every_key_in_place() {
    let mut set = set_to_freeze();
    let bytes = set.bytes();
    let refused =
        crate::search::memory::with_populated_tables_refused(|| set.freeze(None, &|| false));
    assert_eq!(refused, Err(NotFrozen::NoMemory));
    assert!(all_there(&set) && set.bytes() == bytes);
    assert!(set.shards.iter().all(|s| s.frozen.is_none()));
    assert!(set.freeze(None, &|| false).is_ok_and(|freed| freed > 0));
    assert!(all_there(&set));
    assert_eq!(set.insert(key(FREEZE_KEYS), usize::MAX, false), Ok(true));
}
