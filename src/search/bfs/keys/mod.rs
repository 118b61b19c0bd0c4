//! The key store: which positions the pass has met. A key is checked and kept for every child
//! the pass makes, so this is where its memory and most of its time go.
//!
//! - `set.rs`: the set of keys seen, in shards, growing within the pass's budget; threads each
//!   own some shards.
//! - `table.rs`: a shard's table, buckets of one cache line (a look-up reads one line, most
//!   often); `bucket.rs`: the buckets' two layouts (six slots of ten bytes for small tables,
//!   seven of nine for large ones).
//! - `frozen.rs`: the keys packed into sorted buckets once memory runs short (about 8 bytes a
//!   key instead of 17).
//! - `forgetting.rs`: which levels' keys are let go of once old, and when.
//! - `level_index.rs`, `level_filter.rs`: a level's new keys, indexed and filtered, so the
//!   threads that expand a level find each other's children.
//! - `key_map.rs`: a map keyed by position keys (their own bits as the hash).
//! - `census.rs`: how long after its first visit a position is met again (the level log's gaps).

mod bucket;
pub(super) mod census;
pub(super) mod forgetting;
pub(super) mod frozen;
mod key_map;
pub(super) mod level_filter;
pub(super) mod level_index;
mod set;
mod table;

pub(crate) use frozen::NotFrozen;
pub(crate) use key_map::KeyMap;
pub(crate) use set::{
    owner_of, owner_of_key, place_among_owned, shard_of, shards_of, FrozenLookUp, Grown, KeySet,
    Shard,
};
