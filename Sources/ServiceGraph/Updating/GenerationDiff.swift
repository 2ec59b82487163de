/// What a change set does to a graph: which services of the next generation are made again, which
/// singletons it takes over from the current one, and which keys come and go.
///
/// Worked out from the two plans, before anything runs. Each provider in a plan carries the number of
/// the registration call that made it (``ServiceGraph/Builder/assignSerials()``): a `provide`,
/// `override`, `contribute` (or `overrideContribution`) or `decorate`, numbered once, when the
/// generation that first had it was made. So a provider of the next plan is the current generation's
/// when its number is, whatever key the plan files it under (a contribution moved to another place in
/// its list, a decorator under a new decorator), and new otherwise.
/// - **Changed**: each provider of the next plan that the current one does not have: the change set
///   made it (a new key, an override, a contribution, a decorator). A list of contributions, which
///   the plan makes itself, is changed when its elements are not the same ones in the same order.
/// - **Affected**: the changed services and everything that depends on them, transitively, in either
///   generation (a service whose optional dependency was removed depends on it only in the current
///   one). A singleton is affected too when it holds a lazy or provider handle (which reads the graph
///   it was made in).
/// - **Adopted**: every singleton of the next generation that is not affected and was created in the
///   current one (by the build, or on first use): the next generation takes the instance over, with its
///   hooks, and no hook runs on it. One not created yet is created by the next generation, by its build
///   or on its first use there.
/// - **Transferred**: an adopted singleton handing out an instance whose hooks a replaced or removed
///   singleton ran (one instance under two keys) takes those hooks over: the instance stays started.
struct GenerationDiff {
    /// The keys the change set touched directly, by name: the changed services' keys (a contribution's
    /// list, a decorator's decorated key), in the next plan's slot order, then the removed ones.
    let changed: [String]
    /// By slot of the next plan: whether the service is made again (or made for the first time).
    let affected: [Bool]
    /// The singletons the next generation takes over: their slot in the current generation and in the
    /// next.
    let adopted: [(current: Int, next: Int)]
    /// The hooks of an instance that an adopted singleton hands out, run in the current generation by a
    /// singleton the next one does not take over: the holder's slot in the current generation, and the
    /// adopted singleton's in the next.
    let transferred: [(currentHolder: Int, next: Int)]
    /// The slots of the current generation whose keys the next one does not have.
    let removed: [Int]
    /// The slots of the next plan whose keys the current generation does not have.
    let added: [Int]

