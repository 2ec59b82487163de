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
    /// The value's lifecycle hooks, if it has some: claimed by the scope either way, so that no service
    /// of the scope that hands the seed out runs them (see ``HookClaims``).
    let hooks: InstanceHooks?
    /// Whether the scope runs the value's `willRemove` when it closes.
    let isOwnedByScope: Bool

    /// The value of the seed `key` for one scope.
    ///
    /// - Parameters:
    ///   - key: A key the builder declared with ``ServiceGraph/Builder/seed(_:fileID:line:)``.
    ///   - value: The scope's value for it.
    ///   - ownedByScope: Whether the scope ends the value's life: when true, a value that adopts
    ///     ``LifecycleHooks`` gets its ``LifecycleHooks/willRemove()`` when the scope closes, after every
    ///     scoped instance (it was there first). Its ``LifecycleHooks/didAdd()`` is not run: the caller
    ///     made the value, and hands it over ready. False by default: the caller owns the value, and no
    ///     hook runs on it in the scope, not even through a scoped service that hands it out. A scope
    ///     that is not made leaves the value to the caller.
    @inlinable
    public init<Key: ServiceKey>(_ key: Key.Type, _ value: Key.Value, ownedByScope: Bool = false) {
        // The caller's value of a plain value type needs no hooks: none run on it, and a copy cannot be
        // recognized to be claimed. Its cast, a conformance lookup, is left out then, and so is the
        // generic code. A class, an existential (whose dynamic type varies), an optional (whose cast
        // looks inside it) or a value the scope owns is cast.
        if !ownedByScope && Self._isPlainValueType(Key.Value.self) {
            self.init(_plainValueOf: key, in: _boxedPlainValue(value))
        } else {
            self = Self._castForHooks(key, value, ownedByScope: ownedByScope)
        }
    }

    /// Whether `type` is a struct, or an enum other than `Optional`: a type whose values are all of that
    /// very type and have no identity, so that a caller's value of it has no hooks to claim (a copy
    /// cannot be recognized). Anything else (a class, an existential, an optional, a tuple, a function,
    /// a metatype) is cast for its hooks.
    ///
    /// Read from the type's metadata kind, the first word of a type's metadata in the Swift runtime's
    /// ABI (`MetadataKind`: struct 0x200, enum 0x201; `Optional`, existentials, classes and the other
    /// kinds differ), with no value to box and no conformance to look up: a server makes a seed per
    /// request. `type(of:)` cannot tell an existential apart here, as it gives the existential's own
    /// type for a value typed with a generic parameter, and `type(of: value as Any)` boxes a value wider
    /// than three words.
    @inlinable
    @inline(__always)
    static func _isPlainValueType(_ type: Any.Type) -> Bool {
        let kind = unsafeBitCast(type, to: UnsafeRawPointer.self).load(as: UInt.self)
        return kind == 0x200 || kind == 0x201
    }

    /// The seed of a plain value, boxed: no hooks, not owned by the scope.
    @usableFromInline
    init(_plainValueOf key: any ServiceKey.Type, in box: _AnyBox) {
        self.key = key
        self.box = box
        self.hooks = nil
        self.isOwnedByScope = false
    }

    /// The seed of a value that may have hooks the scope runs or claims: a class instance, an
    /// existential or a value the scope owns.
    @usableFromInline
    static func _castForHooks<Key: ServiceKey>(_ key: Key.Type, _ value: Key.Value, ownedByScope: Bool) -> ScopeSeed {
        ScopeSeed(
            key: key,
            box: boxedInstance(value),
            hooks: (value as? any LifecycleHooks).map(InstanceHooks.init),
            isOwnedByScope: ownedByScope
        )
    }

    private init(key: any ServiceKey.Type, box: _AnyBox, hooks: InstanceHooks?, isOwnedByScope: Bool) {
        self.key = key
        self.box = box
        self.hooks = hooks
        self.isOwnedByScope = isOwnedByScope
    }

    /// The key's name, as errors and events give it.
    var name: String { key.serviceName }
}

