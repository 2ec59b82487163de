/// Turns a builder's contributions (``Contribution``) into providers, once the order of each list is
/// known: a provider per contribution, keyed by its position in its list (`MiddlewareKey[0]`,
/// `MiddlewareKey[1]`, ...), and a provider of each list that depends on them in that order. From there
/// on they are ordinary providers: validated, built, resolved, dumped and released like any other.
enum Contributions {
    typealias Problem = ServiceGraphError.Problem

    /// Appends the providers of `contributions` to `registrations`, merged with the contributions a
    /// child graph's parent placed (`inherited`, in the parent's order); notes in `notes` the names of
    /// contributions with an id (`MiddlewareKey[1: auth]`) and every contribution placed, for this
    /// graph's children. Returns what is wrong with the contributions themselves (ids, overrides,
    /// order), in registration order.
    static func add(
        _ contributions: [Contribution],
        inherited: [PlacedContribution],
        to registrations: inout RegistrationList,
        notes: inout CompositionNotes
    ) -> [Problem] {
        var problems: [Problem] = []
        var groupOf: [ObjectIdentifier: Int] = [:]
        var groups: [(members: [Contribution], overrides: [Contribution], inherited: [PlacedContribution])] = []
        func group(of collection: ObjectIdentifier) -> Int {
            if let known = groupOf[collection] { return known }
            groupOf[collection] = groups.count
            groups.append(([], [], []))
            return groups.count - 1
        }
        for placed in inherited { groups[group(of: placed.collectionID)].inherited.append(placed) }
        for contribution in contributions {
            let index = group(of: contribution.collectionID)
            if contribution.isOverride {
                groups[index].overrides.append(contribution)
            } else {
                groups[index].members.append(contribution)
            }
        }
        // A list an `override` replaces keeps none of its contributions (their dependencies, order and
        // ids no longer matter, as a replaced provider's do not): only an empty provider for the
        // override to replace; nor does it pass them on to child graphs.
        var replacedLists: Set<ObjectIdentifier> = []
        for index in registrations.indices where registrations[index].isOverride {
            let key = registrations[index].keyID
            if groupOf[key] != nil { replacedLists.insert(key) }
        }
        // A parent's list the child does not contribute to stays the parent's (inherited as it is);
        // one it contributes to is made again in the child, the parent's elements first, as the child
        // inherited them (their instances shared).
        var inheritedRegistration: [ObjectIdentifier: Registration] = [:]
        let remade = Set(
            groups.lazy.filter { !$0.inherited.isEmpty && !($0.members.isEmpty && $0.overrides.isEmpty) }.flatMap(
                \.inherited
            )
            .map(\.elementID)
        )
        if !remade.isEmpty {
            for index in registrations.indices
            where registrations[index].isInherited && remade.contains(registrations[index].keyID) {
                inheritedRegistration[registrations[index].keyID] = registrations[index]
            }
        }
        var inheritedCounts = Array(repeating: 0, count: groups.count)
        for index in groups.indices where !groups[index].inherited.isEmpty {
            guard !(groups[index].members.isEmpty && groups[index].overrides.isEmpty) else {
                if replacedLists.contains(groups[index].inherited[0].collectionID) { continue }
                notes.placed += groups[index].inherited
                for placed in groups[index].inherited { notes.labels[placed.elementID] = placed.label }
                continue
            }
            let parents = groups[index].inherited.compactMap { placed in
                inheritedRegistration[placed.elementID].map { Contribution(placed, providedBy: $0) }
            }
            groups[index].members.insert(contentsOf: parents, at: 0)
            inheritedCounts[index] = parents.count
        }
        for (group, (members, overrides, _)) in groups.enumerated() where !(members.isEmpty && overrides.isEmpty) {
            let collection = (members.first ?? overrides[0]).collection
            let name = collection.name
            if replacedLists.contains(ObjectIdentifier(collection.key)) {
                append(
                    [],
                    in: [],
                    of: collection,
                    site: (members.first ?? overrides[0]).site,
                    module: nil,
                    to: &registrations,
                    notes: &notes
                )
                continue
            }
            var list = members
            var positionOfID: [String: Int] = [:]
            for (index, member) in list.enumerated() {
                guard let id = member.id else { continue }
                if let first = positionOfID[id] {
                    problems.append(duplicateID(id, of: name, first: list[first].site, again: member.site))
                } else {
                    positionOfID[id] = index
                }
            }
            for override in overrides {
                guard let id = override.id, let index = positionOfID[id] else {
                    problems.append(unknownOverride(override, of: name, known: positionOfID.keys))
                    continue
                }
                list[index] = list[index].replaced(by: override)
            }
            guard !list.isEmpty else { continue }
            // The parent's elements keep the order the parent gave them; the child's own go around them.
            let kept = Array(zip(0..<max(inheritedCounts[group] - 1, 0), 1..<max(inheritedCounts[group], 1)))
            let order = ordered(list, positionOfID: positionOfID, name: name, keeping: kept, problems: &problems)
            // A list a module keeps private takes contributions from that module only.
            let listModule = privateOwner(of: collection, among: list, in: registrations.modules)
            if let owner = listModule {
                for contribution in list where contribution.module != owner {
                    problems.append(
                        privateList(collection, owner: owner, outsider: contribution, in: registrations.modules)
                    )
                }
            }
            append(
                list,
                in: order,
                of: collection,
                site: list[0].site,
                module: listModule,
                to: &registrations,
                notes: &notes
            )
        }
        return problems
    }

