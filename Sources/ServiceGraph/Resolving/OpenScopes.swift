/// A graph's open scopes, held strongly, as their bodies (``_ScopeBody``: the caller's handle is what
/// keeps a scope alive, and its end releases the scope's instances), each at a place it keeps
/// until it finishes: opening and finishing a scope writes one array element, where a dictionary keyed
/// by the scope's id hashed the id both times, for every request scope of a server.
struct OpenScopes {
    private struct Entry {
        /// The scope's id; -1 where a scope finished and no other took the place yet.
        var id: Int
        /// The scope; nil exactly where `id` is -1.
        var scope: _ScopeBody?
    }

    private var entries: [Entry] = []
    /// The places free for the next scopes.
    private var freePlaces: [Int] = []

    /// The place the next scope registered gets.
    var nextPlace: Int { freePlaces.last ?? entries.count }

    /// Registers `scope` at ``nextPlace``.
    mutating func insert(_ scope: _ScopeBody) {
        if let place = freePlaces.popLast() {
            entries[place].id = scope.id
            entries[place].scope = scope
        } else {
            entries.append(Entry(id: scope.id, scope: scope))
        }
    }

    /// Unregisters the scope `id` at `place`, and returns it; nil when it is not there (it finished
    /// already). The caller lets it go once it no longer holds the graph's lock: a scope's end lets go of
    /// the scope it was opened from, whose end may take that lock.
    mutating func remove(_ id: Int, at place: Int) -> _ScopeBody? {
        guard place < entries.count, entries[place].id == id else { return nil }
        entries[place].id = -1
        freePlaces.append(place)
        return entries[place].scope.take()
    }

    /// The open scopes, newest first (the order the graph's shutdown closes them in).
    func newestFirst() -> [_ScopeBody] {
        entries.compactMap(\.scope).sorted { $0.id > $1.id }
    }
}