extension _GraphCore {
    /// A seed given to a new scope, at the slot of its key, with the claim on its hooks (nil when it
    /// has none, or another graph or scope runs them).
    struct PlacedSeed {
        let slot: Int
        let seed: ScopeSeed
        var claimedHooks: InstanceHooks? = nil
        /// Whether the scope runs the claimed hooks' `willRemove`: the seed is owned by the scope, or the
        /// same instance is given as owned under another key of the scope.
        var isOwned: Bool

        init(slot: Int, seed: ScopeSeed) {
            self.slot = slot
            self.seed = seed
            self.isOwned = seed.isOwnedByScope
        }
    }

    /// The seeds given to a new scope at their slots, in slot order: every seed of the graph, once. A
    /// seed given for a key whose seed an override (or a child graph's own provider) replaced is left
    /// out: code that seeds its scopes keeps working in a test that fixes the value.
    ///
    /// Only the seeds of scopes of the kind at `kind` (an index in ``scopeKinds``) are placed; one of
    /// another kind is unexpected.
    ///
    /// - Throws: Every key missing, given twice or not a seed, at once, before anything is made.
    func placedSeeds(_ seeds: [ScopeSeed], kind: UInt16 = 0) throws(ServiceGraphError) -> [PlacedSeed] {
        if seeds.isEmpty && seedSlots.isEmpty { return [] }
        let seedSlots = self.seedSlots(ofKind: kind)
        if let placed = placedExactly(seeds, at: seedSlots) { return placed }
        // Indexed by position in `seedSlots` (sorted): a scope costs its seeds, not the graph's size.
        var given: [ScopeSeed?] = Array(repeating: nil, count: seedSlots.count)
        var problems: [ServiceGraphError.Problem] = []
        // One problem per key, however many times it is given.
        var reported: Set<ObjectIdentifier> = []
        for seed in seeds {
            func slot<Key: ServiceKey>(of key: Key.Type) -> Int? { self.slot(of: key) }
            guard let slot = slot(of: seed.key) else {
                guard reported.insert(ObjectIdentifier(seed.key)).inserted else { continue }
                problems.append(
                    .init(
                        .unexpectedSeed,
                        key: seed.name,
                        message: "\(seed.name) was given to a scope but is not in the graph; "
                            + "declare it with builder.seed(_:)"
                    )
                )
                continue
            }
            guard let position = Self.position(of: slot, in: seedSlots) else {
                if Self.position(of: slot, in: replacedSeedSlots) != nil { continue }
                guard reported.insert(ObjectIdentifier(seed.key)).inserted else { continue }
                // Names only for problems: the first name asked for makes the graph's table of names.
                let name = self.name(slot)
                if isSeed(slot) {
                    let (own, other) = (scopeKinds[Int(kind)], scopeKind(of: slot))
                    problems.append(
                        .init(
                            .unexpectedSeed,
                            key: name,
                            site: site(slot),
                            message: "\(name) was given to a \(own) scope, but it is a seed of \(other) scopes; "
                                + "give it where a \(other) scope is made"
                        )
                    )
                    continue
                }
                problems.append(
                    .init(
                        .unexpectedSeed,
                        key: name,
                        site: site(slot),
                        message: "\(name) was given to a scope, but the graph provides it; "
                            + "only keys declared with builder.seed(_:) are given to a scope"
                    )
                )
                continue
            }
            guard given[position] == nil else {
                guard reported.insert(ObjectIdentifier(seed.key)).inserted else { continue }
                let name = self.name(slot)
                problems.append(
                    .init(.duplicateSeed, key: name, site: site(slot), message: "\(name) was given to a scope twice")
                )
                continue
            }
            given[position] = seed
        }
        for (position, slot) in seedSlots.enumerated() where given[position] == nil {
            let name = self.name(slot)
            problems.append(
                .init(
                    .missingSeed,
                    key: name,
                    site: site(slot),
                    message: slotScopeKinds == nil
                        ? "\(name) is a seed of the graph's scopes, but the scope was not given its value "
                            + "(makeScope(seeding:) takes a ScopeSeed for each seed)"
                        : "\(name) is a seed of \(scopeKinds[Int(kind)]) scopes, but the scope was not given its value "
                            + "(makeScope(_:seeding:) takes a ScopeSeed for each seed of its kind)"
                )
            )
        }
        guard problems.isEmpty else { throw ServiceGraphError(problems) }
        return zip(seedSlots, given).map { PlacedSeed(slot: $0, seed: $1.unsafelyUnwrapped) }
    }

