/// The builder's registrations resolved to integer slots: one provider per key, edges as slot indices.
///
/// Making a plan never runs a factory. A plan is made even for a broken graph (missing keys appear as
/// ``GraphPlan/missing`` edges) so that diagnostics can show where it broke.
struct GraphPlan: Sendable {
    /// An edge to a key that has no provider.
    static let missing = -1

    /// The effective provider of each slot, after overrides; slots follow first registration order.
    let providers: RegistrationList
    /// For each slot, the slots of its declared dependencies (in declaration order) and of its
    /// dependents.
    let edges: Edges
    /// Key identity → slot.
    let table: KeyTable
    /// For each slot, whether an override replaced the original provider.
    let overridden: [Bool]
    /// Providers of a key that already had one (the first one stays in the plan), as
    /// (first, again) pairs in registration order. Validation reports them.
    let duplicates: [(first: Registration, again: Registration)]
    /// Overrides of keys that were never provided, in registration order. Validation reports them.
    let unknownOverrides: [Registration]
    /// Whether a provider's key is a wrapper (`Key?`), which validation refuses.
    let hasWrapperKeys: Bool
    /// The kind of each edge, parallel to the edges' targets; nil when every edge is direct (most graphs).
    let edgeKinds: [_DependencyKind]?
    /// The optional dependencies on keys the graph does not provide, as (dependent slot, key), in slot
    /// order: they have no edge (the factory gets nil), and lint lists them.
    let absentOptionals: [(slot: Int, key: any ServiceKey.Type)]
    /// The slots, in order, of seeds a provider replaced (an override, or a child graph's own provider of
    /// a seed it inherited): a scope given a value for one ignores it.
    let replacedSeedSlots: [Int]
    /// The lifetime of each slot's provider, apart from the providers so that the passes over every
    /// edge read one byte per service.
    let lifetimes: [Lifetime]
    /// How many edges name a key that has no provider.
    let missingEdgeCount: Int
    /// The slots in dependency order (``Topology/order(of:)``), made once for validation and the
    /// build: it leaves out every service on a cycle, and those that depend on one.
    let order: [Int]
    /// Per slot, whether it is a singleton the build leaves to its first use (see
    /// ``deferredSingletons(lifetimes:edges:edgeKinds:order:)``); nil when no edge is lazy.
    let deferred: [Bool]?
    /// The kinds of scope the registrations name, the default first (see ``ScopeKind``).
    var scopeKinds: [ScopeKind] { providers.scopeKinds }
    /// Per slot, the index in ``scopeKinds`` of a scoped service's or seed's kind (0 for every other
    /// service); nil when the graph names no kind but the default.
    let slotScopeKinds: [UInt16]?

    /// Providers and overrides of a synchronous form on its own (`provide(ArgumentFactory<K, A>.Synchronous.self)`),
    /// in registration order: validation refuses them, as the two forms would make different things.
    let unpairedForms: [Registration]
    /// The two forms of each factory with arguments that one synchronous closure registered, each
    /// slot mapped to the other's (see ``pairedForms(of:table:)``); empty in most graphs.
    let pairedForms: [Int: Int]

    var count: Int { providers.count }

    /// The kind of scope of the scoped service or seed at `slot`; the default for any other.
    func scopeKind(of slot: Int) -> ScopeKind {
        scopeKinds[Int(slotScopeKinds?[slot] ?? 0)]
    }

    /// What planning the contributions noted: the names the graph gives some keys itself, used as given
    /// in errors and dumps (`MiddlewareKey[1: auth]`), and the contributions placed, for child graphs.
    let composition: CompositionNotes

