import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum Looping: ServiceKey { typealias Value = Int }
private enum Ping: ServiceKey { typealias Value = Int }
private enum Pong: ServiceKey { typealias Value = Int }
private enum Outer: ServiceKey { typealias Value = Int }
private enum Inner: ServiceKey { typealias Value = Int }
private enum Leaf: ServiceKey { typealias Value = Int }
private enum Plain: ServiceKey { typealias Value = Int }
private enum Greedy: ServiceKey { typealias Value = GreedyHooks }

/// A scoped service whose `didAdd` asks its scope for itself.
private final class GreedyHooks: LifecycleHooks, Sendable {
    let scope: Captured<ServiceScope>

    init(_ scope: Captured<ServiceScope>) {
        self.scope = scope
    }

    func didAdd() async throws {
        _ = try await scope.value.resolve(Greedy.self)
    }

    func willRemove() async throws {}
}

/// Counts a factory's calls and stops a runaway recursion long before it could exhaust the stack, so a
/// missed re-entry fails the test instead of crashing it.
private final class Guard: Sendable {
    private let tally = Tally()

    func enter() throws {
        if tally.increment() > 50 { throw TestFailure("runaway recursion") }
    }

    var calls: Int { tally.count }
}

/// The outcome of `operation`, or nil when it has not finished within `limit`. A hung operation is
/// abandoned, not awaited, so a deadlock fails the test instead of hanging the run.
private func outcome<T: Sendable>(
    within limit: Duration = .seconds(120),
    _ operation: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    let result = Locked<Result<T, any Error>?>(nil)
    Task {
        do {
            let value = try await operation()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
    }
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if let finished = result.withLock({ $0 }) { return finished }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return nil
}

/// The ``ServiceGraphError`` `outcome` failed with, recording an issue for any other outcome.
private func graphError<T>(
    _ outcome: Result<T, any Error>?,
    sourceLocation: SourceLocation = #_sourceLocation
) -> ServiceGraphError? {
    switch outcome {
    case nil:
        Issue.record("did not finish: deadlocked", sourceLocation: sourceLocation)
    case .success(let value):
        Issue.record("succeeded with \(value)", sourceLocation: sourceLocation)
    case .failure(let error as ServiceGraphError):
        return error
    case .failure(let error):
        Issue.record("failed with \(error), not a ServiceGraphError", sourceLocation: sourceLocation)
    }
    return nil
}

/// A factory that asks the graph or a scope it captured for the service it is making, directly or
/// through other services: a cycle the declared dependencies do not show.
@Suite("Re-entrant resolution")
struct ReentrantResolutionTests {
    @Test func aSynchronousTransientThatResolvesItselfThrows() async throws {
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Looping.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Looping.self) + 1
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = try #require(throws: ServiceGraphError.self) { try graph.value.resolveSynchronously(Looping.self) }
        #expect(error.codes == [.reentrantResolution])
        #expect(error.problems.count == 1)
        #expect(error.problems[0].key == "Looping")
        #expect(error.problems[0].path == ["Looping", "Looping"])
        #expect(error.description.contains("Looping was resolved again while it was being made"), "\(error)")
        #expect(calls.calls == 1)

        // The failed attempt left nothing behind: the same resolve fails the same way, once more.
        let again = try #require(throws: ServiceGraphError.self) { try graph.value.resolveSynchronously(Looping.self) }
        #expect(again.problems[0].path == ["Looping", "Looping"])
        #expect(calls.calls == 2)
    }

    @Test func anAsynchronousTransientThatResolvesItselfThrows() async throws {
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Looping.self, lifetime: .transient) { () async throws -> Int in
            try calls.enter()
            await Task.yield()
            return try await graph.value.resolve(Looping.self) + 1
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Looping.self) }
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.path == ["Looping", "Looping"])
        #expect(calls.calls == 1)
    }

    @Test func twoTransientsThatResolveEachOtherThrowWithTheCycleAsPath() async throws {
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Ping.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Pong.self)
        }
        builder.provide(Pong.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Ping.self)
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = try #require(throws: ServiceGraphError.self) { try graph.value.resolveSynchronously(Pong.self) }
        #expect(error.codes == [.reentrantResolution])
        #expect(error.problems[0].key == "Pong")
        #expect(error.problems[0].path == ["Pong", "Ping", "Pong"])
        #expect(calls.calls == 2)
    }

    @Test func twoAsynchronousTransientsThatResolveEachOtherThrowWithTheCycleAsPath() async throws {
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Ping.self, lifetime: .transient) { () async throws -> Int in
            try calls.enter()
            return try await graph.value.resolve(Pong.self)
        }
        builder.provide(Pong.self, lifetime: .transient) { () async throws -> Int in
            try calls.enter()
            return try await graph.value.resolve(Ping.self)
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Ping.self) }
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.key == "Ping")
        #expect(error?.problems.first?.path == ["Ping", "Pong", "Ping"])
        #expect(calls.calls == 2)
    }

    @Test func aSynchronousCycleEnteredWithResolveThrowsWithTheCycleAsPath() async throws {
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Ping.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Pong.self)
        }
        builder.provide(Pong.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Ping.self)
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        // Entered with `resolve`, re-entered with `resolveSynchronously`: both count.
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.value.resolve(Pong.self) }
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.key == "Pong")
        #expect(error?.problems.first?.path == ["Pong", "Ping", "Pong"])
        #expect(calls.calls == 2)
    }

    @Test func aReentryBelowADeclaredDependencyIsCaughtAtTheNextResolve() async throws {
        // Outer depends on Inner as declared; Inner's factory resolves Inner through the graph. The
        // first Inner is made as a dependency, not by a resolve, so the second one's resolve is the
        // first the graph sees: the factory runs twice, and the third resolve is refused.
        let graph = Captured<ServiceGraph>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Outer.self, lifetime: .transient, dependsOn: Inner.self) { $0 }
        builder.provide(Inner.self, lifetime: .transient) {
            try calls.enter()
            return try graph.value.resolveSynchronously(Inner.self)
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let error = try #require(throws: ServiceGraphError.self) { try graph.value.resolveSynchronously(Outer.self) }
        #expect(error.codes == [.reentrantResolution])
        #expect(error.problems[0].path == ["Outer", "Inner", "Inner", "Inner"])
        #expect(calls.calls == 2)
    }

    @Test func aTransientResolvedThroughTheGraphFromItsOwnFactoryTwiceInARowIsNotReentrant() async throws {
        // Resolving other services through a captured graph is allowed; only the service being made
        // (or one of its makers) is refused.
        let graph = Captured<ServiceGraph>()
        var builder = ServiceGraph.Builder()
        builder.provide(Leaf.self, lifetime: .transient) { 1 }
        builder.provide(Inner.self, lifetime: .transient) {
            try graph.value.resolveSynchronously(Leaf.self) + graph.value.resolveSynchronously(Leaf.self)
        }
        builder.provide(Outer.self, lifetime: .transient) { () async throws -> Int in
            let first = try await graph.value.resolve(Inner.self)
            let second = try await graph.value.resolve(Inner.self)
            return first + second
        }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        #expect(try await graph.value.resolve(Outer.self) == 4)
        #expect(try graph.value.resolveSynchronously(Inner.self) == 2)
    }

    @Test func manyTasksResolvingThroughACapturedGraphAtOnceAreNotReentrant() async throws {
        let graph = Captured<ServiceGraph>()
        var builder = ServiceGraph.Builder()
        builder.provide(Leaf.self, lifetime: .transient) { 1 }
        builder.provide(Inner.self, lifetime: .transient) { try graph.value.resolveSynchronously(Leaf.self) + 1 }
        builder.provide(Outer.self, lifetime: .transient) { try graph.value.resolveSynchronously(Inner.self) + 1 }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }

        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<400 {
                group.addTask {
                    index.isMultiple(of: 2)
                        ? try graph.value.resolveSynchronously(Outer.self) : try await graph.value.resolve(Outer.self)
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == 1_200)
    }

    @Test func manyTasksResolvingTheSameTransientAtOnceAreNotReentrant() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Leaf.self, lifetime: .transient) { () async -> Int in
            await Task.yield()
            return 1
        }
        builder.provide(Inner.self, lifetime: .transient, dependsOn: Leaf.self) { $0 + 1 }
        let graph = try await builder.build()
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { try await graph.resolve(Inner.self) }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == 400)
    }

    @Test func aScopedFactoryThatResolvesItselfThrowsAndTheScopeStaysUsable() async throws {
        let scope = Captured<ServiceScope>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Looping.self, lifetime: .scoped) { () async throws -> Int in
            try calls.enter()
            return try await scope.value.resolve(Looping.self) + 1
        }
        builder.provide(Plain.self, lifetime: .scoped) { 7 }
        let graph = try await builder.build()
        scope.fill(try graph.makeScope())
        defer { scope.fill(nil) }

        let error = graphError(await outcome { try await scope.value.resolve(Looping.self) })
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.key == "Looping")
        #expect(error?.problems.first?.path == ["Looping", "Looping"])
        #expect(calls.calls == 1)

        // The failed attempt is forgotten: the scope serves other services, and closes.
        let plain = await outcome { try await scope.value.resolve(Plain.self) }
        #expect(try plain?.get() == 7)
        let closed = await outcome { try await scope.value.close() }
        #expect(closed != nil, "close() did not return")
        #expect(try scope.value.isClosed)
    }

    @Test func twoScopedFactoriesThatResolveEachOtherThrowWithTheCycleAsPath() async throws {
        let scope = Captured<ServiceScope>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Ping.self, lifetime: .scoped) { () async throws -> Int in
            try calls.enter()
            return try await scope.value.resolve(Pong.self)
        }
        builder.provide(Pong.self, lifetime: .scoped) { () async throws -> Int in
            try calls.enter()
            return try await scope.value.resolve(Ping.self)
        }
        builder.provide(Plain.self, lifetime: .scoped) { 7 }
        let graph = try await builder.build()
        scope.fill(try graph.makeScope())
        defer { scope.fill(nil) }

        let error = graphError(await outcome { try await scope.value.resolve(Ping.self) })
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.key == "Ping")
        #expect(error?.problems.first?.path == ["Ping", "Pong", "Ping"])
        #expect(calls.calls == 2)

        // Neither instance was kept: asking again fails the same way rather than waiting forever.
        let again = graphError(await outcome { try await scope.value.resolve(Pong.self) })
        #expect(again?.problems.first?.path == ["Pong", "Ping", "Pong"])
        let plain = await outcome { try await scope.value.resolve(Plain.self) }
        #expect(try plain?.get() == 7)
        let closed = await outcome { try await scope.value.close() }
        #expect(closed != nil, "close() did not return")
    }

    @Test func aScopedFactoryReachingItselfThroughATransientThrows() async throws {
        let scope = Captured<ServiceScope>()
        let calls = Guard()
        var builder = ServiceGraph.Builder()
        builder.provide(Outer.self, lifetime: .scoped) { () async throws -> Int in
            try calls.enter()
            return try await scope.value.resolve(Inner.self)
        }
        builder.provide(Inner.self, lifetime: .transient) { () async throws -> Int in
            try await scope.value.resolve(Outer.self)
        }
        let graph = try await builder.build()
        scope.fill(try graph.makeScope())
        defer { scope.fill(nil) }

        let error = graphError(await outcome { try await scope.value.resolve(Outer.self) })
        #expect(error?.codes == [.reentrantResolution])
        #expect(error?.problems.first?.path == ["Outer", "Inner", "Outer"])
        let closed = await outcome { try await scope.value.close() }
        #expect(closed != nil, "close() did not return")
    }

    @Test func aDidAddThatAsksItsScopeForItsOwnInstanceFailsAndTheScopeCloses() async throws {
        let scope = Captured<ServiceScope>()
        var builder = ServiceGraph.Builder()
        builder.provide(Greedy.self, lifetime: .scoped) { GreedyHooks(scope) }
        builder.provide(Plain.self, lifetime: .scoped) { 7 }
        let graph = try await builder.build()
        scope.fill(try graph.makeScope())
        defer { scope.fill(nil) }

        let error = graphError(await outcome { try await scope.value.resolve(Greedy.self) })
        #expect(error?.codes == [.didAddFailed])
        let cause = error?.problems.first?.underlyingError as? ServiceGraphError
        #expect(cause?.codes == [.reentrantResolution])
        #expect(cause?.problems.first?.key == "Greedy")
        let plain = await outcome { try await scope.value.resolve(Plain.self) }
        #expect(try plain?.get() == 7)
        let closed = await outcome { try await scope.value.close() }
        #expect(closed != nil, "close() did not return")
    }
}