    /// The slots of the seeds of scopes of the kind at `kind`, sorted.
    func seedSlots(ofKind kind: UInt16) -> [Int] {
        seedSlotsByKind?[Int(kind)] ?? seedSlots
    }

    /// Whether `seeds` are each seed of the kind at `kind` once, and nothing else, none with hooks to
    /// claim: the case of nearly every scope a program opens, whose seeds the new scope writes straight
    /// into its cells, in slot order, with no list of placed seeds (``ServiceScope/Seeding/exact(_:)``).
    /// False sends them through ``placedSeeds(_:kind:)`` and ``claimingHooks(of:)``, which report what
    /// is wrong, if anything.
    func seedsArePlainAndExact(_ seeds: [ScopeSeed], kind: UInt16) -> Bool {
        let seedSlots = self.seedSlots(ofKind: kind)
        // The positions given, as bits: a kind with more seeds than that takes the general path.
        guard seeds.count == seedSlots.count, seedSlots.count <= UInt64.bitWidth else { return false }
        var given: UInt64 = 0
        for (index, seed) in seeds.enumerated() {
            guard
                seed.hooks == nil,
                let position = isKindSeed(seed, at: index, of: seedSlots)
                    ? index
                    : slot(ofKeyID: ObjectIdentifier(seed.key)).flatMap({ Self.position(of: $0, in: seedSlots) })
            else { return false }
            let bit: UInt64 = 1 << position
            guard given & bit == 0 else { return false }
            given |= bit
        }
        return true
    }

    /// The slot of `seed` when it is the one seed of the kind at `kind` and has no hooks to claim: as
    /// ``seedsArePlainAndExact(_:kind:)`` for an array of one (nil sends it through
    /// ``placedSeeds(_:kind:)``, which reports what is wrong, if anything).
    func slotOfOnlySeed(_ seed: ScopeSeed, kind: UInt16) -> Int? {
        let seedSlots = self.seedSlots(ofKind: kind)
        guard seedSlots.count == 1, seed.hooks == nil, isKindSeed(seed, at: 0, of: seedSlots) else { return nil }
        return seedSlots[0]
    }

    /// Whether `seed` is for the kind's seed at `position` of `seedSlots`: seeds given in the order of
    /// their slots (as they are declared, usually) are placed without a lookup of their keys.
    @inline(__always)
    func isKindSeed(_ seed: ScopeSeed, at position: Int, of seedSlots: [Int]) -> Bool {
        position < seedSlots.count && keyIdentities[seedSlots[position]] == UInt(bitPattern: ObjectIdentifier(seed.key))
    }

    /// The slot of `seed`, the `position`th given to a scope of a kind whose seeds are at `seedSlots`.
    @inline(__always)
    func slot(of seed: ScopeSeed, at position: Int, of seedSlots: [Int]) -> Int? {
        isKindSeed(seed, at: position, of: seedSlots) ? seedSlots[position] : slot(ofKeyID: ObjectIdentifier(seed.key))
    }