    /// The providers of one list: its contributions in `order`, then the list itself, registered at
    /// `site`.
    private static func append(
        _ list: [Contribution],
        in order: [Int],
        of collection: ContributedCollection,
        site: SiteLiteral,
        module: UInt16?,
        to registrations: inout RegistrationList,
        notes: inout CompositionNotes
    ) {
        var elementKeys = _DependencyKeys()
        var lifetimes: Set<Lifetime> = []
        var scopeKinds: Set<UInt16> = []
        for (position, index) in order.enumerated() {
            let contribution = list[index]
            let key = collection.element(position)
            let lifetime = contribution.lifetime ?? .singleton
            var registration: Registration
            if let inherited = contribution.inheritedRegistration {
                // A parent's element, at its place in the child's list: the parent's instance (or
                // factory), under the key of that place.
                registration = inherited.with(key: key)
                registration.isInherited = false
            } else {
                registration = Registration(
                    key: key,
                    lifetime: lifetime,
                    dependencies: contribution.dependencies,
                    site: contribution.site,
                    factory: contribution.factory,
                    isOverride: false
                )
                registration.scopeKind = contribution.scopeKind
                registration.module = contribution.module
                registration.serial = contribution.serial
            }
            registrations.append(registration)
            let label = contribution.id.map { "\(collection.name)[\(position): \($0)]" }
            if let label { notes.labels[ObjectIdentifier(key)] = label }
            notes.placed.append(PlacedContribution(contribution, at: key, label: label))
            elementKeys.append(key, kind: .direct)
            lifetimes.insert(lifetime)
            if lifetime == .scoped { scopeKinds.insert(contribution.scopeKind) }
        }
        // The list holds its elements: a singleton only when they all are; scoped when some are scoped,
        // all in one kind of scope (a scoped service may hold singletons); transient otherwise.
        let lifetime: Lifetime =
            lifetimes.contains(.transient) || scopeKinds.count > 1
            ? .transient : lifetimes.contains(.scoped) ? .scoped : .singleton
        var registration = Registration(
            key: collection.key,
            lifetime: lifetime,
            dependencies: elementKeys,
            site: site,
            factory: collection.factory(order.map { list[$0].id }),
            isOverride: false
        )
        if lifetime == .scoped { registration.scopeKind = scopeKinds.first ?? 0 }
        // The list is the module's that keeps it private, or that made every contribution; shared
        // otherwise.
        let modules = Set(list.map(\.module))
        registration.module = module ?? (modules.count == 1 ? modules.first ?? 0 : 0)
        registrations.append(registration)
    }

    /// Appends an empty list for each key of a list nobody contributes to that a provider of `plan`
    /// depends on, unless the key needs a contribution (``ContributionKey/needsContribution``); returns
    /// whether it appended any. Looked for only where the plan has missing edges.
    static func addEmptyLists(missingFrom plan: GraphPlan, to registrations: inout RegistrationList) -> Bool {
        guard plan.missingEdgeCount > 0 else { return false }
        var added: Set<ObjectIdentifier> = []
        for slot in plan.providers.indices {
            for (position, target) in plan.edges.dependencies(of: slot).enumerated() where target == GraphPlan.missing {
                let key = plan.edgeKey(of: slot, at: position)
                guard let collection = ContributedCollection(key), !collection.needsContribution,
                    added.insert(ObjectIdentifier(key)).inserted
                else { continue }
                registrations.append(
                    Registration(
                        key: key,
                        lifetime: .singleton,
                        dependencies: _DependencyKeys(),
                        site: plan.providers[slot].site,
                        factory: collection.factory([]),
                        isOverride: false
                    )
                )
            }
        }
        return !added.isEmpty
    }

