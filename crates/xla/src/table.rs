//! The numbered objects of the targets: [`Table`] and its [`lock`].

/// The objects the targets name by number (envs by slot, problems by id), behind one lock
/// that is never held across a call. Numbers are never reused, so a removed object's number
/// stays an error instead of naming a newer one.
pub(crate) struct Table<T> {
    next: u32,
    items: std::collections::BTreeMap<u32, T>,
}

impl<T: Clone> Table<T> {
    pub(crate) const fn new() -> Self {
        Table { next: 1, items: std::collections::BTreeMap::new() }
    }

    /// Puts `item` in the table; returns its number.
    pub(crate) fn insert(&mut self, item: T) -> u32 {
        let id = self.next;
        self.next += 1;
        self.items.insert(id, item);
        id
    }

    /// Drops the object of `id`; false if there was none.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        self.items.remove(&id).is_some()
    }

    /// The object of `id` (a shared handle to it), if any.
    pub(crate) fn get(&self, id: u32) -> Option<T> {
        self.items.get(&id).cloned()
    }
}

/// `table` locked; a poisoned lock holds valid data (no call panics while holding it).
pub(crate) fn lock<T>(table: &std::sync::Mutex<Table<T>>) -> std::sync::MutexGuard<'_, Table<T>> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}
