import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Doubles

/// A service that knows the instances it was made from and records its hooks in a ``HostileLog``,
/// under a name unique to the instance (`A#2`: the second `A` made).
private final class HostileNode: LifecycleHooks, Sendable {
    enum Fault: Sendable, Equatable {
        case none
        case failDidAdd
        case failWillRemove
        /// `didAdd` waits until it is cancelled (bounded at five seconds).
        case hangDidAdd
        /// `willRemove` waits until it is cancelled (bounded at five seconds).
        case hangWillRemove
    }

    let base: String
    let name: String
    let dependencies: [HostileNode]
    /// Whether the graph owns it (runs its hooks): false for a transient's instance.
    let owned: Bool
    let fault: Fault
    /// Weak: the log keeps every node for the checks, and a strong reference back would make a cycle
    /// that outlives the test (the leak checker's run reports it).
    weak let log: HostileLog?

    init(_ base: String, _ dependencies: [HostileNode] = [], log: HostileLog, owned: Bool = true, fault: Fault = .none)
    {
        self.base = base
        self.name = log.nextName(base)
        self.dependencies = dependencies
        self.owned = owned
        self.fault = fault
        self.log = log
        log.created(self)
    }

    /// The bases of the dependencies, in order.
    var shape: [String] { dependencies.map(\.base) }

    func didAdd() async throws {
        guard let log else { return }
        log.record("didAdd \(name)")
        for dependency in dependencies where dependency.owned {
            if !log.isStarted(dependency) { log.violation("\(name) started before its dependency \(dependency.name)") }
            if log.isRemoved(dependency) { log.violation("\(name) started on \(dependency.name), already removed") }
        }
        switch fault {
        case .failDidAdd: throw TestFailure("didAdd of \(name) failed on purpose")
        case .hangDidAdd: try await Task.sleep(for: .seconds(5))
        case .none, .failWillRemove, .hangWillRemove: break
        }
    }

    func willRemove() async throws {
        log?.record("willRemove \(name)")
        if fault == .failWillRemove { throw TestFailure("willRemove of \(name) failed on purpose") }
        if fault == .hangWillRemove { try await Task.sleep(for: .seconds(60)) }
    }
}

/// A service holding a handle (``Lazy``, ``Provider``), whose hooks are its node's.
private final class HostileHolder<Handle: Sendable>: LifecycleHooks, Sendable {
    let node: HostileNode
    let handle: Handle

    init(_ node: HostileNode, _ handle: Handle) {
        self.node = node
        self.handle = handle
    }

    func didAdd() async throws { try await node.didAdd() }
    func willRemove() async throws { try await node.willRemove() }
}

/// What the nodes of one test did, in order, and the checks of their lifecycles.
private final class HostileLog: Sendable {
    private struct State {
        var entries: [String] = []
        var serials: [String: Int] = [:]
        var nodes: [HostileNode] = []
        var violations: [String] = []
    }

    private let state = Locked(State())

    func nextName(_ base: String) -> String {
        state.withLock { state in
            state.serials[base, default: 0] += 1
            return "\(base)#\(state.serials[base]!)"
        }
    }

    func created(_ node: HostileNode) {
        state.withLock { state in
            state.nodes.append(node)
            state.entries.append("init \(node.name)")
        }
    }

    func record(_ entry: String) { state.withLock { $0.entries.append(entry) } }
    func violation(_ entry: String) { state.withLock { $0.violations.append(entry) } }

    var entries: [String] { state.withLock { $0.entries } }
    var nodes: [HostileNode] { state.withLock { $0.nodes } }
    /// How many nodes were made so far.
    var madeCount: Int { state.withLock { $0.nodes.count } }
    /// How many nodes of `base` were made so far.
    func made(_ base: String) -> Int { state.withLock { $0.serials[base] ?? 0 } }
    /// The nodes made after the first `count`.
    func nodes(since count: Int) -> [HostileNode] { state.withLock { Array($0.nodes[count...]) } }

    func count(_ entry: String) -> Int { state.withLock { $0.entries.filter { $0 == entry }.count } }
    func index(_ entry: String) -> Int? { state.withLock { $0.entries.firstIndex(of: entry) } }
    func isStarted(_ node: HostileNode) -> Bool { count("didAdd \(node.name)") > 0 }
    func isRemoved(_ node: HostileNode) -> Bool { count("willRemove \(node.name)") > 0 }

    /// Every broken rule, once everything is shut down: each owned node whose `didAdd` succeeded gets
    /// `willRemove` once, after it; one whose `didAdd` never ran or failed gets none; `didAdd` runs at
    /// most once; transients get no hook; a dependency starts before and is removed after each
    /// dependent. With `allStarted`, every owned node must have been started.
    func lifecycleProblems(allStarted: Bool = true) -> [String] {
        let (entries, nodes, violations) = state.withLock { ($0.entries, $0.nodes, $0.violations) }
        var first: [String: Int] = [:]
        var counts: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            counts[entry, default: 0] += 1
            if first[entry] == nil { first[entry] = index }
        }
        var problems = violations
        for node in nodes {
            let added = counts["didAdd \(node.name)"] ?? 0
            let removed = counts["willRemove \(node.name)"] ?? 0
            guard node.owned else {
                if added + removed > 0 { problems.append("transient \(node.name) got hooks") }
                continue
            }
            if added > 1 { problems.append("\(node.name): didAdd ran \(added) times") }
            let startedFine = added == 1 && node.fault != .failDidAdd && node.fault != .hangDidAdd
            if startedFine && removed != 1 { problems.append("\(node.name): willRemove ran \(removed) times") }
            if !startedFine && removed != 0 { problems.append("\(node.name): willRemove ran though never started") }
            if allStarted && added == 0 { problems.append("\(node.name) was made but never started") }
            if let add = first["didAdd \(node.name)"], let remove = first["willRemove \(node.name)"], remove < add {
                problems.append("\(node.name): willRemove before didAdd")
            }
            for dependency in node.dependencies where dependency.owned {
                if let mine = first["willRemove \(node.name)"], let theirs = first["willRemove \(dependency.name)"],
                    theirs < mine
                {
                    problems.append("\(dependency.name) removed before its dependent \(node.name)")
                }
                if first["willRemove \(node.name)"] == nil && startedFine,
                    first["willRemove \(dependency.name)"] != nil
                {
                    problems.append("\(dependency.name) removed, its dependent \(node.name) never")
                }
            }
        }
        return problems
    }
}

/// Runs `body` on a live graph built from `builder`, and shuts the graph down when `body` throws (a
/// dropped graph that owes hooks stops a debug build).
private func hostileLive(
    _ builder: ServiceGraph.Builder,
    _ body: (LiveGraph) async throws -> Void
) async throws {
    let live = try await LiveGraph(builder)
    do {
        try await body(live)
    } catch {
        _ = try? await live.shutdown()
        throw error
    }
}

/// `limit`, four times as long under a sanitizer.
private func hostileScaled(_ limit: Duration) -> Duration {
    ProcessEnvironment.isSanitizerRun ? limit * 4 : limit
}

/// Polls `condition` until it holds or `limit` passes (four times as long under a sanitizer).
private func hostileEventually(
    within limit: Duration = .seconds(5),
    _ condition: @Sendable () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + hostileScaled(limit)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// Whether `graph` refuses resolves because it is shut down (or retired).
private func hostileIsShutDown<Key: ServiceKey>(_ graph: ServiceGraph, probing key: Key.Type) -> Bool {
    do {
        _ = try graph.resolveSynchronously(key)
        return false
    } catch let error as ServiceGraphError {
        return error.contains(.graphShutDown)
    } catch {
        return false
    }
}

/// A flag tasks wait on, polling (bounded).
private final class HostileGate: Sendable {
    private let open = Locked(false)
    func release() { open.withLock { $0 = true } }
    var isOpen: Bool { open.withLock { $0 } }
    /// Waits until released or `limit` passes; true when released.
    func wait(limit: Duration = .seconds(5)) async -> Bool {
        await hostileEventually(within: limit) { self.isOpen }
    }
}

// MARK: - Keys

private enum HostileAKey: ServiceKey { typealias Value = HostileNode }
private enum HostileBKey: ServiceKey { typealias Value = HostileNode }
private enum HostileCKey: ServiceKey { typealias Value = HostileNode }
private enum HostileDKey: ServiceKey { typealias Value = HostileNode }
private enum HostileEKey: ServiceKey { typealias Value = HostileNode }
private enum HostileXKey: ServiceKey { typealias Value = HostileNode }
private enum HostileLeafKey: ServiceKey { typealias Value = HostileNode }
private enum HostileTransientKey: ServiceKey { typealias Value = HostileNode }
private enum HostileScopedKey: ServiceKey { typealias Value = HostileNode }
private enum HostileDecoratedKey: ServiceKey { typealias Value = HostileNode }
private enum HostileConsumerKey: ServiceKey { typealias Value = HostileNode }
private enum HostileOptionalKey: ServiceKey { typealias Value = HostileNode }
private enum HostileHeavyKey: ServiceKey { typealias Value = HostileNode }
private enum HostileScreenKey: ServiceKey { typealias Value = HostileHolder<Lazy<HostileHeavyKey>> }
private enum HostileMakerKey: ServiceKey { typealias Value = HostileHolder<Provider<HostileTransientKey>> }
private enum HostileUserKey: ServiceKey { typealias Value = String }
private enum HostileTokenKey: ServiceKey { typealias Value = String }
private enum HostileCartKey: ServiceKey { typealias Value = HostileNode }
private enum HostileListKey: ContributionKey { typealias Element = HostileNode }
private enum HostileMapKey: KeyedContributionKey { typealias Element = HostileNode }
private enum HostileRouterKey: ServiceKey { typealias Value = HostileNode }
private enum HostileMadeKey: ServiceKey { typealias Value = HostileNode }
private enum HostileSyncMakerKey: ServiceKey {
    typealias Value = HostileHolder<ArgumentFactory<HostileMadeKey, Int>.Synchronous.Value>
}
private enum HostileAsyncMakerKey: ServiceKey {
    typealias Value = HostileHolder<ArgumentFactory<HostileMadeKey, Int>.Value>
}

/// A ← B ← C → D: C depends on B and D, B on A. Each node is named by its key's letter.
private func hostileBuilder(_ log: HostileLog) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(HostileAKey.self) { HostileNode("A", log: log) }
    builder.provide(HostileDKey.self) { HostileNode("D", log: log) }
    builder.provide(HostileBKey.self, dependsOn: HostileAKey.self) { HostileNode("B", [$0], log: log) }
    builder.provide(HostileCKey.self, dependsOn: HostileBKey.self, HostileDKey.self) { b, d in
        HostileNode("C", [b, d], log: log)
    }
    return builder
}