    init(_ registrations: RegistrationList, composition: CompositionNotes = CompositionNotes()) {
        self.composition = composition
        var table = KeyTable(capacity: registrations.count)
        var duplicates: [(first: Registration, again: Registration)] = []
        var unknownOverrides: [Registration] = []
        var replacedSeeds: Set<Int> = []
        var providers = registrations
        // The common case (no duplicates, no overrides) keeps the registrations as they are, shared.
        var isPlain = true
        // Fields are read in place (`registrations[index].isOverride`): a `for in` over the list would
        // copy each registration, retaining its factory and dependency list.
        for index in registrations.indices {
            if ReadAhead.startsBatch(index, of: registrations.count) {
                ReadAhead.keep(Self.touchKeys(of: registrations, after: index, in: table))
            }
            if registrations[index].isOverride || table.insert(registrations[index].keyID) != nil {
                isPlain = false
                break
            }
        }
        // Synchronous forms of factories with arguments that other providers take away: only where a
        // list has overrides or duplicates (a child's own providers replacing inherited ones).
        let withdrawn = isPlain ? WithdrawnForms(RegistrationList()) : WithdrawnForms(registrations)
        if !isPlain {
            table = KeyTable(capacity: registrations.count)
            providers = RegistrationList()
            providers.scopeKinds = registrations.scopeKinds
            providers.modules = registrations.modules
            for registration in registrations where !registration.isOverride && !withdrawn.takesAway(registration) {
                if let existing = table.insert(registration.keyID) {
                    let first = providers[existing]
                    if first.isInherited {
                        if first.isSeed && !registration.isSeed { replacedSeeds.insert(existing) }
                        providers[existing] = registration  // the child's own provider comes first
                        continue
                    }
                    duplicates.append((first, registration))
                } else {
                    providers.append(registration)
                }
            }
        }
        var overridden = Array(repeating: false, count: providers.count)
        for index in registrations.indices where registrations[index].isOverride {
            let registration = registrations[index]
            if withdrawn.takesAway(override: registration) { continue }
            // The synchronous form a synchronous override registers takes what its asynchronous form,
            // replaced by the same call just before, took: the lifetime and kind of scope of the
            // provider it replaced, which may differ from the synchronous form's own (an asynchronous
            // override in between). Where that form was never provided, its override alone is reported.
            var sibling: Int?
            if registration.isPairedSynchronousForm {
                guard let form = (registration.key as? any ArgumentFactoryKey.Type)?.otherForm,
                    let slot = table.slot(for: ObjectIdentifier(form))
                else { continue }
                sibling = slot
            }
            if let slot = table.slot(for: registration.keyID) {
                let replaced = sibling.map { providers[$0] } ?? providers[slot]
                if providers[slot].isSeed { replacedSeeds.insert(slot) }
                var replacement =
                    registration.inheritsLifetime ? registration.with(lifetime: replaced.lifetime) : registration
                // An override registered outside any kind of scope keeps the kind it replaces, and one
                // registered outside any module the module (a test's double of a private key stays
                // private).
                if replacement.scopeKind == 0 { replacement.scopeKind = replaced.scopeKind }
                if replacement.module == 0 { replacement.module = replaced.module }
                providers[slot] = replacement
                overridden[slot] = true
            } else if let sibling {
                // A synchronous override of a factory that had no synchronous form gives it one.
                var added = registration
                if registration.inheritsLifetime { added = added.with(lifetime: providers[sibling].lifetime) }
                if added.scopeKind == 0 { added.scopeKind = providers[sibling].scopeKind }
                _ = table.insert(registration.keyID)
                providers.append(added)
                overridden.append(true)
            } else {
                unknownOverrides.append(registration)
            }
        }

        var lifetimes: [Lifetime] = []
        lifetimes.reserveCapacity(providers.count)
        var edgeCount = 0
        // Most graphs have no wrapper at all: then no registration is asked about one.
        let mayHaveWrappers = registrations.mayHaveWrappers
        var hasWrapperKeys = false
        for slot in providers.indices {
            lifetimes.append(providers[slot].lifetime)
            edgeCount += providers[slot].dependencies.count
            if mayHaveWrappers { hasWrapperKeys = hasWrapperKeys || providers[slot].isWrapperKey }
        }
        self.hasWrapperKeys = hasWrapperKeys
        var dependencyStart: [Int32] = []
        dependencyStart.reserveCapacity(providers.count + 1)
        var dependencyTargets: [Int32] = []
        dependencyTargets.reserveCapacity(edgeCount)
        var missingEdgeCount = 0
        var edgeKinds: [_DependencyKind]?
        var absentOptionals: [(slot: Int, key: any ServiceKey.Type)] = []
        for slot in providers.indices {
            if ReadAhead.startsBatch(slot, of: providers.count) {
                ReadAhead.keep(Self.touchDependencyKeys(of: providers, after: slot, in: table))
            }
            dependencyStart.append(Int32(truncatingIfNeeded: dependencyTargets.count))
            if mayHaveWrappers, edgeKinds == nil, providers[slot].dependencies.hasWrappers {
                // The first wrapper: every edge so far was direct.
                edgeKinds = Array(repeating: .direct, count: dependencyTargets.count)
            }
            guard edgeKinds != nil else {
                // Every edge so far direct, this provider's too: nothing to count but missing keys.
                providers[slot].dependencies.forEachEdge { identity, _ in
                    let target = table.slot(for: identity) ?? Self.missing
                    if target == Self.missing { missingEdgeCount += 1 }
                    dependencyTargets.append(Int32(truncatingIfNeeded: target))
                }
                continue
            }
            var position = 0
            providers[slot].dependencies.forEachEdge { identity, kind in
                defer { position += 1 }
                let target = table.slot(for: identity) ?? Self.missing
                if target == Self.missing {
                    // An optional dependency on a key nobody provides: no edge, and no problem.
                    if kind == .optional {
                        absentOptionals.append((slot, providers[slot].dependencies[position]))
                        return
                    }
                    missingEdgeCount += 1
                }
                dependencyTargets.append(Int32(truncatingIfNeeded: target))
                edgeKinds?.append(kind)
            }
        }
        dependencyStart.append(Int32(truncatingIfNeeded: dependencyTargets.count))
        let edges = Edges(dependencyStart: dependencyStart, dependencyTargets: dependencyTargets)

        self.providers = providers
        self.edges = edges
        self.table = table
        self.overridden = overridden
        self.duplicates = duplicates
        self.unknownOverrides = unknownOverrides
        self.replacedSeedSlots = replacedSeeds.sorted()
        self.lifetimes = lifetimes
        self.missingEdgeCount = missingEdgeCount
        self.edgeKinds = edgeKinds
        self.absentOptionals = absentOptionals
        self.order = Topology.order(of: edges)
        self.slotScopeKinds =
            providers.scopeKinds.count > 1
            ? providers.indices.map { providers[$0].lifetime == .scoped ? providers[$0].scopeKind : 0 } : nil
        self.deferred =
            edgeKinds?.contains(.lazy) == true || providers.mayHaveFirstUseSingletons
            ? Self.deferredSingletons(
                of: providers,
                lifetimes: lifetimes,
                edges: edges,
                edgeKinds: edgeKinds,
                order: order
            )
            : nil
        self.pairedForms = Self.pairedForms(of: providers, table: table)
        self.unpairedForms = withdrawn.unpaired + Self.unpairedForms(of: providers, table: table)
        self.keyNames = KeyNames(lookupFrom: providers.count, labels: composition.labels) { [providers, edges, table] in
            providers.map(\.key) + Self.missingKeys(of: providers, edges: edges, table: table)
        }
    }

