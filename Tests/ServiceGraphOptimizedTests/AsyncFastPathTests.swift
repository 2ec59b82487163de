import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum Shared: ServiceKey { typealias Value = Int }
private enum Made: ServiceKey { typealias Value = Int }
private enum Top: ServiceKey { typealias Value = Int }
private enum Middle: ServiceKey { typealias Value = Int }
private enum Awaited: ServiceKey { typealias Value = Int }
private enum Bottom: ServiceKey { typealias Value = Int }
private enum Looping: ServiceKey { typealias Value = Int }
private enum Holder: ServiceKey { typealias Value = Int }
private enum PerScope: ServiceKey { typealias Value = Int }

/// A graph, filled in after it exists, for factories that reach back into it.
private final class CapturedGraph: Sendable {
    private let graph = Locked<ServiceGraph?>(nil)

    func fill(_ value: ServiceGraph?) { graph.withLock { $0 = value } }

    var value: ServiceGraph {
        get throws {
            guard let value = graph.withLock({ $0 }) else { throw TestFailure("not filled in yet") }
            return value
        }
    }
}

/// `try await resolve` of a singleton, or of a transient whose chain is synchronous, is made without
/// an asynchronous call; these pin that it behaves as the awaiting path did.
@Suite("Async resolve of synchronous services")
struct AsyncFastPathTests {
    /// A singleton, a synchronous transient over it, and `Top` → `Middle` → `Awaited` (asynchronous)
    /// → `Bottom` → `Shared`, all transients but `Shared`.
    private static func builder(calls: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(Shared.self) { 1 }
        builder.provide(Made.self, lifetime: .transient, dependsOn: Shared.self) { shared in
            calls.increment()
            return shared + 10
        }
        builder.provide(Bottom.self, lifetime: .transient, dependsOn: Shared.self) { shared in
            calls.increment()
            return shared + 100
        }
        builder.provide(Awaited.self, lifetime: .transient, dependsOn: Bottom.self) { bottom async -> Int in
            await Task.yield()
            return bottom + 1_000
        }
        builder.provide(Middle.self, lifetime: .transient, dependsOn: Awaited.self) { $0 + 10_000 }
        builder.provide(Top.self, lifetime: .transient, dependsOn: Middle.self) { $0 + 100_000 }
        builder.provide(PerScope.self, lifetime: .scoped, dependsOn: Made.self) { made async -> Int in
            await Task.yield()
            return made + 1_000_000
        }
        return builder
    }