    /// The order of `list`: its `before` and `after` constraints first, then the lowest `position`, then
    /// the order of registration. A constraint on an unknown id is reported and left out; a
    /// contradiction is reported, and the contributions it leaves unplaced follow in position order.
    ///
    /// - Complexity: O((n + c) log n) for n contributions and c constraints.
    static func ordered(
        _ list: [Contribution],
        positionOfID: [String: Int],
        name: String,
        keeping kept: [(Int, Int)] = [],
        problems: inout [Problem]
    ) -> [Int] {
        var successors = Array(repeating: [Int](), count: list.count)
        var predecessorCount = Array(repeating: 0, count: list.count)
        for (first, second) in kept {
            successors[first].append(second)
            predecessorCount[second] += 1
        }
        for (index, contribution) in list.enumerated() {
            for (ids, isBefore) in [(contribution.before, true), (contribution.after, false)] {
                for id in ids {
                    guard let other = positionOfID[id] else {
                        problems.append(
                            unknownID(id, in: contribution, isBefore: isBefore, of: name, known: positionOfID.keys)
                        )
                        continue
                    }
                    let (first, second) = isBefore ? (index, other) : (other, index)
                    successors[first].append(second)
                    predecessorCount[second] += 1
                }
            }
        }
        let precedes = { (left: Int, right: Int) in
            (list[left].position, left) < (list[right].position, right)
        }
        var ready = MinimumHeap(precedes: precedes)
        for index in list.indices where predecessorCount[index] == 0 { ready.insert(index) }
        var order: [Int] = []
        order.reserveCapacity(list.count)
        while let next = ready.removeFirst() {
            order.append(next)
            for successor in successors[next] {
                predecessorCount[successor] -= 1
                if predecessorCount[successor] == 0 { ready.insert(successor) }
            }
        }
        guard order.count < list.count else { return order }
        problems.append(contradiction(in: list, successors: successors, remaining: predecessorCount, of: name))
        let unplaced = list.indices.filter { predecessorCount[$0] > 0 }.sorted(by: precedes)
        return order + unplaced
    }

    /// The problem of a contradiction: a cycle among the contributions left with predecessors.
    private static func contradiction(
        in list: [Contribution],
        successors: [[Int]],
        remaining: [Int],
        of name: String
    ) -> Problem {
        // Every contribution left has a predecessor that is left too: walking back from one finds a
        // cycle.
        var predecessor = Array(repeating: -1, count: list.count)
        for index in list.indices where remaining[index] > 0 {
            for successor in successors[index] where remaining[successor] > 0 { predecessor[successor] = index }
        }
        var seen: [Int: Int] = [:]
        var walk: [Int] = []
        var current = list.indices.first { remaining[$0] > 0 }!
        while seen[current] == nil {
            seen[current] = walk.count
            walk.append(current)
            current = predecessor[current]
        }
        // Told from the earliest registered contribution on it, so the message does not depend on the walk.
        var cycle = Array(walk[seen[current]!...].reversed())
        let start = cycle.firstIndex(of: cycle.min()!)!
        cycle = Array(cycle[start...] + cycle[..<start])
        let steps = (cycle + [cycle[0]]).map { label(list[$0], at: $0) }
        let sites = cycle.map { "\(list[$0].site.site)" }
        return Problem(
            .contradictoryOrder,
            key: name,
            path: steps,
            site: list[cycle[0]].site.site,
            message:
                "the contributions to \(name) cannot be ordered: \(steps.joined(separator: " comes before ")) (stated at \(sites.joined(separator: " and ")))"
        )
    }

    /// The module that keeps `collection` private and contributes to it, if any.
    private static func privateOwner(
        of collection: ContributedCollection,
        among list: [Contribution],
        in modules: [ModuleInfo]
    ) -> UInt16? {
        let key = ObjectIdentifier(collection.key)
        return list.lazy.map(\.module).first { $0 != 0 && modules[Int($0)].privateKeys.contains(key) }
    }

    private static func privateList(
        _ collection: ContributedCollection,
        owner: UInt16,
        outsider: Contribution,
        in modules: [ModuleInfo]
    ) -> Problem {
        let from = outsider.module == 0 ? "outside any module" : "in module \(modules[Int(outsider.module)].name)"
        return Problem(
            .privateDependency,
            key: collection.name,
            site: outsider.site.site,
            message:
                "a contribution (\(from)) goes into \(collection.name), which is private to module \(modules[Int(owner)].name)"
        )
    }

    /// How errors name a contribution: its id, or its place among the list's contributions.
    private static func label(_ contribution: Contribution, at index: Int) -> String {
        contribution.id.map { "'\($0)'" } ?? "contribution #\(index + 1)"
    }

    private static func duplicateID(_ id: String, of name: String, first: SiteLiteral, again: SiteLiteral) -> Problem {
        Problem(
            .duplicateProvider,
            key: name,
            site: again.site,
            message: "two contributions to \(name) have the id '\(id)' (the first at \(first.site))"
        )
    }