    /// The seeds at their slots when each seed of the kind (at `seedSlots`, sorted) is given once and
    /// nothing else is: the case of every scope a program opens, placed without the tables the checks
    /// need. Nil otherwise, for ``placedSeeds(_:kind:)`` to find and report each problem.
    private func placedExactly(_ seeds: [ScopeSeed], at seedSlots: [Int]) -> [PlacedSeed]? {
        guard seeds.count == seedSlots.count else { return nil }
        var placed: [PlacedSeed] = []
        placed.reserveCapacity(seeds.count)
        for seed in seeds {
            guard let slot = slot(ofKeyID: ObjectIdentifier(seed.key)) else { return nil }
            placed.append(PlacedSeed(slot: slot, seed: seed))
        }
        // In slot order, each slot once: sorted, as a kind may have thousands of seeds (an insertion sort
        // of 10,000 seeds given in reverse took seconds, holding a thread of the cooperative pool).
        placed.sort { $0.slot < $1.slot }
        for index in placed.indices.dropFirst() where placed[index - 1].slot == placed[index].slot { return nil }
        // As many distinct slots as the kind has seeds, in order: they are the kind's seeds if they match.
        for (placed, slot) in zip(placed, seedSlots) where placed.slot != slot { return nil }
        return placed
    }

    /// Claims the hooks of each seed that has some, so that no service of the new scope runs them.
    ///
    /// - Throws: ``ServiceGraphError/Code/ownedSeedInUse`` for each seed owned by the scope whose hooks
    ///   the graph or another open scope already runs: two owners would end it twice, or one would
    ///   end it under the other. Nothing stays claimed then.
    func claimingHooks(of seeds: [PlacedSeed]) throws(ServiceGraphError) -> [PlacedSeed] {
        guard seeds.contains(where: { $0.seed.hooks != nil }) else { return seeds }
        var claimed = seeds
        var problems: [ServiceGraphError.Problem] = []
        // An instance given under several keys is one instance: claimed once, by the first of them, and
        // owned if any of them is given as owned.
        var claimer: [ObjectIdentifier: Int] = [:]
        for index in claimed.indices {
            guard let hooks = claimed[index].seed.hooks else { continue }
            if let identity = hooks.identity, let first = claimer[identity] {
                if claimed[index].isOwned { claimed[first].isOwned = true }
                continue
            }
            guard claimed[index].seed.isOwnedByScope else {
                // A caller's seed: claimed, or the claim another scope or service holds shared, so that it
                // stays while this scope is open. A shared claim is not this scope's to own: a later key
                // giving the instance as owned is refused below.
                switch hookClaims.claimOrShare(hooks, for: claimed[index].slot) {
                case .claimed:
                    claimed[index].claimedHooks = hooks
                    if let identity = hooks.identity { claimer[identity] = index }
                case .shared: claimed[index].claimedHooks = hooks
                case .heldByAncestor: break
                }
                continue
            }
            if case .claimed = hookClaims.claim(hooks, for: claimed[index].slot) {
                claimed[index].claimedHooks = hooks
                if let identity = hooks.identity { claimer[identity] = index }
            } else {
                let name = self.name(claimed[index].slot)
                problems.append(
                    .init(
                        .ownedSeedInUse,
                        key: name,
                        site: site(claimed[index].slot),
                        message: "\(name) was given to a scope as owned by it, but the graph or another open "
                            + "scope of it already runs that instance's hooks; give each scope its own instance, or "
                            + "give it without ownedByScope"
                    )
                )
            }
        }
        guard problems.isEmpty else {
            giveBackHooks(of: claimed)
            throw ServiceGraphError(problems)
        }
        return claimed
    }

    /// Gives back the claims ``claimingHooks(of:)`` took.
    func giveBackHooks(of seeds: [PlacedSeed]) {
        for seed in seeds {
            if let hooks = seed.claimedHooks { hookClaims.giveBack(hooks) }
        }
    }

    /// The position of `slot` in `slots`, which are sorted.
    private static func position(of slot: Int, in slots: [Int]) -> Int? {
        var low = 0
        var high = slots.count
        while low < high {
            let middle = (low + high) / 2
            if slots[middle] < slot { low = middle + 1 } else { high = middle }
        }
        return low < slots.count && slots[low] == slot ? low : nil
    }
}
