import ServiceGraph
import ServiceGraphTestSupport
import Synchronization
import Testing

// Hostile tests of the take-over: a singleton made again whose factory returns the very instance the
// current generation started keeps it started. Every instance must get each hook exactly once over the
// whole life of the live graph, and an instance's willRemove comes before that of what it depends on,
// in the generation that holds it.

private struct TakeOverFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// An ordered log of hook calls, and of the problems the nodes saw (a hook run twice, a willRemove on
/// an instance not started, a didAdd on an instance still started).
private final class TakeOverLog: Sendable {
    private struct State {
        var entries: [String] = []
        var violations: [String] = []
        var made: [String] = []
        var serials: [String: Int] = [:]
    }

    private let state = Locked(State())

    func record(_ entry: String) { state.withLock { $0.entries.append(entry) } }
    func violation(_ entry: String) { state.withLock { $0.violations.append(entry) } }
    func made(_ name: String) { state.withLock { $0.made.append(name) } }

    /// `base#n`, n counting from 1 for each base: a name no other instance of the test has.
    func unique(_ base: String) -> String {
        state.withLock { state in
            let serial = (state.serials[base] ?? 0) + 1
            state.serials[base] = serial
            return "\(base)#\(serial)"
        }
    }

    var all: [String] { state.withLock { $0.entries } }
    var violations: [String] { state.withLock { $0.violations } }
    func count(_ entry: String) -> Int { state.withLock { $0.entries.filter { $0 == entry }.count } }
    func index(_ entry: String) -> Int? { state.withLock { $0.entries.firstIndex(of: entry) } }
    func lastIndex(_ entry: String) -> Int? { state.withLock { $0.entries.lastIndex(of: entry) } }

    /// Every instance made: started at most once, and removed exactly as often as it was started.
    func unbalanced() -> [String] {
        let (made, entries) = state.withLock { ($0.made, $0.entries) }
        var problems: [String] = []
        for name in Set(made) {
            let added = entries.filter { $0 == "didAdd \(name)" }.count
            let removed = entries.filter { $0 == "willRemove \(name)" }.count
            if added > 1 || removed != added { problems.append("\(name): didAdd \(added), willRemove \(removed)") }
        }
        return problems.sorted()
    }
}

/// A reference service: counts its hooks, and reports a hook that runs when it should not.
private final class TakeOverNode: LifecycleHooks, Sendable {
    let name: String
    private let log: TakeOverLog
    private let failDidAdd: Bool
    private let added = Atomic<Int>(0)
    private let removed = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)

    init(_ name: String, log: TakeOverLog, failDidAdd: Bool = false) {
        self.name = name
        self.log = log
        self.failDidAdd = failDidAdd
        log.made(name)
    }

    var didAddCount: Int { added.load(ordering: .acquiring) }
    var willRemoveCount: Int { removed.load(ordering: .acquiring) }
    /// Whether its last hook was a didAdd: started, and not removed since.
    var isRunning: Bool { running.load(ordering: .acquiring) }

    func didAdd() async throws {
        if failDidAdd {
            log.record("didAddFailed \(name)")
            throw TakeOverFailure("didAdd of \(name)")
        }
        if running.exchange(true, ordering: .acquiringAndReleasing) {
            log.violation("didAdd of \(name) while it was started")
        }
        added.add(1, ordering: .acquiringAndReleasing)
        log.record("didAdd \(name)")
    }

    func willRemove() async throws {
        if !running.exchange(false, ordering: .acquiringAndReleasing) {
            log.violation("willRemove of \(name), which was not started")
        }
        removed.add(1, ordering: .acquiringAndReleasing)
        log.record("willRemove \(name)")
    }
}

