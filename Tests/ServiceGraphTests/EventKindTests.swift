import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum RequestIDKey: ServiceKey { typealias Value = String }
private enum RequestServiceKey: ServiceKey { typealias Value = HookedService }

/// `Builder.eventKinds`: the handler receives the kinds listed, and the graph makes no event of the
/// others (a request scope then costs what it costs without a handler).
@Suite("Event kinds")
struct EventKindTests {
    /// A graph with a singleton, a seeded scope kind and a scoped service, all with hooks.
    private func builder(recordingInto events: Locked<[ServiceGraphEvent]>) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
        builder.seed(RequestIDKey.self)
        builder.provide(RequestServiceKey.self, lifetime: .scoped, dependsOn: ServiceA.self, RequestIDKey.self) {
            _,
            id in HookedService(id, log: EventLog())
        }
        builder.provide(IntKey.self, lifetime: .transient) { 1 }
        return builder
    }

    /// Builds, serves two scopes and a transient, shuts down: the events received, as "kind key".
    private func run(_ builder: ServiceGraph.Builder, events: Locked<[ServiceGraphEvent]>) async throws -> [String] {
        let graph = try await builder.build()
        for id in ["r1", "r2"] {
            let scope = try graph.makeScope(seeding: ScopeSeed(RequestIDKey.self, id))
            _ = try await scope.resolve(RequestServiceKey.self)
            _ = try await scope.resolve(IntKey.self)
            try await scope.close()
        }
        _ = try await graph.resolve(IntKey.self)
        try await graph.shutdown()
        return events.withLock { $0 }.map { "\($0.kind)\($0.key.map { " \($0)" } ?? "")" }
    }

    @Test func everyKindIsReceivedByDefault() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        let builder = builder(recordingInto: events)
        #expect(builder.eventKinds == Set(ServiceGraphEvent.Kind.allCases))
        #expect(ServiceGraphEvent.Kind.allCases.count == 15)  // the graph's 12 and a live graph's 3
        let seen = try await run(builder, events: events)
        #expect(
            seen.filter { $0.hasPrefix("scope opened") } == ["scope opened RequestIDKey", "scope opened RequestIDKey"]
        )
        #expect(seen.filter { $0 == "scope closed" }.count == 2)
        #expect(seen.filter { $0 == "service created RequestServiceKey" }.count == 2)
        #expect(seen.filter { $0 == "didAdd RequestServiceKey" }.count == 2)
        // Resolve events stay off without `reportsResolveEvents`.
        #expect(!seen.contains { $0.hasPrefix("resolved") })
    }

    @Test func onlyTheListedKindsAreReceived() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = builder(recordingInto: events)
        builder.eventKinds = [.buildFinished, .didAdd, .willRemove, .shutdownFinished]
        let seen = try await run(builder, events: events)
        #expect(
            seen == [
                "didAdd ServiceA", "build finished",
                "didAdd RequestServiceKey", "willRemove RequestServiceKey",
                "didAdd RequestServiceKey", "willRemove RequestServiceKey",
                "willRemove ServiceA", "shutdown finished",
            ]
        )
    }

    @Test func noKindsMeansNoEventsWithAHandlerSet() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = builder(recordingInto: events)
        builder.eventKinds = []
        builder.reportsResolveEvents = true
        let seen = try await run(builder, events: events)
        #expect(seen.isEmpty, "\(seen)")
    }

    @Test func resolveEventsNeedBothTheSwitchAndTheKind() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = builder(recordingInto: events)
        builder.reportsResolveEvents = true
        builder.eventKinds = [.resolved]
        let seen = try await run(builder, events: events)
        // Two scopes resolve the scoped service and the transient; the graph resolves the transient once.
        #expect(seen.filter { $0 == "resolved IntKey" }.count == 3, "\(seen)")
        #expect(seen.filter { $0 == "resolved RequestServiceKey" }.count == 2, "\(seen)")
        #expect(seen.allSatisfy { $0.hasPrefix("resolved ") }, "\(seen)")
        events.withLock { $0 = [] }
        builder.reportsResolveEvents = false
        #expect(try await run(builder, events: events).isEmpty)
    }

    @Test func aChildGraphSendsTheKindsItsParentWants() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.eventKinds = [.buildFinished]
        builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        #expect(childBuilder.eventKinds == [.buildFinished])
        childBuilder.provide(ServiceB.self) { HookedService("B", log: EventLog()) }
        let child = try await childBuilder.build()
        try await child.shutdown()
        try await parent.shutdown()
        #expect(events.withLock { $0 }.map(\.kind) == [.buildFinished, .buildFinished])
    }

    @Test func kindsHaveDistinctNames() {
        let names = ServiceGraphEvent.Kind.allCases.map(\.description)
        #expect(Set(names).count == names.count)
        #expect(names.first == "build started")
        #expect(ServiceGraphEvent.Kind.droppedWithoutShutdown.description == "graph dropped without shutdown")
    }
}
