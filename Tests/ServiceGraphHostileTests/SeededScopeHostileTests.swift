import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Values and doubles

private struct User: Sendable, Equatable {
    let id: Int
}

/// A value whose alignment is 16 bytes, with a byte on each side of the wide part.
private struct Aligned16: Sendable, Equatable {
    var head: UInt8
    var vector: SIMD4<Int32>
    var tail: UInt8
}

private struct Empty: Sendable, Equatable {}

private struct Quad: Sendable, Equatable {
    var a: Int
    var b: Int
    var c: Int
    var d: Int

    init(_ base: Int) {
        (a, b, c, d) = (base, base &* 3, base &* 5, base &* 7)
    }
}

/// A value far larger than any inline buffer (over 256 bytes).
private struct Large: Sendable, Equatable {
    var q0, q1, q2, q3, q4, q5, q6, q7: Quad
    var label: String

    init(seed: Int) {
        (q0, q1, q2, q3) = (Quad(seed), Quad(seed + 1), Quad(seed + 2), Quad(seed + 3))
        (q4, q5, q6, q7) = (Quad(seed + 4), Quad(seed + 5), Quad(seed + 6), Quad(seed + 7))
        label = "large #\(seed) — ünïcødé ✓"
    }
}

private protocol Shape: Sendable {
    var area: Double { get }
}

private struct Square: Shape {
    var side: Double
    var area: Double { side * side }
}

/// A shape too big for an existential's inline buffer.
private struct BigShape: Shape {
    var large: Large
    var area: Double { Double(large.q7.d) }
}

private final class Circle: Shape {
    let radius: Double
    init(radius: Double) { self.radius = radius }
    var area: Double { 3 * radius * radius }
}

private enum Mode: Sendable, Equatable {
    case off
    case on(Aligned16)
    case named(String)
}

/// All of the odd layouts at once, as a scoped service made from four seeds.
private struct Combined: Sendable, Equatable {
    var aligned: Aligned16
    var empty: Empty
    var large: Large
    var byte: UInt8
}

/// A hooked object whose `willRemove` takes a while and says whether it was cut short.
private final class SlowHook: LifecycleHooks, Sendable {
    let name: String
    let log: EventLog
    let delay: Duration

    init(_ name: String, log: EventLog, delay: Duration) {
        self.name = name
        self.log = log
        self.delay = delay
    }

    func willRemove() async throws {
        log.record("start \(name)")
        do {
            try await Task.sleep(for: delay)
        } catch {
            log.record("cancelled \(name)")
            throw error
        }
        log.record("end \(name)")
    }
}

/// A value type that adopts the hooks: a new instance each time it is made.
private struct ValueHooks: LifecycleHooks {
    let id: Int
    let log: EventLog

    func didAdd() async throws { log.record("didAdd value \(id)") }
    func willRemove() async throws { log.record("willRemove value \(id)") }
}

private final class Note: Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}

// MARK: - Keys

private enum UserSeed: ServiceKey { typealias Value = User }
private enum RequestSeed: ServiceKey { typealias Value = String }
private enum ConnectionKey: ServiceKey { typealias Value = HookedService }
private enum AccountKey: ServiceKey { typealias Value = HookedService }
private enum SlowKey: ServiceKey { typealias Value = SlowHook }
private enum OtherSlowKey: ServiceKey { typealias Value = SlowHook }
private enum DatabaseKey: ServiceKey { typealias Value = HookedService }
private enum CartKey: ServiceKey { typealias Value = HookedService }
private enum BasketKey: ServiceKey { typealias Value = HookedService }
private enum CartTag: ServiceKey { typealias Value = String }
private enum GreetingKey: ServiceKey { typealias Value = String }
private enum NoteKey: ServiceKey { typealias Value = Note }
private enum OuterNoteKey: ServiceKey { typealias Value = Note }
private enum AsyncNoteKey: ServiceKey { typealias Value = Note }
private enum ProfileKey: ServiceKey { typealias Value = String }
private enum RootKey: ServiceKey { typealias Value = String }
private enum MidKey: ServiceKey { typealias Value = String }
private enum LeafKey: ServiceKey { typealias Value = String }
private enum CounterKey: ServiceKey { typealias Value = Int }
private enum StrangerKey: ServiceKey { typealias Value = Int }
private enum ValueHooksKey: ServiceKey { typealias Value = ValueHooks }
private enum AnyHooksKey: ServiceKey { typealias Value = any LifecycleHooks }
private enum CombinedKey: ServiceKey { typealias Value = Combined }

private enum Seed<T: Sendable>: ServiceKey { typealias Value = T }
private enum ScopedCopy<T: Sendable>: ServiceKey { typealias Value = T }
private enum AsyncScopedCopy<T: Sendable>: ServiceKey { typealias Value = T }
private enum TransientCopy<T: Sendable>: ServiceKey { typealias Value = T }
private enum AsyncTransientCopy<T: Sendable>: ServiceKey { typealias Value = T }

// MARK: - Helpers

/// The codes of the `ServiceGraphError` that `body` throws; nil when it returns, `[]` for another error.
private func codes<T>(_ body: () async throws -> T) async -> [ServiceGraphError.Code]? {
    do {
        _ = try await body()
        return nil
    } catch let error as ServiceGraphError {
        return error.codes
    } catch {
        return []
    }
}

/// The codes of the `ServiceGraphError` that `body` throws, synchronously.
private func syncCodes<T>(_ body: () throws -> T) -> [ServiceGraphError.Code]? {
    do {
        _ = try body()
        return nil
    } catch let error as ServiceGraphError {
        return error.codes
    } catch {
        return []
    }
}

