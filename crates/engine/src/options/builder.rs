//! [`Options`]' builder methods: one per field, each taking the field's
//! value and returning the options, so that a configuration reads as one
//! expression (`Options::new().protocol(Protocol::Silo).durability(...)`).
//! The fields stay public; struct-update syntax works as well.

use super::{Durability, Isolation, OnDamage, Options, OrderedMap, Protocol};
use std::path::PathBuf;
use std::time::Duration;

impl Options {
    /// The defaults (as [`Options::default`]): MV/O, no durability, no
    /// memory limit.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Options, Protocol};
    ///
    /// let o = Options::new().protocol(Protocol::Silo).max_transactions(64);
    /// assert_eq!((o.protocol, o.max_transactions, o.durability), (Protocol::Silo, 64, Durability::None));
    /// let db = Database::new(o).unwrap();
    /// assert_eq!(db.options().protocol, Protocol::Silo);
    /// ```
    pub fn new() -> Options {
        Options::default()
    }

    /// Sets [`Options::data_dir`], the directory of a durable database.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Options};
    ///
    /// let tmp = tempfile::tempdir().unwrap();
    /// let o = Options::new().durability(Durability::Sync).data_dir(tmp.path().join("db"));
    /// assert_eq!(o.data_dir.as_deref(), Some(tmp.path().join("db").as_path()));
    /// ```
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Options {
        self.data_dir = Some(dir.into());
        self
    }
}

/// A builder method per field: `$name` sets the field of that name.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        impl Options {
            $(
                $(#[$doc])*
                pub fn $name(mut self, $name: $ty) -> Options {
                    self.$name = $name;
                    self
                }
            )*
        }
    };
}

setters! {
    /// Sets [`Options::protocol`].
    ///
    /// ```
    /// use multiverse::{Options, Protocol};
    ///
    /// assert_eq!(Options::new().protocol(Protocol::MvLock).protocol, Protocol::MvLock);
    /// ```
    protocol: Protocol;
    /// Sets [`Options::max_transactions`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().max_transactions(8).max_transactions, 8);
    /// ```
    max_transactions: usize;
    /// Sets [`Options::max_value_size`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().max_value_size(1 << 20).max_value_size, 1 << 20);
    /// ```
    max_value_size: usize;
    /// Sets [`Options::deadlock_interval`].
    ///
    /// ```
    /// use multiverse::Options;
    /// use std::time::Duration;
    ///
    /// let o = Options::new().deadlock_interval(Duration::from_micros(200));
    /// assert_eq!(o.deadlock_interval, Duration::from_micros(200));
    /// ```
    deadlock_interval: Duration;
    /// Sets [`Options::lock_timeout`].
    ///
    /// ```
    /// use multiverse::Options;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Options::new().lock_timeout(Duration::from_millis(50)).lock_timeout, Duration::from_millis(50));
    /// ```
    lock_timeout: Duration;
    /// Sets [`Options::ssn_base`].
    ///
    /// ```
    /// use multiverse::{Isolation, Options};
    ///
    /// assert_eq!(Options::new().ssn_base(Isolation::ReadCommitted).ssn_base, Isolation::ReadCommitted);
    /// ```
    ssn_base: Isolation;
    /// Sets [`Options::safe_snapshot_interval`].
    ///
    /// ```
    /// use multiverse::Options;
    /// use std::time::Duration;
    ///
    /// let o = Options::new().safe_snapshot_interval(Some(Duration::from_millis(5)));
    /// assert_eq!(o.safe_snapshot_interval, Some(Duration::from_millis(5)));
    /// ```
    safe_snapshot_interval: Option<Duration>;
    /// Sets [`Options::ssn_read_mostly_age`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().ssn_read_mostly_age(Some(1000)).ssn_read_mostly_age, Some(1000));
    /// ```
    ssn_read_mostly_age: Option<u64>;
    /// Sets [`Options::pomvcc_interval`].
    ///
    /// ```
    /// use multiverse::Options;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Options::new().pomvcc_interval(Duration::from_micros(100)).pomvcc_interval, Duration::from_micros(100));
    /// ```
    pomvcc_interval: Duration;
    /// Sets [`Options::record_history`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert!(Options::new().record_history(true).record_history);
    /// ```
    record_history: bool;
    /// Sets [`Options::durability`] (a durable database also needs
    /// [`Options::data_dir`]).
    ///
    /// ```
    /// use multiverse::{Durability, Options};
    ///
    /// assert_eq!(Options::new().durability(Durability::Async).durability, Durability::Async);
    /// ```
    durability: Durability;
    /// Sets [`Options::log_streams`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().log_streams(4).log_streams, 4);
    /// ```
    log_streams: usize;
    /// Sets [`Options::log_rotate_bytes`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().log_rotate_bytes(1 << 20).log_rotate_bytes, 1 << 20);
    /// ```
    log_rotate_bytes: u64;
    /// Sets [`Options::group_commit_interval`].
    ///
    /// ```
    /// use multiverse::Options;
    /// use std::time::Duration;
    ///
    /// let o = Options::new().group_commit_interval(Duration::from_micros(500));
    /// assert_eq!(o.group_commit_interval, Duration::from_micros(500));
    /// ```
    group_commit_interval: Duration;
    /// Sets [`Options::checkpoint_every`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().checkpoint_every(None).checkpoint_every, None);
    /// ```
    checkpoint_every: Option<Duration>;
    /// Sets [`Options::checkpoint_log_bytes`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().checkpoint_log_bytes(Some(1 << 26)).checkpoint_log_bytes, Some(1 << 26));
    /// ```
    checkpoint_log_bytes: Option<u64>;
    /// Sets [`Options::on_damage`].
    ///
    /// ```
    /// use multiverse::{OnDamage, Options};
    ///
    /// assert_eq!(Options::new().on_damage(OnDamage::KeepPrefix).on_damage, OnDamage::KeepPrefix);
    /// ```
    on_damage: OnDamage;
    /// Sets [`Options::memory_limit`].
    ///
    /// ```
    /// use multiverse::Options;
    ///
    /// assert_eq!(Options::new().memory_limit(Some(1 << 30)).memory_limit, Some(1 << 30));
    /// ```
    memory_limit: Option<u64>;
    /// Sets [`Options::ordered_map`].
    ///
    /// ```
    /// use multiverse::{OrderedMap, Options};
    ///
    /// assert_eq!(Options::new().ordered_map(OrderedMap::BTree).ordered_map, OrderedMap::BTree);
    /// ```
    ordered_map: OrderedMap;
}
