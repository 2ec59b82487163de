/// A graph's open scopes, held strongly, as their bodies (``_ScopeBody``: the caller's handle is what
/// keeps a scope alive, and its end releases the scope's instances), each at a place it keeps
/// until it finishes: opening and finishing a scope writes one element, where a dictionary keyed by the
/// scope's id hashed the id both times, for every request scope of a server.
///
/// A class over memory it manages itself, used only under the graph's lock: an array's copy-on-write
/// checks and its out-of-line operations were code that each request scope's open and close fetched
/// with cold caches.
final class OpenScopes {
    private struct Entry {
        /// The scope's id; -1 where a scope finished and no other took the place yet.
        var id: Int
        /// The scope; nil exactly where `id` is -1.
        var scope: _ScopeBody?
    }

    /// The places handed out so far, `used` of them initialized, in room for `capacity`.
    private var entries: UnsafeMutablePointer<Entry>
    private var used = 0
    private var capacity: Int
    /// The places free for the next scopes, `freeCount` of them (never more than `used`), in room for
    /// `capacity`.
    private var freePlaces: UnsafeMutablePointer<Int>
    private var freeCount = 0

    /// No room yet: ``grow()`` makes it when the first scope opens.
    init() {
        capacity = 0
        entries = .allocate(capacity: 0)
        freePlaces = .allocate(capacity: 0)
    }

    deinit {
        entries.deinitialize(count: used)
        entries.deallocate()
        freePlaces.deallocate()
    }

    /// The place the next scope registered gets.
    var nextPlace: Int { freeCount > 0 ? freePlaces[freeCount - 1] : used }

    /// Registers `scope` at ``nextPlace``.
    @inline(__always)
    func insert(_ scope: _ScopeBody) {
        if freeCount > 0 {
            freeCount -= 1
            let place = freePlaces[freeCount]
            entries[place].id = scope.id
            entries[place].scope = scope
            return
        }
        if used == capacity { grow() }
        (entries + used).initialize(to: Entry(id: scope.id, scope: scope))
        used += 1
    }

    /// Unregisters the scope `id` at `place`, and returns it; nil when it is not there (it finished
    /// already). The caller lets it go once it no longer holds the graph's lock: a scope's end lets go of
    /// the scope it was opened from, whose end may take that lock.
    @inline(__always)
    func remove(_ id: Int, at place: Int) -> _ScopeBody? {
        guard place >= 0, place < used, entries[place].id == id else { return nil }
        entries[place].id = -1
        // At most `used` places are free at once: each was handed out, and is free once.
        freePlaces[freeCount] = place
        freeCount += 1
        return entries[place].scope.take()
    }

    /// The open scopes, newest first (the order the graph's shutdown closes them in).
    func newestFirst() -> [_ScopeBody] {
        (0..<used).compactMap { entries[$0].scope }.sorted { $0.id > $1.id }
    }

    /// Room for the first scopes, or twice the room, for a server with more scopes open at once than
    /// ever before.
    @inline(never)
    private func grow() {
        let newCapacity = max(capacity * 2, 8)
        let newEntries = UnsafeMutablePointer<Entry>.allocate(capacity: newCapacity)
        newEntries.moveInitialize(from: entries, count: used)
        entries.deallocate()
        entries = newEntries
        let newFreePlaces = UnsafeMutablePointer<Int>.allocate(capacity: newCapacity)
        newFreePlaces.moveInitialize(from: freePlaces, count: freeCount)
        freePlaces.deallocate()
        freePlaces = newFreePlaces
        capacity = newCapacity
    }
}
