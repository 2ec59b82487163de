import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

private enum LiveConfigKey: ServiceKey { typealias Value = HookedService }
private enum LiveDatabaseKey: ServiceKey { typealias Value = HookedService }
private enum LiveMailerKey: ServiceKey { typealias Value = HookedService }
private enum LiveSignupKey: ServiceKey { typealias Value = HookedService }
private enum LiveFeatureKey: ServiceKey { typealias Value = HookedService }
private enum LiveExtraKey: ServiceKey { typealias Value = HookedService }
private enum LiveReportKey: ServiceKey { typealias Value = String }
private enum LiveConnectionKey: ServiceKey { typealias Value = HookedService }
private enum LiveSessionKey: ServiceKey { typealias Value = HookedService }

private enum LiveLazyReportKey: ServiceKey { typealias Value = HookedService }
private enum LiveConsoleKey: ServiceKey { typealias Value = Lazy<LiveLazyReportKey> }
private enum LiveCounterKey: ServiceKey { typealias Value = CountedService }
private enum LiveCounterUserKey: ServiceKey { typealias Value = CountedService }

/// A service that counts its live instances and knows whether its `willRemove` ran: a reader must
/// never get one that has been removed.
private final class CountedService: LifecycleHooks, Sendable {
    let version: Int
    let counter: InstanceCounter
    private let removed = Atomic<Bool>(false)

    init(version: Int, counter: InstanceCounter) {
        self.version = version
        self.counter = counter
        counter.alive.add(1, ordering: .relaxed)
    }

    deinit { counter.alive.subtract(1, ordering: .relaxed) }

    var isRemoved: Bool { removed.load(ordering: .acquiring) }

    func didAdd() async throws {}

    func willRemove() async throws { removed.store(true, ordering: .releasing) }
}

private final class StressFlags: Sendable {
    let stop = Atomic<Bool>(false)
    let removedSeen = Atomic<Int>(0)
    let reads = Atomic<Int>(0)
}

private final class InstanceCounter: Sendable {
    let alive = Atomic<Int>(0)
}

/// Config ← Mailer ← Signup → Database: Signup depends on the mailer and the database, the mailer on
/// the config. The version goes into each name, so a log tells generations apart.
private func appBuilder(_ log: EventLog, version: Int = 1) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(LiveConfigKey.self) { HookedService("config\(version)", log: log) }
    builder.provide(LiveDatabaseKey.self) { HookedService("database\(version)", log: log) }
    builder.provide(LiveMailerKey.self, dependsOn: LiveConfigKey.self) { config in
        HookedService("mailer(\(config.name))", log: log)
    }
    builder.provide(LiveSignupKey.self, dependsOn: LiveMailerKey.self, LiveDatabaseKey.self) { mailer, database in
        HookedService("signup(\(mailer.name),\(database.name))", log: log)
    }
    return builder
}

@Suite("A live graph: generations made by updates")
struct LiveGraphTests {
    @Test("overriding a key makes it and its dependents again, and shares the rest")
    func overrideRebuildsDependentsOnly() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let first = live.current
        let database = first[LiveDatabaseKey.self]
        let plan = try await live.update { builder in
            builder.override(LiveConfigKey.self) { HookedService("config2", log: log) }
        }
        #expect(live.generation == 2)
        #expect(plan.generation == 2)
        #expect(plan.changed == ["LiveConfigKey"])
        #expect(plan.rebuilt == ["LiveConfigKey", "LiveMailerKey", "LiveSignupKey"])
        #expect(plan.shared == ["LiveDatabaseKey"])
        let next = live.current
        #expect(next !== first)
        #expect(next[LiveDatabaseKey.self] === database)
        #expect(next[LiveSignupKey.self].name == "signup(mailer(config2),database1)")
        // The old generation still hands out its own instances.
        #expect(first[LiveMailerKey.self].name == "mailer(config1)")
        try await live.shutdown()
        let entries = log.all
        // Shared: started once, removed once. Replaced: removed dependents first, after the new ones started.
        #expect(log.count(of: "didAdd database1") == 1)
        #expect(log.count(of: "willRemove database1") == 1)
        #expect(log.count(of: "didAdd config2") == 1)
        let order = [
            "didAdd config2", "didAdd mailer(config2)", "didAdd signup(mailer(config2),database1)",
            "willRemove signup(mailer(config1),database1)", "willRemove mailer(config1)", "willRemove config1",
        ]
        let positions = try order.map { entry in try #require(entries.firstIndex(of: entry), "\(entries)") }
        #expect(positions == positions.sorted(), "\(entries)")
        // The new generation's shutdown: what depends on the database goes before it.
        let signup2 = try #require(entries.firstIndex(of: "willRemove signup(mailer(config2),database1)"))
        let database1 = try #require(entries.firstIndex(of: "willRemove database1"))
        #expect(signup2 < database1)
    }