    private static func unknownID(
        _ id: String,
        in contribution: Contribution,
        isBefore: Bool,
        of name: String,
        known: some Collection<String>
    ) -> Problem {
        Problem(
            .unknownContribution,
            key: name,
            site: contribution.site.site,
            message:
                "a contribution to \(name) comes \(isBefore ? "before" : "after") '\(id)', but no contribution to \(name) has that id\(suggestion(for: id, among: known))"
        )
    }

    private static func unknownOverride(
        _ override: Contribution,
        of name: String,
        known: some Collection<String>
    ) -> Problem {
        let id = override.id ?? ""
        return Problem(
            .unknownContribution,
            key: name,
            site: override.site.site,
            message:
                "overrideContribution replaces '\(id)', but no contribution to \(name) has that id\(suggestion(for: id, among: known))"
        )
    }

    /// The ids the list's contributions have, for a message about an unknown one; nothing when none has.
    private static func suggestion(for id: String, among known: some Collection<String>) -> String {
        let ids = known.sorted()
        guard !ids.isEmpty else { return "" }
        return " (its contributions' ids: \(ids.map { "'\($0)'" }.joined(separator: ", ")))"
    }
}

extension Contribution {
    /// This contribution with `override`'s provider, keeping its place: id, position, before and after.
    func replaced(by override: Contribution) -> Contribution {
        var replaced = Contribution(
            collection: collection,
            id: id,
            position: position,
            before: before,
            after: after,
            lifetime: override.lifetime ?? lifetime,
            dependencies: override.dependencies,
            site: override.site,
            factory: override.factory,
            scopeKind: override.scopeKind == 0 ? scopeKind : override.scopeKind,
            isOverride: true,
            module: override.module,
            inheritedRegistration: nil
        )
        replaced.serial = override.serial
        return replaced
    }
}

/// A binary heap of indices, the least (by `precedes`) first.
struct MinimumHeap {
    private var elements: [Int] = []
    private let precedes: (Int, Int) -> Bool

    init(precedes: @escaping (Int, Int) -> Bool) {
        self.precedes = precedes
    }

    mutating func insert(_ element: Int) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(elements[child], elements[parent]) else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() -> Int? {
        guard let last = elements.popLast() else { return nil }
        guard !elements.isEmpty else { return last }
        let first = elements[0]
        elements[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var least = parent
            if left < elements.count, precedes(elements[left], elements[least]) { least = left }
            if right < elements.count, precedes(elements[right], elements[least]) { least = right }
            if least == parent { break }
            elements.swapAt(parent, least)
            parent = least
        }
        return first
    }
}

/// What planning the contributions noted for the rest of the graph: names and placed contributions.
struct CompositionNotes: Sendable {
    /// Names the graph gives keys itself, used as given in errors and dumps (`MiddlewareKey[1: auth]`).
    var labels: [ObjectIdentifier: String] = [:]
    /// Every contribution placed in a list, in order per list: what a child graph merges its own into.
    var placed: [PlacedContribution] = []
}

/// A contribution as a graph placed it, kept for the graph's child graphs: they merge their own
/// contributions to the same list with these, ordered by the same rules.
struct PlacedContribution: Sendable {
    let collection: ContributedCollection
    let id: String?
    let position: Int
    let before: [String]
    let after: [String]
    let site: SiteLiteral
    let lifetime: Lifetime
    /// Its key in the graph that placed it (`Collection[n]`), the key the child inherits it under.
    let element: any ServiceKey.Type
    /// Its name in errors and dumps, when it has an id.
    let label: String?
    /// The module that contributed it.
    let module: UInt16

    var collectionID: ObjectIdentifier { ObjectIdentifier(collection.key) }
    var elementID: ObjectIdentifier { ObjectIdentifier(element) }

    init(_ contribution: Contribution, at element: any ServiceKey.Type, label: String?) {
        collection = contribution.collection
        id = contribution.id
        position = contribution.position
        before = contribution.before
        after = contribution.after
        site = contribution.site
        lifetime = contribution.lifetime ?? .singleton
        self.element = element
        self.label = label
        module = contribution.module
    }
}

extension Contribution {
    /// A parent's placed contribution, as a child graph merges it: provided by the registration the child
    /// inherited for it.
    init(_ placed: PlacedContribution, providedBy registration: Registration) {
        self.init(
            collection: placed.collection,
            id: placed.id,
            position: placed.position,
            before: placed.before,
            after: placed.after,
            lifetime: registration.lifetime,
            dependencies: registration.dependencies,
            site: registration.site,
            factory: registration.factory,
            scopeKind: registration.scopeKind,
            isOverride: false,
            module: placed.module,
            inheritedRegistration: registration
        )
    }
}