/// A value service: no identity, so each copy the graph makes is an instance of its own.
private struct TakeOverValue: LifecycleHooks {
    let name: String
    let log: TakeOverLog

    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// Flags shared by the tasks of a race.
private final class TakeOverFlags: Sendable {
    let committed = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let removedSeen = Atomic<Int>(0)
}

private protocol TakeOverService: LifecycleHooks, AnyObject {}

private final class TakeOverExistentialNode: TakeOverService {
    let node: TakeOverNode
    init(_ node: TakeOverNode) { self.node = node }
    func didAdd() async throws { try await node.didAdd() }
    func willRemove() async throws { try await node.willRemove() }
}

private enum TOConfigKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOGlobalKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOAliasKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOOtherKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOPlainKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOUserKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOFailingKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOScopedKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOLazyGlobalKey: ServiceKey { typealias Value = TakeOverNode }
private enum TOConsoleKey: ServiceKey { typealias Value = Lazy<TOLazyGlobalKey> }
private enum TOValueKey: ServiceKey { typealias Value = TakeOverValue }
private enum TOExistentialKey: ServiceKey { typealias Value = any TakeOverService }

/// Config ← Global: the global's factory returns `global`, whatever the config.
private func takeOverChain(_ log: TakeOverLog, global: TakeOverNode) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
    builder.provide(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
    return builder
}

/// Overrides the config with a new instance named `name`: everything that depends on it is made again.
private func reconfigure(_ live: LiveGraph, _ log: TakeOverLog, _ name: String) async throws {
    try await live.update { builder in
        builder.override(TOConfigKey.self) { TakeOverNode(name, log: log) }
    }
}

/// Waits, within a bound, for `condition`; the caller checks it afterwards.
private func takeOverEventually(_ condition: () -> Bool) async throws {
    for _ in 0..<2_500 where !condition() { try await Task.sleep(for: .milliseconds(2)) }
}

/// Whether `first`'s willRemove comes before `second`'s (both must be in the log).
private func removedBefore(_ log: TakeOverLog, _ first: String, _ second: String) -> Bool {
    guard let one = log.index("willRemove \(first)"), let two = log.index("willRemove \(second)") else { return false }
    return one < two
}

@Suite("A live graph's take-over of a started instance, attacked")
struct LiveGraphTakeOverHostileTests {
    @Test("the same global instance returned across five successive updates: started once, removed once, last")
    func fiveSuccessiveUpdates() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        let live = try await LiveGraph(takeOverChain(log, global: global))
        for version in 2...6 {
            let plan = try await live.update { builder in
                builder.override(TOConfigKey.self) { TakeOverNode("config\(version)", log: log) }
            }
            #expect(plan.rebuilt == ["TOConfigKey", "TOGlobalKey"])
            #expect(live.current[TOGlobalKey.self] === global)
            // The generation it replaced retires, and leaves the global to this one.
            try await takeOverEventually { log.count("willRemove config\(version - 1)") == 1 }
            #expect(log.count("willRemove config\(version - 1)") == 1)
            #expect(global.didAddCount == 1)
            #expect(global.willRemoveCount == 0, "generation \(version - 1) removed it: \(log.all)")
        }
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config6"), "\(log.all)")
    }