    /// Reads the key table's buckets for the keys of the batch of registrations after the one at
    /// `index` (see ``KeyTable/touch(_:holders:)``): inserting a million keys otherwise waits for memory
    /// once per key.
    private static func touchKeys(of registrations: RegistrationList, after index: Int, in table: KeyTable) -> UInt {
        let start = index + ReadAhead.batch
        let end = min(start + ReadAhead.batch, registrations.count)
        guard start < end else { return 0 }
        return withUnsafeTemporaryAllocation(of: UInt.self, capacity: ReadAhead.batch) { batch in
            for position in start..<end {
                batch[position - start] = UInt(bitPattern: registrations[position].keyID)
            }
            return table.touch(UnsafeMutableBufferPointer(rebasing: batch[..<(end - start)]), holders: false)
        }
    }

    /// Reads the key table's buckets and identities for the dependencies of the batch of providers after
    /// the one at `slot` (see ``KeyTable/touch(_:holders:)``): looking up two million edges otherwise
    /// waits for memory twice per edge.
    private static func touchDependencyKeys(of providers: RegistrationList, after slot: Int, in table: KeyTable) -> UInt
    {
        let start = slot + ReadAhead.batch
        let end = min(start + ReadAhead.batch, providers.count)
        guard start < end else { return 0 }
        return withUnsafeTemporaryAllocation(of: UInt.self, capacity: KeyTable.touchCapacity) { batch in
            var count = 0
            for position in start..<end {
                providers[position].dependencies.forEachEdge { identity, _ in
                    guard count < batch.count else { return }
                    batch[count] = UInt(bitPattern: identity)
                    count += 1
                }
            }
            return table.touch(UnsafeMutableBufferPointer(rebasing: batch[..<count]), holders: true)
        }
    }

