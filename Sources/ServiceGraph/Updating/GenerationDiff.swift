/// What a change set does to a graph: which services of the next generation are made again, which
/// singletons it takes over from the current one, and which keys come and go.
///
/// Worked out from the two builders and their plans, before anything runs:
/// - **Changed**: each key the change set registers (provides, overrides, includes through a module),
///   contributes to, decorates or removes; with a changed collection or decorated key, the keys that
///   make it up (its elements, its decoration stages); and each key of the next plan that the current
///   one does not have.
/// - **Affected**: the changed keys and everything that depends on them, transitively, in either
///   generation (a service whose optional dependency was removed depends on it only in the current
///   one). A singleton is affected too when it holds a lazy or provider handle (which reads the graph
///   it was made in), or when it hands out the instance of an affected singleton.
/// - **Adopted**: every singleton of the next generation that is not affected and was created in the
///   current one (by the build, or on first use): the next generation takes the instance over, with its
///   hooks, and no hook runs on it. One not created yet is created by the next generation, by its build
///   or on its first use there.
struct GenerationDiff {
    /// The keys the change set touched directly, by name, in the next plan's slot order, then the
    /// removed ones.
    let changed: [String]
    /// By slot of the next plan: whether the service is made again (or made for the first time).
    let affected: [Bool]
    /// The singletons the next generation takes over: their slot in the current generation and in the
    /// next.
    let adopted: [(current: Int, next: Int)]
    /// The slots of the current generation whose keys the next one does not have.
    let removed: [Int]
    /// The slots of the next plan whose keys the current generation does not have.
    let added: [Int]

    /// The diff from the current generation (`graph`, made by `currentBuilder` from `current`) to the
    /// graph `nextBuilder` makes, whose plan is `next`. The two plans' slots are the graphs' slots.
    init(
        from graph: ServiceGraph,
        plan current: GraphPlan,
        builtBy currentBuilder: ServiceGraph.Builder,
        to next: GraphPlan,
        builtBy nextBuilder: ServiceGraph.Builder
    ) {
        let core = graph.core
        let removedKeys = Set(nextBuilder.removedKeys.keys).subtracting(currentBuilder.removedKeys.keys)
        var touched = removedKeys
        touched.formUnion(
            Self.appended(
                from: currentBuilder.registrations.lazy.map(\.keyID),
                to: nextBuilder.registrations.lazy.map(\.keyID),
                removing: removedKeys
            )
        )
        touched.formUnion(
            Self.appended(
                from: currentBuilder.contributions.lazy.map { ObjectIdentifier($0.collection.key) },
                to: nextBuilder.contributions.lazy.map { ObjectIdentifier($0.collection.key) },
                removing: removedKeys
            )
        )
        touched.formUnion(
            Self.appended(
                from: currentBuilder.decorations.lazy.map(\.keyID),
                to: nextBuilder.decorations.lazy.map(\.keyID),
                removing: removedKeys
            )
        )

        // The next plan's slot of each of the current generation's slots, and back.
        let currentCount = current.count
        var nextSlot = [Int?](repeating: nil, count: currentCount)
        var currentSlot = [Int?](repeating: nil, count: next.count)
        for slot in 0..<currentCount {
            if let mapped = next.table.slot(for: current.providers[slot].keyID) {
                nextSlot[slot] = mapped
                currentSlot[mapped] = slot
            }
        }

        var affected = [Bool](repeating: false, count: next.count)
        var stack: [Int] = []
        func mark(_ slot: Int) {
            guard !affected[slot] else { return }
            affected[slot] = true
            stack.append(slot)
        }
        var changed: [String] = []
        for slot in 0..<next.count {
            let isChanged = touched.contains(next.providers[slot].keyID) || currentSlot[slot] == nil
            if isChanged {
                changed.append(next.name(slot))
                mark(slot)
            }
        }
        for slot in 0..<currentCount where nextSlot[slot] == nil {
            changed.append(current.name(slot))
        }
        // The parts of a changed collection or decorated key (its elements, its stages) change with it.
        var parts = stack
        while let slot = parts.popLast() {
            for dependency in next.edges.dependencies(of: slot)
            where dependency >= 0 && next.providers[dependency].isWrapperKey && !affected[dependency] {
                mark(dependency)
                parts.append(dependency)
            }
        }
        // A singleton holding a lazy or provider handle cannot be taken over: the handle reads the graph it
        // was made in.
        let lifetimes = next.lifetimes
        for slot in 0..<next.count where lifetimes[slot] == .singleton && !affected[slot] {
            if Self.holdsHandle(slot, in: next) { mark(slot) }
        }
        // In the current generation: what depended on a changed or removed key.
        var currentStack: [Int] = []
        var currentReached = [Bool](repeating: false, count: currentCount)
        for slot in 0..<currentCount where nextSlot[slot] == nil || nextSlot[slot].map({ affected[$0] }) == true {
            currentReached[slot] = true
            currentStack.append(slot)
        }
        let currentDependents = current.edges.dependents
        while let slot = currentStack.popLast() {
            currentDependents.forEach(of: slot) { dependent in
                guard !currentReached[dependent] else { return }
                currentReached[dependent] = true
                currentStack.append(dependent)
                if let mapped = nextSlot[dependent] { mark(mapped) }
            }
        }
        // In the next generation: everything that depends on an affected service; and a singleton that
        // hands out the instance an affected one holds.
        let aliases = graph.log.aliases
        let nextDependents = next.edges.dependents
        repeat {
            while let slot = stack.popLast() {
                nextDependents.forEach(of: slot) { mark($0) }
            }
            for alias in aliases {
                guard let holder = nextSlot[alias.holder], let slot = nextSlot[alias.slot] else {
                    if let slot = nextSlot[alias.slot] { mark(slot) }
                    continue
                }
                if affected[holder] { mark(slot) }
            }
        } while !stack.isEmpty

        var adopted: [(current: Int, next: Int)] = []
        for slot in 0..<next.count where lifetimes[slot] == .singleton && !affected[slot] {
            guard let mapped = currentSlot[slot], core.createdSingletonBox(at: mapped) != nil else { continue }
            adopted.append((mapped, slot))
        }
        self.changed = changed
        self.affected = affected
        self.adopted = adopted
        self.removed = (0..<currentCount).filter { nextSlot[$0] == nil }
        self.added = (0..<next.count).filter { currentSlot[$0] == nil }
    }

    /// The keys of the entries `next` has beyond those of `current` that stayed: `next` is `current`
    /// without the entries of `removing`, then what was appended.
    private static func appended(
        from current: some Sequence<ObjectIdentifier>,
        to next: some Collection<ObjectIdentifier>,
        removing removed: Set<ObjectIdentifier>
    ) -> Set<ObjectIdentifier> {
        let kept = current.reduce(0) { count, key in removed.contains(key) ? count : count + 1 }
        return Set(next.dropFirst(kept))
    }

    /// Whether the service at `slot` holds a lazy or provider handle, which reads the graph it was made in.
    private static func holdsHandle(_ slot: Int, in plan: GraphPlan) -> Bool {
        guard let kinds = plan.edgeKinds else { return false }
        return plan.edges.edgeRange(of: slot).contains { kinds[$0].isHandle }
    }
}
