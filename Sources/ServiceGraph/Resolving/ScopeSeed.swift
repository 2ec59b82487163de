/// The value of one seed for a new scope: see ``ServiceGraph/Builder/seed(_:fileID:line:)`` and
/// ``ServiceGraph/makeScope(seeding:)-(ScopeSeed...)``.
///
/// ```swift
/// let session = try graph.makeScope(seeding: ScopeSeed(SessionUserKey.self, user))
/// ```
///
/// The key fixes the value's type, so a seed of the wrong type does not compile.
public struct ScopeSeed: Sendable {
    /// The key the value is for.
    let key: any ServiceKey.Type
    /// The value, held as the graph holds instances (see ``_AnyBox``).
    let box: _AnyBox
    /// The value's lifecycle hooks, when the scope owns it and it has some.
    let hooks: InstanceHooks?

    /// The value of the seed `key` for one scope.
    ///
    /// - Parameters:
    ///   - key: A key the builder declared with ``ServiceGraph/Builder/seed(_:fileID:line:)``.
    ///   - value: The scope's value for it.
    ///   - ownedByScope: Whether the scope ends the value's life: when true, a value that adopts
    ///     ``LifecycleHooks`` gets its ``LifecycleHooks/willRemove()`` when the scope closes, after every
    ///     scoped instance (it was there first). Its ``LifecycleHooks/didAdd()`` is not run: the caller
    ///     made the value, and hands it over ready. False by default: the caller owns the value, and the
    ///     scope runs no hooks on it.
    public init<Key: ServiceKey>(_ key: Key.Type, _ value: Key.Value, ownedByScope: Bool = false) {
        self.key = key
        self.box = _box(value)
        self.hooks = ownedByScope ? (value as? any LifecycleHooks).map(InstanceHooks.init) : nil
    }

    /// The key's name, as errors and events give it.
    var name: String { key.serviceName }
}

extension _GraphCore {
    /// A seed given to a new scope, at the slot of its key.
    typealias PlacedSeed = (slot: Int, seed: ScopeSeed)

    /// The seeds given to a new scope at their slots, in slot order: every seed of the graph, once.
    ///
    /// - Throws: Every key missing, given twice or not a seed, at once, before anything is made.
    func placedSeeds(_ seeds: [ScopeSeed]) throws(ServiceGraphError) -> [PlacedSeed] {
        if seeds.isEmpty && seedSlots.isEmpty { return [] }
        var given = Array(repeating: false, count: count)
        var placed: [PlacedSeed] = []
        placed.reserveCapacity(seeds.count)
        var problems: [ServiceGraphError.Problem] = []
        for seed in seeds {
            func slot<Key: ServiceKey>(of key: Key.Type) -> Int? { self.slot(of: key) }
            guard let slot = slot(of: seed.key) else {
                let name = seed.name
                problems.append(
                    .init(
                        .unexpectedSeed,
                        key: name,
                        message:
                            "\(name) was given to a scope but is not in the graph; declare it with builder.seed(\(name).self)"
                    )
                )
                continue
            }
            let name = self.name(slot)
            guard isSeed(slot) else {
                problems.append(
                    .init(
                        .unexpectedSeed,
                        key: name,
                        site: site(slot),
                        message:
                            "\(name) was given to a scope, but the graph provides it; only keys declared with builder.seed(_:) are given to a scope"
                    )
                )
                continue
            }
            guard !given[slot] else {
                problems.append(
                    .init(.duplicateSeed, key: name, site: site(slot), message: "\(name) was given to a scope twice")
                )
                continue
            }
            given[slot] = true
            placed.append((slot, seed))
        }
        for slot in seedSlots where !given[slot] {
            let name = self.name(slot)
            problems.append(
                .init(
                    .missingSeed,
                    key: name,
                    site: site(slot),
                    message: "\(name) is a seed of the graph's scopes, but the scope was not given its value: "
                        + "makeScope(seeding: ScopeSeed(\(name).self, value))"
                )
            )
        }
        guard problems.isEmpty else { throw ServiceGraphError(problems) }
        placed.sort { $0.slot < $1.slot }
        return placed
    }
}
