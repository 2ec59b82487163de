import Synchronization

/// The services a failure passed through on its way out of a chain of factories, outermost first: the
/// front of ``ServiceGraphError/Problem/path``.
///
/// Each factory a failure leaves puts its service in front of the path. Copying the path at every level
/// made a failure at the bottom of a deep chain quadratic in the depth; a shared list makes each level
/// constant time, and several errors may share a tail (the waiters of one scoped instance). Nodes hold
/// key types, not names: names are worked out when the path is first read, then kept.
///
/// `@unchecked Sendable`: immutable, but for `next`, which only `deinit` clears, and the names, set
/// once through an atomic.
final class PathPrefix: @unchecked Sendable {
    let key: any ServiceKey.Type
    private var next: PathPrefix?
    /// The number of services in this prefix.
    let count: Int
    /// ``names``, once worked out.
    private let cachedNames = AtomicLazyReference<Names>()

    private final class Names: Sendable {
        let names: [String]

        init(_ names: [String]) {
            self.names = names
        }
    }

    init(_ key: any ServiceKey.Type, before next: PathPrefix?) {
        self.key = key
        self.next = next
        self.count = (next?.count ?? 0) + 1
    }

    /// The services' names, outermost first.
    ///
    /// - Complexity: O(*n*) in the length of the prefix.
    var names: [String] {
        if let cached = cachedNames.load() { return cached.names }
        var names: [String] = []
        names.reserveCapacity(count)
        var node: PathPrefix? = self
        while let current = node {
            names.append(current.key.serviceName)
            node = current.next
        }
        return cachedNames.storeIfNil(Names(names)).names
    }

    /// Releases the rest of the list one node at a time: releasing it recursively would use stack in
    /// proportion to its length.
    deinit {
        var rest = next
        next = nil
        while var node = rest {
            rest = nil
            guard isKnownUniquelyReferenced(&node) else { return }
            rest = node.next
            node.next = nil
        }
    }
}
