import ServiceGraph
import Synchronization
import Testing

/// A scoped service with a synchronous factory is made by the first resolve, in its own task, rather
/// than in a task started for it: what other resolves, cancellation and hooks must not notice.
@Suite("Scoped instances made by the first resolve")
struct InlineScopedCreationTests {
    /// A scoped service whose `didAdd` waits for the test, and notes whether it saw its task cancelled.
    final class SlowStart: LifecycleHooks, Sendable {
        let sawCancellation = Atomic(false)
        let didAddBegan = Atomic(false)
        let release = Atomic(false)

        func didAdd() async throws {
            didAddBegan.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
            if Task.isCancelled { sawCancellation.store(true, ordering: .releasing) }
        }
    }

    enum SlowStartKey: ServiceKey { typealias Value = SlowStart }
    enum MadeOnceKey: ServiceKey { typealias Value = HookedService }
    enum FailsOnceKey: ServiceKey { typealias Value = Int }

    @Test func cancellingTheResolveThatMakesItDoesNotCancelTheHookOthersWaitFor() async throws {
        let instances = Locked<[SlowStart]>([])
        var builder = ServiceGraph.Builder()
        builder.provide(SlowStartKey.self, lifetime: .scoped) {
            let instance = SlowStart()
            instances.withLock { $0.append(instance) }
            return instance
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let first = Task { try await scope.resolve(SlowStartKey.self) }
        try await withDeadline {
            while instances.withLock({ $0.first?.didAddBegan.load(ordering: .acquiring) }) != true {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let second = Task { try await scope.resolve(SlowStartKey.self) }
        first.cancel()
        try await Task.sleep(for: .milliseconds(20))
        let instance = try #require(instances.withLock { $0.first })
        instance.release.store(true, ordering: .releasing)
        // The cancelled resolve still gets the instance its creation made; the other waited for it.
        let fromFirst = try await withDeadline { try await first.value }
        let fromSecond = try await withDeadline { try await second.value }
        #expect(fromFirst === instance && fromSecond === instance)
        #expect(instances.withLock { $0.count } == 1)
        let sawCancellation = instance.sawCancellation.load(ordering: .acquiring)
        #expect(!sawCancellation)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test(arguments: 0..<20) func manyResolvesAtOnceMakeOneInstanceAndRunItsHookOnce(round: Int) async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(MadeOnceKey.self, lifetime: .scoped) { HookedService("scoped", log: log) }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let instances = try await withThrowingTaskGroup { group in
            for _ in 0..<64 { group.addTask { try await scope.resolve(MadeOnceKey.self) } }
            return try await group.reduce(into: [HookedService]()) { $0.append($1) }
        }
        #expect(Set(instances.map(ObjectIdentifier.init)).count == 1)
        #expect(log.count(of: "init scoped") == 1 && log.count(of: "didAdd scoped") == 1)
        try await scope.close()
        #expect(log.count(of: "willRemove scoped") == 1)
        try await graph.shutdown()
    }

    @Test func aFailedCreationFailsEveryoneWaitingAndALaterResolveTriesAgain() async throws {
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(FailsOnceKey.self, lifetime: .scoped) {
            if attempts.increment() == 1 { throw TestFailure("first attempt fails") }
            return 42
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        await #expect(throws: ServiceGraphError.self) { try await scope.resolve(FailsOnceKey.self) }
        #expect(try await scope.resolve(FailsOnceKey.self) == 42)
        #expect(try await scope.resolve(FailsOnceKey.self) == 42)
        #expect(attempts.count == 2)
        try await scope.close()
        try await graph.shutdown()
    }
}
