import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum HeavyKey: ServiceKey { typealias Value = HookedService }
private enum IndexKey: ServiceKey { typealias Value = HookedService }
private enum StoreKey: ServiceKey { typealias Value = HookedService }
private enum ScreenKey: ServiceKey { typealias Value = Screen }
private enum DraftKey: ServiceKey { typealias Value = Draft }
private enum EditorKey: ServiceKey { typealias Value = Editor }
private enum SessionKey: ServiceKey { typealias Value = Draft }
private enum PanelKey: ServiceKey { typealias Value = Panel }
private enum LoopAKey: ServiceKey { typealias Value = Int }
private enum LoopBKey: ServiceKey { typealias Value = Int }
private enum MissingKey: ServiceKey { typealias Value = Int }

/// A singleton that holds a lazy handle on the heavy service, and logs its hooks.
private final class Screen: LifecycleHooks, Sendable {
    let heavy: Lazy<HeavyKey>
    let log: EventLog
    init(heavy: Lazy<HeavyKey>, log: EventLog) {
        self.heavy = heavy
        self.log = log
    }
    func didAdd() async throws { log.record("didAdd Screen") }
    func willRemove() async throws {
        log.record("willRemove Screen")
        // Still readable in its own willRemove when made: the heavy service is released after the
        // screen. (A first use during shutdown is refused.)
        if heavy.isMade { log.record("Screen saw \(try await heavy.value.name)") }
    }
}

private final class Draft: Sendable {
    let id: Int
    init(id: Int) { self.id = id }
}

private struct Editor: Sendable {
    let draft: Lazy<DraftKey>
}

private struct Panel: Sendable {
    let session: Lazy<SessionKey>
}

@Suite("Lazy dependencies")
struct LazyDependencyTests {
    /// The heavy service depends on a store that the screen needs too: the store is built, the heavy
    /// service is not.
    private func builder(log: EventLog, heavyMade: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { HookedService("Store", log: log) }
        builder.provide(HeavyKey.self, dependsOn: StoreKey.self) { _ in
            heavyMade.increment()
            return HookedService("Heavy", log: log)
        }
        builder.provide(ScreenKey.self, dependsOn: Lazy<HeavyKey>.self, StoreKey.self) { heavy, _ in
            Screen(heavy: heavy, log: log)
        }
        return builder
    }

    @Test func aSingletonOnlyALazyHandleReachesIsCreatedOnFirstUseOnce() async throws {
        let log = EventLog()
        let made = Tally()
        let graph = try await builder(log: log, heavyMade: made).build()
        #expect(made.count == 0, "the build leaves the heavy service alone")
        #expect(log.index(of: "didAdd Store") != nil, "its own dependencies are built")
        let screen = graph[ScreenKey.self]
        #expect(!screen.heavy.isMade)
        let blocked = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(HeavyKey.self) }
        #expect(blocked.codes == [.requiresAwait])
        #expect(blocked.problems[0].message.contains("created on first use"))

        let first = try await screen.heavy.value
        let again = try await screen.heavy.value
        #expect(first === again)
        #expect(made.count == 1)
        #expect(log.count(of: "didAdd Heavy") == 1)
        // Once created, it is the graph's singleton on every path.
        #expect(try await graph.resolve(HeavyKey.self) === first)
        #expect(try graph.resolveSynchronously(HeavyKey.self) === first)
        #expect(graph[HeavyKey.self] === first)

