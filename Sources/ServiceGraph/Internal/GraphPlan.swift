/// The builder's registrations resolved to integer slots: one provider per key, edges as slot indices.
///
/// Making a plan never runs a factory. A plan is made even for a broken graph (missing keys appear as
/// ``GraphPlan/missing`` edges) so that diagnostics can show where it broke.
struct GraphPlan: Sendable {
    /// An edge to a key that has no provider.
    static let missing = -1

    /// The effective provider of each slot, after overrides; slots follow first registration order.
    let providers: [Registration]
    /// For each slot, the slots of its declared dependencies, in declaration order.
    let dependencies: Adjacency
    /// Key identity → slot.
    let table: KeyTable
    /// For each slot, whether an override replaced the original provider.
    let overridden: [Bool]
    /// For each slot, the slots that depend on it, in slot order.
    let dependents: Adjacency
    /// The problems found while resolving keys (duplicates, unknown overrides); validation adds more.
    let registrationProblems: [ServiceGraphError.Problem]

    var count: Int { providers.count }

    init(_ registrations: [Registration]) {
        var table = KeyTable(capacity: registrations.count)
        var problems: [ServiceGraphError.Problem] = []
        var providers = registrations
        // The common case (no duplicates, no overrides) keeps the registrations as they are, shared.
        var isPlain = true
        for (index, registration) in registrations.enumerated() {
            if registration.isOverride || table.insert(registration.keyID, slot: index) != nil {
                isPlain = false
                break
            }
        }
        if !isPlain {
            table = KeyTable(capacity: registrations.count)
            providers = []
            providers.reserveCapacity(registrations.count)
            for registration in registrations where !registration.isOverride {
                if let existing = table.insert(registration.keyID, slot: providers.count) {
                    let first = providers[existing]
                    if first.isInherited {
                        providers[existing] = registration  // the child's own provider comes first
                        continue
                    }
                    problems.append(
                        .init(
                            .duplicateProvider,
                            key: registration.name,
                            site: registration.site.site,
                            message:
                                "\(registration.name) is provided twice: first at \(first.site.site), again at \(registration.site.site)"
                        )
                    )
                } else {
                    providers.append(registration)
                }
            }
        }
        var overridden = Array(repeating: false, count: providers.count)
        for registration in registrations where registration.isOverride {
            if let slot = table.slot(for: registration.keyID) {
                let replaced = providers[slot]
                providers[slot] =
                    registration.inheritsLifetime ? registration.with(lifetime: replaced.lifetime) : registration
                overridden[slot] = true
            } else {
                problems.append(
                    .init(
                        .overrideOfUnknownKey,
                        key: registration.name,
                        site: registration.site.site,
                        message: "\(registration.name) is overridden but was never provided"
                    )
                )
            }
        }

        let edgeCount = providers.reduce(0) { $0 + $1.dependencies.count }
        let dependencies = Adjacency(
            providers.lazy.map { provider in
                provider.dependencies.lazy.map { table.slot(for: ObjectIdentifier($0)) ?? Self.missing }
            },
            count: providers.count,
            edgeCount: edgeCount
        )

        self.providers = providers
        self.dependencies = dependencies
        self.table = table
        self.overridden = overridden
        self.registrationProblems = problems
        self.dependents = Adjacency(reversing: dependencies)
    }

    /// Names are made only for errors and dumps, and making one is slow (type reflection), so each is
    /// made once per plan.
    private let names = NameCache()

    func name(_ slot: Int) -> String {
        names.name(slot) { providers[slot].name }
    }

    /// A path of key names from a root of the graph (a service nothing depends on) down to `slot`.
    ///
    /// Follows the first dependent of each service, so the path is deterministic.
    func pathFromRoot(to slot: Int) -> [String] {
        var path = [slot]
        var seen: Set<Int> = [slot]
        var current = slot
        while let parent = dependents[current].first, seen.insert(parent).inserted {
            path.append(parent)
            current = parent
        }
        return path.reversed().map(name)
    }
}

/// A plan's key names, made on first use.
final class NameCache: Sendable {
    private let names = Locked<[Int: String]>([:])

    func name(_ slot: Int, make: () -> String) -> String {
        if let name = names.withLock({ $0[slot] }) { return name }
        let name = make()
        names.withLock { $0[slot] = name }
        return name
    }
}
