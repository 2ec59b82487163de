import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

/// A scoped service that knows whether its scope has released it.
private final class Basket: LifecycleHooks, Sendable {
    private let removed = Atomic<Bool>(false)

    var isRemoved: Bool { removed.load(ordering: .acquiring) }

    func willRemove() async throws {
        removed.store(true, ordering: .releasing)
    }
}

private enum BasketKey: ServiceKey { typealias Value = Basket }
/// A transient made from the scope's basket: its factory runs inside a resolve.
private enum BasketViewKey: ServiceKey { typealias Value = Bool }

/// Reads of scoped instances from many tasks at once: run under the thread sanitizer too
/// (`swift test --sanitize=thread --filter ScopedInstanceReadTests`).
@Suite("Scoped instances read concurrently")
struct ScopedInstanceReadTests {
    private func builder(creations: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(BasketKey.self, lifetime: .scoped) {
            creations.increment()
            await Task.yield()
            return Basket()
        }
        // True when the factory was handed a basket its scope had already released.
        builder.provide(BasketViewKey.self, lifetime: .transient, dependsOn: BasketKey.self) { $0.isRemoved }
        return builder
    }

    @Test func aScopedInstanceIsCreatedExactlyOnceWhenManyTasksAskForItFirst() async throws {
        let creations = Tally()
        let graph = try await builder(creations: creations).build()
        for round in 1...20 {
            let scope = try graph.makeScope()
            let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                for _ in 0..<32 {
                    group.addTask { ObjectIdentifier(try await scope.resolve(BasketKey.self)) }
                }
                return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
            }
            #expect(identities.count == 1)
            #expect(creations.count == round)
            try await scope.close()
        }
        try await graph.shutdown()
    }

    @Test func aCreatedInstanceReadFromManyTasksIsAlwaysTheSameInstance() async throws {
        let creations = Tally()
        let graph = try await builder(creations: creations).build()
        let scope = try graph.makeScope()
        let first = try await scope.resolve(BasketKey.self)
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var mismatches = 0
                    for _ in 0..<2_000 where try await scope.resolve(BasketKey.self) !== first {
                        mismatches += 1
                    }
                    return mismatches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(creations.count == 1)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func closingDuringReadsWaitsForThoseInFlightAndRefusesTheRest() async throws {
        let graph = try await builder(creations: Tally()).build()
        for _ in 0..<10 {
            let scope = try graph.makeScope()
            weak let basket = try await scope.resolve(BasketKey.self)
            let outcomes = try await withThrowingTaskGroup(of: (reads: Int, sawRemoved: Bool).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var reads = 0
                        var sawRemoved = false
                        while true {
                            do {
                                // Made inside the resolve: must never see the basket already released.
                                sawRemoved = try await scope.resolve(BasketViewKey.self) || sawRemoved
                                reads += 1
                                // A read that finds its instance does not suspend: let the close run.
                                await Task.yield()
                            } catch let error as ServiceGraphError {
                                #expect(error.codes == [.scopeClosed])
                                return (reads, sawRemoved)
                            }
                        }
                    }
                }
                group.addTask {
                    await Task.yield()
                    try await scope.close()
                    return (0, false)
                }
                return try await group.reduce(into: [(reads: Int, sawRemoved: Bool)]()) { $0.append($1) }
            }
            #expect(!outcomes.contains { $0.sawRemoved })
            #expect(basket == nil, "the close released the instance")
            let late = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(BasketKey.self) }
            #expect(late?.codes == [.scopeClosed])
        }
        try await graph.shutdown()
    }
}