/// The base graph, with a key decorated once (`deco1` over `inner`) and a consumer of it.
private func hostileDecoratedBuilder(_ log: HostileLog) -> ServiceGraph.Builder {
    var builder = hostileBuilder(log)
    builder.provide(HostileDecoratedKey.self) { HostileNode("inner", log: log) }
    builder.decorate(HostileDecoratedKey.self) { HostileNode("deco1", [$0], log: log) }
    builder.provide(HostileConsumerKey.self, dependsOn: HostileDecoratedKey.self) {
        HostileNode("consumer", [$0], log: log)
    }
    return builder
}

/// The bases the current consumer of the decorated key reaches, outermost first.
private func hostileChain(_ live: LiveGraph) -> [String] {
    var node: HostileNode? = live.current[HostileConsumerKey.self].dependencies.first
    var bases: [String] = []
    while let current = node {
        bases.append(current.base)
        node = current.dependencies.first
    }
    return bases
}

/// A, B, C and D of `graph`.
private func hostileCore(_ graph: ServiceGraph) -> [HostileNode] {
    [graph[HostileAKey.self], graph[HostileBKey.self], graph[HostileCKey.self], graph[HostileDKey.self]]
}

/// A, B, C and D of `graph`, to keep the instances without keeping the graph.
private func hostileQuad(_ graph: ServiceGraph) -> (HostileNode, HostileNode, HostileNode, HostileNode) {
    (graph[HostileAKey.self], graph[HostileBKey.self], graph[HostileCKey.self], graph[HostileDKey.self])
}

/// The letter of a key's name: `HostileAKey` → `A`.
private func hostileLetter(_ name: String) -> String {
    var name = name
    if name.hasPrefix("Hostile") { name.removeFirst("Hostile".count) }
    if name.hasSuffix("Key") { name.removeLast("Key".count) }
    return name
}

/// Whether `names` lists `before` ahead of `after` (both present).
private func hostileOrdered(_ names: [String], _ before: String, _ after: String) -> Bool {
    guard let first = names.firstIndex(of: before), let second = names.firstIndex(of: after) else { return false }
    return first < second
}

// MARK: - Tests

@Suite("A live graph, attacked: update sequences, failures and races")
struct LiveGraphHostileTests {
    // MARK: Sequences of updates

    @Test("override, add, remove, re-add, and remove + provide in one change set: identities and hooks")
    func sequenceOfUpdates() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            // No generation's graph is held past its update (a held graph keeps its generation from
            // retiring): the instances are read from `live.current` and kept, the graphs are not.
            let (a1, b1, c1, d1) = hostileQuad(live.current)
            #expect(c1.dependencies[0] === b1 && c1.dependencies[1] === d1 && b1.dependencies[0] === a1)

            // 1. Override A: A, B, C again; D shared.
            let plan2 = try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(plan2.generation == 2)
            #expect(plan2.changed == ["HostileAKey"])
            #expect(plan2.rebuilt == ["HostileAKey", "HostileBKey", "HostileCKey"])
            #expect(plan2.shared == ["HostileDKey"])
            #expect(plan2.added.isEmpty && plan2.removed.isEmpty)
            let (a2, b2, c2, d2) = hostileQuad(live.current)
            #expect(d2 === d1)
            #expect(a2 !== a1)
            #expect(b2.dependencies[0] === a2)
            #expect(c2.dependencies[0] === b2)
            #expect(c2.dependencies[1] === d1)
            // Generation 1, held by nothing, retires: its A, B and C go; D, handed over, stays.
            #expect(await hostileEventually { log.isRemoved(a1) && log.isRemoved(b1) && log.isRemoved(c1) })
            #expect(!log.isRemoved(d1), "generation 1 removed the D it handed over")

            // 2. Provide E on D: only E is made.
            let plan3 = try await live.update { builder in
                builder.provide(HostileEKey.self, dependsOn: HostileDKey.self) { HostileNode("E", [$0], log: log) }
            }
            #expect(plan3.added == ["HostileEKey"])
            #expect(plan3.rebuilt == ["HostileEKey"])
            #expect(Set(plan3.shared) == ["HostileAKey", "HostileBKey", "HostileCKey", "HostileDKey"])
            var third: ServiceGraph? = live.current
            let e3 = try #require(third)[HostileEKey.self]
            #expect(try #require(third)[HostileCKey.self] === c2)
            #expect(e3.dependencies[0] === d1)

            // 3. Remove E. Generation 3, held here, keeps E while it is held; let go, it retires and E goes.
            let plan4 = try await live.update { $0.remove(HostileEKey.self) }
            #expect(plan4.removed == ["HostileEKey"])
            #expect(plan4.rebuilt.isEmpty)
            #expect(try #require(third).resolveSynchronously(HostileEKey.self) === e3, "a held generation serves E")
            let removedWhileHeld = await hostileEventually(within: .milliseconds(100)) { log.isRemoved(e3) }
            #expect(!removedWhileHeld, "generation 3 retired while a reader held it")
            third = nil
            #expect(await hostileEventually { log.isRemoved(e3) })
            #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(HostileEKey.self) }
            #expect(!log.isRemoved(d1), "E's removal took its shared dependency with it")

            // 4. Re-add E, on C this time.
            let plan5 = try await live.update { builder in
                builder.provide(HostileEKey.self, dependsOn: HostileCKey.self) { HostileNode("E", [$0], log: log) }
            }
            #expect(plan5.added == ["HostileEKey"])
            #expect(plan5.rebuilt == ["HostileEKey"])
            let e5 = live.current[HostileEKey.self]
            #expect(e5 !== e3)
            #expect(e5.dependencies[0] === c2)

            // 5. Remove D and provide it again, in one change set: D, C and E again; A and B shared.
            let plan6 = try await live.update { builder in
                builder.remove(HostileDKey.self)
                builder.provide(HostileDKey.self) { HostileNode("D", log: log) }
            }
            #expect(plan6.changed == ["HostileDKey"])
            #expect(Set(plan6.rebuilt) == ["HostileDKey", "HostileCKey", "HostileEKey"])
            #expect(hostileOrdered(plan6.rebuilt, "HostileDKey", "HostileCKey"))
            #expect(hostileOrdered(plan6.rebuilt, "HostileCKey", "HostileEKey"))
            #expect(Set(plan6.shared) == ["HostileAKey", "HostileBKey"])
            #expect(plan6.added.isEmpty, "D is in both generations")
            #expect(plan6.removed.isEmpty, "D is in both generations")
            let (a6, b6, c6, d6) = hostileQuad(live.current)
            let e6 = live.current[HostileEKey.self]
            #expect(d6 !== d1)
            #expect(a6 === a2)
            #expect(b6 === b2)
            #expect(c6.dependencies[1] === d6)
            #expect(e6.dependencies[0] === c6)
            #expect(live.generation == 6)

