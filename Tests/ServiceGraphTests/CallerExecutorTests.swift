import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// `build()` and `shutdown()` run on the caller's executor: called from the main actor, they still let
/// asynchronous factories and hooks that need the main actor run (the build waits for them suspended,
/// not blocking it).
@Suite("Build and shutdown on the caller's executor")
struct CallerExecutorTests {
    private enum PlainKey: ServiceKey { typealias Value = Int }
    private enum FromMainActorKey: ServiceKey { typealias Value = String }
    private enum HookedKey: ServiceKey { typealias Value = MainActorHooks }

    /// Hooks that do their work on the main actor.
    private final class MainActorHooks: LifecycleHooks, Sendable {
        let log: EventLog
        init(log: EventLog) { self.log = log }
        func didAdd() async throws { await MainActor.run { log.record("didAdd on main") } }
        func willRemove() async throws { await MainActor.run { log.record("willRemove on main") } }
    }

    @MainActor
    @Test func aBuildFromTheMainActorLetsFactoriesAndHooksUseIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(PlainKey.self) { 1 }
        builder.provide(FromMainActorKey.self, dependsOn: PlainKey.self) { _ in
            await MainActor.run { "made with the main actor" }
        }
        builder.provide(HookedKey.self, dependsOn: FromMainActorKey.self) { _ in MainActorHooks(log: log) }
        let graph = try await builder.build()
        #expect(graph[PlainKey.self] == 1)
        #expect(graph[FromMainActorKey.self] == "made with the main actor")
        #expect(log.count(of: "didAdd on main") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove on main") == 1)
    }
}
