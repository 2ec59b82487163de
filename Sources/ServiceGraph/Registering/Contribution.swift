/// One `contribute` (or `overrideContribution`) call, as the builder keeps it: a provider of one element
/// of a collection (``ContributionKey``), without a key of its own until the graph is planned and the
/// order of the collection is known (``Contributions``).
struct Contribution: Sendable {
    /// The collection key.
    let collection: any ContributionKey.Type
    /// The name other contributions order themselves against; nil for an anonymous contribution.
    let id: String?
    /// Contributions with a lower position come first, where `before` and `after` leave a choice.
    let position: Int
    /// The ids of the contributions this one comes before.
    let before: [String]
    /// The ids of the contributions this one comes after.
    let after: [String]
    /// The element's lifetime; nil for an override that keeps the replaced contribution's.
    let lifetime: Lifetime?
    let dependencies: _DependencyKeys
    let site: SiteLiteral
    let factory: _AnyFactory
    /// The kind of scope of a scoped contribution (see ``Registration/scopeKind``).
    let scopeKind: UInt16
    /// Whether this replaces the contribution of the same id (see `overrideContribution`).
    let isOverride: Bool

    var collectionID: ObjectIdentifier { ObjectIdentifier(collection) }
}

extension ContributionKey {
    /// The factory of the collection: reads its `count` contributions, in order, into a list.
    static func collectionFactory(count: Int) -> _AnyFactory {
        _AnyFactory([Element].self) { resolver, address in
            var elements: [Element] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                // Only the value type matters to the read: every position's key has this one.
                elements.append(try resolver.next(ContributedElement<Self, OrdinalEnd>.self))
            }
            _ = address.initializeMemory(as: [Element].self, to: elements)
        }
    }
}