            // Once the replaced generations retired, nothing the current one holds was removed.
            #expect(await hostileEventually { log.isRemoved(d1) && log.isRemoved(c2) && log.isRemoved(e5) })
            for node in [a6, b6, c6, d6, e6] {
                #expect(!log.isRemoved(node), "\(node.name) removed while current")
            }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
            #expect(["A", "B", "C", "D", "E"].map(log.made) == [2, 2, 3, 2, 3] as [Int])
        }
    }

    @Test("an empty change set commits a generation that shares everything and runs no hook")
    func emptyUpdateSharesEverything() async throws {
        let log = HostileLog()
        let retired = Locked<[String]>([])
        var builder = hostileBuilder(log)
        builder.eventKinds = [.generationRetired]
        builder.eventHandler = { event in retired.withLock { $0.append(event.key ?? "?") } }
        try await hostileLive(builder) { live in
            let core1 = hostileCore(live.current)
            let before = log.entries
            let plan = try await live.update { _ in }
            #expect(plan.changed.isEmpty)
            #expect(plan.rebuilt.isEmpty)
            #expect(Set(plan.shared) == ["HostileAKey", "HostileBKey", "HostileCKey", "HostileDKey"])
            #expect(live.generation == 2)
            #expect(zip(hostileCore(live.current), core1).allSatisfy { $0 === $1 })
            // The first generation, held by nothing, retires (no hook tells: its event does) without
            // removing what it handed over.
            #expect(await hostileEventually { retired.withLock { $0 } == ["generation 1"] })
            #expect(log.entries == before)
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("provide then remove in one change set: the key stays out, and its factory never runs")
    func provideThenRemoveInOneChangeSet() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            // A key the graph does not have: refused as a removal of an unknown key, or committed without
            // it; either way nothing is made and the key is not there.
            do {
                let plan = try await live.update { builder in
                    builder.provide(HostileEKey.self) { HostileNode("E", log: log) }
                    builder.remove(HostileEKey.self)
                }
                #expect(plan.added.isEmpty)
                #expect(plan.rebuilt.isEmpty)
            } catch {
                #expect((error as? ServiceGraphError)?.codes == [.keyNotFound])
            }
            #expect(log.made("E") == 0)
            #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(HostileEKey.self) }
            // A key the graph has: overridden, then removed (twice), in one change set.
            let c1 = live.current[HostileCKey.self]
            let removal = try await live.update { builder in
                builder.override(HostileCKey.self) { HostileNode("C", log: log) }
                builder.remove(HostileCKey.self)
                builder.remove(HostileCKey.self)
            }
            #expect(removal.removed == ["HostileCKey"])
            #expect(removal.rebuilt.isEmpty)
            #expect(log.made("C") == 1, "the override of a removed key ran")
            #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(HostileCKey.self) }
            #expect(await hostileEventually { log.isRemoved(c1) })
            #expect(!log.isRemoved(live.current[HostileDKey.self]))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a key removed in one update and provided again in a later one is made anew, and started once")
    func reAddAfterRemoval() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileEKey.self, dependsOn: HostileDKey.self) { HostileNode("E", [$0], log: log) }
        try await hostileLive(builder) { live in
            let e1 = live.current[HostileEKey.self]
            try await live.update { $0.remove(HostileEKey.self) }
            let plan = try await live.update { builder in
                builder.provide(HostileEKey.self, dependsOn: HostileDKey.self) { HostileNode("E", [$0], log: log) }
            }
            #expect(plan.added == ["HostileEKey"])
            #expect(plan.changed == ["HostileEKey"])
            let e3 = live.current[HostileEKey.self]
            #expect(e3 !== e1)
            #expect(e3.dependencies[0] === e1.dependencies[0], "D is shared throughout")
            #expect(await hostileEventually { log.isRemoved(e1) })
            #expect(!log.isRemoved(e3))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
            #expect(log.made("E") == 2)
        }
    }

    @Test("a lifetime changed by an update: singleton to transient and back")
    func lifetimeChanges() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileLeafKey.self, dependsOn: HostileDKey.self) { HostileNode("L", [$0], log: log) }
        try await hostileLive(builder) { live in
            let leaf1 = live.current[HostileLeafKey.self]
            let plan = try await live.update { builder in
                builder.override(HostileLeafKey.self, lifetime: .transient, dependsOn: HostileDKey.self) {
                    HostileNode("Lt", [$0], log: log, owned: false)
                }
            }
            #expect(!plan.rebuilt.contains("HostileLeafKey"), "a transient is not made by the update")
            let t1 = try await live.current.resolve(HostileLeafKey.self)
            let t2 = try await live.current.resolve(HostileLeafKey.self)
            #expect(t1 !== t2)
            #expect(t1.base == "Lt")
            #expect(await hostileEventually { log.isRemoved(leaf1) }, "the replaced singleton is removed")
            // A singleton cannot hold a transient: refused, nothing changes.
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.override(HostileDKey.self, lifetime: .transient) {
                        HostileNode("Dt", log: log, owned: false)
                    }
                }
            }
            #expect(error?.contains(.captiveDependency) == true)
            #expect(live.generation == 2)
            // Back to a singleton: made and started by the update.
            let back = try await live.update { builder in
                builder.override(HostileLeafKey.self, lifetime: .singleton, dependsOn: HostileDKey.self) {
                    HostileNode("L", [$0], log: log)
                }
            }
            #expect(back.rebuilt == ["HostileLeafKey"])
            let leaf3 = live.current[HostileLeafKey.self]
            #expect(log.isStarted(leaf3))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    // MARK: Contributions and decorators

    @Test("a contribution inserted before the others: the list and its dependents are made again, in the new order")
    func contributionInsertedFirst() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.contribute(HostileListKey.self, id: "a", dependsOn: HostileAKey.self) {
            HostileNode("a", [$0], log: log)
        }
        builder.contribute(HostileListKey.self, id: "b") { HostileNode("b", log: log) }
        builder.provide(HostileRouterKey.self, dependsOn: HostileListKey.self) { HostileNode("router", $0, log: log) }
        try await hostileLive(builder) { live in
            let router1 = live.current[HostileRouterKey.self]
            #expect(router1.shape == ["a", "b"])
            let plan = try await live.update { builder in
                builder.contribute(HostileListKey.self, id: "c", before: ["a"]) { HostileNode("c", log: log) }
            }
            #expect(plan.changed.contains("HostileListKey"))
            #expect(plan.rebuilt.contains("HostileRouterKey"))
            let router2 = live.current[HostileRouterKey.self]
            let list2 = live.current[HostileListKey.self]
            #expect(router2 !== router1)
            #expect(list2.count == 3 && zip(list2, router2.dependencies).allSatisfy { $0 === $1 })
            // The documented order (ContributionKey): each next element is the earliest registered among those
            // the constraints allow; b may come first, c must precede a: [b, c, a].
            #expect(router2.shape == ["b", "c", "a"])
            #expect(list2.map(\.base) == ["b", "c", "a"])
            #expect(log.made("c") == 1, "the new contribution was never made")
            #expect(log.made("a") == 1 && log.made("b") == 1, "an unchanged contribution was made again")
            #expect(await hostileEventually { log.isRemoved(router1) })
            for element in live.current[HostileListKey.self] {
                #expect(!log.isRemoved(element), "\(element.name) is current but was removed")
            }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a contribution overridden by an update: the element, the list and its dependents are made again")
    func contributionOverridden() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.contribute(HostileListKey.self, id: "a") { HostileNode("a", log: log) }
        builder.contribute(HostileListKey.self, id: "b") { HostileNode("b", log: log) }
        builder.provide(HostileRouterKey.self, dependsOn: HostileListKey.self) { HostileNode("router", $0, log: log) }
        try await hostileLive(builder) { live in
            let router1 = live.current[HostileRouterKey.self]
            let (a1, b1) = (router1.dependencies[0], router1.dependencies[1])
            let plan = try await live.update { builder in
                builder.overrideContribution(HostileListKey.self, id: "b") { HostileNode("b", log: log) }
            }
            #expect(plan.changed == ["HostileListKey"])
            #expect(plan.rebuilt.contains("HostileRouterKey"))
            let router2 = live.current[HostileRouterKey.self]
            #expect(router2.shape == ["a", "b"])
            #expect(router2.dependencies.first === a1, "a did not change")
            #expect(router2.dependencies.last !== b1, "the overridden element is stale")
            #expect(log.made("b") == 2, "the override was never made")
            #expect(!plan.shared.contains("HostileListKey[1: b]"))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a contribution's dependency overridden: that element, the list and its dependents again; the rest shared")
    func contributionDependencyChanged() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.contribute(HostileListKey.self, id: "a", dependsOn: HostileAKey.self) {
            HostileNode("a", [$0], log: log)
        }
        builder.contribute(HostileListKey.self, id: "b") { HostileNode("b", log: log) }
        builder.provide(HostileRouterKey.self, dependsOn: HostileListKey.self) { HostileNode("router", $0, log: log) }
        try await hostileLive(builder) { live in
            let router1 = live.current[HostileRouterKey.self]
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            let router2 = live.current[HostileRouterKey.self]
            #expect(router2 !== router1)
            #expect(router2.shape == ["a", "b"])
            #expect(router2.dependencies.first?.dependencies.first === live.current[HostileAKey.self])
            #expect(router2.dependencies.last === router1.dependencies.last, "b did not change")
            #expect(await hostileEventually { log.isRemoved(router1.dependencies[0]) })
            #expect(!log.isRemoved(router2.dependencies[1]))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a collection removed and contributed anew in one change set holds only the new elements")
    func collectionRemovedAndRefilled() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.contribute(HostileListKey.self, id: "a") { HostileNode("a", log: log) }
        builder.contribute(HostileListKey.self, id: "b") { HostileNode("b", log: log) }
        builder.provide(HostileRouterKey.self, dependsOn: HostileListKey.self) { HostileNode("router", $0, log: log) }
        try await hostileLive(builder) { live in
            let old = live.current[HostileListKey.self]
            let plan = try await live.update { builder in
                builder.remove(HostileListKey.self)
                builder.contribute(HostileListKey.self, id: "n") { HostileNode("n", log: log) }
            }
            #expect(plan.rebuilt.contains("HostileRouterKey"))
            #expect(live.current[HostileRouterKey.self].dependencies.count == 1)
            #expect(await hostileEventually { log.isRemoved(old[1]) })
            #expect(live.current[HostileRouterKey.self].shape == ["n"])
            #expect(live.current[HostileListKey.self].map(\.base) == ["n"])
            #expect(log.made("n") == 1)
            #expect(!plan.shared.contains("HostileListKey[0: a]") && !plan.shared.contains("HostileListKey[0: n]"))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("keyed contributions added and overridden by updates: the dictionary is made again, with no stale entry")
    func keyedContributions() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.contribute(HostileMapKey.self, id: "x") { HostileNode("x", log: log) }
        builder.contribute(HostileMapKey.self, id: "y", dependsOn: HostileDKey.self) {
            HostileNode("y", [$0], log: log)
        }
        builder.provide(HostileConsumerKey.self, dependsOn: HostileMapKey.self) { map in
            HostileNode("consumer", map.keys.sorted().map { map[$0]! }, log: log)
        }
        try await hostileLive(builder) { live in
            let consumer1 = live.current[HostileConsumerKey.self]
            // A new entry: the dictionary and the consumer again; x and y shared.
            try await live.update { builder in
                builder.contribute(HostileMapKey.self, id: "a") { HostileNode("a", log: log) }
            }
            let consumer2 = live.current[HostileConsumerKey.self]
            #expect(consumer2 !== consumer1)
            #expect(consumer2.shape == ["a", "x", "y"])
            #expect(consumer2.dependencies[1] === consumer1.dependencies[0], "x did not change")
            #expect(consumer2.dependencies[2] === consumer1.dependencies[1], "y did not change")
            // An entry overridden.
            try await live.update { builder in
                builder.overrideContribution(HostileMapKey.self, id: "x") { HostileNode("x", log: log) }
            }
            let consumer3 = live.current[HostileConsumerKey.self]
            #expect(consumer3.shape == ["a", "x", "y"])
            #expect(consumer3.dependencies[1] !== consumer1.dependencies[0], "the overridden entry is stale")
            #expect(log.made("x") == 2)
            // y's dependency changes: y and the consumer again.
            try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            let consumer4 = live.current[HostileConsumerKey.self]
            #expect(consumer4.dependencies.last?.dependencies.first === live.current[HostileDKey.self])
            #expect(live.current[HostileMapKey.self]["y"] === consumer4.dependencies.last)
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a decorator added by an update: the decorated key and its dependents again, over the same undecorated value")
    func decoratorAdded() async throws {
        let log = HostileLog()
        try await hostileLive(hostileDecoratedBuilder(log)) { live in
            #expect(hostileChain(live) == ["deco1", "inner"])
            let inner1 = live.current[HostileDecoratedKey.self].dependencies[0]
            let consumer1 = live.current[HostileConsumerKey.self]
            let plan = try await live.update { builder in
                builder.decorate(HostileDecoratedKey.self) { HostileNode("deco2", [$0], log: log) }
            }
            #expect(plan.changed.contains("HostileDecoratedKey"))
            #expect(plan.changed == ["HostileDecoratedKey"])
            #expect(plan.rebuilt.contains("HostileDecoratedKey"))
            #expect(plan.rebuilt.contains("HostileConsumerKey"))
            #expect(hostileChain(live) == ["deco2", "deco1", "inner"])
            let consumer2 = live.current[HostileConsumerKey.self]
            #expect(consumer2 !== consumer1)
            #expect(consumer2.dependencies[0] === live.current[HostileDecoratedKey.self])
            #expect(live.current[HostileDecoratedKey.self].dependencies.first?.dependencies.first === inner1)
            #expect(await hostileEventually { log.isRemoved(consumer1) })
            #expect(!log.isRemoved(inner1))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a decorated key overridden by an update: the decorators are kept, and wrap the new value")
    func decoratedKeyOverridden() async throws {
        let log = HostileLog()
        try await hostileLive(hostileDecoratedBuilder(log)) { live in
            let inner1 = live.current[HostileDecoratedKey.self].dependencies[0]
            let plan = try await live.update {
                $0.override(HostileDecoratedKey.self) { HostileNode("inner", log: log) }
            }
            #expect(plan.rebuilt.contains("HostileConsumerKey"))
            #expect(hostileChain(live) == ["deco1", "inner"])
            #expect(log.made("inner") == 2, "the override never ran")
            #expect(live.current[HostileDecoratedKey.self].dependencies.first !== inner1)
            #expect(!plan.shared.contains("HostileDecoratedKey (undecorated)"))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("decorators taken away by an update: dependents get the undecorated value")
    func decoratorsRemoved() async throws {
        let log = HostileLog()
        try await hostileLive(hostileDecoratedBuilder(log)) { live in
            let decorated1 = live.current[HostileDecoratedKey.self]
            let plan = try await live.update { $0.removeDecorators(of: HostileDecoratedKey.self) }
            #expect(plan.rebuilt.contains("HostileConsumerKey"))
            #expect(hostileChain(live) == ["inner"])
            #expect(live.current[HostileDecoratedKey.self].base == "inner")
            #expect(await hostileEventually { log.isRemoved(decorated1) })
            #expect(!log.isRemoved(live.current[HostileDecoratedKey.self]))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a decorator's own dependency overridden: the decorated key and its dependents again")
    func decoratorDependencyOverridden() async throws {
        let log = HostileLog()
        var builder = hostileDecoratedBuilder(log)
        builder.decorate(HostileDecoratedKey.self, dependsOn: HostileDKey.self) {
            HostileNode("deco2", [$0, $1], log: log)
        }
        try await hostileLive(builder) { live in
            #expect(hostileChain(live) == ["deco2", "deco1", "inner"])
            let plan = try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            #expect(plan.rebuilt.contains("HostileDecoratedKey"))
            #expect(plan.rebuilt.contains("HostileConsumerKey"))
            #expect(!plan.rebuilt.contains("HostileAKey"))
            #expect(live.current[HostileDecoratedKey.self].dependencies.last === live.current[HostileDKey.self])
            #expect(live.current[HostileConsumerKey.self].dependencies[0] === live.current[HostileDecoratedKey.self])
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    // MARK: Lazy, provider and optional dependencies

    @Test("a lazy singleton not made before an update is made on first use afterwards, from the current generation")
    func lazyNotMadeBeforeUpdate() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileHeavyKey.self) { HostileNode("heavy", log: log) }
        builder.provide(HostileScreenKey.self, dependsOn: Lazy<HostileHeavyKey>.self) {
            HostileHolder(HostileNode("screen", log: log), $0)
        }
        try await hostileLive(builder) { live in
            let (a1, screen1) = (live.current[HostileAKey.self], live.current[HostileScreenKey.self])
            #expect(log.made("heavy") == 0)
            let plan = try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(!plan.rebuilt.contains("HostileHeavyKey"))
            // The first generation, held by nothing, retires: its A and its screen (which holds a handle) go.
            #expect(await hostileEventually { log.isRemoved(a1) && log.isRemoved(screen1.node) })
            let screen = live.current[HostileScreenKey.self]
            let heavy = try await screen.handle.value
            #expect(try await live.current.resolve(HostileHeavyKey.self) === heavy, "one heavy per generation")
            #expect(log.isStarted(heavy))
            #expect(!log.isRemoved(heavy))
            try await live.shutdown()
            #expect(log.made("heavy") == 1)
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a lazy singleton made before an update stays usable, and is removed once")
    func lazyMadeBeforeUpdate() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileHeavyKey.self, dependsOn: HostileDKey.self) { HostileNode("heavy", [$0], log: log) }
        builder.provide(HostileScreenKey.self, dependsOn: Lazy<HostileHeavyKey>.self) {
            HostileHolder(HostileNode("screen", log: log), $0)
        }
        try await hostileLive(builder) { live in
            let screen1 = live.current[HostileScreenKey.self]
            let heavy1 = try await screen1.handle.value
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            // The first generation, held by nothing, retires: its A and its screen (which holds a handle) go.
            #expect(await hostileEventually { log.count("willRemove A#1") == 1 && log.isRemoved(screen1.node) })
            let heavy = try await live.current.resolve(HostileHeavyKey.self)
            let viaScreen = try await live.current[HostileScreenKey.self].handle.value
            #expect(heavy === viaScreen)
            #expect(!log.isRemoved(heavy), "\(heavy.name) is current but was removed by the retired generation")
            if heavy !== heavy1 { #expect(await hostileEventually { log.isRemoved(heavy1) }) }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("overriding a key reached through a lazy edge makes its holder again")
    func lazyTargetOverridden() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileHeavyKey.self) { HostileNode("heavy", log: log) }
        builder.provide(HostileScreenKey.self, dependsOn: Lazy<HostileHeavyKey>.self) {
            HostileHolder(HostileNode("screen", log: log), $0)
        }
        try await hostileLive(builder) { live in
            let heavy1 = try await live.current[HostileScreenKey.self].handle.value
            let plan = try await live.update { $0.override(HostileHeavyKey.self) { HostileNode("heavy", log: log) } }
            #expect(plan.rebuilt.contains("HostileScreenKey"))
            #expect(log.made("heavy") == 1, "the new heavy waits for its first use")
            let heavy2 = try await live.current[HostileScreenKey.self].handle.value
            #expect(heavy2 !== heavy1)
            #expect(heavy2.name == "heavy#2")
            #expect(await hostileEventually { log.isRemoved(heavy1) })
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test(
        "a lazy handle of the old generation first used after an update, under an open scope: made there, removed once"
    )
    func oldGenerationLazyFirstUsedAfterUpdate() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileHeavyKey.self) { HostileNode("heavy", log: log) }
        builder.provide(HostileScreenKey.self, dependsOn: Lazy<HostileHeavyKey>.self) {
            HostileHolder(HostileNode("screen", log: log), $0)
        }
        builder.provide(HostileScopedKey.self, lifetime: .scoped) { HostileNode("Q", log: log) }
        try await hostileLive(builder) { live in
            // The scope keeps the first generation; its graph is not held.
            let oldScreen = live.current[HostileScreenKey.self]
            let old = try live.current.makeScope()
            try await live.update { $0.override(HostileHeavyKey.self) { HostileNode("heavy", log: log) } }
            let oldHeavy = try await oldScreen.handle.value
            let newHeavy = try await live.current[HostileScreenKey.self].handle.value
            #expect(oldHeavy !== newHeavy)
            #expect(log.isStarted(oldHeavy) && log.isStarted(newHeavy))
            let removedUnderScope = await hostileEventually(within: .milliseconds(100)) { log.isRemoved(oldHeavy) }
            #expect(!removedUnderScope, "the first generation retired under an open scope")
            try await old.close()
            #expect(await hostileEventually { log.isRemoved(oldHeavy) })
            #expect(!log.isRemoved(newHeavy))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test(
        "a provider held by a singleton: overriding its key makes the holder again; an unrelated update keeps it working"
    )
    func providerAcrossUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileTransientKey.self, lifetime: .transient, dependsOn: HostileDKey.self) {
            HostileNode("t", [$0], log: log, owned: false)
        }
        builder.provide(HostileMakerKey.self, dependsOn: Provider<HostileTransientKey>.self) {
            HostileHolder(HostileNode("maker", log: log), $0)
        }
        try await hostileLive(builder) { live in
            let (a1, maker1) = (live.current[HostileAKey.self], live.current[HostileMakerKey.self])
            #expect(try await maker1.handle().base == "t")

            // Unrelated: once the first generation is retired (its A and its maker, which holds a handle,
            // removed), the current maker still makes.
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(await hostileEventually { log.isRemoved(a1) && log.isRemoved(maker1.node) })
            let made = try await live.current[HostileMakerKey.self].handle()
            #expect(made.base == "t")
            #expect(made.dependencies[0] === live.current[HostileDKey.self])

            // The transient overridden: the maker makes the new one.
            let plan = try await live.update { builder in
                builder.override(HostileTransientKey.self, lifetime: .transient) {
                    HostileNode("t2", log: log, owned: false)
                }
            }
            #expect(plan.rebuilt.contains("HostileMakerKey"))
            #expect(try await live.current[HostileMakerKey.self].handle().base == "t2")

            // The transient's dependency overridden: the maker makes it on the new D.
            try await live.update { builder in
                builder.override(HostileTransientKey.self, lifetime: .transient, dependsOn: HostileDKey.self) {
                    HostileNode("t3", [$0], log: log, owned: false)
                }
            }
            try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            let t3 = try await live.current[HostileMakerKey.self].handle()
            #expect(t3.dependencies[0] === live.current[HostileDKey.self])
            #expect(!log.isRemoved(t3.dependencies[0]))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("an optional dependency provided, then removed, by updates: its holder is made again each time")
    func optionalDependencyAppearsAndGoes() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileConsumerKey.self, dependsOn: HostileOptionalKey?.self) { optional in
            HostileNode("consumer", optional.map { [$0] } ?? [], log: log)
        }
        try await hostileLive(builder) { live in
            #expect(live.current[HostileConsumerKey.self].shape == [])

            let added = try await live.update {
                $0.provide(HostileOptionalKey.self) { HostileNode("optional", log: log) }
            }
            #expect(added.rebuilt.contains("HostileConsumerKey"))
            #expect(live.current[HostileConsumerKey.self].shape == ["optional"])

            let removed = try await live.update { $0.remove(HostileOptionalKey.self) }
            #expect(removed.removed == ["HostileOptionalKey"])
            #expect(removed.rebuilt.contains("HostileConsumerKey"))
            #expect(live.current[HostileConsumerKey.self].shape == [])
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a factory with arguments across updates: both its forms follow a changed dependency, and go together")
    func argumentFactoryAcrossUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileMadeKey.self, arguments: Int.self, dependsOn: HostileDKey.self) { number, d in
            HostileNode("made\(number)", [d], log: log, owned: false)
        }
        builder.provide(HostileSyncMakerKey.self, dependsOn: ArgumentFactory<HostileMadeKey, Int>.Synchronous.self) {
            HostileHolder(HostileNode("syncMaker", log: log), $0)
        }
        builder.provide(HostileAsyncMakerKey.self, dependsOn: ArgumentFactory<HostileMadeKey, Int>.self) {
            HostileHolder(HostileNode("asyncMaker", log: log), $0)
        }
        try await hostileLive(builder) { live in
            #expect(
                try live.current[HostileSyncMakerKey.self].handle(1).dependencies[0] === live.current[HostileDKey.self]
            )
            let plan = try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            #expect(plan.rebuilt.contains("HostileSyncMakerKey"))
            #expect(plan.rebuilt.contains("HostileAsyncMakerKey"))
            let d2 = live.current[HostileDKey.self]
            #expect(try live.current[HostileSyncMakerKey.self].handle(2).dependencies[0] === d2)
            #expect(try await live.current[HostileAsyncMakerKey.self].handle(3).dependencies[0] === d2)
            let synchronous = try live.current.resolveSynchronously(
                ArgumentFactory<HostileMadeKey, Int>.Synchronous.self
            )
            #expect(try synchronous(4).dependencies[0] === d2)
            // Removing the function takes its synchronous form with it.
            let removal = try await live.update { builder in
                builder.remove(HostileSyncMakerKey.self)
                builder.remove(HostileAsyncMakerKey.self)
                builder.remove(ArgumentFactory<HostileMadeKey, Int>.self)
            }
            #expect(Set(removal.removed).isSuperset(of: ["HostileSyncMakerKey", "HostileAsyncMakerKey"]))
            #expect(throws: ServiceGraphError.self) {
                try live.current.resolveSynchronously(ArgumentFactory<HostileMadeKey, Int>.Synchronous.self)
            }
            #expect(throws: ServiceGraphError.self) {
                try live.current.resolveSynchronously(ArgumentFactory<HostileMadeKey, Int>.self)
            }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    // MARK: Scopes

    @Test("scoped and transient services across an update: the old scope keeps the old generation, a new one the new")
    func scopedAndTransientAcrossUpdate() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileBKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        builder.provide(HostileTransientKey.self, lifetime: .transient, dependsOn: HostileAKey.self) {
            HostileNode("t", [$0], log: log, owned: false)
        }
        try await hostileLive(builder) { live in
            // The scope keeps the first generation; its graph is not held.
            let (a1, b1) = (live.current[HostileAKey.self], live.current[HostileBKey.self])
            let old = try live.current.makeScope()
            let q1 = try await old.resolve(HostileScopedKey.self)
            #expect(q1.dependencies[0] === b1)

            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(try await old.resolve(HostileScopedKey.self) === q1)
            #expect(try await old.resolve(HostileTransientKey.self).dependencies[0] === a1)
            let fresh = try live.current.makeScope()
            let q2 = try await fresh.resolve(HostileScopedKey.self)
            #expect(q2 !== q1)
            #expect(q2.dependencies[0] === live.current[HostileBKey.self])
            #expect(
                try await live.current.resolve(HostileTransientKey.self).dependencies[0]
                    === live.current[HostileAKey.self]
            )
            let removedUnderScope = await hostileEventually(within: .milliseconds(100)) {
                log.isRemoved(a1) || log.isRemoved(b1)
            }
            #expect(!removedUnderScope, "removed under an open scope")

            try await old.close()
            #expect(await hostileEventually { log.isRemoved(a1) && log.isRemoved(b1) })
            try await fresh.close()
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a scope opened on the first generation, used after several updates, keeps every instance it reaches alive")
    func oldScopeAfterSeveralUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileXKey.self, dependsOn: HostileAKey.self, HostileDKey.self) { a, d in
            HostileNode("X", [a, d], log: log)
        }
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileXKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        try await hostileLive(builder) { live in
            // The scope keeps the first generation; its graph is not held.
            let (x1, d1) = (live.current[HostileXKey.self], live.current[HostileDKey.self])
            let old = try live.current.makeScope()

            // 2: A again; X again; D handed over to generation 2.
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            let x2 = live.current[HostileXKey.self]
            #expect(live.current[HostileDKey.self] === d1)
            // 3: D again. Generation 2 has no scope, but generations retire oldest first: D1, which it shared
            // on from generation 1, is still used by generation 1's scope, so nothing of 2 goes yet.
            try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            // 4: one more.
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            try await Task.sleep(for: .milliseconds(100))
            #expect(!log.isRemoved(x2), "generation 2 retired before generation 1, whose scope is open")

            // The old scope makes its scoped instance now, on X1, which holds D1.
            let q = try await old.resolve(HostileScopedKey.self)
            #expect(q.dependencies[0] === x1)
            #expect(old[HostileDKey.self] === d1)
            #expect(!log.isRemoved(x1))
            #expect(!log.isRemoved(d1), "D1 was removed while a scope of generation 1 still reaches it")
            log.record("closing the old scope")
            try await old.close()
            #expect(await hostileEventually { log.isRemoved(x1) && log.isRemoved(d1) && log.isRemoved(x2) })
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
            let closing = try #require(log.index("closing the old scope"))
            #expect(try #require(log.index("willRemove \(d1.name)")) > closing, "D1 removed before the scope closed")
        }
    }

    @Test("a scope of the old generation may resolve a key the update removed; it goes once the scope closes")
    func oldScopeResolvesRemovedKey() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileEKey.self, dependsOn: HostileDKey.self) { HostileNode("E", [$0], log: log) }
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileEKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        try await hostileLive(builder) { live in
            // The scope keeps the first generation; its graph is not held.
            let e1 = live.current[HostileEKey.self]
            let old = try live.current.makeScope()
            try await live.update { builder in
                builder.remove(HostileScopedKey.self)
                builder.remove(HostileEKey.self)
            }
            #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(HostileEKey.self) }
            let q = try await old.resolve(HostileScopedKey.self)
            #expect(q.dependencies[0] === e1)
            #expect(!log.isRemoved(e1))
            try await old.close()
            #expect(await hostileEventually { log.isRemoved(e1) })
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("seeds carry over an update; a seed added by an update is required; one overridden is ignored")
    func seededScopesAcrossUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.seed(HostileUserKey.self)
        builder.provide(HostileCartKey.self, lifetime: .scoped, dependsOn: HostileUserKey.self, HostileAKey.self) {
            user,
            a in
            HostileNode("cart:\(user)", [a], log: log)
        }
        try await hostileLive(builder) { live in
            let first = live.current
            let old = try first.makeScope(seeding: ScopeSeed(HostileUserKey.self, "ann"))

            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            let error = #expect(throws: ServiceGraphError.self) { _ = try live.current.makeScope() }
            #expect(error?.codes == [.missingSeed])
            let bob = try live.current.makeScope(seeding: ScopeSeed(HostileUserKey.self, "bob"))
            let bobCart = try await bob.resolve(HostileCartKey.self)
            #expect(bobCart.base == "cart:bob")
            #expect(bobCart.dependencies[0] === live.current[HostileAKey.self])
            let annCart = try await old.resolve(HostileCartKey.self)
            #expect(annCart.base == "cart:ann")
            #expect(annCart.dependencies[0] === first[HostileAKey.self])

            // A second seed: a scope needs both now.
            try await live.update { builder in
                builder.seed(HostileTokenKey.self)
                builder.override(
                    HostileCartKey.self,
                    lifetime: .scoped,
                    dependsOn: HostileUserKey.self,
                    HostileTokenKey.self,
                    HostileAKey.self
                ) { user, token, a in HostileNode("cart:\(user):\(token)", [a], log: log) }
            }
            let missing = #expect(throws: ServiceGraphError.self) {
                _ = try live.current.makeScope(seeding: ScopeSeed(HostileUserKey.self, "cy"))
            }
            #expect(missing?.problems.map(\.key) == ["HostileTokenKey"])
            let both = try live.current.makeScope(
                seeding: ScopeSeed(HostileUserKey.self, "cy"),
                ScopeSeed(HostileTokenKey.self, "t1")
            )
            #expect(try await both.resolve(HostileCartKey.self).base == "cart:cy:t1")

            // The user seed overridden by a provider: a value given for it is ignored.
            try await live.update { $0.override(HostileUserKey.self, lifetime: .scoped) { "fixed" } }
            let fixed = try live.current.makeScope(
                seeding: ScopeSeed(HostileUserKey.self, "dee"),
                ScopeSeed(HostileTokenKey.self, "t2")
            )
            #expect(try await fixed.resolve(HostileCartKey.self).base == "cart:fixed:t2")
            for scope in [old, bob, both, fixed] { try await scope.close() }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    // MARK: Failures

    @Test("a throwing factory fails the update: what it made is released, nothing of the change set stays")
    func throwingFactoryRollsBack() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let first = live.current
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { HostileNode("A", log: log) }
                    builder.provide(HostileEKey.self) { HostileNode("E", log: log) }
                    builder.override(HostileBKey.self, dependsOn: HostileAKey.self) { _ -> HostileNode in
                        throw TestFailure("B cannot be made")
                    }
                }
            }
            #expect(error?.problems.first?.code == .factoryFailed)
            #expect(error?.problems.first?.key == "HostileBKey")
            #expect(live.current === first)
            #expect(live.generation == 1)
            for node in log.nodes
            where node.name != "A#1" && node.name != "B#1" && node.name != "C#1" && node.name != "D#1" {
                if log.isStarted(node) {
                    #expect(log.isRemoved(node), "\(node.name) of the failed update still started")
                }
            }
            for node in hostileCore(first) { #expect(!log.isRemoved(node)) }
            // The next update starts from the current generation, not from the failed change set.
            let plan = try await live.update { _ in }
            #expect(plan.added.isEmpty)
            #expect(plan.rebuilt.isEmpty)
            #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(HostileEKey.self) }
            #expect(live.current[HostileBKey.self] === first[HostileBKey.self])
            try await live.shutdown()
            #expect(log.lifecycleProblems(allStarted: false) == [])
        }
    }

    @Test("a failing didAdd of an added key fails the update; the same change set, fixed, then commits")
    func failingDidAddThenRetry() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.provide(HostileEKey.self, dependsOn: HostileCKey.self) {
                        HostileNode("E", [$0], log: log, fault: .failDidAdd)
                    }
                }
            }
            #expect(error?.problems.map(\.code) == [.didAddFailed])
            #expect(live.generation == 1)
            let plan = try await live.update { builder in
                builder.provide(HostileEKey.self, dependsOn: HostileCKey.self) { HostileNode("E", [$0], log: log) }
            }
            #expect(plan.generation == 2)
            #expect(live.current[HostileEKey.self].name == "E#2")
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a hanging didAdd is abandoned after the hook timeout; the update fails and the graph goes on")
    func hangingDidAddTimesOut() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.hookTimeout = .milliseconds(100)
        try await hostileLive(builder) { live in
            let first = live.current
            let error = try await withDeadline(.seconds(5)) {
                await #expect(throws: ServiceGraphError.self) {
                    try await live.update { builder in
                        builder.override(HostileAKey.self) { HostileNode("A", log: log, fault: .hangDidAdd) }
                    }
                }
            }
            #expect(error?.problems.first?.code == .hookTimedOut)
            #expect(error?.problems.first?.key == "HostileAKey")
            #expect(live.current === first)
            #expect(log.made("B") == 1, "B was made on an A that never started")
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(live.generation == 2)
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a failing willRemove of a replaced or removed instance surfaces from shutdown(), once each")
    func failingWillRemoveSurfacesAtShutdown() async throws {
        let log = HostileLog()
        var builder = ServiceGraph.Builder()
        builder.provide(HostileAKey.self) { HostileNode("A", log: log, fault: .failWillRemove) }
        builder.provide(HostileBKey.self, dependsOn: HostileAKey.self) { HostileNode("B", [$0], log: log) }
        builder.provide(HostileEKey.self) { HostileNode("E", log: log, fault: .failWillRemove) }
        try await hostileLive(builder) { live in
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            try await live.update { $0.remove(HostileEKey.self) }
            #expect(await hostileEventually { log.count("willRemove E#1") == 1 })
            let error = await #expect(throws: ServiceGraphError.self) { try await live.shutdown() }
            let failed = (error?.problems ?? []).filter { $0.code == .willRemoveFailed }
            #expect(failed.map(\.key).sorted() == ["HostileAKey", "HostileEKey"])
            #expect(error?.problems.count == 2)
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("a hanging willRemove of a replaced instance is abandoned after the hook timeout; shutdown() reports it")
    func hangingWillRemoveOfReplacedInstance() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.hookTimeout = .milliseconds(100)
        builder.override(HostileAKey.self) { HostileNode("A", log: log, fault: .hangWillRemove) }
        try await hostileLive(builder) { live in
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            let started = ContinuousClock.now
            let error = try await withDeadline(.seconds(30)) {
                await #expect(throws: ServiceGraphError.self) { try await live.shutdown() }
            }
            // Long before the hook would end (a minute): it was abandoned, not waited for. A loose bound,
            // not a timing assertion: the whole suite shares two cores.
            #expect(ContinuousClock.now - started < hostileScaled(.seconds(15)))
            #expect(error?.problems.map(\.code) == [.hookTimedOut])
            #expect(error?.problems.first?.key == "HostileAKey")
            // Every instance still got its willRemove, the stuck one's dependents before it.
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("one instance under two keys: replacing one key leaves the instance to the other, removed once at the end")
    func instanceSharedByTwoKeys() async throws {
        let log = HostileLog()
        let shared = HostileNode("S", log: log)
        var builder = hostileBuilder(log)
        builder.override(HostileAKey.self) { shared }
        builder.override(HostileDKey.self) { shared }
        try await hostileLive(builder) { live in
            #expect(log.count("didAdd S#1") == 1, "the graph starts one instance once")
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(live.current[HostileDKey.self] === shared)
            #expect(live.current[HostileAKey.self] !== shared)
            let b1 = try #require(log.nodes.first { $0.name == "B#1" })
            #expect(await hostileEventually { log.isRemoved(b1) })
            #expect(log.count("didAdd S#1") == 1, "the update ran didAdd on an instance it took over")
            #expect(!log.isRemoved(shared), "removed with the replaced A, though D still hands it out")
            // And the other way round: D replaced, A's instance (a new one) untouched.
            try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            #expect(await hostileEventually { log.isRemoved(shared) })
            #expect(!log.isRemoved(live.current[HostileAKey.self]))
            try await live.shutdown()
            let problems = log.lifecycleProblems()
            #expect(problems.filter { !$0.hasPrefix("S#1") } == [])
            #expect(log.count("willRemove S#1") == 1)
            #expect(problems == [])
        }
    }

    @Test("cancelling the task of an update while a factory runs: the update fails, what it made is released")
    func cancelledWhileFactoryRuns() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let first = live.current
            let update = Task {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { HostileNode("A", log: log) }
                    builder.override(HostileBKey.self, dependsOn: HostileAKey.self) { a in
                        log.record("making B")
                        let deadline = ContinuousClock.now + .seconds(5)
                        while !Task.isCancelled && ContinuousClock.now < deadline {
                            try? await Task.sleep(for: .milliseconds(2))
                        }
                        return HostileNode("B", [a], log: log)
                    }
                }
            }
            #expect(await hostileEventually { log.count("making B") == 1 })
            update.cancel()
            let result = await update.result
            #expect(throws: ServiceGraphError.self) { try result.get() }
            #expect(live.current === first)
            #expect(live.generation == 1)
            let a2 = log.nodes.first { $0.name == "A#2" }
            if let a2, log.isStarted(a2) { #expect(await hostileEventually { log.isRemoved(a2) }) }
            #expect(log.count("didAdd B#2") == 0, "a cancelled update started what it made after the cancellation")
            // The graph goes on.
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(live.current[HostileBKey.self].dependencies[0] === live.current[HostileAKey.self])
            try await live.shutdown()
            #expect(log.lifecycleProblems(allStarted: false) == [])
            #expect(log.isRemoved(live.current[HostileAKey.self]) && log.isRemoved(live.current[HostileBKey.self]))
        }
    }

    @Test("cancelling the task of an update while a didAdd hangs: the update fails promptly, the graph goes on")
    func cancelledWhileDidAddHangs() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let first = live.current
            let update = Task {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { HostileNode("A", log: log, fault: .hangDidAdd) }
                }
            }
            #expect(await hostileEventually { log.count("didAdd A#2") == 1 })
            let cancelled = ContinuousClock.now
            update.cancel()
            let result = await update.result
            #expect(
                ContinuousClock.now - cancelled < hostileScaled(.seconds(2)),
                "the cancelled update waited for the hook"
            )
            let error = try #require(throws: ServiceGraphError.self) { try result.get() }
            #expect(error.contains(.buildCancelled) || error.contains(.didAddFailed))
            #expect(live.current === first)
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            #expect(live.generation == 2)
            try await live.shutdown()
            #expect(log.lifecycleProblems(allStarted: false) == [])
        }
    }

    @Test("an update cancelled while it waits for another: the queue moves on, and what it reports is what happened")
    func queuedUpdateCancelled() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let gate = HostileGate()
            let running = Task {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { () async -> HostileNode in
                        log.record("making A")
                        _ = await gate.wait()
                        return HostileNode("A", log: log)
                    }
                }
            }
            #expect(await hostileEventually { log.count("making A") == 1 })
            let queued = Task {
                try await live.update { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
            }
            try await Task.sleep(for: .milliseconds(20))
            queued.cancel()
            gate.release()
            _ = try await running.value
            let outcome = try await withDeadline(.seconds(5)) { await queued.result }
            switch outcome {
            case .success(let plan):
                #expect(plan.generation == 3)
                #expect(live.generation == 3)
                #expect(live.current[HostileDKey.self].name == "D#2")
            case .failure:
                #expect(live.generation == 2)
                #expect(live.current[HostileDKey.self].name == "D#1")
            }
            // The queue is free.
            let next = try await withDeadline(.seconds(5)) { try await live.update { _ in } }
            #expect(next.generation == live.generation)
            try await live.shutdown()
            #expect(log.lifecycleProblems(allStarted: false) == [])
            #expect(live.current.initializationOrder.count == 4)
        }
    }

    @Test("an invalid change set runs no factory, commits nothing, and leaves nothing behind for the next update")
    func invalidChangeSetLeavesNothing() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let made = log.madeCount
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { HostileNode("A", log: log) }
                    builder.remove(HostileBKey.self)
                    builder.provide(HostileEKey.self, dependsOn: HostileXKey.self) { HostileNode("E", [$0], log: log) }
                }
            }
            let problems = error?.problems ?? []
            #expect(problems.contains { $0.code == .missingProvider && $0.message.contains("HostileCKey") })
            #expect(problems.contains { $0.code == .missingProvider && $0.message.contains("HostileXKey") })
            #expect(log.madeCount == made)
            let plan = try await live.update { _ in }
            #expect(plan.rebuilt.isEmpty && plan.added.isEmpty && plan.removed.isEmpty)
            #expect(try live.current.resolveSynchronously(HostileBKey.self).name == "B#1")
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("removing a key a scoped service requires is refused, naming the scoped service")
    func removingKeyOfScopedDependent() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileDKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        try await hostileLive(builder) { live in
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.remove(HostileDKey.self)
                    builder.remove(HostileCKey.self)
                }
            }
            #expect(error?.problems.count == 1)
            #expect(error?.problems.first?.message.contains("HostileScopedKey") == true)
            #expect(live.generation == 1)
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("shutdown() with a scope of a replaced generation still open finishes, closing that scope")
    func shutdownWithOldScopeOpen() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileBKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        try await hostileLive(builder) { live in
            let old = try live.current.makeScope()
            _ = try await old.resolve(HostileScopedKey.self)
            try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            let finished = HostileGate()
            let shutdown = Task {
                defer { finished.release() }
                try await live.shutdown()
            }
            let inTime = await finished.wait(limit: .seconds(30))
            #expect(inTime, "shutdown() hung on a scope of the first generation")
            // If it hangs, unblock it (closing an already closed scope throws: ignored).
            if !inTime { try? await old.close() }
            try await shutdown.value
            #expect(old.isClosed)
            #expect(log.lifecycleProblems() == [])
        }
    }

    // MARK: Concurrency

    @Test("readers see one consistent generation at a time while updates commit")
    func readersDuringUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileTransientKey.self, lifetime: .transient, dependsOn: HostileBKey.self) {
            HostileNode("t", [$0], log: log, owned: false)
        }
        builder.provide(HostileScopedKey.self, lifetime: .scoped, dependsOn: HostileCKey.self) {
            HostileNode("Q", [$0], log: log)
        }
        try await hostileLive(builder) { live in
            let mismatches = Locked<[String]>([])
            let done = HostileGate()
            let updates = 12
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reader in 0..<6 {
                    group.addTask {
                        var lastGeneration = 0
                        var rounds = 0
                        while !done.isOpen || rounds < 5 {
                            rounds += 1
                            let generation = live.generation
                            if generation < lastGeneration {
                                mismatches.withLock { $0.append("reader \(reader): generation went back") }
                            }
                            lastGeneration = generation
                            let graph = live.current
                            let c = graph[HostileCKey.self]
                            if c.dependencies[0] !== graph[HostileBKey.self]
                                || graph[HostileBKey.self].dependencies[0] !== graph[HostileAKey.self]
                                || c.dependencies[1] !== graph[HostileDKey.self]
                            {
                                mismatches.withLock { $0.append("reader \(reader): a graph mixes generations") }
                            }
                            do {
                                let t = try await graph.resolve(HostileTransientKey.self)
                                if t.dependencies[0] !== graph[HostileBKey.self] {
                                    mismatches.withLock {
                                        $0.append("reader \(reader): transient from another generation")
                                    }
                                }
                                let scope = try graph.makeScope()
                                let q = try await scope.resolve(HostileScopedKey.self)
                                if q.dependencies[0] !== c {
                                    mismatches.withLock {
                                        $0.append("reader \(reader): scoped from another generation")
                                    }
                                }
                                try? await scope.close()
                            } catch let error as ServiceGraphError
                                where error.contains(.graphShutDown) || error.contains(.scopeClosed)
                            {
                                // The generation read retired meanwhile.
                            }
                            await Task.yield()
                        }
                    }
                }
                group.addTask {
                    defer { done.release() }
                    for _ in 0..<updates {
                        try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
                        await Task.yield()
                    }
                }
                try await group.waitForAll()
            }
            #expect(mismatches.withLock { $0 } == [])
            #expect(live.generation == updates + 1)
            try await live.shutdown()
            #expect(log.made("A") == updates + 1)
            #expect(log.made("D") == 1)
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("many concurrent updates each contributing an element: none is lost, each element made and started once")
    func concurrentContributingUpdates() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileRouterKey.self, dependsOn: HostileListKey.self) { HostileNode("router", $0, log: log) }
        try await hostileLive(builder) { live in
            let count = 16
            let generations = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<count {
                    group.addTask {
                        try await live.update { builder in
                            builder.contribute(HostileListKey.self, id: "e\(index)") {
                                HostileNode("e\(index)", log: log)
                            }
                        }.generation
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(generations.sorted() == Array(2...(count + 1)))
            #expect(live.generation == count + 1)
            let router = live.current[HostileRouterKey.self]
            #expect(Set(router.shape) == Set((0..<count).map { "e\($0)" }))
            #expect(router.shape.count == count)
            for index in 0..<count {
                #expect(log.made("e\(index)") == 1, "e\(index) made \(log.made("e\(index)")) times")
            }
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("an update racing shutdown(): shutdown lets it finish, then removes each instance exactly once")
    func updateRacingShutdown() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let d1 = live.current[HostileDKey.self]
            let gate = HostileGate()
            let update = Task {
                try await live.update { builder in
                    builder.override(HostileAKey.self) { () async -> HostileNode in
                        log.record("making A")
                        _ = await gate.wait()
                        return HostileNode("A", log: log)
                    }
                }
            }
            #expect(await hostileEventually { log.count("making A") == 1 })
            let shutdown = Task { try await live.shutdown() }
            // Shutdown waits for the update under way: nothing is removed while it builds on the shared D.
            try await Task.sleep(for: .milliseconds(100))
            #expect(log.count("willRemove \(d1.name)") == 0, "shutdown removed D under the update")
            gate.release()
            let plan = try await update.value
            #expect(plan.generation == 2)
            try await shutdown.value
            // A later update is refused.
            await #expect(throws: ServiceGraphError.self) {
                try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
            }
            #expect(await hostileEventually { log.nodes.allSatisfy { !log.isStarted($0) || log.isRemoved($0) } })
            #expect(log.count("willRemove \(d1.name)") == 1, "the shared D removed twice")
            #expect(log.lifecycleProblems(allStarted: false) == [])
        }
    }

    @Test("updates and shutdown started together, many times: each instance removed once, never built on once removed")
    func updatesAndShutdownTogether() async throws {
        var symptoms: [String] = []
        for round in 0..<20 {
            let log = HostileLog()
            let live = try await LiveGraph(hostileBuilder(log))
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        _ = try? await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
                    }
                }
                group.addTask {
                    if round % 2 == 0 { await Task.yield() }
                    _ = try? await live.shutdown()
                }
            }
            let settled = await hostileEventually(within: .seconds(2)) {
                log.nodes.allSatisfy { !log.isStarted($0) || log.isRemoved($0) }
            }
            #expect(settled, "round \(round): something started was never removed")
            // The symptoms of the known race (a shared instance removed twice, and built on once removed) are
            // counted apart; anything else fails.
            let problems = log.lifecycleProblems(allStarted: false)
            let known = problems.filter {
                $0.contains("already removed") || $0.contains("ran 2 times")
                    || $0.contains("removed before its dependent")
            }
            symptoms += known.map { "round \(round): \($0)" }
            #expect(problems.filter { !known.contains($0) } == [], "round \(round)")
            if !settled { break }
        }
        #expect(symptoms == [])
    }

    @Test("dry runs run nothing and match what the update then does, factory for factory")
    func planMatchesUpdate() async throws {
        let log = HostileLog()
        var builder = hostileBuilder(log)
        builder.provide(HostileHeavyKey.self) { HostileNode("Heavy", log: log) }
        builder.provide(HostileScreenKey.self, dependsOn: Lazy<HostileHeavyKey>.self) {
            HostileHolder(HostileNode("Screen", log: log), $0)
        }
        try await hostileLive(builder) { live in
            let changes: [(String, @Sendable (inout ServiceGraph.Builder) -> Void)] = [
                ("override A", { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }),
                (
                    "add E",
                    { $0.provide(HostileEKey.self, dependsOn: HostileCKey.self) { HostileNode("E", [$0], log: log) } }
                ),
                (
                    "async override D",
                    { $0.override(HostileDKey.self) { () async -> HostileNode in HostileNode("D", log: log) } }
                ),
                (
                    "remove E, add X",
                    {
                        $0.remove(HostileEKey.self)
                        $0.provide(HostileXKey.self, dependsOn: HostileBKey.self) { HostileNode("X", [$0], log: log) }
                    }
                ),
                ("override heavy", { $0.override(HostileHeavyKey.self) { HostileNode("Heavy", log: log) } }),
                ("decorate B", { $0.decorate(HostileBKey.self) { HostileNode("B", [$0], log: log) } }),
                (
                    "remove and provide A",
                    {
                        $0.remove(HostileAKey.self)
                        $0.provide(HostileAKey.self) { HostileNode("A", log: log) }
                    }
                ),
                ("nothing", { _ in }),
            ]
            for (name, change) in changes {
                let made = log.madeCount
                // Started, not all entries: the last generation retires in the background meanwhile.
                let started = log.entries.filter { $0.hasPrefix("didAdd") }.count
                let current = live.current
                let dry = try live.plan(change)
                #expect(log.madeCount == made, "\(name): the dry run made something")
                #expect(
                    log.entries.filter { $0.hasPrefix("didAdd") }.count == started,
                    "\(name): the dry run ran a hook"
                )
                #expect(live.current === current)
                let done = try await live.update(change)
                #expect(dry.generation == done.generation, "\(name)")
                #expect(dry.changed == done.changed, "\(name)")
                #expect(dry.rebuilt == done.rebuilt, "\(name)")
                #expect(dry.shared == done.shared, "\(name)")
                #expect(dry.added == done.added, "\(name)")
                #expect(dry.removed == done.removed, "\(name)")
                #expect(dry.description == done.description, "\(name)")
                // What the update made is what it said it rebuilds (a decorator's stage is named after its key).
                let madeKeys = Set(log.nodes(since: made).map(\.base))
                let rebuiltKeys = Set(done.rebuilt.map { hostileLetter($0.components(separatedBy: " ").first ?? $0) })
                #expect(madeKeys == rebuiltKeys, "\(name): made \(madeKeys), plan \(done.rebuilt)")
                #expect(done.rebuilt.allSatisfy { !done.shared.contains($0) }, "\(name)")
            }
            // A refused change set: the dry run and the update report the same problems.
            let invalid: @Sendable (inout ServiceGraph.Builder) -> Void = { $0.remove(HostileDKey.self) }
            let dryError = #expect(throws: ServiceGraphError.self) { try live.plan(invalid) }
            let error = await #expect(throws: ServiceGraphError.self) { try await live.update(invalid) }
            #expect(dryError?.problems.map(\.message) == error?.problems.map(\.message))
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }

    @Test("dry runs from many tasks while updates commit name the generation after the one they read")
    func plansDuringUpdates() async throws {
        let log = HostileLog()
        try await hostileLive(hostileBuilder(log)) { live in
            let wrong = Locked<[String]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        for _ in 0..<30 {
                            let before = live.generation
                            let plan = try live.plan { $0.override(HostileDKey.self) { HostileNode("D", log: log) } }
                            let after = live.generation
                            if plan.generation < before + 1 || plan.generation > after + 1 {
                                wrong.withLock {
                                    $0.append("plan \(plan.generation) read between \(before) and \(after)")
                                }
                            }
                            if Set(plan.rebuilt) != ["HostileDKey", "HostileCKey"] {
                                wrong.withLock { $0.append("rebuilt \(plan.rebuilt)") }
                            }
                            await Task.yield()
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<8 {
                        try await live.update { $0.override(HostileAKey.self) { HostileNode("A", log: log) } }
                    }
                }
                try await group.waitForAll()
            }
            #expect(wrong.withLock { $0 } == [])
            #expect(log.made("D") == 1, "a dry run made a D")
            try await live.shutdown()
            #expect(log.lifecycleProblems() == [])
        }
    }
}