    /// The diff from the current generation (`graph`, made from the plan `current`) to the graph of the
    /// plan `next`. The two plans' slots are the graphs' slots.
    init(from graph: ServiceGraph, plan current: GraphPlan, to next: GraphPlan) {
        let core = graph.core
        let currentCount = current.count
        // Each slot's counterpart: the provider with the same number, or, for what a plan makes itself,
        // the one under the same key.
        var nextSlot = [Int?](repeating: nil, count: currentCount)
        var currentSlot = [Int?](repeating: nil, count: next.count)
        // Serials are dense, from 0: a table indexed by serial. One call can make several providers (a
        // factory with arguments, in both forms): the first in the table, the others aside; the
        // counterpart is the one under the same key, or the only one.
        var firstBySerial: [Int] = []
        var othersBySerial: [Int32: [Int]] = [:]
        for slot in 0..<currentCount {
            let serial = Int(current.providers[slot].serial)
            guard serial >= 0 else { continue }
            if serial >= firstBySerial.count {
                firstBySerial.append(contentsOf: repeatElement(-1, count: serial - firstBySerial.count + 1))
            }
            if firstBySerial[serial] < 0 {
                firstBySerial[serial] = slot
            } else {
                othersBySerial[Int32(serial), default: []].append(slot)
            }
        }
        for slot in 0..<next.count {
            let provider = next.providers[slot]
            let counterpart: Int?
            if provider.serial >= 0 {
                let serial = Int(provider.serial)
                let first = serial < firstBySerial.count ? firstBySerial[serial] : -1
                if first < 0 {
                    counterpart = nil
                } else if let others = othersBySerial[provider.serial] {
                    let candidates = [first] + others
                    counterpart =
                        candidates.first { current.providers[$0].keyID == provider.keyID }
                        ?? (candidates.count == 1 ? candidates[0] : nil)
                } else {
                    counterpart = first
                }
            } else {
                counterpart = current.table.slot(for: provider.keyID).flatMap {
                    current.providers[$0].serial < 0 ? $0 : nil
                }
            }
            if let counterpart {
                nextSlot[counterpart] = slot
                currentSlot[slot] = counterpart
            }
        }

        var affected = [Bool](repeating: false, count: next.count)
        var stack: [Int] = []
        func mark(_ slot: Int) {
            guard !affected[slot] else { return }
            affected[slot] = true
            stack.append(slot)
        }
        var changedSlots: [Int] = []
        for slot in 0..<next.count {
            let isChanged: Bool
            if let counterpart = currentSlot[slot] {
                // Made by the plan itself: changed when made of other providers.
                isChanged =
                    next.providers[slot].serial < 0
                    && !Self.sameDependencies(of: slot, in: next, as: counterpart, in: current, mapped: currentSlot)
            } else {
                isChanged = true
            }
            if isChanged {
                changedSlots.append(slot)
                mark(slot)
            }
        }
        // A singleton holding a lazy or provider handle cannot be taken over: the handle reads the graph it
        // was made in.
        let lifetimes = next.lifetimes
        for slot in 0..<next.count where lifetimes[slot] == .singleton && !affected[slot] {
            if Self.holdsHandle(slot, in: next) { mark(slot) }
        }
        // In the current generation: what depended on a replaced or removed provider.
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
        // In the next generation: everything that depends on an affected service.
        let nextDependents = next.edges.dependents
        while let slot = stack.popLast() {
            nextDependents.forEach(of: slot) { mark($0) }
        }

        var adopted: [(current: Int, next: Int)] = []
        var isAdopted = [Bool](repeating: false, count: currentCount)
        for slot in 0..<next.count where lifetimes[slot] == .singleton && !affected[slot] {
            guard let mapped = currentSlot[slot], core.createdSingletonBox(at: mapped) != nil else { continue }
            adopted.append((mapped, slot))
            isAdopted[mapped] = true
        }
        // One instance under two keys: when the singleton that ran its hooks is not taken over, the first
        // taken-over one that hands it out runs them from now on.
        var transferred: [(currentHolder: Int, next: Int)] = []
        var heirs: Set<Int> = []
        for alias in graph.log.aliases + (core.deferredSingletons?.aliasesSoFar ?? [])
        where isAdopted[alias.slot] && !isAdopted[alias.holder] && !heirs.contains(alias.holder) {
            guard let slot = nextSlot[alias.slot] else { continue }
            heirs.insert(alias.holder)
            transferred.append((alias.holder, slot))
        }
        // Names are keys': a changed contribution names its list, a changed decorator the decorated key.
        var changed: [String] = []
        var named: Set<ObjectIdentifier> = []
        var nextLists = ContributionLists(next)
        for slot in changedSlots {
            let key = nextLists.publicKey(of: slot)
            if named.insert(ObjectIdentifier(key)).inserted { changed.append(key.serviceName) }
        }
        // A key is in both plans when its provider's counterpart is filed under it; otherwise, look it up.
        func isUnder(_ slot: Int, of plan: GraphPlan, theSameKeyAs other: Int?, of otherPlan: GraphPlan) -> Bool {
            guard let other else { return false }
            return plan.providers[slot].keyID == otherPlan.providers[other].keyID
        }
        let removed = (0..<currentCount).filter { slot in
            !isUnder(slot, of: current, theSameKeyAs: nextSlot[slot], of: next)
                && next.table.slot(for: current.providers[slot].keyID) == nil
        }
        var currentLists = ContributionLists(current)
        for slot in removed {
            let key = currentLists.publicKey(of: slot)
            if named.insert(ObjectIdentifier(key)).inserted { changed.append(key.serviceName) }
        }
        self.changed = changed
        self.affected = affected
        self.adopted = adopted
        self.transferred = transferred
        self.removed = removed
        self.added = (0..<next.count).filter { slot in
            !isUnder(slot, of: next, theSameKeyAs: currentSlot[slot], of: current)
                && current.table.slot(for: next.providers[slot].keyID) == nil
        }
    }

    /// Whether the service at `slot` of `plan` depends on the same providers, in the same order, as the
    /// one at `counterpart` of `other` (its dependencies mapped by `mapped`).
    private static func sameDependencies(
        of slot: Int,
        in plan: GraphPlan,
        as counterpart: Int,
        in other: GraphPlan,
        mapped: [Int?]
    ) -> Bool {
        let mine = plan.edges.dependencies(of: slot)
        let theirs = other.edges.dependencies(of: counterpart)
        guard mine.count == theirs.count else { return false }
        for (dependency, otherDependency) in zip(mine, theirs) {
            guard dependency >= 0, otherDependency >= 0 else {
                if dependency != otherDependency { return false }
                continue
            }
            if mapped[dependency] != otherDependency { return false }
        }
        return true
    }

    /// The key a user registered for each service of a plan: a contribution's list, a decorator
    /// stage's decorated key, or the service's own. The lists are indexed on first use, once.
    private struct ContributionLists {
        let plan: GraphPlan
        private var listOfElement: [ObjectIdentifier: any ServiceKey.Type]?

        init(_ plan: GraphPlan) {
            self.plan = plan
        }

        mutating func publicKey(of slot: Int) -> any ServiceKey.Type {
            let provider = plan.providers[slot]
            if !plan.composition.placed.isEmpty {
                let lists =
                    listOfElement
                    ?? Dictionary(
                        plan.composition.placed.map { ($0.elementID, $0.collection.key) },
                        uniquingKeysWith: { first, _ in first }
                    )
                listOfElement = lists
                if let list = lists[provider.keyID] { return list }
            }
            return (provider.key as? any DecoratedStageKey.Type)?.decoratedKey ?? provider.key
        }
    }

    /// Whether the service at `slot` holds a lazy or provider handle, which reads the graph it was made in.
    private static func holdsHandle(_ slot: Int, in plan: GraphPlan) -> Bool {
        guard let kinds = plan.edgeKinds else { return false }
        return plan.edges.edgeRange(of: slot).contains { kinds[$0].isHandle }
    }
}