    @Test func singletonsAndSynchronousTransientsResolveWithAwait() async throws {
        let calls = Tally()
        let graph = try await Self.builder(calls: calls).build()
        #expect(try await graph.resolve(Shared.self) == 1)
        #expect(try await graph.resolve(Made.self) == 11)
        #expect(try await graph.resolve(Made.self) == 11)
        #expect(calls.count == 2)
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(Shared.self) == 1)
        #expect(try await scope.resolve(Made.self) == 11)
        #expect(calls.count == 3)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aTransientWithAnAsynchronousFactoryDeepInItsChainIsMadeAnewEachTime() async throws {
        let calls = Tally()
        let graph = try await Self.builder(calls: calls).build()
        #expect(try await graph.resolve(Top.self) == 111_101)
        #expect(try await graph.resolve(Top.self) == 111_101)
        #expect(calls.count == 2)
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(Top.self) == 111_101)
        #expect(calls.count == 3)
        // A scoped instance with an asynchronous factory over a synchronous transient: made once.
        #expect(try await scope.resolve(PerScope.self) == 1_000_011)
        #expect(try await scope.resolve(PerScope.self) == 1_000_011)
        #expect(calls.count == 4)
        try await scope.close()
        // Its chain has an asynchronous factory: still refused without `await`.
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(Top.self) }
        #expect(error.codes == [.requiresAwait])
        try await graph.shutdown()
    }

    @Test func aFailureBelowAnAsynchronousFactoryKeepsItsPath() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Bottom.self, lifetime: .transient) { () throws -> Int in throw TestFailure("no bottom") }
        builder.provide(Awaited.self, lifetime: .transient, dependsOn: Bottom.self) { bottom async -> Int in bottom }
        builder.provide(Middle.self, lifetime: .transient, dependsOn: Awaited.self) { $0 }
        builder.provide(Top.self, lifetime: .transient, dependsOn: Middle.self) { $0 }
        let graph = try await builder.build()
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(Top.self) }
        #expect(error?.codes == [.factoryFailed])
        #expect(error?.problems.first?.path == ["Top", "Middle", "Awaited", "Bottom"])
        #expect(error?.problems.first?.underlyingError as? TestFailure == TestFailure("no bottom"))
    }

    @Test func resolvingWithAwaitAfterShutdownThrowsGraphShutDown() async throws {
        let graph = try await Self.builder(calls: Tally()).build()
        try await graph.shutdown()
        for resolve in [
            { try await graph.resolve(Shared.self) },
            { try await graph.resolve(Made.self) },
            { try await graph.resolve(Top.self) },
        ] {
            let error = await #expect(throws: ServiceGraphError.self) { try await resolve() }
            #expect(error?.codes == [.graphShutDown])
        }
    }

    @Test func resolvingWithAwaitInAClosedScopeThrowsScopeClosed() async throws {
        let graph = try await Self.builder(calls: Tally()).build()
        let scope = try graph.makeScope()
        try await scope.close()
        for resolve in [
            { try await scope.resolve(Shared.self) },
            { try await scope.resolve(Made.self) },
            { try await scope.resolve(Top.self) },
        ] {
            let error = await #expect(throws: ServiceGraphError.self) { try await resolve() }
            #expect(error?.codes == [.scopeClosed])
        }
        try await graph.shutdown()
    }

    @Test func aSynchronousTransientResolvedWithAwaitStillCatchesReentry() async throws {
        let graph = CapturedGraph()
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(Looping.self, lifetime: .transient) {
            if calls.increment() > 50 { throw TestFailure("runaway recursion") }
            return try graph.value.resolveSynchronously(Looping.self) + 1
        }
        builder.provide(Top.self, lifetime: .transient, dependsOn: Looping.self) { $0 }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let direct = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Looping.self) }
        #expect(direct?.codes == [.reentrantResolution])
        #expect(direct?.problems.first?.path == ["Looping", "Looping"])
        #expect(calls.count == 1)

        // Made as a dependency first, the re-entry is caught at the next resolve, as without `await`.
        let below = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Top.self) }
        #expect(below?.codes == [.reentrantResolution])
        #expect(below?.problems.first?.path == ["Top", "Looping", "Looping", "Looping"])
        #expect(calls.count == 3)
    }

    @Test func aSynchronousDependencyOfAnAsynchronousFactoryStillCatchesReentry() async throws {
        let graph = CapturedGraph()
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(Looping.self, lifetime: .transient) {
            if calls.increment() > 50 { throw TestFailure("runaway recursion") }
            return try graph.value.resolveSynchronously(Looping.self) + 1
        }
        builder.provide(Holder.self, lifetime: .transient, dependsOn: Looping.self) { looping async -> Int in
            await Task.yield()
            return looping
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Holder.self) }
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.path == ["Holder", "Looping", "Looping", "Looping"])
        #expect(calls.count == 2)
    }

    @Test func resolvesWithAwaitAreReportedOnceEach() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = Self.builder(calls: Tally())
        builder.provide(Looping.self, lifetime: .transient) { () throws -> Int in throw TestFailure("no") }
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.reportsResolveEvents = true
        let graph = try await builder.build()
        _ = try await graph.resolve(Shared.self)
        _ = try await graph.resolve(Made.self)
        _ = try await graph.resolve(Top.self)
        _ = try? await graph.resolve(Looping.self)
        let scope = try graph.makeScope()
        _ = try await scope.resolve(Made.self)
        _ = try await scope.resolve(PerScope.self)
        _ = try await scope.resolve(PerScope.self)
        try await scope.close()
        try await graph.shutdown()
        let resolved = events.withLock { $0 }.filter { $0.kind == .resolved }
        #expect(
            resolved.map(\.key) == [
                "Shared", "Made", "Top", "Looping", "Made", "PerScope", "PerScope",
            ]
        )
        #expect(resolved.allSatisfy { $0.duration != nil })
        #expect(resolved.map { $0.error != nil } == [false, false, false, true, false, false, false])
    }
}