        try await graph.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") || $0.hasPrefix("Screen saw") }
        #expect(removals == ["willRemove Screen", "Screen saw Heavy", "willRemove Heavy", "willRemove Store"])
    }

    @Test func aSingletonNeverUsedIsNeverCreatedNorRemoved() async throws {
        let log = EventLog()
        let made = Tally()
        let builder = builder(log: log, heavyMade: made)
        // A screen whose willRemove does not touch the handle.
        let graph = try await builder.build()
        try await graph.shutdown()
        #expect(made.count == 0)
        #expect(!log.all.contains("didAdd Heavy") && !log.all.contains("willRemove Heavy"))
        #expect(log.all.contains("willRemove Store"))
        let late = try await #require(throws: ServiceGraphError.self) { try await graph[ScreenKey.self].heavy.value }
        #expect(late.codes == [.graphShutDown])
    }

    @Test func aHundredConcurrentFirstUsesCreateOneInstance() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = builder(log: log, heavyMade: made)
        builder.override(HeavyKey.self, dependsOn: StoreKey.self) { _ in
            made.increment()
            try await Task.sleep(for: .milliseconds(20))
            return HookedService("Heavy", log: log)
        }
        let graph = try await builder.build()
        let screen = graph[ScreenKey.self]
        let names = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for index in 0..<100 {
                group.addTask {
                    // Half through the screen's handle, half straight from the graph.
                    let heavy =
                        index.isMultiple(of: 2) ? try await screen.heavy.value : try await graph.resolve(HeavyKey.self)
                    return ObjectIdentifier(heavy)
                }
            }
            var seen = Set<ObjectIdentifier>()
            for try await identity in group { seen.insert(identity) }
            return seen
        }
        #expect(names.count == 1)
        #expect(made.count == 1)
        #expect(log.count(of: "didAdd Heavy") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    @Test func aLazyTransientIsMadeOncePerHandle() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DraftKey.self, lifetime: .transient) { Draft(id: made.increment()) }
        builder.provide(EditorKey.self, lifetime: .transient, dependsOn: Lazy<DraftKey>.self) { Editor(draft: $0) }
        let graph = try await builder.build()
        let editor = try await graph.resolve(EditorKey.self)
        let other = try graph.resolveSynchronously(EditorKey.self)
        #expect(made.count == 0)
        let firstUses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<100 { group.addTask { try await editor.draft.value.id } }
            return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(firstUses.count == 1)
        #expect(made.count == 1)
        #expect(try await other.draft.value.id != editor.draft.value.id)
        #expect(made.count == 2)
        try await graph.shutdown()
    }

    @Test func aLazyHandleMadeInAScopeResolvesInThatScope() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(SessionKey.self, lifetime: .scoped) { Draft(id: made.increment()) }
        builder.provide(PanelKey.self, lifetime: .scoped, dependsOn: Lazy<SessionKey>.self) { Panel(session: $0) }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let panel = try await scope.resolve(PanelKey.self)
        #expect(made.count == 0)
        #expect(try await panel.session.value === scope.resolve(SessionKey.self))
        #expect(made.count == 1)
        let other = try graph.makeScope()
        #expect(try await other.resolve(PanelKey.self).session.value !== panel.session.value)
        try await scope.close()
        try await other.close()
        let closed = try graph.makeScope()
        let unused = try await closed.resolve(PanelKey.self)
        try await closed.close()
        let error = try await #require(throws: ServiceGraphError.self) { try await unused.session.value }
        #expect(error.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    @Test func aFailedFirstUseIsNotKeptAndTheNextTriesAgain() async throws {
        let attempts = Tally()
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { HookedService("Store", log: log) }
        builder.provide(HeavyKey.self, dependsOn: StoreKey.self) { _ in
            if attempts.increment() == 1 { throw TestFailure("not yet") }
            return HookedService("Heavy", log: log)
        }
        builder.provide(ScreenKey.self, dependsOn: Lazy<HeavyKey>.self) { Screen(heavy: $0, log: log) }
        let graph = try await builder.build()
        let screen = graph[ScreenKey.self]
        let error = try await #require(throws: ServiceGraphError.self) { try await screen.heavy.value }
        #expect(error.codes == [.factoryFailed])
        #expect(error.problems[0].key == "HeavyKey")
        #expect(!screen.heavy.isMade)
        #expect(try await screen.heavy.value.name == "Heavy")
        #expect(attempts.count == 2)
        try await graph.shutdown()
    }

    @Test func aSingletonReachedOnlyFromALazySingletonIsCreatedWithIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(IndexKey.self) { HookedService("Index", log: log) }
        builder.provide(HeavyKey.self, dependsOn: IndexKey.self) { _ in HookedService("Heavy", log: log) }
        builder.provide(ScreenKey.self, dependsOn: Lazy<HeavyKey>.self) { Screen(heavy: $0, log: log) }
        let graph = try await builder.build()
        #expect(!log.all.contains("init Index"), "the index is only the heavy service's")
        _ = try await graph[ScreenKey.self].heavy.value
        #expect(log.all.suffix(4) == ["init Index", "didAdd Index", "init Heavy", "didAdd Heavy"])
        let dump = graph.dump()
        #expect(dump.contains("2 singletons created on first use"))
        let report = graph.startupReport()
        #expect(report.createdOnFirstUse == ["IndexKey", "HeavyKey"])
        #expect(report.description.contains("Created on first use: IndexKey, HeavyKey"))
        let order = graph.dump(.json).split(separator: "\"initializationOrder\"")[1].prefix { $0 != "]" }
        #expect(order.filter { !$0.isWhitespace } == #":["ScreenKey","IndexKey","HeavyKey""#)
        try await graph.shutdown()
        #expect(log.all.suffix(4) == ["willRemove Screen", "Screen saw Heavy", "willRemove Heavy", "willRemove Index"])
    }

    @Test func anAsyncSingletonMayUseALazyHandleWhileTheGraphBuilds() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { HookedService("Store", log: log) }
        builder.provide(HeavyKey.self, dependsOn: StoreKey.self) { _ in HookedService("Heavy", log: log) }
        builder.provide(IndexKey.self, dependsOn: Lazy<HeavyKey>.self) { heavy in
            HookedService("Index of \(try await heavy.value.name)", log: log)
        }
        let graph = try await builder.build()
        #expect(graph[IndexKey.self].name == "Index of Heavy")
        try await graph.shutdown()
        #expect(log.index(of: "willRemove Index of Heavy")! < log.index(of: "willRemove Heavy")!)
        #expect(log.index(of: "willRemove Heavy")! < log.index(of: "willRemove Store")!)
    }

    @Test func validationTreatsALazyEdgeAsADirectOne() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LoopAKey.self, dependsOn: Lazy<LoopBKey>.self) { _ in 1 }
        builder.provide(LoopBKey.self, dependsOn: LoopAKey.self) { $0 }
        builder.provide(SessionKey.self, lifetime: .scoped) { Draft(id: 0) }
        builder.provide(PanelKey.self, dependsOn: Lazy<SessionKey>.self) { Panel(session: $0) }
        builder.provide(DraftKey.self, dependsOn: Lazy<MissingKey>.self) { _ in Draft(id: 0) }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(Set(error.codes) == [.cycle, .captiveDependency, .missingProvider])
        let cycle = try #require(error.problems.first { $0.code == .cycle })
        #expect(cycle.message.contains("(lazy)"))
        let captive = try #require(error.problems.first { $0.code == .captiveDependency })
        #expect(captive.key == "PanelKey")
        let missing = try #require(error.problems.first { $0.code == .missingProvider })
        #expect(missing.message.contains("MissingKey has no provider; DraftKey requires it"))
    }

    @Test func everyDumpDrawsLazyEdgesAndLazySingletons() async throws {
        let graph = try await builder(log: EventLog(), heavyMade: Tally()).build()
        let text = graph.dump(.text)
        #expect(text.contains("(lazy)"))
        #expect(text.contains("lazy singleton"))
        #expect(text.contains("1 singleton created on first use"))
        let json = graph.dump(.json)
        #expect(json.contains("\"createdOnFirstUse\": true"))
        #expect(json.contains("\"lazy\""))
        let dot = graph.dump(.dot)
        #expect(dot.contains("label=\"lazy\""))
        #expect(dot.contains("lazy singleton"))
        let mermaid = graph.dump(.mermaid)
        #expect(mermaid.contains("lazy"))
        try await graph.shutdown()
    }

    @Test func aChildGraphCreatesNothingInItsParentUntilUsed() async throws {
        let log = EventLog()
        let made = Tally()
        let parent = try await builder(log: log, heavyMade: made).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(EditorKey.self, lifetime: .transient, dependsOn: Lazy<DraftKey>.self) { Editor(draft: $0) }
        childBuilder.provide(DraftKey.self, lifetime: .transient, dependsOn: Lazy<HeavyKey>.self) { heavy in
            Draft(id: try await heavy.value.name.count)
        }
        let child = try await childBuilder.build()
        #expect(made.count == 0, "building the child creates nothing in the parent")
        let draft = try await child.resolve(EditorKey.self).draft.value
        #expect(draft.id == "Heavy".count)
        #expect(made.count == 1)
        #expect(try await child.resolve(HeavyKey.self) === parent.resolve(HeavyKey.self))
        try await child.shutdown()
        #expect(!log.all.contains("willRemove Heavy"), "the parent owns it")
        try await parent.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    @Test func creationOnFirstUseSendsAnEvent() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = builder(log: EventLog(), heavyMade: Tally())
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        let graph = try await builder.build()
        #expect(!events.withLock { $0 }.contains { $0.kind == .serviceCreated && $0.key == "HeavyKey" })
        _ = try await graph[ScreenKey.self].heavy.value
        #expect(events.withLock { $0 }.contains { $0.kind == .serviceCreated && $0.key == "HeavyKey" })
        try await graph.shutdown()
    }
}
