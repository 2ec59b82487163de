import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

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

    // A scoped service whose dependencies are all read in place (created singletons, seeds) is made
    // without the asynchronous path: the same guarantees hold.
    enum SeedKey: ServiceKey { typealias Value = String }
    enum InPlaceKey: ServiceKey { typealias Value = HookedService }
    enum InPlaceFailsKey: ServiceKey { typealias Value = String }
    enum ThroughTransientKey: ServiceKey { typealias Value = String }
    enum InnerKey: ServiceKey { typealias Value = HookedService }
    enum OuterKey: ServiceKey { typealias Value = HookedService }

    @Test(arguments: 0..<10) func aServiceOfSeedsAndSingletonsIsMadeOnceUnderManyResolves(round: Int) async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.seed(SeedKey.self)
        builder.provide(InPlaceKey.self, lifetime: .scoped, dependsOn: ServiceA.self, SeedKey.self) { a, seed in
            made.increment()
            return HookedService("\(a.name)+\(seed)", log: log)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "r\(round)"))
        let instances = try await withThrowingTaskGroup(of: HookedService.self) { group in
            for _ in 0..<100 { group.addTask { try await scope.resolve(InPlaceKey.self) } }
            return try await group.reduce(into: [HookedService]()) { $0.append($1) }
        }
        #expect(instances.count == 100)
        #expect(Set(instances.map(ObjectIdentifier.init)).count == 1)
        #expect(instances.first?.name == "A+r\(round)")
        #expect(made.count == 1)
        #expect(log.count(of: "didAdd A+r\(round)") == 1)
        try await scope.close()
        #expect(log.count(of: "willRemove A+r\(round)") == 1)
        try await graph.shutdown()
        #expect(log.all.last == "willRemove A")
    }

    @Test func aFailingFactoryOfSeedsNamesItsPathAndIsTriedAgain() async throws {
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.seed(SeedKey.self)
        builder.provide(InPlaceFailsKey.self, lifetime: .scoped, dependsOn: SeedKey.self) { seed in
            if attempts.increment() == 1 { throw TestFailure("first attempt fails") }
            return seed.uppercased()
        }
        builder.provide(ThroughTransientKey.self, lifetime: .transient, dependsOn: InPlaceFailsKey.self) { "<\($0)>" }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "abc"))
        do {
            _ = try await scope.resolve(ThroughTransientKey.self)
            Issue.record("the first attempt should fail")
        } catch let error as ServiceGraphError {
            #expect(error.codes == [.factoryFailed])
            #expect(
                error.problems.first?.path.map { $0.split(separator: ".").last.map(String.init) } == [
                    "ThroughTransientKey", "InPlaceFailsKey",
                ],
                "\(error)"
            )
            #expect(error.problems.first?.underlyingError as? TestFailure == TestFailure("first attempt fails"))
        }
        #expect(try await scope.resolve(ThroughTransientKey.self) == "<ABC>")
        #expect(try await scope.resolve(InPlaceFailsKey.self) == "ABC")
        #expect(attempts.count == 2)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aServiceNeedingAnotherScopedServiceIsMadeAfterItAndReleasedBefore() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(InnerKey.self, lifetime: .scoped) { HookedService("inner", log: log) }
        builder.provide(OuterKey.self, lifetime: .scoped, dependsOn: InnerKey.self) { inner in
            HookedService("outer of \(inner.name)", log: log)
        }
        let graph = try await builder.build()
        for _ in 0..<3 {
            let scope = try graph.makeScope()
            let outer = try await scope.resolve(OuterKey.self)
            #expect(outer.name == "outer of inner")
            #expect(try await scope.resolve(OuterKey.self) === outer)
            try await scope.close()
        }
        try await graph.shutdown()
        let expected = [
            "init inner", "didAdd inner", "init outer of inner", "didAdd outer of inner",
            "willRemove outer of inner", "willRemove inner",
        ]
        #expect(log.all == expected + expected + expected)
    }
}