    @Test("two keys made again, both returning the global one of them started: an alias, started once")
    func twoRemadeKeysAliasTheGlobal() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOAliasKey.self, dependsOn: TOConfigKey.self) { _ in TakeOverNode("alias1", log: log) }
        let live = try await LiveGraph(builder)
        // The alias key now returns the global too, and both are made again.
        try await live.update { builder in
            builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
            builder.override(TOAliasKey.self, dependsOn: TOConfigKey.self) { _ in global }
        }
        #expect(live.current[TOGlobalKey.self] === global)
        #expect(live.current[TOAliasKey.self] === global)
        #expect(global.didAddCount == 1)
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(log.count("willRemove alias1") == 1)
        #expect(global.willRemoveCount == 0, "\(log.all)")
        // Again, both keys made again, both returning it: still the one instance.
        try await reconfigure(live, log, "config3")
        #expect(live.current[TOAliasKey.self] === global)
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }

    @Test(
        "the global moves to another key made again; the key that started it is removed, or made again anew",
        arguments: [true, false]
    )
    func globalMovesToAnotherKey(oldKeyRemoved: Bool) async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOOtherKey.self, dependsOn: TOConfigKey.self) { _ in TakeOverNode("other1", log: log) }
        let live = try await LiveGraph(builder)
        let plan = try await live.update { builder in
            if oldKeyRemoved {
                builder.remove(TOGlobalKey.self)
            } else {
                builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
                builder.override(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in
                    TakeOverNode("replacement", log: log)
                }
            }
            builder.override(TOOtherKey.self, dependsOn: TOConfigKey.self) { _ in global }
        }
        #expect(plan.removed == (oldKeyRemoved ? ["TOGlobalKey"] : []))
        #expect(live.current[TOOtherKey.self] === global)
        try await takeOverEventually { log.count("willRemove other1") == 1 }
        #expect(log.count("willRemove other1") == 1)
        #expect(global.didAddCount == 1)
        #expect(
            global.willRemoveCount == 0,
            "the retired generation removed what the current one hands out: \(log.all)"
        )
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", oldKeyRemoved ? "config1" : "config2"), "\(log.all)")
    }

    @Test("the global is also shared under a key the update does not reach; later that key is made again")
    func globalAlsoSharedUnderAnUnaffectedKey() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
        builder.provide(TOPlainKey.self) { global }
        builder.provide(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
        builder.eventKinds = [.generationRetired]
        builder.eventHandler = { event in log.record("retired \(event.key ?? "?")") }
        let live = try await LiveGraph(builder)
        let plan = try await live.update { builder in
            builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
        }
        #expect(plan.shared == ["TOPlainKey"])
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(global.willRemoveCount == 0, "\(log.all)")
        // Now the key that shared it is made again, with an instance of its own.
        try await live.update { builder in
            builder.override(TOPlainKey.self) { TakeOverNode("plain", log: log) }
        }
        #expect(live.current[TOGlobalKey.self] === global)
        #expect(live.current[TOPlainKey.self].name == "plain")
        try await takeOverEventually { log.count("retired generation 2") == 1 }
        #expect(log.count("retired generation 2") == 1)
        #expect(global.willRemoveCount == 0, "\(log.all)")
        // Then the key that took it over is made again, returning it still.
        try await reconfigure(live, log, "config3")
        try await takeOverEventually { log.count("willRemove config2") == 1 }
        #expect(global.willRemoveCount == 0, "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }

    @Test("a take-over rolled back by a later factory's failure, then a successful update, then shutdown")
    func rollbackOnFactoryFailureThenSuccess() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { global in
            TakeOverNode(log.unique("user(\(global.name))"), log: log)
        }
        let live = try await LiveGraph(builder)
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { builder in
                builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
                builder.override(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ -> TakeOverNode in
                    throw TakeOverFailure("user down")
                }
            }
        }
        #expect(error?.codes == [.factoryFailed])
        #expect(live.generation == 1)
        #expect(live.current[TOUserKey.self].name == "user(global)#1")
        #expect(log.count("willRemove config2") == 1)
        #expect(global.willRemoveCount == 0, "the rollback removed the instance it handed back: \(log.all)")
        // A successful update takes it over again.
        try await reconfigure(live, log, "config3")
        #expect(live.current[TOGlobalKey.self] === global)
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(log.count("willRemove config1") == 1)
        #expect(global.willRemoveCount == 0, "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "user(global)#2", "global"), "\(log.all)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }

    @Test("a take-over rolled back by a dependent's failing didAdd; the alias it also took is handed back too")
    func rollbackOnDidAddFailureThenSuccess() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOAliasKey.self, dependsOn: TOConfigKey.self) { _ in global }
        let live = try await LiveGraph(builder)
        for attempt in 1...3 {
            let error = await #expect(throws: ServiceGraphError.self) {
                try await live.update { builder in
                    builder.override(TOConfigKey.self) { TakeOverNode("failed-config\(attempt)", log: log) }
                    builder.provide(TOFailingKey.self, dependsOn: TOGlobalKey.self, TOAliasKey.self) { _, _ in
                        TakeOverNode("failing\(attempt)", log: log, failDidAdd: true)
                    }
                }
            }
            #expect(error?.codes == [.didAddFailed])
            #expect(log.count("willRemove failed-config\(attempt)") == 1)
            #expect(log.count("willRemove failing\(attempt)") == 0)
            #expect(global.willRemoveCount == 0, "attempt \(attempt): \(log.all)")
            #expect(live.generation == 1)
        }
        try await reconfigure(live, log, "config2")
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(global.willRemoveCount == 0, "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config2"), "\(log.all)")
    }

    @Test("an update taking the global over races shutdown: hooks once each, whichever wins", .timeLimit(.minutes(2)))
    func updateRacingShutdown() async throws {
        for iteration in 0..<40 {
            let log = TakeOverLog()
            let global = TakeOverNode("global", log: log)
            var builder = takeOverChain(log, global: global)
            builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ in
                TakeOverNode(log.unique("user"), log: log)
            }
            let live = try await LiveGraph(builder)
            let flags = TakeOverFlags()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do throws(ServiceGraphError) {
                        try await live.update { builder in
                            builder.override(TOConfigKey.self) { () async throws in
                                await Task.yield()
                                return TakeOverNode("config2", log: log)
                            }
                        }
                        flags.committed.store(true, ordering: .releasing)
                    } catch {
                        #expect(error.codes == [.graphShutDown], "iteration \(iteration): \(error)")
                    }
                }
                group.addTask { try await live.shutdown() }
                try await group.waitForAll()
            }
            #expect(global.didAddCount == 1, "iteration \(iteration)")
            #expect(global.willRemoveCount == 1, "iteration \(iteration): \(log.all)")
            #expect(log.unbalanced().isEmpty, "iteration \(iteration): \(log.unbalanced())")
            #expect(log.violations.isEmpty, "iteration \(iteration): \(log.violations)")
            let holder = flags.committed.load(ordering: .acquiring) ? "config2" : "config1"
            #expect(removedBefore(log, "global", holder), "iteration \(iteration): \(log.all)")
        }
    }

    @Test("a reader holds the old generation while the update takes the global over; it retires once dropped")
    func readerHoldsTheOldGeneration() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ in TakeOverNode(log.unique("user"), log: log) }
        let live = try await LiveGraph(builder)
        var old: ServiceGraph? = live.current
        try await reconfigure(live, log, "config2")
        #expect(try #require(old)[TOGlobalKey.self] === global)
        try await Task.sleep(for: .milliseconds(20))
        #expect(log.count("willRemove config1") == 0, "a held generation retired: \(log.all)")
        old = nil
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(old == nil)
        #expect(log.count("willRemove config1") == 1)
        #expect(log.count("willRemove user#1") == 1)
        #expect(global.willRemoveCount == 0, "the old generation removed the instance it handed over: \(log.all)")
        #expect(removedBefore(log, "user#1", "config1"), "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "user#2", "global"), "\(log.all)")
        #expect(removedBefore(log, "global", "config2"), "\(log.all)")
    }

    @Test("a reader holds the old generation through shutdown: the forced retirement leaves the global alone")
    func readerHoldsTheOldGenerationThroughShutdown() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        let live = try await LiveGraph(takeOverChain(log, global: global))
        let held = live.current
        for version in 2...4 { try await reconfigure(live, log, "config\(version)") }
        try await live.shutdown()
        #expect(held[TOGlobalKey.self] === global)
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1, "\(log.all)")
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config4"), "\(log.all)")
    }

    @Test("a scope on the old generation resolves a service of the global, and closes after the update")
    func scopeOnTheOldGeneration() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOScopedKey.self, lifetime: .scoped, dependsOn: TOGlobalKey.self) { _ in
            TakeOverNode(log.unique("scoped"), log: log)
        }
        let live = try await LiveGraph(builder)
        let scope = try live.current.makeScope()
        #expect(try await scope.resolve(TOScopedKey.self).name == "scoped#1")
        try await reconfigure(live, log, "config2")
        try await Task.sleep(for: .milliseconds(20))
        #expect(log.count("willRemove config1") == 0, "retired under an open scope: \(log.all)")
        #expect(try await scope.resolve(TOScopedKey.self).name == "scoped#1")
        try await scope.close()
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(log.count("willRemove config1") == 1)
        #expect(log.count("willRemove scoped#1") == 1)
        #expect(global.willRemoveCount == 0, "\(log.all)")
        #expect(removedBefore(log, "scoped#1", "config1"), "\(log.all)")
        let fresh = try live.current.makeScope()
        #expect(try await fresh.resolve(TOScopedKey.self).name == "scoped#2")
        try await fresh.close()
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "scoped#2", "global"), "\(log.all)")
    }

    @Test("a scope on the old generation still open at shutdown: closed by it, the global removed after it, once")
    func scopeOnTheOldGenerationOpenAtShutdown() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOScopedKey.self, lifetime: .scoped, dependsOn: TOGlobalKey.self) { _ in
            TakeOverNode(log.unique("scoped"), log: log)
        }
        let live = try await LiveGraph(builder)
        let scope = try live.current.makeScope()
        _ = try await scope.resolve(TOScopedKey.self)
        try await reconfigure(live, log, "config2")
        try await reconfigure(live, log, "config3")
        try await live.shutdown()
        #expect(scope.isClosed)
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1, "\(log.all)")
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "scoped#1", "global"), "\(log.all)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }

    @Test("a singleton created on first use returns the global after an update, while the old generation is held")
    func createdOnFirstUseReturnsTheGlobal() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
        builder.provide(TOLazyGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
        builder.provide(TOConsoleKey.self, dependsOn: Lazy<TOLazyGlobalKey>.self) { $0 }
        let live = try await LiveGraph(builder)
        #expect(global.didAddCount == 0)
        var old: ServiceGraph? = live.current
        #expect(try await old?.resolve(TOLazyGlobalKey.self) === global)
        #expect(global.didAddCount == 1)
        let plan = try await live.update { builder in
            builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
        }
        // Not made by the update (it is made on first use), and not shared: the change reaches it.
        #expect(!plan.shared.contains("TOLazyGlobalKey"))
        // Created in the new generation on its first use, while the old one still has it started.
        #expect(try await live.current.resolve(TOLazyGlobalKey.self) === global)
        #expect(global.didAddCount == 1, "started a second time while started: \(log.all)")
        old = nil
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(log.count("willRemove config1") == 1)
        #expect(global.isRunning, "the current generation hands out a removed instance: \(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
    }

    @Test("a value type adopting the hooks has no identity: each generation's copy gets its own hooks")
    func valueTypeIsNotTakenOver() async throws {
        let log = TakeOverLog()
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
        builder.provide(TOValueKey.self, dependsOn: TOConfigKey.self) { _ in TakeOverValue(name: "value", log: log) }
        let live = try await LiveGraph(builder)
        try await reconfigure(live, log, "config2")
        try await takeOverEventually { log.count("willRemove config1") == 1 }
        #expect(log.count("didAdd value") == 2, "\(log.all)")
        #expect(log.count("willRemove value") == 1, "\(log.all)")
        try await live.shutdown()
        #expect(log.count("didAdd value") == 2, "\(log.all)")
        #expect(log.count("willRemove value") == 2, "\(log.all)")
        // The new copy started before the old one was removed; each removed before its own config.
        let entries = log.all
        let secondAdd = try #require(entries.lastIndex(of: "didAdd value"))
        let firstRemove = try #require(entries.firstIndex(of: "willRemove value"))
        #expect(secondAdd < firstRemove, "\(entries)")
        let lastRemove = try #require(entries.lastIndex(of: "willRemove value"))
        let config2Removed = try #require(entries.firstIndex(of: "willRemove config2"))
        #expect(lastRemove < config2Removed, "\(entries)")
        #expect(log.violations.isEmpty, "\(log.violations)")
    }

    @Test("a key of an existential type whose instance is a class: the global is taken over through the box")
    func existentialClassIsTakenOver() async throws {
        let log = TakeOverLog()
        let inner = TakeOverNode("global", log: log)
        let global: any TakeOverService = TakeOverExistentialNode(inner)
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
        builder.provide(TOExistentialKey.self, dependsOn: TOConfigKey.self) { _ in global }
        let live = try await LiveGraph(builder)
        for version in 2...3 { try await reconfigure(live, log, "config\(version)") }
        #expect(live.current[TOExistentialKey.self] === global)
        try await takeOverEventually { log.count("willRemove config2") == 1 }
        #expect(inner.willRemoveCount == 0, "\(log.all)")
        try await live.shutdown()
        #expect(inner.didAddCount == 1)
        #expect(inner.willRemoveCount == 1)
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }

    @Test("asynchronous factories that suspend before returning the global: taken over as a synchronous one")
    func asyncFactoriesReturnTheGlobal() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { () async throws in
            try await Task.sleep(for: .milliseconds(1))
            return TakeOverNode("config1", log: log)
        }
        builder.provide(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ async throws in
            await Task.yield()
            return global
        }
        builder.provide(TOAliasKey.self, dependsOn: TOGlobalKey.self) { global async throws in
            await Task.yield()
            return global
        }
        let live = try await LiveGraph(builder)
        for version in 2...4 {
            try await live.update { builder in
                builder.override(TOConfigKey.self) { () async throws in
                    await Task.yield()
                    return TakeOverNode("config\(version)", log: log)
                }
                if version == 3 {
                    builder.override(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ async throws in
                        try await Task.sleep(for: .milliseconds(1))
                        return global
                    }
                }
            }
            #expect(live.current[TOAliasKey.self] === global)
        }
        try await takeOverEventually { log.count("willRemove config3") == 1 }
        #expect(global.willRemoveCount == 0, "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config4"), "\(log.all)")
    }

    @Test(
        "many concurrent updates, serialized, each making the global's key again, under readers",
        .timeLimit(.minutes(2))
    )
    func concurrentUpdatesUnderReaders() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ in TakeOverNode(log.unique("user"), log: log) }
        let live = try await LiveGraph(builder)
        let flags = TakeOverFlags()
        try await withThrowingTaskGroup(of: Void.self) { readers in
            for _ in 0..<4 {
                readers.addTask {
                    while !flags.stop.load(ordering: .acquiring) {
                        let graph = live.current
                        if !graph[TOGlobalKey.self].isRunning || !graph[TOUserKey.self].isRunning {
                            flags.removedSeen.add(1, ordering: .relaxed)
                        }
                        await Task.yield()
                    }
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { updates in
                for version in 2...17 {
                    updates.addTask { try await reconfigure(live, log, "config\(version)") }
                }
                try await updates.waitForAll()
            }
            flags.stop.store(true, ordering: .releasing)
            try await readers.waitForAll()
        }
        #expect(live.generation == 17)
        #expect(flags.removedSeen.load(ordering: .relaxed) == 0, "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1, "\(log.all)")
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
    }

    @Test("a child graph's builder is refused, even one of the current generation returning the global")
    func childBuilderIsRefused() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        let live = try await LiveGraph(takeOverChain(log, global: global))
        var child = live.current.makeChildBuilder()
        child.provide(TOAliasKey.self, dependsOn: TOGlobalKey.self) { global in global }
        child.provide(TOOtherKey.self) { TakeOverNode("child-other", log: log) }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await LiveGraph(child) }
        #expect(error?.codes == [.unsupported])
        let empty = await #expect(throws: ServiceGraphError.self) {
            _ = try await LiveGraph(live.current.makeChildBuilder())
        }
        #expect(empty?.codes == [.unsupported])
        #expect(log.count("didAdd child-other") == 0)
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 0)
        try await reconfigure(live, log, "config2")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
    }

    @Test("taken over, then its key removed: the generation holding it removes it on retiring, and only that one")
    func takenOverThenRemoved() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ in TakeOverNode(log.unique("user"), log: log) }
        let live = try await LiveGraph(builder)
        try await reconfigure(live, log, "config2")
        try await live.update { builder in
            builder.remove(TOUserKey.self)
            builder.remove(TOGlobalKey.self)
        }
        try await takeOverEventually { global.willRemoveCount > 0 }
        #expect(global.willRemoveCount == 1, "\(log.all)")
        #expect(log.count("willRemove config2") == 0)
        #expect(removedBefore(log, "user#2", "global"), "\(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
    }

    @Test("a reader shuts the replaced generation down itself after the take-over: the global stays started")
    func replacedGenerationShutDownDirectly() async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = takeOverChain(log, global: global)
        builder.provide(TOUserKey.self, dependsOn: TOGlobalKey.self) { _ in TakeOverNode(log.unique("user"), log: log) }
        let live = try await LiveGraph(builder)
        let old = live.current
        try await reconfigure(live, log, "config2")
        try await old.shutdown()
        #expect(log.count("willRemove user#1") == 1)
        #expect(log.count("willRemove config1") == 1)
        #expect(
            global.isRunning,
            "shutting the replaced generation down removed what the current one hands out: \(log.all)"
        )
        #expect(live.current[TOUserKey.self].isRunning)
        try await live.shutdown()
        #expect(global.didAddCount == 1)
        #expect(global.willRemoveCount == 1)
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "user#2", "global"), "\(log.all)")
        #expect(removedBefore(log, "global", "config2"), "\(log.all)")
    }

    @Test(
        "the global returned again by a later generation while an older one that started it is still held",
        arguments: [false, true]
    )
    func returnedAgainWhileAnOlderGenerationHoldsIt(createdOnFirstUse: Bool) async throws {
        let log = TakeOverLog()
        let global = TakeOverNode("global", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(TOConfigKey.self) { TakeOverNode("config1", log: log) }
        builder.provide(TOPlainKey.self, dependsOn: TOConfigKey.self) { _ in TakeOverNode(log.unique("plain"), log: log)
        }
        if createdOnFirstUse {
            builder.provide(TOLazyGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
            builder.provide(TOConsoleKey.self, dependsOn: Lazy<TOLazyGlobalKey>.self) { $0 }
        } else {
            builder.provide(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
        }
        let live = try await LiveGraph(builder)
        var first: ServiceGraph? = live.current
        if createdOnFirstUse {
            // Created in generation 1; generation 2 is never asked for it; generation 3 is.
            #expect(try await live.current.resolve(TOLazyGlobalKey.self) === global)
            try await reconfigure(live, log, "config2")
            try await reconfigure(live, log, "config3")
            #expect(try await live.current.resolve(TOLazyGlobalKey.self) === global)
        } else {
            // Generation 2 hands out another instance; generation 3 returns the global again.
            try await live.update { builder in
                builder.override(TOConfigKey.self) { TakeOverNode("config2", log: log) }
                builder.override(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in
                    TakeOverNode("interim", log: log)
                }
            }
            try await live.update { builder in
                builder.override(TOConfigKey.self) { TakeOverNode("config3", log: log) }
                builder.override(TOGlobalKey.self, dependsOn: TOConfigKey.self) { _ in global }
            }
            #expect(live.current[TOGlobalKey.self] === global)
        }
        // Generation 1, held all along, still has the global started: it is not started a second time.
        #expect(global.didAddCount == 1, "\(log.all)")
        first = nil
        // Generations 1 and 2 retire (oldest first); the global generation 3 hands out stays started.
        try await takeOverEventually { log.count("willRemove config2") == 1 }
        #expect(first == nil)
        #expect(log.count("willRemove config2") == 1)
        #expect(global.isRunning, "the current generation hands out a removed instance: \(log.all)")
        try await live.shutdown()
        #expect(global.didAddCount == 1, "\(log.all)")
        #expect(global.willRemoveCount == 1, "\(log.all)")
        #expect(log.unbalanced().isEmpty, "\(log.unbalanced())")
        #expect(log.violations.isEmpty, "\(log.violations)")
        #expect(removedBefore(log, "global", "config3"), "\(log.all)")
    }
}
