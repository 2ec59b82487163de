import ServiceGraph
import ServiceGraphTestSupport
import Testing

// A scope is two objects: the handle its caller holds (`ServiceScope`) and the scope itself, which the
// graph holds strongly while it is open. These tests pin what that split must keep: the end of the handle
// is the end of the scope, whatever still reaches the scope without the handle (a provider, a lazy
// handle, the graph's shutdown); an open scope keeps its graph alive and a finished one lets it go.

private enum SlowKey: ServiceKey { typealias Value = HookedService }
private enum HolderKey: ServiceKey { typealias Value = Holder }
private enum OuterKey: ServiceKey { typealias Value = HookedService }
private enum InnerKey: ServiceKey { typealias Value = HookedService }

private struct Holder: Sendable {
    let slow: Provider<SlowKey>
}

extension ScopeKind {
    fileprivate static let outer = ScopeKind("outer")
    fileprivate static let inner = ScopeKind("inner", inside: .outer)
}

@Suite("Scope handles")
struct ScopeHandleTests {
    @Test(
        "a provider's resolve in flight when the scope's handle is dropped: its instance is made, then released with the scope, after the resolve returned"
    )
    func providerResolveInFlightOutlivesTheHandle() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(SlowKey.self, lifetime: .scoped) {
            log.record("factory started")
            await gate.wait()
            return HookedService("slow", log: log)
        }
        builder.provide(HolderKey.self, lifetime: .scoped, dependsOn: Provider<SlowKey>.self) { Holder(slow: $0) }
        let graph = try await builder.build()
        var scope: ServiceScope? = try graph.makeScope()
        let holder = try await scope!.resolve(HolderKey.self)
        let resolve = Task { try await holder.slow() }
        try await log.waitFor("factory started")
        // The handle goes while the provider's resolve waits for the factory.
        scope = nil
        #expect(log.index(of: "willRemove slow") == nil)
        await gate.open()
        let slow = try await resolve.value
        #expect(slow.name == "slow")
        // Released once the resolve returned, with its hook: the scope owned it.
        try await log.waitFor("willRemove slow")
        #expect(log.all == ["factory started", "init slow", "didAdd slow", "willRemove slow"])
        // The scope is gone: its provider says so.
        let error = try await #require(throws: ServiceGraphError.self) { try await holder.slow() }
        #expect(error.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    @Test("an open scope keeps its graph alive; a closed one, still held, does not")
    func anOpenScopeKeepsItsGraph() async throws {
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(SlowKey.self, lifetime: .scoped) { HookedService("scoped", log: EventLog()) }
        var graph: ServiceGraph? = try await builder.build()
        weak let weakGraph = graph
        let scope = try graph!.makeScope()
        graph = nil
        #expect(weakGraph != nil, "the open scope holds its graph")
        _ = try await scope.resolve(SlowKey.self)
        try await scope.close()
        #expect(weakGraph == nil, "the closed scope let its graph go")
        #expect(scope.isClosed)
    }

    @Test(
        "dropped handles of nested scopes, the outer first, both owing hooks: the inner scope releases first, then the outer, and the graph's shutdown waits for both"
    )
    func droppedNestedHandles() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.inScope(.outer) { $0.provide(OuterKey.self, lifetime: .scoped) { HookedService("outer", log: log) } }
        builder.inScope(.inner) { $0.provide(InnerKey.self, lifetime: .scoped) { HookedService("inner", log: log) } }
        let graph = try await builder.build()
        for round in 0..<50 {
            var outer: ServiceScope? = try graph.makeScope(.outer)
            var inner: ServiceScope? = try outer!.makeScope(.inner)
            _ = try await outer!.resolve(OuterKey.self)
            _ = try await inner!.resolve(InnerKey.self)
            // The inner scope keeps the outer one: dropping the outer handle first releases nothing.
            outer = nil
            #expect(log.count(of: "willRemove outer") == round)
            inner = nil
            try await log.waitFor("willRemove outer", count: round + 1)
        }
        try await withDeadline { try await graph.shutdown() }
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == Array(repeating: ["willRemove inner", "willRemove outer"], count: 50).flatMap { $0 })
    }

    @Test(
        "the graph's shutdown closes open scopes whose handles are held, and a handle dropped afterwards releases nothing twice"
    )
    func shutdownClosesHeldScopes() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(SlowKey.self, lifetime: .scoped) { HookedService("scoped", log: log) }
        let graph = try await builder.build()
        var scopes: [ServiceScope] = []
        for _ in 0..<20 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(SlowKey.self)
            scopes.append(scope)
        }
        try await graph.shutdown()
        #expect(log.count(of: "willRemove scoped") == 20)
        #expect(scopes.allSatisfy { $0.isClosed })
        scopes = []
        #expect(log.count(of: "willRemove scoped") == 20)
        let error = try #require(throws: ServiceGraphError.self) { try graph.makeScope() }
        #expect(error.codes == [.graphShutDown])
    }
}

extension EventLog {
    /// Waits (polling, with a deadline) until `entry` was recorded `count` times.
    fileprivate func waitFor(_ entry: String, count: Int, within limit: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + limit
        while self.count(of: entry) < count {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("\(entry) was recorded fewer than \(count) times")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
