/// A graph's open scopes, weakly (the graph does not keep a scope alive), each at a place it keeps
/// until it finishes: opening and finishing a scope writes one array element, where a dictionary keyed
/// by the scope's id hashed the id both times, for every request scope of a server.
struct OpenScopes {
    private struct Entry {
        /// The scope's id; -1 where a scope finished and no other took the place yet.
        var id: Int
        weak var scope: ServiceScope?
    }

    private var entries: [Entry] = []
    /// The places free for the next scopes.
    private var freePlaces: [Int] = []

    /// The place the next scope registered gets.
    var nextPlace: Int { freePlaces.last ?? entries.count }

    /// Registers `scope` at ``nextPlace``.
    mutating func insert(_ scope: ServiceScope) {
        if let place = freePlaces.popLast() {
            entries[place].id = scope.id
            entries[place].scope = scope
        } else {
            entries.append(Entry(id: scope.id, scope: scope))
        }
    }

    /// Unregisters the scope `id` at `place`; false when it is not there (it finished already).
    mutating func remove(_ id: Int, at place: Int) -> Bool {
        guard place < entries.count, entries[place].id == id else { return false }
        entries[place].id = -1
        entries[place].scope = nil
        freePlaces.append(place)
        return true
    }

    /// The open scopes still alive, newest first (the order the graph's shutdown closes them in).
    func newestFirst() -> [ServiceScope] {
        entries.compactMap { $0.id >= 0 ? $0.scope : nil }.sorted { $0.id > $1.id }
    }
}
