import ServiceGraph
import Testing
import ServiceGraphTestSupport

@Suite("Lifecycle order")
struct LifecycleOrderTests {
    /// A ← B ← C, and A ← D: C depends on B, which depends on A; D depends on A.
    private func chain(_ log: EventLog, failing: Set<String> = []) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log, failWillRemove: failing.contains("A")) }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in
            HookedService("B", log: log, failWillRemove: failing.contains("B"))
        }
        builder.provide(ServiceC.self, dependsOn: ServiceB.self) { _ in
            HookedService("C", log: log, failWillRemove: failing.contains("C"))
        }
        builder.provide(ServiceD.self, dependsOn: ServiceA.self) { _ in
            HookedService("D", log: log, failWillRemove: failing.contains("D"))
        }
        return builder
    }

    @Test func didAddRunsAfterTheServiceAndItsDependenciesAreInPlace() async throws {
        let log = EventLog()
        let graph = try await chain(log).build()
        let position = { (entry: String) in try #require(log.index(of: entry)) }
        #expect(try position("init A") < position("didAdd A"))
        #expect(try position("didAdd A") < position("init B"))
        #expect(try position("didAdd B") < position("init C"))
        #expect(try position("didAdd A") < position("init D"))
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "didAdd \(name)") == 1)
        }
        try await graph.shutdown()
    }

    @Test func releasesInReverseTopologicalOrder() async throws {
        let log = EventLog()
        let graph = try await chain(log).build()
        try await graph.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals.count == 4)
        let position = { (entry: String) in try #require(removals.firstIndex(of: entry)) }
        #expect(try position("willRemove C") < position("willRemove B"))
        #expect(try position("willRemove B") < position("willRemove A"))
        #expect(try position("willRemove D") < position("willRemove A"))
        #expect(
            removals == graph.initializationOrder.reversed().map { "willRemove " + $0.replacing("Service", with: "") }
        )
    }

    @Test func shutdownIsIdempotentAndRunsEachHookOnce() async throws {
        let log = EventLog()
        let graph = try await chain(log).build()
        try await graph.shutdown()
        try await graph.shutdown()
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
    }

    @Test func concurrentShutdownsRunEachHookOnce() async throws {
        let log = EventLog()
        let graph = try await chain(log).build()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask { try await graph.shutdown() }
            }
            try await group.waitForAll()
        }
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
    }

    @Test func aFailingWillRemoveDoesNotStopTheOthersAndAllErrorsAreReported() async throws {
        let log = EventLog()
        let graph = try await chain(log, failing: ["B", "D"]).build()
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.shutdown() }
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
        let problems = try #require(error?.problems)
        #expect(problems.map(\.code) == [.willRemoveFailed, .willRemoveFailed])
        #expect(Set(problems.map(\.key)) == ["ServiceB", "ServiceD"])
        #expect(problems.allSatisfy { $0.underlyingError is TestFailure })
        #expect(problems.allSatisfy { $0.message.contains("failed on purpose") })
    }

    @Test func resolveAfterShutdownThrowsAClearError() async throws {
        let log = EventLog()
        let graph = try await chain(log).build()
        try await graph.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(ServiceA.self) }
        #expect(error?.codes == [.graphShutDown])
        #expect(error?.description.contains("ServiceA was asked for after the graph was shut down") == true)
        #expect(throws: ServiceGraphError.self) { try graph.makeScope() }
    }

    @Test func instancesAreReleasedWhenTheGraphIsDropped() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { registry.track(HookedService("A", log: log)) }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in registry.track(HookedService("B", log: log)) }
        var graph: ServiceGraph? = try await builder.build()
        try await graph?.shutdown()
        #expect(registry.alive == 2)
        graph = nil
        #expect(registry.alive == 0)
    }
}