    @Test("a dry run names what an update would do and runs nothing")
    func planRunsNothing() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let before = log.all
        let plan = try live.plan { builder in
            builder.override(LiveDatabaseKey.self) { HookedService("database2", log: log) }
            builder.provide(LiveExtraKey.self, dependsOn: LiveDatabaseKey.self) { _ in HookedService("extra", log: log)
            }
        }
        #expect(log.all == before)
        #expect(live.generation == 1)
        #expect(Set(plan.changed) == ["LiveDatabaseKey", "LiveExtraKey"])
        #expect(Set(plan.rebuilt) == ["LiveDatabaseKey", "LiveSignupKey", "LiveExtraKey"])
        #expect(Set(plan.shared) == ["LiveConfigKey", "LiveMailerKey"])
        #expect(plan.added == ["LiveExtraKey"])
        #expect(plan.removed.isEmpty)
        #expect(plan.description.contains("rebuilt (3)"))
        try await live.shutdown()
    }

    @Test("removing a key a service still requires is refused, naming the service; nothing changes")
    func removingARequiredKeyIsRefused() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let first = live.current
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { $0.remove(LiveMailerKey.self) }
        }
        let problem = try #require(error?.problems.first)
        #expect(problem.code == .missingProvider)
        #expect(
            problem.message.contains("LiveMailerKey is removed, but LiveSignupKey still requires it"),
            "\(problem.message)"
        )
        #expect(live.current === first)
        #expect(live.generation == 1)
        // Removing the dependent too is accepted; both go, with their hooks, after the commit.
        let plan = try await live.update { builder in
            builder.remove(LiveMailerKey.self)
            builder.remove(LiveSignupKey.self)
        }
        #expect(Set(plan.removed) == ["LiveMailerKey", "LiveSignupKey"])
        #expect(plan.rebuilt.isEmpty)
        #expect(Set(plan.shared) == ["LiveConfigKey", "LiveDatabaseKey"])
        #expect(throws: ServiceGraphError.self) { try live.current.resolveSynchronously(LiveMailerKey.self) }
        try await live.shutdown()
        #expect(log.count(of: "willRemove mailer(config1)") == 1)
        #expect(log.count(of: "willRemove config1") == 1)
    }

    @Test("removing a key the graph does not have is an error")
    func removingAnUnknownKeyIsAnError() async throws {
        let live = try await LiveGraph(appBuilder(EventLog()))
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { $0.remove(LiveFeatureKey.self) }
        }
        #expect(error?.problems.map(\.code) == [.keyNotFound])
        #expect(error?.problems.first?.key == "LiveFeatureKey")
        try await live.shutdown()
    }

    @Test("removing a key the graph does not have, then providing it, adds it")
    func removingThenProvidingAnUnknownKeyAddsIt() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let plan = try await live.update { builder in
            builder.remove(LiveFeatureKey.self)
            builder.provide(LiveFeatureKey.self) { HookedService("feature", log: log) }
        }
        #expect(plan.added == ["LiveFeatureKey"])
        #expect(try live.current.resolveSynchronously(LiveFeatureKey.self).name == "feature")
        #expect(log.count(of: "didAdd feature") == 1)
        try await live.shutdown()
    }

    @Test("a child graph's builder is refused, with what to do instead; the parent is untouched")
    func childBuilderIsRefused() async throws {
        let log = EventLog()
        let parent = try await appBuilder(log).build()
        var child = parent.makeChildBuilder()
        child.provide(LiveExtraKey.self) { HookedService("extra", log: log) }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await LiveGraph(child) }
        #expect(error?.codes == [.unsupported])
        #expect(error?.description.contains("root graph's builder") == true)
        #expect(log.count(of: "didAdd extra") == 0)
        try await parent.shutdown()
        #expect(log.count(of: "willRemove config1") == 1)
    }

    @Test("a change set's problems are reported together, as validate() reports them")
    func everyProblemAtOnce() async throws {
        let live = try await LiveGraph(appBuilder(EventLog()))
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { builder in
                builder.provide(LiveFeatureKey.self, dependsOn: LiveExtraKey.self) { $0 }
                builder.provide(LiveReportKey.self, dependsOn: LiveFeatureKey.self, LiveReportKey.self) { _, report in
                    report
                }
            }
        }
        let codes = Set(error?.problems.map(\.code) ?? [])
        #expect(codes.contains(.missingProvider))
        #expect(codes.contains(.cycle))
        #expect(live.generation == 1)
        try await live.shutdown()
    }

    @Test("a failing didAdd rolls the update back: the current generation keeps serving")
    func failureRollsBack() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let first = live.current
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { builder in
                builder.override(LiveConfigKey.self) { HookedService("config2", log: log) }
                builder.override(LiveMailerKey.self, dependsOn: LiveConfigKey.self) { _ in
                    HookedService("mailer2", log: log, failDidAdd: true)
                }
            }
        }
        #expect(error?.problems.first?.code == .didAddFailed)
        #expect(error?.problems.first?.key == "LiveMailerKey")
        #expect(live.current === first)
        #expect(live.generation == 1)
        // What the failed update started is released; the shared and the current instances are not.
        #expect(log.count(of: "willRemove config2") == 1)
        #expect(log.count(of: "willRemove config1") == 0)
        #expect(log.count(of: "willRemove database1") == 0)
        #expect(first[LiveMailerKey.self].name == "mailer(config1)")
        try await live.shutdown()
        #expect(log.count(of: "willRemove config1") == 1)
        #expect(log.count(of: "willRemove database1") == 1)
    }

    @Test("a scope opened on the old generation keeps its instances until it closes")
    func oldScopeKeepsOldInstances() async throws {
        let log = EventLog()
        var builder = appBuilder(log)
        builder.provide(LiveReportKey.self, lifetime: .scoped, dependsOn: LiveMailerKey.self) { mailer in mailer.name }
        let live = try await LiveGraph(builder)
        let scope = try live.current.makeScope()
        #expect(try await scope.resolve(LiveReportKey.self) == "mailer(config1)")
        try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        // The replaced instances wait for the scope: it still reads them.
        for _ in 0..<20 { await Task.yield() }
        #expect(log.count(of: "willRemove mailer(config1)") == 0)
        #expect(try await scope.resolve(LiveReportKey.self) == "mailer(config1)")
        let fresh = try live.current.makeScope()
        #expect(try await fresh.resolve(LiveReportKey.self) == "mailer(config2)")
        log.record("closing the old scope")
        try await scope.close()
        try await fresh.close()
        try await live.shutdown()
        let closing = try #require(log.index(of: "closing the old scope"))
        let removed = try #require(log.index(of: "willRemove mailer(config1)"))
        #expect(closing < removed)
    }

    @Test("concurrent updates are serialized, and none is lost")
    func concurrentUpdatesAreSerialized() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        await withTaskGroup(of: Void.self) { group in
            for version in 2...9 {
                group.addTask {
                    _ = try? await live.update { builder in
                        builder.override(LiveDatabaseKey.self) { HookedService("database\(version)", log: log) }
                    }
                }
            }
        }
        #expect(live.generation == 9)
        try await live.shutdown()
        // Each database made was started once and removed once.
        for version in 1...9 {
            #expect(log.count(of: "didAdd database\(version)") == 1)
            #expect(log.count(of: "willRemove database\(version)") == 1)
        }
        #expect(log.count(of: "didAdd config1") == 1)
        #expect(log.count(of: "willRemove config1") == 1)
    }

    @Test("an update after shutdown is refused")
    func updateAfterShutdown() async throws {
        let live = try await LiveGraph(appBuilder(EventLog()))
        try await live.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { $0.remove(LiveSignupKey.self) }
        }
        #expect(error?.problems.first?.code == .graphShutDown)
    }

    @Test("an update of a current generation shut down directly is refused: its instances are gone")
    func updateAfterTheCurrentGenerationWasShutDown() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        try await live.current.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        }
        #expect(error?.problems.first?.code == .graphShutDown)
        #expect(!log.all.contains("init config2"))
        try await live.shutdown()
        #expect(log.count(of: "willRemove database1") == 1)
    }

    @Test("readers on many tasks never get a removed instance while updates commit")
    func readersNeverSeeARemovedInstance() async throws {
        let counter = InstanceCounter()
        var builder = ServiceGraph.Builder()
        builder.provide(LiveCounterKey.self) { CountedService(version: 0, counter: counter) }
        builder.provide(LiveCounterUserKey.self, dependsOn: LiveCounterKey.self) { base in
            CountedService(version: base.version, counter: counter)
        }
        let live = try await LiveGraph(builder)
        let flags = StressFlags()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    while !flags.stop.load(ordering: .acquiring) {
                        let graph = live.current
                        let user = graph[LiveCounterUserKey.self]
                        let base = graph[LiveCounterKey.self]
                        if user.isRemoved || base.isRemoved || user.version != base.version {
                            flags.removedSeen.add(1, ordering: .relaxed)
                        }
                        flags.reads.add(1, ordering: .relaxed)
                        await Task.yield()
                    }
                }
            }
            for version in 1...40 {
                try await live.update { builder in
                    builder.override(LiveCounterKey.self) { CountedService(version: version, counter: counter) }
                }
            }
            flags.stop.store(true, ordering: .releasing)
            try await group.waitForAll()
        }
        #expect(flags.removedSeen.load(ordering: .relaxed) == 0)
        #expect(flags.reads.load(ordering: .relaxed) > 0)
        #expect(live.generation == 41)
        #expect(live.current[LiveCounterUserKey.self].version == 40)
        try await live.shutdown()
    }

    @Test("a generation a reader still holds retires once it is dropped; every replaced instance is freed")
    func heldGenerationRetiresWhenDropped() async throws {
        let counter = InstanceCounter()
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(LiveCounterKey.self) { CountedService(version: 0, counter: counter) }
            let live = try await LiveGraph(builder)
            var held: ServiceGraph? = live.current
            let first = try #require(held)[LiveCounterKey.self]
            try await live.update { builder in
                builder.override(LiveCounterKey.self) { CountedService(version: 1, counter: counter) }
            }
            // Held: not retired, however long it is held.
            try await Task.sleep(for: .milliseconds(30))
            #expect(!first.isRemoved)
            held = nil
            // Dropped: it retires on its own (within a bound, not a timing assertion).
            for _ in 0..<500 where !first.isRemoved { try await Task.sleep(for: .milliseconds(2)) }
            #expect(first.isRemoved)
            #expect(held == nil)
            try await live.update { builder in
                builder.override(LiveCounterKey.self) { CountedService(version: 2, counter: counter) }
            }
            try await live.shutdown()
        }
        // The live graph, its generations and their instances are gone: nothing leaked.
        for _ in 0..<500 where counter.alive.load(ordering: .relaxed) != 0 {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(counter.alive.load(ordering: .relaxed) == 0)
    }

    @Test("shutdown retires a generation a reader still holds")
    func shutdownForcesRetirement() async throws {
        let counter = InstanceCounter()
        var builder = ServiceGraph.Builder()
        builder.provide(LiveCounterKey.self) { CountedService(version: 0, counter: counter) }
        let live = try await LiveGraph(builder)
        let held = live.current
        let scope = try held.makeScope()
        try await live.update { builder in
            builder.override(LiveCounterKey.self) { CountedService(version: 1, counter: counter) }
        }
        try await live.shutdown()
        #expect(held[LiveCounterKey.self].isRemoved)
        #expect(live.current[LiveCounterKey.self].isRemoved)
        #expect(scope.isClosed)
    }

    @Test("updates and retirements are reported as events, with what changed")
    func updateEvents() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = appBuilder(log)
        builder.eventKinds = [.updateCommitted, .updateFailed, .generationRetired]
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        let live = try await LiveGraph(builder)
        try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        await #expect(throws: ServiceGraphError.self) { try await live.update { $0.remove(LiveConfigKey.self) } }
        try await live.shutdown()
        let recorded = events.withLock { $0 }
        #expect(recorded.map(\.kind) == [.updateCommitted, .updateFailed, .generationRetired], "\(recorded)")
        let committed = try #require(recorded.first)
        #expect(committed.key == "generation 2")
        #expect(committed.update?.rebuilt == ["LiveConfigKey", "LiveMailerKey", "LiveSignupKey"])
        #expect(committed.update?.shared == ["LiveDatabaseKey"])
        #expect(committed.duration != nil)
        #expect(committed.description.contains("rebuilt 3, shared 1"), "\(committed)")
        #expect(recorded[1].error is ServiceGraphError)
        #expect(recorded[2].key == "generation 1")
        #expect(recorded[2].error == nil)
    }

    @Test("the dump of an update's plan marks what it makes again, shares and adds, in every format")
    func planDumpMarksTheUpdate() async throws {
        let log = EventLog()
        let live = try await LiveGraph(appBuilder(log))
        let plan = try live.plan { builder in
            builder.override(LiveConfigKey.self) { HookedService("config2", log: log) }
            builder.provide(LiveExtraKey.self, dependsOn: LiveDatabaseKey.self) { _ in HookedService("extra", log: log)
            }
        }
        let text = plan.dump(.text)
        func line(_ name: String) throws -> Substring {
            try #require(text.split(separator: "\n").first { $0.contains("\(name):") }, "\(text)")
        }
        #expect(try line("LiveMailerKey").contains("↻ made again"))
        #expect(try line("LiveConfigKey").contains("↻ made again"))
        #expect(try line("LiveDatabaseKey").contains("= shared"))
        #expect(try line("LiveExtraKey").contains("+ added"))
        let json = plan.dump(.json)
        #expect(json.contains("\"mark\": \"rebuilt\""))
        #expect(json.contains("\"mark\": \"shared\""))
        #expect(json.contains("\"mark\": \"added\""))
        let mermaid = plan.dump(.mermaid)
        #expect(mermaid.contains(" rebuilt\n") && mermaid.contains(" added\n"), "\(mermaid)")
        let dot = plan.dump(.dot)
        #expect(dot.contains("#1971c2") && dot.contains("#2f9e44"), "\(dot)")
        // A dry run: nothing of the next generation was made.
        #expect(!log.all.contains("init config2"))
        try await live.shutdown()
    }

    @Test(
        "a singleton created on first use is shared once created, and made on first use in the next generation otherwise"
    )
    func createdOnFirstUseSingletons() async throws {
        let log = EventLog()
        var builder = appBuilder(log)
        builder.provide(LiveLazyReportKey.self, dependsOn: LiveDatabaseKey.self) { database in
            HookedService("report(\(database.name))", log: log)
        }
        builder.provide(LiveConsoleKey.self, dependsOn: Lazy<LiveLazyReportKey>.self) { $0 }
        let live = try await LiveGraph(builder)
        #expect(!log.all.contains("init report(database1)"))
        // Not created yet: the next generation creates it on its first use there, once.
        try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        #expect(!log.all.contains("init report(database1)"))
        let report = try await live.current.resolve(LiveLazyReportKey.self)
        #expect(report.name == "report(database1)")
        // Created: an update that does not reach it shares it.
        let plan = try await live.update { $0.override(LiveConfigKey.self) { HookedService("config3", log: log) } }
        #expect(plan.shared.contains("LiveLazyReportKey"))
        #expect(try await live.current.resolve(LiveLazyReportKey.self) === report)
        // One that reaches it makes it again on its next first use.
        try await live.update { $0.override(LiveDatabaseKey.self) { HookedService("database2", log: log) } }
        let again = try await live.current.resolve(LiveLazyReportKey.self)
        #expect(again !== report)
        #expect(again.name == "report(database2)")
        try await live.shutdown()
        #expect(log.count(of: "didAdd report(database1)") == 1)
        #expect(log.count(of: "willRemove report(database1)") == 1)
        #expect(log.count(of: "willRemove report(database2)") == 1)
        let removedReport = try #require(log.index(of: "willRemove report(database1)"))
        let removedDatabase = try #require(log.index(of: "willRemove database1"))
        #expect(removedReport < removedDatabase)
    }

    @Test("one instance under two keys: replacing the key that ran its hooks leaves it started, under the other")
    func instanceUnderTwoKeys() async throws {
        let log = EventLog()
        let shared = HookedService("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(LiveConfigKey.self) { shared }
        builder.provide(LiveDatabaseKey.self) { shared }
        let live = try await LiveGraph(builder)
        #expect(log.count(of: "didAdd shared") == 1)
        try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        #expect(live.current[LiveDatabaseKey.self] === shared)
        // The first generation retires: the instance the second still hands out stays started.
        for _ in 0..<50 { await Task.yield() }
        try await Task.sleep(for: .milliseconds(20))
        #expect(log.count(of: "willRemove shared") == 0)
        try await live.update { $0.override(LiveDatabaseKey.self) { HookedService("database2", log: log) } }
        try await live.shutdown()
        #expect(log.count(of: "didAdd shared") == 1)
        #expect(log.count(of: "willRemove shared") == 1)
    }

    @Test("a service made again that returns the instance it had keeps it started: no second didAdd or willRemove")
    func remadeServiceReturningItsInstance() async throws {
        let log = EventLog()
        let shared = HookedService("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(LiveConfigKey.self) { HookedService("config1", log: log) }
        builder.provide(LiveMailerKey.self, dependsOn: LiveConfigKey.self) { _ in shared }
        let live = try await LiveGraph(builder)
        let plan = try await live.update { $0.override(LiveConfigKey.self) { HookedService("config2", log: log) } }
        #expect(plan.rebuilt == ["LiveConfigKey", "LiveMailerKey"])
        #expect(live.current[LiveMailerKey.self] === shared)
        // The first generation retires (its config goes), and leaves the instance to the second.
        for _ in 0..<500 where log.count(of: "willRemove config1") == 0 {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(log.count(of: "willRemove config1") == 1)
        #expect(log.count(of: "willRemove shared") == 0)
        try await live.shutdown()
        #expect(log.count(of: "didAdd shared") == 1)
        #expect(log.count(of: "willRemove shared") == 1)
        // Removed by the generation that now holds it: before the config it was made with there.
        let removedShared = try #require(log.index(of: "willRemove shared"))
        let removedConfig = try #require(log.index(of: "willRemove config2"))
        #expect(removedShared < removedConfig)
    }

    @Test("an update that fails after taking an instance over leaves it to the current generation")
    func failedUpdateHandsTakenOverInstanceBack() async throws {
        let log = EventLog()
        let shared = HookedService("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(LiveConfigKey.self) { HookedService("config1", log: log) }
        builder.provide(LiveMailerKey.self, dependsOn: LiveConfigKey.self) { _ in shared }
        builder.provide(LiveSignupKey.self, dependsOn: LiveMailerKey.self) { _ in HookedService("signup1", log: log) }
        let live = try await LiveGraph(builder)
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { builder in
                builder.override(LiveConfigKey.self) { HookedService("config2", log: log) }
                builder.override(LiveSignupKey.self, dependsOn: LiveMailerKey.self) { _ -> HookedService in
                    throw TestFailure("signup down")
                }
            }
        }
        #expect(error?.problems.first?.code == .factoryFailed)
        // Rolled back: what the update made is removed; the instance it took over is not.
        #expect(log.count(of: "willRemove config2") == 1)
        #expect(log.count(of: "willRemove shared") == 0)
        #expect(live.generation == 1)
        #expect(live.current[LiveMailerKey.self] === shared)
        try await live.shutdown()
        #expect(log.count(of: "didAdd shared") == 1)
        #expect(log.count(of: "willRemove shared") == 1)
        let removedSignup = try #require(log.index(of: "willRemove signup1"))
        let removedShared = try #require(log.index(of: "willRemove shared"))
        let removedConfig = try #require(log.index(of: "willRemove config1"))
        #expect(removedSignup < removedShared && removedShared < removedConfig)
    }

    @Test("one instance has one owner across generations: a seed an open scope of the replaced generation owns")
    func aSeedOwnedByAScopeOfTheReplacedGenerationIsRefusedToTheNextUntilThatScopeCloses() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(LiveConnectionKey.self)
        builder.provide(LiveExtraKey.self) { HookedService("extra1", log: log) }
        // A scoped service handing the seed out: it must not run the seed's hooks in either generation.
        builder.provide(LiveSessionKey.self, lifetime: .scoped, dependsOn: LiveConnectionKey.self) { $0 }
        let live = try await LiveGraph(builder)
        let connection = HookedService("connection", log: log)
        let old = try live.current.makeScope(seeding: ScopeSeed(LiveConnectionKey.self, connection, ownedByScope: true))
        #expect(try await old.resolve(LiveSessionKey.self) === connection)
        try await live.update { $0.override(LiveExtraKey.self) { HookedService("extra2", log: log) } }
        // Owned by the replaced generation's open scope: refused, as another open scope of one graph is.
        let refused = try #require(throws: ServiceGraphError.self) {
            try live.current.makeScope(seeding: ScopeSeed(LiveConnectionKey.self, connection, ownedByScope: true))
        }
        #expect(refused.codes == [.ownedSeedInUse])
        // Borrowed by the next generation's scope meanwhile: its scoped service runs none of its hooks.
        let borrower = try live.current.makeScope(seeding: ScopeSeed(LiveConnectionKey.self, connection))
        #expect(try await borrower.resolve(LiveSessionKey.self) === connection)
        try await borrower.close()
        #expect(log.count(of: "didAdd connection") == 0)
        #expect(log.count(of: "willRemove connection") == 0)
        // Its owner closes: willRemove once; the instance is free to be owned by the next generation.
        try await old.close()
        #expect(log.count(of: "willRemove connection") == 1)
        let owner = try live.current.makeScope(
            seeding: ScopeSeed(LiveConnectionKey.self, connection, ownedByScope: true)
        )
        try await owner.close()
        #expect(log.count(of: "willRemove connection") == 2)
        #expect(log.count(of: "didAdd connection") == 0)
        try await live.shutdown()
    }
}
