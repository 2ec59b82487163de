import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum HangingKey: ServiceKey { typealias Value = Int }

/// A factory that never returns cannot hang a build: the factory timeout abandons it, and cancelling
/// the build returns at once.
@Suite("Factory timeouts and cancelled builds")
struct FactoryTimeoutTests {
    /// Ignores cancellation, and returns only when the test opens the gate (at its end).
    @Sendable private static func hang(until gate: Gate) async -> Int {
        await gate.wait()
        return 0
    }

    @Test func aFactoryPastTheTimeoutIsAbandonedAndTheRestReleased() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(HangingKey.self, dependsOn: ServiceA.self) { _ in await Self.hang(until: gate) }
        builder.provide(ServiceB.self, dependsOn: HangingKey.self) { _ in HookedService("B", log: log) }
        let error = try await withDeadline { [builder] in
            try await #require(throws: ServiceGraphError.self) { _ = try await builder.build() }
        }
        #expect(error.codes == [.factoryTimedOut])
        #expect(error.problems[0].key == "HangingKey")
        #expect(error.problems[0].path == ["ServiceB", "HangingKey"])
        #expect(error.description.contains("did not finish within"))
        #expect(log.count(of: "init B") == 0)
        #expect(log.count(of: "willRemove A") == 0, "the abandoned factory may still be using A")
        await gate.open()
        try await log.waitFor("willRemove A")
        #expect(log.count(of: "willRemove A") == 1, "released once the abandoned work ended")
    }

    @Test func aSingletonAbandonedWorkReadsIsKeptUntilItEndsThenReleased() async throws {
        // A singleton with no hooks, which the abandoned factory depends on: the failed build keeps it
        // in its slot while that work may still read it, and releases it once the work ends, even
        // while the error (which describes the failed graph) is still held.
        enum LiveKey: ServiceKey { typealias Value = LiveInstance }
        let counter = LiveCounter()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(LiveKey.self) { LiveInstance(1, in: counter) }
        builder.provide(HangingKey.self, dependsOn: LiveKey.self) { _ in await Self.hang(until: gate) }
        let error = try await withDeadline { [builder] in
            try await #require(throws: ServiceGraphError.self) { _ = try await builder.build() }
        }
        #expect(error.codes == [.factoryTimedOut])
        #expect(counter.count == 1, "the abandoned factory may still be using it")
        await gate.open()
        let deadline = ContinuousClock.now + .seconds(60)
        while counter.count != 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(counter.count == 0, "released once the abandoned work ended")
        withExtendedLifetime(error) {}
    }

    @Test func aScopedFactoryPastTheTimeoutIsAbandonedAndTheScopeStaysUsable() async throws {
        enum SessionKey: ServiceKey { typealias Value = Int }
        enum CartKey: ServiceKey { typealias Value = String }
        let gate = Gate()
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(SessionKey.self, lifetime: .scoped) {
            if attempts.increment() == 1 { return await Self.hang(until: gate) }
            return 7
        }
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: SessionKey.self) { "cart of \($0)" }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { _ = try await scope.resolve(CartKey.self) }
        }
        #expect(error?.codes == [.factoryTimedOut])
        #expect(error?.problems.first?.path.map { $0.hasSuffix("SessionKey") } == [false, true])
        #expect(try await scope.resolve(CartKey.self) == "cart of 7", "a later resolve tries again")
        try await withDeadline { try await scope.close() }
        try await graph.shutdown()
        await gate.open()
    }

    @Test func aFactoryWithinTheTimeoutIsKept() async throws {
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .seconds(30)
        builder.provide(HangingKey.self) {
            try await Task.sleep(for: .milliseconds(5))
            return 5
        }
        let graph = try await builder.build()
        #expect(graph[HangingKey.self] == 5)
        try await graph.shutdown()
    }

    @Test func cancellingABuildReturnsPromptlyEvenWhenAFactoryIgnoresCancellation() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(HangingKey.self, dependsOn: ServiceA.self) { _ in
            log.record("hanging")
            return await Self.hang(until: gate)
        }
        let build = Task { [builder] in try await builder.build() }
        try await log.waitFor("hanging")
        build.cancel()
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { _ = try await build.value }
        }
        #expect(error?.codes == [.buildCancelled])
        #expect(log.count(of: "willRemove A") == 0, "the abandoned factory may still be using A")
        await gate.open()
        try await log.waitFor("willRemove A")
        #expect(log.count(of: "willRemove A") == 1, "released once the abandoned work ended")
    }

    @Test func cancellingABuildAbandonsADidAddThatIgnoresCancellation() async throws {
        final class StuckStart: LifecycleHooks {
            let log: EventLog
            let gate: Gate
            init(log: EventLog, gate: Gate) {
                self.log = log
                self.gate = gate
            }
            func didAdd() async throws {
                log.record("didAdd stuck (started)")
                await gate.wait()
            }
            func willRemove() async throws { log.record("willRemove stuck") }
        }
        enum StuckKey: ServiceKey { typealias Value = StuckStart }
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(StuckKey.self, dependsOn: ServiceA.self) { _ in StuckStart(log: log, gate: gate) }
        let build = Task { [builder] in try await builder.build() }
        try await log.waitFor("didAdd stuck (started)")
        build.cancel()
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { _ = try await build.value }
        }
        #expect(error?.codes == [.buildCancelled])
        #expect(log.count(of: "willRemove A") == 0, "the abandoned didAdd may still be using A")
        await gate.open()
        try await log.waitFor("willRemove A")
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove stuck", "willRemove A"], "the late starter is removed first, by its own task")
    }
}