/// Waits, polling, until `condition` holds; throws after `limit`.
private func waitUntil(
    _ what: String,
    limit: Duration = .seconds(60),
    _ condition: @Sendable () -> Bool
) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    while !condition() {
        if clock.now - start > limit { throw TestFailure("timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// How many times each entry occurs in `log`.
private func histogram(_ log: EventLog) -> [String: Int] {
    log.all.reduce(into: [:]) { $0[$1, default: 0] += 1 }
}

/// Gives each of `values` to a scope of its own as a seed, and reads it back through every path: the
/// seed itself (async and sync), scoped and transient services made from it by synchronous and
/// asynchronous factories. All scopes are open at once, so their values must not mix.
private func checkRoundTrip<T: Sendable>(
    _ values: [T],
    same: @escaping @Sendable (T, T) -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    var builder = ServiceGraph.Builder()
    builder.seed(Seed<T>.self)
    builder.provide(ScopedCopy<T>.self, lifetime: .scoped, dependsOn: Seed<T>.self) { $0 }
    builder.provide(AsyncScopedCopy<T>.self, lifetime: .scoped, dependsOn: Seed<T>.self) { (value: T) async -> T in
        await Task.yield()
        return value
    }
    builder.provide(TransientCopy<T>.self, lifetime: .transient, dependsOn: Seed<T>.self) { $0 }
    builder.provide(AsyncTransientCopy<T>.self, lifetime: .transient, dependsOn: Seed<T>.self) {
        (value: T) async -> T in
        await Task.yield()
        return value
    }
    let graph = try await builder.build()
    var scopes: [ServiceScope] = []
    for value in values {
        let scope = try graph.makeScope(seeding: ScopeSeed(Seed<T>.self, value))
        // In place from the start: readable without suspending, before anything else.
        #expect(same(try scope.resolveSynchronously(Seed<T>.self), value), sourceLocation: sourceLocation)
        scopes.append(scope)
    }
    for round in 0..<2 {
        for (scope, value) in zip(scopes, values) {
            #expect(
                same(try await scope.resolve(Seed<T>.self), value),
                "round \(round)",
                sourceLocation: sourceLocation
            )
            #expect(same(try await scope.resolve(ScopedCopy<T>.self), value), sourceLocation: sourceLocation)
            #expect(same(try await scope.resolve(AsyncScopedCopy<T>.self), value), sourceLocation: sourceLocation)
            #expect(same(try await scope.resolve(TransientCopy<T>.self), value), sourceLocation: sourceLocation)
            #expect(same(try await scope.resolve(AsyncTransientCopy<T>.self), value), sourceLocation: sourceLocation)
        }
    }
    for scope in scopes { try await scope.close() }
    try await graph.shutdown()
}

// MARK: - Tests

@Suite("Seeded scopes, hostile")
struct SeededScopeHostileTests {
    /// A graph of an owned connection seed, a hooked singleton database, and a scoped cart made from
    /// both.
    private func connectionBuilder(_ log: EventLog) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self, DatabaseKey.self) {
            connection,
            _ in
            HookedService("cart of \(connection.name)", log: log)
        }
        return builder
    }

    // MARK: Sequences

    @Test func closingTwiceAndResolvingAfterCloseAreRefusedWithScopeClosed() async throws {
        let log = EventLog()
        var builder = connectionBuilder(log)
        builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: ConnectionKey.self) { "hi \($0.name)" }
        let graph = try await builder.build()
        let connection = HookedService("c", log: log)
        let scope = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true))
        #expect(try await scope.resolve(ConnectionKey.self) === connection)
        _ = try await scope.resolve(CartKey.self)
        try await scope.close()
        #expect(scope.isClosed)
        #expect(await codes { try await scope.close() } == [.scopeClosed])
        #expect(await codes { try await scope.resolve(ConnectionKey.self) } == [.scopeClosed])
        #expect(syncCodes { try scope.resolveSynchronously(ConnectionKey.self) } == [.scopeClosed])
        #expect(await codes { try await scope.resolve(CartKey.self) } == [.scopeClosed])
        #expect(await codes { try await scope.resolve(GreetingKey.self) } == [.scopeClosed])
        #expect(syncCodes { try scope.resolveSynchronously(GreetingKey.self) } == [.scopeClosed])
        try await graph.shutdown()
        #expect(log.count(of: "willRemove c") == 1)
        #expect(log.count(of: "didAdd c") == 0)
    }

    @Test func aClosedScopeLetsGoOfItsSeedsEvenWhileTheScopeObjectIsStillHeld() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        var builder = connectionBuilder(log)
        builder.seed(AccountKey.self)
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, live.track(HookedService("owned", log: log)), ownedByScope: true),
            ScopeSeed(AccountKey.self, live.track(HookedService("borrowed", log: log)))
        )
        _ = live.track(try await scope.resolve(CartKey.self))
        #expect(live.alive == 3)
        try await scope.close()
        // "releases it when it closes": the scope object is still referenced here.
        #expect(live.alive == 0)
        #expect(scope.isClosed)
        try await graph.shutdown()
    }

    @Test func manyScopesClosedDroppedOrLeftOpenEachRunTheirOwnedSeedsHookOnceAndLeakNothing() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        let dropped = Tally()
        var builder = connectionBuilder(log)
        builder.eventHandler = { event in if event.kind == .scopeDropped { dropped.increment() } }
        let graph = try await builder.build()
        var open: [ServiceScope] = []
        for index in 0..<150 {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(
                    ConnectionKey.self,
                    live.track(HookedService("c\(index)", log: log)),
                    ownedByScope: true
                )
            )
            if index.isMultiple(of: 2) { _ = live.track(try await scope.resolve(CartKey.self)) }
            switch index % 3 {
            case 0: try await scope.close()
            case 1: break  // dropped here
            default: open.append(scope)
            }
        }
        try await graph.shutdown()
        let counts = histogram(log)
        for index in 0..<150 {
            #expect(counts["willRemove c\(index)", default: 0] == 1, "connection \(index)")
            #expect(counts["didAdd c\(index)", default: 0] == 0, "connection \(index)")
            if index.isMultiple(of: 2) {
                let cart = try #require(log.index(of: "willRemove cart of c\(index)"))
                let seed = try #require(log.index(of: "willRemove c\(index)"))
                #expect(cart < seed, "the cart of \(index) is removed before its seed")
            }
        }
        #expect(open.allSatisfy { $0.isClosed })
        open.removeAll()
        #expect(live.alive == 0)
        #expect(dropped.count == 50)
        #expect(log.index(of: "willRemove db") == log.all.count - 1)
    }

    @Test func shutdownClosesOpenSeededScopesNewestFirstBeforeReleasingTheSingletons() async throws {
        let log = EventLog()
        let graph = try await connectionBuilder(log).build()
        var scopes: [ServiceScope] = []
        for index in 1...3 {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, HookedService("c\(index)", log: log), ownedByScope: true)
            )
            _ = try await scope.resolve(CartKey.self)
            scopes.append(scope)
        }
        try await graph.shutdown()
        let seeds = try (1...3).map { try #require(log.index(of: "willRemove c\($0)")) }
        let carts = try (1...3).map { try #require(log.index(of: "willRemove cart of c\($0)")) }
        let database = try #require(log.index(of: "willRemove db"))
        #expect(seeds[2] < seeds[1] && seeds[1] < seeds[0], "newest scope first: \(log.all)")
        for index in 0..<3 {
            #expect(carts[index] < seeds[index])
            #expect(seeds[index] < database)
        }
        #expect(scopes.allSatisfy { $0.isClosed })
    }

    @Test func shutdownWaitsForAScopeWhoseOwnedSeedIsStillClosing() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.provide(CartTag.self, lifetime: .scoped, dependsOn: SlowKey.self, DatabaseKey.self) { slow, _ in
            slow.name
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SlowKey.self, SlowHook("slow", log: log, delay: .milliseconds(300)), ownedByScope: true)
        )
        #expect(try await scope.resolve(CartTag.self) == "slow")
        let closing = Task { try await scope.close() }
        try await waitUntil("the seed's willRemove starts") { log.index(of: "start slow") != nil }
        // While the seed's hook runs, the scope is closing: it refuses new work.
        #expect(scope.isClosed)
        #expect(await codes { try await scope.resolve(SlowKey.self) } == [.scopeClosed])
        #expect(syncCodes { try scope.resolveSynchronously(CartTag.self) } == [.scopeClosed])
        try await graph.shutdown()
        let end = try #require(log.index(of: "end slow"), "shutdown returned before the seed's hook ended")
        let database = try #require(log.index(of: "willRemove db"))
        #expect(end < database)
        #expect(await codes { try await closing.value } == nil)
    }

    @Test func anOwnedSeedsFailingWillRemoveIsReportedByCloseTogetherWithTheOthers() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.seed(AccountKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self) { _ in
            HookedService("cart", log: log, failWillRemove: true)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(
                ConnectionKey.self,
                live.track(HookedService("connection", log: log, failWillRemove: true)),
                ownedByScope: true
            ),
            ScopeSeed(
                AccountKey.self,
                live.track(HookedService("account", log: log, failWillRemove: true)),
                ownedByScope: true
            )
        )
        _ = live.track(try await scope.resolve(CartKey.self))
        let error = try await #require(throws: ServiceGraphError.self) { try await scope.close() }
        #expect(error.codes == [.willRemoveFailed, .willRemoveFailed, .willRemoveFailed])
        #expect(Set(error.problems.map(\.key)) == ["CartKey", "ConnectionKey", "AccountKey"])
        #expect(error.problems[0].key == "CartKey", "scoped instances before the seeds")
        for problem in error.problems {
            let underlying = problem.underlyingError as? TestFailure
            #expect(underlying?.description.hasPrefix("willRemove of ") == true, "\(problem)")
        }
        #expect(error.description.contains("ConnectionKey") && error.description.contains("AccountKey"))
        // Each failing hook ran once; nothing is retried at shutdown; nothing is kept.
        #expect(await codes { try await scope.close() } == [.scopeClosed])
        try await graph.shutdown()
        #expect(log.count(of: "willRemove connection") == 1)
        #expect(log.count(of: "willRemove account") == 1)
        #expect(log.count(of: "willRemove cart") == 1)
        #expect(live.alive == 0)
    }

    @Test func cancellingTheTaskThatClosesAScopeDoesNotCutItsOwnedSeedsWillRemoveShort() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SlowKey.self, SlowHook("slow", log: log, delay: .milliseconds(300)), ownedByScope: true)
        )
        let closing = Task { try await scope.close() }
        try await waitUntil("the seed's willRemove starts") { log.index(of: "start slow") != nil }
        closing.cancel()
        let outcome = await codes { try await closing.value }
        #expect(outcome == nil, "close() threw \(String(describing: outcome))")
        #expect(log.all == ["start slow", "end slow"])
        try await graph.shutdown()
    }

    @Test func cancellingShutdownDoesNotCutAnOpenScopesOwnedSeedShort() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.provide(CartTag.self, lifetime: .scoped, dependsOn: SlowKey.self, DatabaseKey.self) { slow, _ in
            slow.name
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SlowKey.self, SlowHook("slow", log: log, delay: .milliseconds(300)), ownedByScope: true)
        )
        _ = try await scope.resolve(CartTag.self)
        let stopping = Task { try await graph.shutdown() }
        try await waitUntil("the seed's willRemove starts") { log.index(of: "start slow") != nil }
        stopping.cancel()
        let outcome = await codes { try await stopping.value }
        #expect(outcome == nil, "shutdown() threw \(String(describing: outcome))")
        #expect(log.all == ["init db", "didAdd db", "start slow", "end slow", "willRemove db"])
        #expect(scope.isClosed)
    }

    @Test func anOwnedSeedsHangingWillRemoveIsBoundedByTheHookTimeout() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        builder.seed(OtherSlowKey.self)
        builder.hookTimeout = .milliseconds(100)
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SlowKey.self, SlowHook("stuck", log: log, delay: .seconds(600)), ownedByScope: true),
            ScopeSeed(OtherSlowKey.self, SlowHook("quick", log: log, delay: .milliseconds(1)), ownedByScope: true)
        )
        let clock = ContinuousClock()
        let start = clock.now
        do {
            // Bounds far below the stuck hook's 600 s, far above the 100 ms timeout: a loaded machine
            // (the whole suite in parallel, a sanitizer) starves timers for seconds, not minutes.
            try await withDeadline(.seconds(300)) { try await scope.close() }
            Issue.record("close() did not report the stuck hook")
        } catch let error as ServiceGraphError {
            #expect(error.codes == [.hookTimedOut])
            #expect(error.problems.first?.key == "SlowKey")
        }
        #expect(clock.now - start < .seconds(300))
        // The other owned seed's hook still ran to its end.
        #expect(log.index(of: "end quick") != nil)
        try await graph.shutdown()
    }

    @Test func aDroppedScopeNamesItsOwnedSeedInTheScopeDroppedEvent() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = connectionBuilder(log)
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, HookedService("c", log: log), ownedByScope: true)
            )
            _ = try await scope.resolve(CartKey.self)
        }
        try await graph.shutdown()
        let dropped = events.withLock { $0.filter { $0.kind == .scopeDropped } }
        #expect(dropped.count == 1)
        #expect(dropped.first?.key?.contains("ConnectionKey") == true, "\(dropped)")
        #expect(dropped.first?.key?.contains("CartKey") == true, "\(dropped)")
        #expect(log.count(of: "willRemove c") == 1)
    }

    @Test func fiftyConcurrentClosesOfOneScopeCloseItOnce() async throws {
        let log = EventLog()
        let graph = try await connectionBuilder(log).build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, HookedService("c", log: log), ownedByScope: true)
        )
        _ = try await scope.resolve(CartKey.self)
        let outcomes = await withTaskGroup(of: [ServiceGraphError.Code]?.self) { group in
            for _ in 0..<50 { group.addTask { await codes { try await scope.close() } } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1)
        #expect(outcomes.filter { $0 == [.scopeClosed] }.count == 49)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove c") == 1)
        #expect(log.count(of: "willRemove cart of c") == 1)
    }

    @Test func closeRacingShutdownRunsTheOwnedSeedsHookOnce() async throws {
        for round in 0..<20 {
            let log = EventLog()
            let graph = try await connectionBuilder(log).build()
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, HookedService("c", log: log), ownedByScope: true)
            )
            _ = try await scope.resolve(CartKey.self)
            async let closed = codes { try await scope.close() }
            async let shut = codes { try await graph.shutdown() }
            let (closeOutcome, shutdownOutcome) = await (closed, shut)
            #expect(closeOutcome == nil || closeOutcome == [.scopeClosed], "round \(round)")
            #expect(shutdownOutcome == nil, "round \(round)")
            #expect(log.count(of: "willRemove c") == 1, "round \(round)")
            let seed = try #require(log.index(of: "willRemove c"))
            let database = try #require(log.index(of: "willRemove db"))
            #expect(seed < database, "round \(round)")
        }
    }

    @Test func shutdownWaitsForTheSlowOwnedSeedOfADroppedScope() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.provide(CartTag.self, lifetime: .scoped, dependsOn: SlowKey.self, DatabaseKey.self) { slow, _ in
            slow.name
        }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(
                    SlowKey.self,
                    SlowHook("slow", log: log, delay: .milliseconds(300)),
                    ownedByScope: true
                )
            )
            _ = try await scope.resolve(CartTag.self)
        }
        try await graph.shutdown()
        #expect(log.all == ["init db", "didAdd db", "start slow", "end slow", "willRemove db"])
    }

    @Test func aDroppedScopesHangingOwnedSeedDoesNotHangShutdownPastTheHookTimeout() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(SlowKey.self)
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.hookTimeout = .milliseconds(100)
        let graph = try await builder.build()
        do {
            _ = try graph.makeScope(
                seeding: ScopeSeed(SlowKey.self, SlowHook("stuck", log: log, delay: .seconds(600)), ownedByScope: true)
            )
        }
        let clock = ContinuousClock()
        let start = clock.now
        // Far below the stuck hook's 600 s (see the test above for why not closer to the timeout).
        _ = await codes { try await withDeadline(.seconds(300)) { try await graph.shutdown() } }
        #expect(clock.now - start < .seconds(300))
        #expect(log.index(of: "start stuck") != nil)
        #expect(log.count(of: "willRemove db") == 1)
    }

    @Test func aDroppedScopeWithNothingToRunReleasesItsBorrowedSeedsWithoutWaitingForShutdown() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.seed(AccountKey.self)
        builder.seed(UserSeed.self)
        builder.provide(GreetingKey.self, lifetime: .scoped, dependsOn: AccountKey.self, UserSeed.self) {
            "\($0.name) \($1.id)"
        }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(AccountKey.self, live.track(HookedService("a", log: log))),
                ScopeSeed(UserSeed.self, User(id: 1))
            )
            #expect(try await scope.resolve(GreetingKey.self) == "a 1")
        }
        try await waitUntil("the dropped scope lets its seed go", limit: .seconds(10)) { live.alive == 0 }
        try await graph.shutdown()
        #expect(log.all == ["init a"])
    }

    @Test func aScopedFactoryThatFailsOnASeedLeavesTheScopeAndItsSeedIntact() async throws {
        let log = EventLog()
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self) { connection async throws in
            if attempts.increment() == 1 { throw TestFailure("first cart fails") }
            return HookedService("cart of \(connection.name)", log: log)
        }
        let graph = try await builder.build()
        let connection = HookedService("c", log: log)
        let scope = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true))
        let failure = await codes { try await scope.resolve(CartKey.self) }
        #expect(failure == [.factoryFailed])
        #expect(try scope.resolveSynchronously(ConnectionKey.self) === connection)
        #expect(try await scope.resolve(CartKey.self).name == "cart of c")
        try await scope.close()
        #expect(log.all == ["init c", "init cart of c", "didAdd cart of c", "willRemove cart of c", "willRemove c"])
        try await graph.shutdown()
    }

    // MARK: Many tasks

    @Test func aThousandConcurrentResolvesSeeOneSeedAndOneScopedInstance() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self)
        builder.seed(AccountKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: UserSeed.self, AccountKey.self) {
            user,
            account async in
            made.increment()
            try? await Task.sleep(for: .milliseconds(20))
            return HookedService("cart \(user.id) \(account.name)", log: log)
        }
        builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: UserSeed.self) { "hi \($0.id)" }
        builder.provide(NoteKey.self, lifetime: .transient, dependsOn: CartKey.self) { Note($0.name) }
        let graph = try await builder.build()
        let account = HookedService("acct", log: log)
        let scope = try graph.makeScope(
            seeding: ScopeSeed(UserSeed.self, User(id: 9)),
            ScopeSeed(AccountKey.self, account)
        )
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    switch index % 6 {
                    case 0: return "user \(try await scope.resolve(UserSeed.self).id)"
                    case 1: return "user \(try scope.resolveSynchronously(UserSeed.self).id)"
                    case 2: return try await scope.resolve(AccountKey.self) === account ? "account" : "other account"
                    case 3: return "cart \(ObjectIdentifier(try await scope.resolve(CartKey.self)).hashValue)"
                    case 4: return try await scope.resolve(GreetingKey.self)
                    default: return "note \(try await scope.resolve(NoteKey.self).text)"
                    }
                }
            }
            return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(made.count == 1)
        #expect(results.count == 5, "\(results.keys.sorted())")
        #expect(results["user 9"] == 334)
        #expect(results["account"] == 167)
        #expect(results["hi 9"] == 166)
        #expect(results["note cart 9 acct"] == 166)
        #expect(results.keys.filter { $0.hasPrefix("cart ") }.count == 1)
        try await scope.close()
        try await graph.shutdown()
        #expect(log.count(of: "willRemove cart 9 acct") == 1)
        #expect(log.count(of: "willRemove acct") == 0)
    }

    @Test func aThousandScopesMadeConcurrentlyKeepTheirOwnSeedsAndLeakNothing() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.seed(UserSeed.self)
        builder.provide(CartTag.self, lifetime: .scoped, dependsOn: ConnectionKey.self, UserSeed.self) {
            connection,
            user async in
            made.increment()
            await Task.yield()
            return "\(connection.name)/\(user.id)"
        }
        let graph = try await builder.build()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let connection = live.track(HookedService("c\(index)", log: log))
                    let scope = try graph.makeScope(
                        seeding: ScopeSeed(UserSeed.self, User(id: index)),
                        ScopeSeed(ConnectionKey.self, connection, ownedByScope: true)
                    )
                    #expect(try await scope.resolve(CartTag.self) == "c\(index)/\(index)")
                    #expect(try scope.resolveSynchronously(ConnectionKey.self) === connection)
                    #expect(try scope.resolveSynchronously(UserSeed.self) == User(id: index))
                    if index.isMultiple(of: 2) { try await scope.close() }
                }
            }
            try await group.waitForAll()
        }
        try await graph.shutdown()
        #expect(made.count == 1_000)
        let counts = histogram(log)
        for index in 0..<1_000 {
            #expect(counts["willRemove c\(index)"] == 1, "connection \(index)")
        }
        #expect(live.alive == 0)
    }

    @Test func scopesMadeWhileTheGraphShutsDownAreEitherClosedByItOrRefused() async throws {
        for round in 0..<5 {
            let log = EventLog()
            let live = WeakRegistry()
            let given = Locked<Set<Int>>([])
            let refused = Tally()
            let graph = try await connectionBuilder(log).build()
            let shutdownOutcome = Locked<[ServiceGraphError.Code]?>([])
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let connection = live.track(HookedService("c\(index)", log: log))
                        do {
                            let scope = try graph.makeScope(
                                seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true)
                            )
                            given.withLock { _ = $0.insert(index) }
                            _ = try? await scope.resolve(CartKey.self)
                            if index.isMultiple(of: 2) { _ = try? await scope.close() }
                        } catch let error as ServiceGraphError {
                            #expect(error.codes == [.graphShutDown])
                            refused.increment()
                        } catch {
                            Issue.record(error)
                        }
                    }
                    if index == 60 {
                        group.addTask {
                            let outcome = await codes { try await graph.shutdown() }
                            shutdownOutcome.withLock { $0 = outcome }
                        }
                    }
                }
            }
            #expect(shutdownOutcome.withLock { $0 } == nil, "round \(round)")
            let opened = given.withLock { $0 }
            #expect(opened.count + refused.count == 200)
            let counts = histogram(log)
            for index in 0..<200 {
                let expected = opened.contains(index) ? 1 : 0
                #expect(counts["willRemove c\(index)", default: 0] == expected, "round \(round), connection \(index)")
            }
            #expect(live.alive == 0, "round \(round)")
            let database = try #require(log.index(of: "willRemove db"))
            #expect(database == log.all.count - 1, "round \(round): the singleton is released last")
        }
    }

    @Test func readsRacingCloseEitherSeeTheSeedOrAreRefused() async throws {
        for round in 0..<10 {
            let log = EventLog()
            var builder = ServiceGraph.Builder()
            builder.seed(ConnectionKey.self)
            builder.seed(Seed<Large>.self)
            builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: ConnectionKey.self, Seed<Large>.self) {
                "\($0.name) \($1.label)"
            }
            let graph = try await builder.build()
            let connection = HookedService("c", log: log)
            let large = Large(seed: round)
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true),
                ScopeSeed(Seed<Large>.self, large)
            )
            let outcomes = await withTaskGroup(of: String.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        if index == 150 {
                            return (await codes { try await scope.close() }) == nil ? "closed" : "close failed"
                        }
                        do {
                            switch index % 3 {
                            case 0: return try await scope.resolve(ConnectionKey.self) === connection ? "ok" : "wrong"
                            case 1: return try scope.resolveSynchronously(Seed<Large>.self) == large ? "ok" : "wrong"
                            default:
                                return try await scope.resolve(GreetingKey.self) == "c \(large.label)" ? "ok" : "wrong"
                            }
                        } catch let error as ServiceGraphError where error.codes == [.scopeClosed] {
                            return "refused"
                        } catch {
                            return "unexpected \(error)"
                        }
                    }
                }
                return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(outcomes["closed"] == 1, "round \(round): \(outcomes)")
            #expect(Set(outcomes.keys).isSubset(of: ["ok", "refused", "closed"]), "round \(round): \(outcomes)")
            #expect(log.count(of: "willRemove c") == 1)
            try await graph.shutdown()
        }
    }

    @Test func childScopesMadeWhileTheParentShutsDownAreEitherClosedOrRefused() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        let given = Locked<Set<Int>>([])
        let parent = try await connectionBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(AccountKey.self)
        childBuilder.provide(BasketKey.self, lifetime: .scoped, dependsOn: AccountKey.self, CartKey.self) {
            account,
            _ in
            HookedService("basket \(account.name)", log: log)
        }
        let child = try await childBuilder.build()
        let shutdownOutcome = Locked<[ServiceGraphError.Code]?>([])
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let account = live.track(HookedService("a\(index)", log: log))
                    do {
                        let scope = try child.makeScope(
                            seeding: ScopeSeed(AccountKey.self, account, ownedByScope: true),
                            ScopeSeed(ConnectionKey.self, HookedService("c\(index)", log: log))
                        )
                        given.withLock { _ = $0.insert(index) }
                        _ = try? await scope.resolve(BasketKey.self)
                    } catch let error as ServiceGraphError {
                        #expect(error.codes == [.graphShutDown])
                    } catch {
                        Issue.record(error)
                    }
                }
                if index == 50 {
                    group.addTask {
                        let outcome = await codes { try await parent.shutdown() }
                        shutdownOutcome.withLock { $0 = outcome }
                    }
                }
            }
        }
        #expect(shutdownOutcome.withLock { $0 } == nil)
        let opened = given.withLock { $0 }
        let counts = histogram(log)
        for index in 0..<200 {
            #expect(counts["willRemove a\(index)", default: 0] == (opened.contains(index) ? 1 : 0), "account \(index)")
            #expect(counts["willRemove c\(index)", default: 0] == 0, "borrowed connection \(index)")
        }
        #expect(live.alive == 0)
        #expect(log.all.last == "willRemove db")
    }

    // MARK: Odd layouts

    @Test func seedsAlignedTo16BytesKeepTheirValue() async throws {
        #expect(MemoryLayout<Aligned16>.alignment == 16)
        try await checkRoundTrip(
            (0..<4).map { Aligned16(head: UInt8($0), vector: SIMD4(Int32($0), -1, .max, .min), tail: 0xEE) },
            same: ==
        )
        try await checkRoundTrip([UInt128.max, UInt128(1) << 100, 0], same: ==)
        try await checkRoundTrip([Aligned16?.none, Aligned16(head: 1, vector: .one, tail: 2)], same: ==)
        try await checkRoundTrip(
            [Mode.off, .on(Aligned16(head: 3, vector: SIMD4(1, 2, 3, 4), tail: 4)), .named("n")],
            same: ==
        )
    }

    @Test func emptyAndLargeSeedsKeepTheirValue() async throws {
        #expect(MemoryLayout<Empty>.size == 0)
        try await checkRoundTrip([Empty(), Empty()], same: ==)
        #expect(MemoryLayout<Large>.size > 256)
        try await checkRoundTrip([Large(seed: 1), Large(seed: 1_000), Large(seed: -5)], same: ==)
        try await checkRoundTrip([Array(0..<10_000), [], [42]], same: ==)
        try await checkRoundTrip([String(repeating: "ü✓", count: 1_000), "", "short"], same: ==)
    }

    @Test func existentialSeedsKeepTheirValueAndIdentity() async throws {
        let circle = Circle(radius: 2)
        let shapes: [any Shape] = [Square(side: 3), BigShape(large: Large(seed: 11)), circle]
        try await checkRoundTrip(shapes, same: { $0.area == $1.area && type(of: $0) == type(of: $1) })
        try await checkRoundTrip(
            [circle as any Shape],
            same: { ($0 as? Circle) === circle && ($1 as? Circle) === circle }
        )
        try await checkRoundTrip([1 as any Sendable, "two", Large(seed: 3)], same: { "\($0)" == "\($1)" })
    }

    @Test func optionalSeedsKeepNilAndNestedNil() async throws {
        try await checkRoundTrip([Int?.none, 7, .some(0)], same: ==)
        try await checkRoundTrip([Int??.some(nil), .none, .some(.some(3))], same: ==)
        let note = Note("n")
        try await checkRoundTrip(
            [Note?.none, note],
            same: { ($0.map(ObjectIdentifier.init)) == ($1.map(ObjectIdentifier.init)) }
        )
        try await checkRoundTrip([Large?.none, Large(seed: 8)], same: ==)
    }

    @Test func closureSeedsKeepTheirCapturedState() async throws {
        let tally = Tally()
        let closures: [@Sendable () -> Int] = [{ 1 }, { tally.count + 100 }, { [big = Large(seed: 2)] in big.q7.d }]
        try await checkRoundTrip(closures, same: { $0() == $1() })
        tally.increment()
        #expect(closures[1]() == 101)
        try await checkRoundTrip([(UInt8(1), SIMD4<Float>(1, 2, 3, 4)), (UInt8(2), .zero)], same: { $0 == $1 })
    }

    @Test func aScopedServiceMadeFromFourOddlyLaidOutSeedsGetsEachIntact() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(Seed<Aligned16>.self)
        builder.seed(Seed<Empty>.self)
        builder.seed(Seed<Large>.self)
        builder.seed(Seed<UInt8>.self)
        builder.provide(
            CombinedKey.self,
            lifetime: .scoped,
            dependsOn: Seed<UInt8>.self,
            Seed<Aligned16>.self,
            Seed<Empty>.self,
            Seed<Large>.self
        ) { byte, aligned, empty, large async in
            await Task.yield()
            return Combined(aligned: aligned, empty: empty, large: large, byte: byte)
        }
        builder.provide(
            ScopedCopy<Combined>.self,
            lifetime: .transient,
            dependsOn: Seed<Large>.self,
            Seed<UInt8>.self,
            Seed<Aligned16>.self,
            Seed<Empty>.self
        ) {
            large,
            byte,
            aligned,
            empty in
            Combined(aligned: aligned, empty: empty, large: large, byte: byte)
        }
        let graph = try await builder.build()
        for index in 0..<20 {
            let expected = Combined(
                aligned: Aligned16(head: 0xAB, vector: SIMD4(repeating: Int32(index)), tail: 0xCD),
                empty: Empty(),
                large: Large(seed: index),
                byte: UInt8(index)
            )
            let scope = try graph.makeScope(
                seeding: ScopeSeed(Seed<Large>.self, expected.large),
                ScopeSeed(Seed<UInt8>.self, expected.byte),
                ScopeSeed(Seed<Empty>.self, expected.empty),
                ScopeSeed(Seed<Aligned16>.self, expected.aligned)
            )
            #expect(try await scope.resolve(CombinedKey.self) == expected)
            #expect(try await scope.resolve(ScopedCopy<Combined>.self) == expected)
            try await scope.close()
        }
        try await graph.shutdown()
    }

    @Test func anOwnedValueTypeSeedGetsWillRemoveOncePerScopeAndNoDidAdd() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ValueHooksKey.self)
        builder.seed(AnyHooksKey.self)
        let graph = try await builder.build()
        // A borrowed value type with hooks gets none.
        let borrowed = try graph.makeScope(
            seeding: [
                ScopeSeed(ValueHooksKey.self, ValueHooks(id: 9, log: log)),
                ScopeSeed(AnyHooksKey.self, HookedService("any 9", log: log)),
            ]
        )
        try await borrowed.close()
        for index in 0..<3 {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ValueHooksKey.self, ValueHooks(id: index, log: log), ownedByScope: true),
                ScopeSeed(AnyHooksKey.self, HookedService("any \(index)", log: log), ownedByScope: true)
            )
            #expect(try scope.resolveSynchronously(ValueHooksKey.self).id == index)
            #expect((try await scope.resolve(AnyHooksKey.self) as? HookedService)?.name == "any \(index)")
            if index != 1 { try await scope.close() }
        }
        try await graph.shutdown()
        let counts = histogram(log)
        for index in 0..<3 {
            #expect(counts["willRemove value \(index)"] == 1)
            #expect(counts["willRemove any \(index)"] == 1)
            #expect(counts["didAdd value \(index)"] == nil)
            #expect(counts["didAdd any \(index)"] == nil)
        }
        #expect(counts["willRemove value 9"] == nil)
        #expect(counts["willRemove any 9"] == nil)
    }

    // MARK: Identity and hooks

    @Test func theSameObjectGivenAsTwoOwnedSeedsOfOneScopeHasOneOwnerAndOneWillRemove() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.seed(AccountKey.self)
        let graph = try await builder.build()
        let shared = HookedService("shared", log: log)
        // One scope is one owner, whatever the number of keys it is given the instance under.
        do {
            let both = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, shared, ownedByScope: true),
                ScopeSeed(AccountKey.self, shared, ownedByScope: true)
            )
            let viaConnection = try both.resolveSynchronously(ConnectionKey.self)
            #expect(try both.resolveSynchronously(AccountKey.self) === viaConnection)
            try await both.close()
        } catch {
            Issue.record("the scope refused to own one instance under two keys: \(error)")
        }
        #expect(log.all == ["init shared", "willRemove shared"])
        try await graph.shutdown()
    }

    @Test func theSameObjectOwnedUnderOneKeyAndBorrowedUnderAnotherGetsOneWillRemove() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.seed(AccountKey.self)
        let graph = try await builder.build()
        let mixed = HookedService("mixed", log: log)
        let oneOwned = try graph.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, mixed),
            ScopeSeed(AccountKey.self, mixed, ownedByScope: true)
        )
        try await oneOwned.close()
        #expect(log.all == ["init mixed", "willRemove mixed"])
        try await graph.shutdown()
    }

    @Test func anInstanceOwnedByAnOpenScopeCannotBeOwnedByAnother() async throws {
        let log = EventLog()
        let graph = try await connectionBuilder(log).build()
        let connection = HookedService("c", log: log)
        let first = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true))
        let cart = try await first.resolve(CartKey.self)
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true))
        }
        #expect(error.codes == [.ownedSeedInUse])
        #expect(error.problems.first?.key == "ConnectionKey")
        // Another scope's scoped instance is that scope's to end, too.
        let stolen = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, cart, ownedByScope: true))
        }
        #expect(stolen.codes == [.ownedSeedInUse])
        // Borrowing it is fine, and runs nothing.
        let borrower = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection))
        #expect(try await borrower.resolve(CartKey.self).name == "cart of c")
        try await borrower.close()
        #expect(log.count(of: "willRemove c") == 0)
        try await first.close()
        try await graph.shutdown()
        #expect(log.count(of: "willRemove c") == 1)
        #expect(log.count(of: "willRemove cart of c") == 2)
    }

    @Test func aScopedAliasOfAnOwnedSeedSharesTheSeedsHooks() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self) { $0 }
        let graph = try await builder.build()
        let connection = HookedService("c", log: log)
        let scope = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection, ownedByScope: true))
        #expect(try await scope.resolve(CartKey.self) === connection)
        try await scope.close()
        #expect(log.all == ["init c", "willRemove c"])
        try await graph.shutdown()
    }

    @Test func aScopedAliasOfABorrowedSeedRunsNoHooksOnIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self) { $0 }
        let graph = try await builder.build()
        let connection = HookedService("c", log: log)
        let scope = try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, connection))
        #expect(try await scope.resolve(CartKey.self) === connection)
        try await scope.close()
        try await graph.shutdown()
        // The caller owns the value: the scope runs no hooks on it, under any key.
        #expect(log.all == ["init c"])
    }

    @Test func aSingletonOfTheGraphIsRefusedAsAnOwnedSeedAndCanBeBorrowed() async throws {
        let log = EventLog()
        let opened = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        builder.requiresShutdown = false  // a test that throws early must not stop the run
        builder.seed(ConnectionKey.self)
        builder.seed(AccountKey.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self) {
            HookedService("cart of \($0.name)", log: log)
        }
        builder.eventHandler = { event in if event.kind == .scopeOpened { opened.increment() } }
        let graph = try await builder.build()
        let database = graph[DatabaseKey.self]
        let bystander = HookedService("bystander", log: log)
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, database, ownedByScope: true),
                ScopeSeed(AccountKey.self, bystander, ownedByScope: true)
            )
        }
        #expect(error.codes == [.ownedSeedInUse])
        #expect(error.problems.first?.key == "ConnectionKey")
        #expect(opened.count == 0)
        for index in 0..<10 {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, database),
                ScopeSeed(AccountKey.self, HookedService("a\(index)", log: log), ownedByScope: true)
            )
            _ = try await scope.resolve(CartKey.self)
            if index.isMultiple(of: 2) { try await scope.close() }
        }
        // The refused bystander stayed the caller's: it can be owned by a scope now.
        let later = try graph.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, database),
            ScopeSeed(AccountKey.self, bystander, ownedByScope: true)
        )
        try await later.close()
        #expect(log.count(of: "willRemove db") == 0)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove db") == 1)
        #expect(log.count(of: "willRemove bystander") == 1)
        #expect(log.count(of: "willRemove cart of db") == 10)
        #expect(log.all.last == "willRemove db")
    }

    @Test func aSingletonOfAnotherGraphIsNeverEndedByAScopeThatWasGivenIt() async throws {
        let log = EventLog()
        var homeBuilder = ServiceGraph.Builder()
        homeBuilder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        homeBuilder.requiresShutdown = false  // a test that throws early must not stop the run
        let home = try await homeBuilder.build()
        var otherBuilder = ServiceGraph.Builder()
        otherBuilder.seed(ConnectionKey.self)
        let other = try await otherBuilder.build()
        // Refused (one instance, one owner) or accepted without taking its hooks: either way the
        // home graph alone ends it.
        do {
            let scope = try other.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, home[DatabaseKey.self], ownedByScope: true)
            )
            try await scope.close()
        } catch {
            #expect(error.codes == [.ownedSeedInUse])
        }
        try await other.shutdown()
        try await home.shutdown()
        // A documented limitation (RuntimeValues, "Who owns a seed"): ownership is known within a graph
        // family only, so an unrelated graph's instance given as owned is ended by both. When this is
        // fixed, the known issue stops being recorded and this test fails: drop `withKnownIssue` then.
        withKnownIssue("ownership is tracked per graph family, not across unrelated graphs") {
            #expect(log.all == ["init db", "didAdd db", "willRemove db"])
        }
    }

    @Test func aParentsSingletonIsNeverEndedByAChildScopeThatWasGivenIt() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.provide(DatabaseKey.self) { HookedService("db", log: log) }
        parentBuilder.requiresShutdown = false  // a test that throws early must not stop the run
        parentBuilder.seed(UserSeed.self)
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(ConnectionKey.self)
        childBuilder.eventHandler = { event in events.withLock { $0.append(event) } }
        let child = try await childBuilder.build()
        do {
            let scope = try child.makeScope(
                seeding: ScopeSeed(ConnectionKey.self, parent[DatabaseKey.self], ownedByScope: true),
                ScopeSeed(UserSeed.self, User(id: 1))
            )
            try await scope.close()
        } catch {
            #expect(error.codes == [.ownedSeedInUse])
        }
        let scope = try child.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, parent[DatabaseKey.self]),
            ScopeSeed(UserSeed.self, User(id: 2))
        )
        // The scopeOpened event names the parent's seed and the child's.
        let opened = events.withLock { $0.filter { $0.kind == .scopeOpened }.compactMap(\.key) }
        #expect(
            opened.last?.contains("UserSeed") == true && opened.last?.contains("ConnectionKey") == true,
            "\(opened)"
        )
        try await scope.close()
        try await child.shutdown()
        #expect(log.count(of: "willRemove db") == 0, "\(log.all)")
        try await parent.shutdown()
        #expect(log.all == ["init db", "didAdd db", "willRemove db"])
    }

    // MARK: Transients and synchronous reads

    @Test func aTransientOnASeedIsMadeAnewFromTheScopeAndRefusedByTheGraph() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(RequestSeed.self)
        builder.provide(NoteKey.self, lifetime: .transient, dependsOn: RequestSeed.self) { Note("note for \($0)") }
        builder.provide(OuterNoteKey.self, lifetime: .transient, dependsOn: NoteKey.self) { Note("outer \($0.text)") }
        builder.provide(AsyncNoteKey.self, lifetime: .transient, dependsOn: OuterNoteKey.self) { (note: Note) async in
            await Task.yield()
            return Note("async \(note.text)")
        }
        builder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: OuterNoteKey.self) { $0.text }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(RequestSeed.self, "r1"))
        let first = try await scope.resolve(NoteKey.self)
        let second = try await scope.resolve(NoteKey.self)
        #expect(first.text == "note for r1" && second.text == "note for r1")
        #expect(first !== second)
        #expect(try await scope.resolve(OuterNoteKey.self).text == "outer note for r1")
        #expect(try await scope.resolve(AsyncNoteKey.self).text == "async outer note for r1")
        #expect(try await scope.resolve(ProfileKey.self) == "outer note for r1")
        // The graph cannot resolve the seed, nor any transient that needs it, however deep.
        for outcome in [
            await codes { try await graph.resolve(RequestSeed.self) },
            await codes { try await graph.resolve(NoteKey.self) },
            await codes { try await graph.resolve(OuterNoteKey.self) },
            await codes { try await graph.resolve(AsyncNoteKey.self) },
            syncCodes { try graph.resolveSynchronously(RequestSeed.self) },
            syncCodes { try graph.resolveSynchronously(NoteKey.self) },
            syncCodes { try graph.resolveSynchronously(OuterNoteKey.self) },
        ] {
            #expect(outcome == [.wrongLifetime])
        }
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aTransientOnASeedResolvesSynchronouslyFromAScope() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(RequestSeed.self)
        builder.seed(Seed<Aligned16>.self)
        builder.provide(NoteKey.self, lifetime: .transient, dependsOn: RequestSeed.self) { Note("note for \($0)") }
        builder.provide(OuterNoteKey.self, lifetime: .transient, dependsOn: NoteKey.self) { Note("outer \($0.text)") }
        builder.provide(AsyncNoteKey.self, lifetime: .transient, dependsOn: OuterNoteKey.self) { (note: Note) async in
            await Task.yield()
            return Note("async \(note.text)")
        }
        builder.provide(TransientCopy<Aligned16>.self, lifetime: .transient, dependsOn: Seed<Aligned16>.self) { $0 }
        let graph = try await builder.build()
        let aligned = Aligned16(head: 1, vector: SIMD4(5, 6, 7, 8), tail: 2)
        let scope = try graph.makeScope(
            seeding: ScopeSeed(RequestSeed.self, "r1"),
            ScopeSeed(Seed<Aligned16>.self, aligned)
        )
        // A seed is always in place, so a synchronous chain on it needs nothing to be made first.
        var made: [Note] = []
        for _ in 0..<2 {
            do {
                made.append(try scope.resolveSynchronously(NoteKey.self))
            } catch {
                Issue.record("resolveSynchronously(NoteKey) from a scope: \(error)")
            }
        }
        #expect(made.map(\.text) == ["note for r1", "note for r1"])
        #expect(made.count == 2 && made[0] !== made[1])
        #expect(syncCodes { try scope.resolveSynchronously(OuterNoteKey.self) } == nil)
        #expect(syncCodes { try scope.resolveSynchronously(TransientCopy<Aligned16>.self) } == nil)
        #expect((try? scope.resolveSynchronously(TransientCopy<Aligned16>.self)) == aligned)
        // An asynchronous factory still needs `await`.
        #expect(syncCodes { try scope.resolveSynchronously(AsyncNoteKey.self) } == [.requiresAwait])
        try await scope.close()
        try await graph.shutdown()
    }

    /// Whether an instance already created can be read without `await` must not depend on the layout of
    /// its value: the same scoped service (`{ $0 }` of a seed) is made for values of many types.
    @Test func readingACreatedScopedInstanceSynchronouslyDoesNotDependOnItsValuesLayout() async throws {
        func outcome<T: Sendable>(_ value: T) async throws -> String {
            var builder = ServiceGraph.Builder()
            builder.seed(Seed<T>.self)
            builder.provide(ScopedCopy<T>.self, lifetime: .scoped, dependsOn: Seed<T>.self) { $0 }
            let graph = try await builder.build()
            let scope = try graph.makeScope(seeding: ScopeSeed(Seed<T>.self, value))
            _ = try await scope.resolve(ScopedCopy<T>.self)
            let result: String
            if let codes = syncCodes({ try scope.resolveSynchronously(ScopedCopy<T>.self) }) {
                result = "\(codes)"
            } else {
                result = "read"
            }
            try await scope.close()
            try await graph.shutdown()
            return result
        }
        let outcomes: [(String, String)] = [
            ("Int", try await outcome(1)),
            ("String", try await outcome("s")),
            ("Aligned16", try await outcome(Aligned16(head: 1, vector: .one, tail: 2))),
            ("UInt128", try await outcome(UInt128.max)),
            ("Large", try await outcome(Large(seed: 1))),
            ("Note", try await outcome(Note("n"))),
            ("Int?", try await outcome(Int?.some(1))),
            ("Empty", try await outcome(Empty())),
            ("any Shape", try await outcome(Square(side: 1) as any Shape)),
            ("closure", try await outcome({ @Sendable () -> Int in 1 })),
        ]
        let distinct = Set(outcomes.map(\.1))
        #expect(distinct.count == 1, "\(outcomes.map { "\($0.0): \($0.1)" }.joined(separator: ", "))")
    }

    @Test func aFactoryMayReadTheSeedThroughTheScopeItCaptured() async throws {
        let captured = Captured<ServiceScope>()
        var builder = ServiceGraph.Builder()
        builder.seed(RequestSeed.self)
        builder.seed(UserSeed.self)
        builder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { user in
            "\(user.id) \(try captured.value.resolveSynchronously(RequestSeed.self))"
        }
        builder.provide(GreetingKey.self, lifetime: .scoped) { () async throws in
            "\(try await captured.value.resolve(UserSeed.self).id)"
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(RequestSeed.self, "r"),
            ScopeSeed(UserSeed.self, User(id: 5))
        )
        captured.fill(scope)
        #expect(try await withDeadline { try await scope.resolve(ProfileKey.self) } == "5 r")
        #expect(try await withDeadline { try await scope.resolve(GreetingKey.self) } == "5")
        captured.fill(nil)
        try await scope.close()
        try await graph.shutdown()
    }

    // MARK: Validation

    @Test func aSingletonOnASeedIsCaptiveWithItsPathAndSite() throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self, fileID: "Hostile/Seeds.swift", line: 10)
        builder.provide(ProfileKey.self, dependsOn: UserSeed.self, fileID: "Hostile/Wiring.swift", line: 20) {
            "\($0.id)"
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
        let problem = try #require(error.problems.first)
        #expect(problem.key == "ProfileKey")
        #expect(problem.path == ["ProfileKey", "UserSeed"])
        #expect(problem.site == RegistrationSite(fileID: "Hostile/Wiring.swift", line: 20))
        #expect(problem.message.contains("UserSeed"), "\(problem.message)")
        #expect(problem.message.contains("seed"), "\(problem.message)")
        #expect(error.description.contains("Hostile/Wiring.swift:20"), "\(error)")
    }

    @Test func aSingletonReachingASeedThroughOtherSingletonsIsCaptiveAtTheLastOne() async throws {
        let ran = Tally()
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self, fileID: "Hostile/Seeds.swift", line: 10)
        builder.provide(RootKey.self, dependsOn: MidKey.self, fileID: "Hostile/Wiring.swift", line: 1) {
            ran.increment()
            return $0
        }
        builder.provide(MidKey.self, dependsOn: LeafKey.self, fileID: "Hostile/Wiring.swift", line: 2) {
            ran.increment()
            return $0
        }
        builder.provide(LeafKey.self, dependsOn: UserSeed.self, fileID: "Hostile/Wiring.swift", line: 3) {
            ran.increment()
            return "\($0.id)"
        }
        builder.provide(CounterKey.self) {
            ran.increment()
            return 1
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
        let problem = try #require(error.problems.first)
        #expect(problem.key == "LeafKey")
        #expect(problem.path == ["RootKey", "MidKey", "LeafKey", "UserSeed"])
        #expect(problem.pathDescription == "RootKey → MidKey → LeafKey → UserSeed")
        #expect(problem.site == RegistrationSite(fileID: "Hostile/Wiring.swift", line: 3))
        // build() refuses the same way, before any factory runs.
        let built = await codes { try await builder.build() }
        #expect(built == [.captiveDependency])
        #expect(ran.count == 0)
    }

    @Test func singletonsReachingASeedThroughScopedOrTransientServicesAreCaptive() throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self)
        builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: UserSeed.self) { "\($0.id)" }
        builder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { "\($0.id)" }
        builder.provide(RootKey.self, dependsOn: GreetingKey.self) { $0 }
        builder.provide(MidKey.self, dependsOn: ProfileKey.self) { $0 }
        builder.provide(LeafKey.self, dependsOn: UserSeed.self) { "\($0.id)" }
        builder.provide(CounterKey.self, dependsOn: UserSeed.self) { $0.id }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == Array(repeating: .captiveDependency, count: 4), "\(error)")
        #expect(Set(error.problems.map(\.key)) == ["RootKey", "MidKey", "LeafKey", "CounterKey"])
    }

    @Test func aSeedDeclaredTwiceOrAlsoProvidedInEitherOrderIsADuplicateNamingBothSites() throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self, fileID: "Hostile/A.swift", line: 1)
        builder.seed(UserSeed.self, fileID: "Hostile/A.swift", line: 2)
        builder.provide(RequestSeed.self, lifetime: .scoped, fileID: "Hostile/A.swift", line: 3) { "provided" }
        builder.seed(RequestSeed.self, fileID: "Hostile/A.swift", line: 4)
        builder.seed(CounterKey.self, fileID: "Hostile/A.swift", line: 5)
        builder.provide(CounterKey.self, lifetime: .transient, fileID: "Hostile/A.swift", line: 6) { 1 }
        builder.provide(
            GreetingKey.self,
            lifetime: .transient,
            dependsOn: UserSeed.self,
            RequestSeed.self,
            CounterKey.self
        ) {
            "\($0.id) \($1) \($2)"
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider, .duplicateProvider, .duplicateProvider], "\(error)")
        let byKey = Dictionary(error.problems.map { ($0.key, $0.message) }, uniquingKeysWith: { $0 + " | " + $1 })
        #expect(Set(byKey.keys) == ["UserSeed", "RequestSeed", "CounterKey"])
        for (key, first, second) in [("UserSeed", 1, 2), ("RequestSeed", 3, 4), ("CounterKey", 5, 6)] {
            let message = byKey[key] ?? ""
            #expect(message.contains("Hostile/A.swift:\(first)"), "\(key): \(message)")
            #expect(message.contains("Hostile/A.swift:\(second)"), "\(key): \(message)")
        }
    }

    @Test func overridingASeedMakesItAProvidedServiceEverywhere() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self)
        builder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { "profile \($0.id)" }
        var asSingleton = builder
        asSingleton.override(UserSeed.self, with: User(id: 1))
        // No longer a seed: a singleton may now depend on it.
        asSingleton.provide(RootKey.self, dependsOn: UserSeed.self) { "root \($0.id)" }
        let graph = try await asSingleton.build()
        #expect(graph[RootKey.self] == "root 1")
        #expect(try await graph.resolve(UserSeed.self) == User(id: 1))
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(ProfileKey.self) == "profile 1")
        // Code that still seeds its scopes keeps working: the value is ignored, the override wins.
        let seeded = try graph.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 2)))
        #expect(try await seeded.resolve(UserSeed.self) == User(id: 1))
        #expect(try await seeded.resolve(ProfileKey.self) == "profile 1")
        try await seeded.close()
        try await scope.close()
        try await graph.shutdown()

        // An override that keeps the seed's lifetime makes one value per scope.
        let made = Tally()
        var perScope = builder
        perScope.override(UserSeed.self) { User(id: 100 + made.increment()) }
        let scoped = try await perScope.build()
        let one = try scoped.makeScope()
        let two = try scoped.makeScope()
        #expect(try await one.resolve(ProfileKey.self) == "profile 101")
        #expect(try await two.resolve(UserSeed.self) == User(id: 102))
        #expect(try await one.resolve(UserSeed.self) == User(id: 101))
        #expect(made.count == 2)
        try await one.close()
        try await two.close()
        try await scoped.shutdown()
    }

    @Test func anOwnedValueGivenForAnOverriddenSeedIsIgnoredAndStaysTheCallers() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.seed(ConnectionKey.self)
        builder.seed(UserSeed.self)
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnectionKey.self, UserSeed.self) {
            HookedService("cart of \($0.name) for \($1.id)", log: log)
        }
        builder.override(ConnectionKey.self) { HookedService("fixture", log: log) }
        let graph = try await builder.build()
        let ignored = live.track(HookedService("ignored", log: log))
        let scope = try graph.makeScope(
            seeding: ScopeSeed(ConnectionKey.self, ignored, ownedByScope: true),
            ScopeSeed(UserSeed.self, User(id: 3))
        )
        #expect(try await scope.resolve(CartKey.self).name == "cart of fixture for 3")
        #expect(try await scope.resolve(ConnectionKey.self) !== ignored)
        // The override does not lift the other seeds.
        #expect(syncCodes { try graph.makeScope(seeding: ScopeSeed(ConnectionKey.self, ignored)) } == [.missingSeed])
        try await scope.close()
        try await graph.shutdown()
        #expect(log.count(of: "willRemove ignored") == 0, "\(log.all)")
        #expect(log.count(of: "willRemove fixture") == 1)
        #expect(live.alive == 1)  // the test still holds it
        #expect(ignored.name == "ignored")
    }

    // MARK: makeScope refusals

    @Test func aSeedGivenThreeTimesIsOneProblemForItsKey() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self)
        builder.seed(RequestSeed.self)
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(
                seeding: ScopeSeed(UserSeed.self, User(id: 1)),
                ScopeSeed(UserSeed.self, User(id: 2)),
                ScopeSeed(UserSeed.self, User(id: 3)),
                ScopeSeed(RequestSeed.self, "r"),
                ScopeSeed(StrangerKey.self, 1),
                ScopeSeed(StrangerKey.self, 2)
            )
        }
        // "one problem per key that is wrong"
        #expect(
            error.codes.sorted { $0.description < $1.description } == [.duplicateSeed, .unexpectedSeed],
            "\(error)"
        )
        #expect(error.problems.map(\.key).count == Set(error.problems.map(\.key)).count, "\(error)")
        try await graph.shutdown()
    }

    @Test func everyRefusedSeedCarriesTheSiteThatExplainsIt() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self, fileID: "Hostile/Seeds.swift", line: 11)
        builder.seed(RequestSeed.self, fileID: "Hostile/Seeds.swift", line: 12)
        builder.provide(CounterKey.self, fileID: "Hostile/Wiring.swift", line: 21) { 0 }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(
                seeding: ScopeSeed(UserSeed.self, User(id: 1)),
                ScopeSeed(UserSeed.self, User(id: 1)),
                ScopeSeed(CounterKey.self, 5),
                ScopeSeed(StrangerKey.self, 6)
            )
        }
        #expect(error.problems.count == 4, "\(error)")
        func problem(_ code: ServiceGraphError.Code, _ key: String) -> ServiceGraphError.Problem? {
            error.problems.first { $0.code == code && $0.key == key }
        }
        #expect(problem(.duplicateSeed, "UserSeed")?.site == RegistrationSite(fileID: "Hostile/Seeds.swift", line: 11))
        #expect(
            problem(.unexpectedSeed, "CounterKey")?.site == RegistrationSite(fileID: "Hostile/Wiring.swift", line: 21)
        )
        #expect(problem(.unexpectedSeed, "StrangerKey") != nil)
        #expect(problem(.unexpectedSeed, "StrangerKey")?.site == nil)
        #expect(problem(.missingSeed, "RequestSeed")?.site == RegistrationSite(fileID: "Hostile/Seeds.swift", line: 12))
        for key in ["UserSeed", "CounterKey", "StrangerKey", "RequestSeed"] {
            #expect(error.description.contains(key), "\(error)")
        }
        try await graph.shutdown()
    }

    @Test func aRefusedScopeOpensNothingRunsNoHookAndKeepsNoSeed() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        let opened = Tally()
        var builder = connectionBuilder(log)
        builder.seed(UserSeed.self)
        builder.eventHandler = { event in if event.kind == .scopeOpened { opened.increment() } }
        let graph = try await builder.build()
        for _ in 0..<3 {
            let outcome = syncCodes {
                try graph.makeScope(
                    seeding: ScopeSeed(ConnectionKey.self, live.track(HookedService("c", log: log)), ownedByScope: true)
                )
            }
            #expect(outcome == [.missingSeed])
        }
        #expect(opened.count == 0)
        #expect(live.alive == 0)
        let scope = try graph.makeScope(
            seeding: ScopeSeed(UserSeed.self, User(id: 1)),
            ScopeSeed(ConnectionKey.self, live.track(HookedService("ok", log: log)), ownedByScope: true)
        )
        #expect(opened.count == 1)
        try await scope.close()
        try await withDeadline { try await graph.shutdown() }
        #expect(log.count(of: "willRemove c") == 0)
        #expect(log.count(of: "willRemove ok") == 1)
        // After shutdown: refused, whatever the seeds, and nothing kept.
        let late = syncCodes {
            try graph.makeScope(
                seeding: ScopeSeed(UserSeed.self, User(id: 2)),
                ScopeSeed(ConnectionKey.self, live.track(HookedService("late", log: log)), ownedByScope: true)
            )
        }
        #expect(late == [.graphShutDown])
        #expect(log.count(of: "willRemove late") == 0)
        #expect(live.alive == 0)
    }

    @Test func keysThatReadAlikeAreToldApartByIdentity() async throws {
        enum Outer {
            enum TokenKey: ServiceKey { typealias Value = String }
        }
        func impostorSeed() -> ScopeSeed {
            enum TokenKey: ServiceKey { typealias Value = String }
            return ScopeSeed(TokenKey.self, "impostor")
        }
        var builder = ServiceGraph.Builder()
        builder.seed(Outer.TokenKey.self)
        let graph = try await builder.build()
        let impostor = impostorSeed()
        let error = try #require(throws: ServiceGraphError.self) { try graph.makeScope(seeding: impostor) }
        #expect(error.codes.sorted { $0.description < $1.description } == [.missingSeed, .unexpectedSeed])
        let scope = try graph.makeScope(seeding: ScopeSeed(Outer.TokenKey.self, "real"))
        #expect(try scope.resolveSynchronously(Outer.TokenKey.self) == "real")
        try await scope.close()
        try await graph.shutdown()
    }

    // MARK: Child graphs

    @Test func aChildsOwnSeedsAreAddedToItsParentsAndLeaveTheParentAlone() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.seed(UserSeed.self)
        parentBuilder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { "profile \($0.id)" }
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(RequestSeed.self)
        childBuilder.provide(
            GreetingKey.self,
            lifetime: .scoped,
            dependsOn: UserSeed.self,
            RequestSeed.self,
            ProfileKey.self
        ) {
            "\($0.id) \($1) \($2)"
        }
        let child = try await childBuilder.build()
        let missing = try #require(throws: ServiceGraphError.self) {
            try child.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 1)))
        }
        #expect(missing.codes == [.missingSeed])
        #expect(missing.problems.first?.key == "RequestSeed")
        let scope = try child.makeScope(
            seeding: ScopeSeed(RequestSeed.self, "r"),
            ScopeSeed(UserSeed.self, User(id: 1))
        )
        #expect(try await scope.resolve(GreetingKey.self) == "1 r profile 1")
        // The parent knows nothing of the child's seed.
        let parentRefusal = try #require(throws: ServiceGraphError.self) {
            try parent.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 2)), ScopeSeed(RequestSeed.self, "r"))
        }
        #expect(parentRefusal.codes == [.unexpectedSeed])
        let parentScope = try parent.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 2)))
        #expect(try await parentScope.resolve(ProfileKey.self) == "profile 2")
        try await parentScope.close()
        try await scope.close()
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildThatProvidesItsParentsSeedNoLongerTakesIt() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.seed(UserSeed.self)
        parentBuilder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { "profile \($0.id)" }
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(UserSeed.self, lifetime: .scoped) { User(id: 77) }
        let child = try await childBuilder.build()
        let scope = try child.makeScope()
        #expect(try await scope.resolve(ProfileKey.self) == "profile 77")
        // A value given for it is ignored, as for an override.
        let seeded = try child.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 1)))
        #expect(try await seeded.resolve(UserSeed.self) == User(id: 77))
        try await seeded.close()
        // The parent still needs it.
        #expect(syncCodes { try parent.makeScope() } == [.missingSeed])
        try await scope.close()
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildThatDeclaresItsParentsSeedAgainTakesOneValueForIt() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.seed(UserSeed.self)
        parentBuilder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { "profile \($0.id)" }
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(UserSeed.self)
        childBuilder.provide(GreetingKey.self, lifetime: .transient, dependsOn: UserSeed.self, ProfileKey.self) {
            "\($0.id) \($1)"
        }
        let child = try await childBuilder.build()
        let none = try #require(throws: ServiceGraphError.self) { try child.makeScope() }
        #expect(none.codes == [.missingSeed])
        let twice = try #require(throws: ServiceGraphError.self) {
            try child.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 1)), ScopeSeed(UserSeed.self, User(id: 2)))
        }
        #expect(twice.codes == [.duplicateSeed])
        let scope = try child.makeScope(seeding: ScopeSeed(UserSeed.self, User(id: 4)))
        #expect(try await scope.resolve(GreetingKey.self) == "4 profile 4")
        try await scope.close()
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildMaySeedAKeyItsParentProvides() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.provide(RequestSeed.self) { "parent's" }
        parentBuilder.provide(RootKey.self, dependsOn: RequestSeed.self) { "root of \($0)" }
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(RequestSeed.self)
        childBuilder.provide(GreetingKey.self, lifetime: .scoped, dependsOn: RequestSeed.self, RootKey.self) {
            "\($0) / \($1)"
        }
        let child = try await childBuilder.build()
        #expect(syncCodes { try child.makeScope() } == [.missingSeed])
        let scope = try child.makeScope(seeding: ScopeSeed(RequestSeed.self, "child's"))
        #expect(try await scope.resolve(GreetingKey.self) == "child's / root of parent's")
        #expect(parent[RequestSeed.self] == "parent's")
        try await scope.close()
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildSingletonOnItsParentsSeedIsCaptive() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.seed(UserSeed.self)
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(RootKey.self, dependsOn: LeafKey.self, fileID: "Hostile/Child.swift", line: 1) { $0 }
        childBuilder.provide(LeafKey.self, dependsOn: UserSeed.self, fileID: "Hostile/Child.swift", line: 2) {
            "\($0.id)"
        }
        let error = try await #require(throws: ServiceGraphError.self) { try await childBuilder.build() }
        #expect(error.codes == [.captiveDependency])
        #expect(error.problems.first?.key == "LeafKey")
        #expect(error.problems.first?.path == ["RootKey", "LeafKey", "UserSeed"])
        #expect(error.problems.first?.site == RegistrationSite(fileID: "Hostile/Child.swift", line: 2))
        try await parent.shutdown()
    }

    @Test func aParentShutdownClosesItsChildsSeededScopesBeforeReleasingItsSingletons() async throws {
        let log = EventLog()
        let parent = try await connectionBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.seed(AccountKey.self)
        childBuilder.provide(BasketKey.self, lifetime: .scoped, dependsOn: AccountKey.self, CartKey.self) {
            account,
            cart in
            HookedService("basket of \(account.name) in \(cart.name)", log: log)
        }
        let child = try await childBuilder.build()
        let scope = try child.makeScope(
            seeding: ScopeSeed(AccountKey.self, HookedService("acct", log: log), ownedByScope: true),
            ScopeSeed(ConnectionKey.self, HookedService("conn", log: log), ownedByScope: true)
        )
        _ = try await scope.resolve(BasketKey.self)
        try await parent.shutdown()
        #expect(scope.isClosed)
        let basket = try #require(log.index(of: "willRemove basket of acct in cart of conn"))
        let cart = try #require(log.index(of: "willRemove cart of conn"))
        let account = try #require(log.index(of: "willRemove acct"))
        let connection = try #require(log.index(of: "willRemove conn"))
        let database = try #require(log.index(of: "willRemove db"))
        #expect(basket < cart)
        #expect(cart < account && cart < connection)
        #expect(account < database && connection < database)
        #expect(log.count(of: "willRemove db") == 1)
    }

    @Test func lintIsQuietAboutSeedsThatAreUsedOrDeclaredAsEntryPoints() {
        var builder = ServiceGraph.Builder()
        builder.seed(UserSeed.self)
        builder.seed(RequestSeed.self)
        builder.seed(CounterKey.self)
        builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: UserSeed.self) { "\($0.id)" }
        builder.declareEntryPoints(GreetingKey.self, RequestSeed.self)
        let warnings = builder.lint()
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.message.hasPrefix("CounterKey is declared as a seed") == true, "\(warnings)")
    }

    // MARK: Scale

    @Test func tenThousandSeedsInOneGraph() async throws {
        let count = 10_000
        try await withDeadline(.seconds(300)) {
            var builder = ServiceGraph.Builder()
            for index in 0..<count { GeneratedKeys.seed(index, into: &builder) }
            GeneratedKeys.provide(count, lifetime: .scoped, dependsOn: [0, count / 2, count - 1], into: &builder)
            GeneratedKeys.provide(
                count + 1,
                lifetime: .transient,
                dependsOn: [count, 1],
                asynchronous: true,
                into: &builder
            )
            let graph = try await builder.build()
            #expect(graph.startupReport().seeds.count == count)
            let seeds = (0..<count).map { GeneratedKeys.scopeSeed($0, value: $0 * 2) }
            let first = try graph.makeScope(seeding: seeds.shuffled())
            let second = try graph.makeScope(seeding: seeds.reversed())
            #expect(try await first.resolveGenerated(count).value == 1 + 0 + count + 2 * (count - 1))
            #expect(try await second.resolveGenerated(count + 1).value == 1 + (1 + 0 + count + 2 * (count - 1)) + 2)
            var wrong = 0
            for index in 0..<count {
                if try await first.resolveGenerated(index).value != index * 2 { wrong += 1 }
            }
            #expect(wrong == 0)

            var withoutOne = seeds
            withoutOne.remove(at: 1_234)
            let missing = try #require(throws: ServiceGraphError.self) { try graph.makeScope(seeding: withoutOne) }
            #expect(missing.codes == [.missingSeed])
            #expect(missing.problems.first?.key == GeneratedKeys.name(1_234))
            let none = try #require(throws: ServiceGraphError.self) { try graph.makeScope() }
            #expect(none.problems.count == count)
            #expect(Set(none.codes) == [.missingSeed])
            try await first.close()
            try await second.close()
            try await graph.shutdown()
        }
    }
}
