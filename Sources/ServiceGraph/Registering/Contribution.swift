/// One `contribute` (or `overrideContribution`) call, as the builder keeps it: a provider of one element
/// of a collection (``ContributionKey``), without a key of its own until the graph is planned and the
/// order of the collection is known (``Contributions``).
struct Contribution: Sendable {
    /// The collection it contributes to.
    let collection: ContributedCollection
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
    /// The module that registered it (see ``Registration/module``).
    var module: UInt16 = 0
    /// For a parent's contribution a child graph merges into its own list: the registration the child
    /// inherited for it, placed as it is (its instance is the parent's).
    var inheritedRegistration: Registration? = nil
    /// As ``Registration/serial``: which `contribute` call this is; an override's, once it replaced one.
    var serial: Int32 = -1

    var collectionID: ObjectIdentifier { ObjectIdentifier(collection.key) }
}

/// What planning needs of a collection key, a list (``ContributionKey``) or a dictionary
/// (``KeyedContributionKey``), captured where its type is known.
///
/// Made where `contribute` is inlined, so that the collection's reader is specialized for its element
/// type in the module that declares the key, as a provider's thunk is.
@usableFromInline
struct ContributedCollection: Sendable {
    @usableFromInline
    let key: any ServiceKey.Type
    /// Whether validation requires at least one contribution.
    @usableFromInline
    let needsContribution: Bool
    /// The key of the contribution at a position.
    @usableFromInline
    let element: @Sendable (Int) -> any ServiceKey.Type
    /// The factory of the collection, from its contributions' ids in order.
    @usableFromInline
    let factory: @Sendable ([String?]) -> _AnyFactory

    var name: String { key.serviceName }

    @inlinable
    init<Key: ContributionKey>(list key: Key.Type) {
        self.key = key
        needsContribution = Key.needsContribution
        element = { ContributedElement<Key, Key.Element, OrdinalEnd>.element(at: $0) }
        factory = { ids in Self.listFactory(Key.self, count: ids.count) }
    }

    @inlinable
    init<Key: KeyedContributionKey>(keyed key: Key.Type) {
        self.key = key
        needsContribution = Key.needsContribution
        element = { ContributedElement<Key, Key.Element, OrdinalEnd>.element(at: $0) }
        factory = { ids in Self.dictionaryFactory(Key.self, ids: ids.map { $0 ?? "" }) }
    }

    /// The collection `key` names, when it is one.
    init?(_ key: any ServiceKey.Type) {
        if let list = key as? any ContributionKey.Type {
            self.init(list: list)
        } else if let keyed = key as? any KeyedContributionKey.Type {
            self.init(keyed: keyed)
        } else {
            return nil
        }
    }

    /// Reads the `count` contributions, in order, into a list.
    @inlinable
    static func listFactory<Key: ContributionKey>(_: Key.Type, count: Int) -> _AnyFactory {
        _AnyFactory([Key.Element].self) { resolver, address in
            var elements: [Key.Element] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                // Only the value type matters to the read: every position's key has this one.
                elements.append(try resolver.next(ContributedElement<Key, Key.Element, OrdinalEnd>.self))
            }
            _ = address.initializeMemory(as: [Key.Element].self, to: elements)
        }
    }

    /// Reads the contributions, in order, into a dictionary by their ids.
    @inlinable
    static func dictionaryFactory<Key: KeyedContributionKey>(_: Key.Type, ids: [String]) -> _AnyFactory {
        _AnyFactory([String: Key.Element].self) { resolver, address in
            var elements: [String: Key.Element] = [:]
            elements.reserveCapacity(ids.count)
            for id in ids {
                elements[id] = try resolver.next(ContributedElement<Key, Key.Element, OrdinalEnd>.self)
            }
            _ = address.initializeMemory(as: [String: Key.Element].self, to: elements)
        }
    }
}
