import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Scopes and graphs released without `close()` or `shutdown()`: nothing leaks, and nothing is silent.
@Suite("Dropped scopes and graphs")
struct DroppedValuesTests {
    private enum SessionKey: ServiceKey { typealias Value = Session }
    private enum CartKey: ServiceKey { typealias Value = HookedService }

    private final class Session: Sendable {
        let live: LiveCount
        init(live: LiveCount) {
            self.live = live
            live.add()
        }
        deinit { live.remove() }
    }

    /// Counts live instances.
    final class LiveCount: Sendable {
        private let tally = Locked(0)
        func add() { tally.withLock { $0 += 1 } }
        func remove() { tally.withLock { $0 -= 1 } }
        var count: Int { tally.withLock { $0 } }
    }

    @Test func droppedScopesDoNotKeepTheirInstances() async throws {
        let live = LiveCount()
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 1 }
        builder.provide(SessionKey.self, lifetime: .scoped, dependsOn: IntKey.self) { _ in Session(live: live) }
        let graph = try await builder.build()
        var peak = 0
        for round in 0..<100_000 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(SessionKey.self)
            if round % 1_000 == 0 { peak = max(peak, live.count) }
        }
        #expect(live.count == 0, "every dropped scope released its instance")
        #expect(peak <= 1)
        try await graph.shutdown()
    }

    @Test func aDroppedScopeRunsTheHooksItOwedInReverseOrderBeforeTheGraphReleasesSingletons() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(ServiceB.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in HookedService("B", log: log)
        }
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ServiceB.self) { _ in
            HookedService("cart", log: log)
        }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(CartKey.self)
        }
        try await graph.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove cart", "willRemove B", "willRemove A"])
        let dropped = events.withLock { $0.filter { $0.kind == .scopeDropped } }
        #expect(dropped.count == 1)
        let owed = try #require(dropped.first?.key)
        let cart = try #require(owed.firstRange(of: "CartKey"))
        let b = try #require(owed.firstRange(of: "ServiceB"))
        #expect(cart.lowerBound < b.lowerBound, "listed in the order the hooks run")
    }

    @Test func aGraphDroppedWithoutShutdownSaysWhichHooksDidNotRun() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in HookedService("B", log: log) }
        builder.provide(IntKey.self) { 3 }
        var graph: ServiceGraph? = try await builder.build()
        #expect(graph?[IntKey.self] == 3)
        graph = nil
        let dropped = events.withLock { $0.filter { $0.kind == .droppedWithoutShutdown } }
        #expect(dropped.count == 1)
        #expect(dropped.first?.key == "ServiceA, ServiceB")
        #expect(log.count(of: "willRemove A") == 0, "a dropped graph cannot run async hooks")
    }

    @Test func aGraphWithoutHooksCanBeDroppedSilently() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(IntKey.self) { 3 }
        var graph: ServiceGraph? = try await builder.build()
        #expect(graph?[IntKey.self] == 3)
        graph = nil
        #expect(events.withLock { $0.filter { $0.kind == .droppedWithoutShutdown } }.isEmpty)
    }

    #if DEBUG
    @Test func aGraphDroppedWithoutShutdownStopsADebugBuild() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var builder = ServiceGraph.Builder()
            builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
            var graph: ServiceGraph? = try await builder.build()
            _ = graph
            graph = nil
        }.map { result in
            let message = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(message.contains("released without `try await graph.shutdown()`"))
            #expect(message.contains("ServiceA"))
        }
    }
    #endif
}