    /// The names of the provided keys, then of the missing ones, made once per plan and only for
    /// errors and dumps; missing keys count when telling apart keys that read alike.
    private let keyNames: KeyNames

    func name(_ slot: Int) -> String {
        keyNames.name(slot)
    }

    /// The name of a key that has no provider (or of any key, when it is not one of the graph's).
    func name(ofMissing key: any ServiceKey.Type) -> String {
        keyNames.name(of: ObjectIdentifier(key)) ?? key.serviceName
    }

    /// Every provided key's name, by slot.
    var names: [String] { keyNames.all }

    /// The keys depended on that have no provider, each once, in the order they are first depended on.
    private static func missingKeys(
        of providers: RegistrationList,
        edges: Edges,
        table: KeyTable
    ) -> [any ServiceKey.Type] {
        var seen: Set<ObjectIdentifier> = []
        var missing: [any ServiceKey.Type] = []
        for slot in providers.indices {
            for (position, target) in edges.dependencies(of: slot).enumerated() where target == GraphPlan.missing {
                let key = edgeKey(of: providers[slot].dependencies, at: position, in: table)
                if seen.insert(ObjectIdentifier(key)).inserted { missing.append(key) }
            }
        }
        return missing
    }

    /// The key of the `position`th edge of a provider whose declared keys are `dependencies`: the
    /// `position`th key, unless optional keys nobody provides (which have no edge) come before it.
    static func edgeKey(
        of dependencies: _DependencyKeys,
        at position: Int,
        in table: KeyTable
    ) -> any ServiceKey.Type {
        guard dependencies.hasWrappers else { return dependencies[position] }
        var remaining = position
        for declared in dependencies.indices {
            let isAbsent =
                dependencies.kind(at: declared) == .optional
                && table.slot(for: ObjectIdentifier(dependencies[declared])) == nil
            if isAbsent { continue }
            if remaining == 0 { return dependencies[declared] }
            remaining -= 1
        }
        preconditionFailure("edge \(position) is past the provider's dependencies")
    }

    /// The key of `slot`'s `position`th edge (see ``edgeKey(of:at:)``).
    func edgeKey(of slot: Int, at position: Int) -> any ServiceKey.Type {
        Self.edgeKey(of: providers[slot].dependencies, at: position, in: table)
    }

    /// A path of key names from a root of the graph (a service nothing depends on) down to `slot`.
    ///
    /// Follows the first dependent of each service, so the path is deterministic.
    func pathFromRoot(to slot: Int) -> [String] {
        var path = [slot]
        var seen: Set<Int> = [slot]
        var current = slot
        while let parent = edges.dependents(of: current).first, seen.insert(parent).inserted {
            path.append(parent)
            current = parent
        }
        return path.reversed().map(name)
    }
}
