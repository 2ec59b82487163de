import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

private enum CrossGateAttemptsKey: ServiceKey { typealias Value = InPlaceClaimTests.Attempts }
private enum CrossGateSessionKey: ServiceKey { typealias Value = String }
private enum CrossGateRequestKey: ServiceKey { typealias Value = Int }

extension ScopeKind {
    fileprivate static let crossGateSession = ScopeKind("cross-gate-session")
    fileprivate static let crossGateRequest = ScopeKind("cross-gate-request", inside: .crossGateSession)
}

/// The first resolve of a scoped service whose dependencies are read in place claims the service's cell
/// without the scope's lock, makes the instance and publishes it with a compare-and-exchange; resolves
/// that come meanwhile wait for it in the scope's list, and the instance is then published under the
/// lock. These tests hold the factory (synchronous: it blocks its thread) while others come, so that
/// every hand-over between the two is taken.
@Suite("A scoped instance claimed in place while others come", .serialized)
struct InPlaceClaimTests {
    enum SeedKey: ServiceKey { typealias Value = String }
    enum HeldKey: ServiceKey { typealias Value = Made }

    final class Made: Sendable {
        let name: String
        let released: Tally

        init(_ name: String, released: Tally) {
            self.name = name
            self.released = released
        }

        deinit { released.increment() }
    }

    /// A synchronous factory the test holds: it says when it has started, then blocks its thread until
    /// let go (or a deadline passes, so that a broken test fails rather than hangs), then makes an
    /// instance or throws.
    final class Gate: Sendable {
        let started = Tally()
        let open = Atomic(false)
        let failures = Atomic(0)

        func pass() throws {
            started.increment()
            let deadline = ContinuousClock.now + .seconds(10)
            while !open.load(ordering: .acquiring), ContinuousClock.now < deadline { usleep(200) }
            if failures.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 { throw TestFailure("held factory fails") }
        }

        /// Waits (suspending, not blocking) until the factory has started `count` times.
        func waitUntilStarted(_ count: Int) async throws {
            try await withDeadline(.seconds(10)) {
                while self.started.count < count { try await Task.sleep(for: .milliseconds(1)) }
            }
        }
    }

    private func graph(_ gate: Gate, released: Tally) async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.seed(SeedKey.self)
        builder.provide(HeldKey.self, lifetime: .scoped, dependsOn: SeedKey.self) { seed in
            try gate.pass()
            return Made(seed, released: released)
        }
        return try await builder.build()
    }

    /// Waits until `count` instances were released (a finished task keeps its result until the runtime
    /// lets the task go, a moment after it returned), and checks that no more were.
    private func expectReleased(_ released: Tally, _ count: Int) async throws {
        try await withDeadline(.seconds(10)) {
            while released.count < count { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(released.count == count)
    }

    /// Resolves `HeldKey` from `count` tasks, each result or error in order of arrival.
    private func resolveFromMany(_ scope: ServiceScope, _ count: Int) -> Task<[Result<Made, any Error>], Never> {
        Task {
            await withTaskGroup(of: Result<Made, any Error>.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        do { return .success(try await scope.resolve(HeldKey.self)) } catch { return .failure(error) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
    }

    /// A resolve whose factory `gate` holds, and `count` more started once it is held; the factory is let
    /// go once they have had time to come and wait.
    private func resolveWhileHeld(
        _ scope: ServiceScope,
        _ gate: Gate,
        others count: Int
    ) async throws -> (first: Task<Made, any Error>, others: Task<[Result<Made, any Error>], Never>) {
        let first = Task { try await scope.resolve(HeldKey.self) }
        try await gate.waitUntilStarted(1)
        let others = resolveFromMany(scope, count)
        try await Task.sleep(for: .milliseconds(30))
        gate.open.store(true, ordering: .releasing)
        return (first, others)
    }

    @Test("those who come while the instance is made get it, made once, and it is released once")
    func waitersGetTheInstanceMadeInPlace() async throws {
        let (gate, released) = (Gate(), Tally())
        let graph = try await graph(gate, released: released)
        do {
            let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "held"))
            let (first, others) = try await resolveWhileHeld(scope, gate, others: 16)
            let made = try await withDeadline(.seconds(10)) { try await first.value }
            let results = try await withDeadline(.seconds(10)) { await others.value }
            #expect(results.count == 16)
            for result in results { #expect(try result.get() === made) }
            #expect(gate.started.count == 1)
            #expect(try await scope.resolve(HeldKey.self) === made)
            try await scope.close()
        }
        try await expectReleased(released, 1)
        try await graph.shutdown()
    }

    @Test("a factory that fails while others wait fails them all, and the next resolve makes it")
    func aFailureWhileOthersWaitFailsThemAndIsTriedAgain() async throws {
        let (gate, released) = (Gate(), Tally())
        gate.failures.store(1, ordering: .relaxed)
        let graph = try await graph(gate, released: released)
        do {
            let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "again"))
            let (first, others) = try await resolveWhileHeld(scope, gate, others: 8)
            let error = await #expect(throws: ServiceGraphError.self) {
                try await withDeadline(.seconds(10)) { try await first.value }
            }
            #expect(error.map { "\($0)" }?.contains("HeldKey") == true)
            let results = try await withDeadline(.seconds(10)) { await others.value }
            // Each waiter failed with the creation's error, or (coming after it ended) made the instance
            // itself: never two instances, never a hang.
            let made = results.compactMap { try? $0.get() }
            #expect(Set(made.map(ObjectIdentifier.init)).count <= 1)
            for case .failure(let failure) in results { #expect("\(failure)".contains("HeldKey")) }
            let later = try await scope.resolve(HeldKey.self)
            #expect(later.name == "again")
            #expect(made.allSatisfy { $0 === later })
            #expect(gate.started.count == 2)
            try await scope.close()
        }
        try await expectReleased(released, 1)
        try await graph.shutdown()
    }

    @Test("a factory that fails with no one waiting leaves the cell empty for the next resolve")
    func aFailureAloneLeavesTheCellEmpty() async throws {
        let (gate, released) = (Gate(), Tally())
        gate.failures.store(2, ordering: .relaxed)
        gate.open.store(true, ordering: .releasing)
        let graph = try await graph(gate, released: released)
        let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "alone"))
        for _ in 0..<2 { await #expect(throws: ServiceGraphError.self) { try await scope.resolve(HeldKey.self) } }
        #expect(try await scope.resolve(HeldKey.self).name == "alone")
        #expect(try scope.resolveSynchronously(SeedKey.self) == "alone")
        try await scope.close()
        try await expectReleased(released, 1)
        #expect(gate.started.count == 3)
        try await graph.shutdown()
    }

    @Test("a close that comes while the instance is made waits for it, and releases it once")
    func aCloseWaitsForTheCreationInPlace() async throws {
        let (gate, released) = (Gate(), Tally())
        let graph = try await graph(gate, released: released)
        let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "closing"))
        let first = Task { try await scope.resolve(HeldKey.self).name }
        try await gate.waitUntilStarted(1)
        let closed = Atomic(false)
        let close = Task {
            try await scope.close()
            closed.store(true, ordering: .releasing)
        }
        try await Task.sleep(for: .milliseconds(30))
        let closedEarly = closed.load(ordering: .acquiring)
        #expect(!closedEarly)
        // Refused once the close has started: a resolve that comes now makes nothing.
        await #expect(throws: ServiceGraphError.self) { try await scope.resolve(HeldKey.self) }
        gate.open.store(true, ordering: .releasing)
        #expect(try await withDeadline(.seconds(10)) { try await first.value } == "closing")
        try await withDeadline(.seconds(10)) { try await close.value }
        try await expectReleased(released, 1)
        #expect(gate.started.count == 1)
        try await graph.shutdown()
    }

    @Test("many scopes, many tasks, a failure in each: one instance per scope, each released once")
    func manyScopesAtOnce() async throws {
        let released = Tally()
        let attempts = Locked<[String: Int]>([:])
        var builder = ServiceGraph.Builder()
        builder.seed(SeedKey.self)
        builder.provide(HeldKey.self, lifetime: .scoped, dependsOn: SeedKey.self) { seed in
            // Each scope's first attempt fails (alone or with others waiting, as the tasks come), its
            // second makes the instance.
            let attempt = attempts.withLock { attempts in
                attempts[seed, default: 0] += 1
                return attempts[seed, default: 0]
            }
            if attempt == 1 { throw TestFailure("the first attempt fails") }
            return Made(seed, released: released)
        }
        let graph = try await builder.build()
        let madeCount = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let scope = try graph.makeScope(seeding: ScopeSeed(SeedKey.self, "scope-\(index)"))
                    let results = await resolveFromMany(scope, 8).value
                    let made = results.compactMap { try? $0.get() }
                    #expect(Set(made.map(ObjectIdentifier.init)).count <= 1)
                    #expect(made.allSatisfy { $0.name == "scope-\(index)" })
                    var instance = made.first
                    for _ in 0..<3 where instance == nil { instance = try? await scope.resolve(HeldKey.self) }
                    let resolved = try #require(instance)
                    #expect(try await scope.resolve(HeldKey.self) === resolved)
                    #expect(made.allSatisfy { $0 === resolved })
                    #expect(attempts.withLock { $0["scope-\(index)"] } == 2)
                    try await scope.close()
                    return 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(madeCount == 40)
        try await expectReleased(released, 40)
        try await graph.shutdown()
    }
    /// A scope's own record of its factory's attempts: plain, unsynchronized state, as a factory may keep.
    final class Attempts: @unchecked Sendable {
        var count = 0
    }

    enum AttemptsKey: ServiceKey { typealias Value = Attempts }

    @Test("a failed attempt happens before the next: a factory's plain state needs no lock of its own")
    func attemptsOfOneInstanceAreOrdered() async throws {
        let (released, failures) = (Tally(), 4)
        var builder = ServiceGraph.Builder()
        builder.seed(AttemptsKey.self)
        builder.provide(HeldKey.self, lifetime: .scoped, dependsOn: AttemptsKey.self) { attempts in
            // Read and written by each attempt, from whichever thread makes it: the scope orders the
            // attempts. (Two resolves of one scope are ordered by its resolve gate too, so this test
            // checks the count; the next one checks the order under the thread sanitizer.)
            attempts.count += 1
            if attempts.count <= failures { throw TestFailure("attempt \(attempts.count) fails") }
            return Made("made", released: released)
        }
        let graph = try await builder.build()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    let attempts = Attempts()
                    let scope = try graph.makeScope(seeding: ScopeSeed(AttemptsKey.self, attempts))
                    // Each task tries until it gets the instance: attempts follow failed ones from other
                    // tasks, with nothing but the scope between them.
                    let made = try await withThrowingTaskGroup(of: Made?.self) { tasks in
                        for _ in 0..<8 {
                            tasks.addTask {
                                for _ in 0..<failures + 1 {
                                    if let made = try? await scope.resolve(HeldKey.self) { return made }
                                }
                                return nil
                            }
                        }
                        return try await tasks.reduce(into: []) { $0.append($1) }
                    }
                    let first = try #require(made.lazy.compactMap { $0 }.first)
                    #expect(made.allSatisfy { $0 === first })
                    try await scope.close()
                    // The failed attempts, then the one that made the instance: none after it, none lost.
                    #expect(attempts.count == failures + 1)
                }
            }
            try await group.waitForAll()
        }
        try await expectReleased(released, 40)
        try await graph.shutdown()
    }
    /// Two flags two tasks hand over with relaxed operations: an order the thread sanitizer does not
    /// see, so that only the library's own orderings relate what the tasks do.
    final class HandOver: Sendable {
        let secondIsWaiting = Atomic(false)
        let firstIsDone = Atomic(false)

        /// Spins until `flag` is set or two seconds have passed (another test may hold the other
        /// thread); whether it was set.
        static func spin(until flag: borrowing Atomic<Bool>) -> Bool {
            let deadline = ContinuousClock.now + .seconds(2)
            while !flag.load(ordering: .relaxed) {
                if ContinuousClock.now > deadline { return false }
            }
            return true
        }
    }

    @Test("a failed attempt from one request scope happens before the next from another, of the session's service")
    func attemptsFromTwoRequestScopesAreOrdered() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.crossGateSession) { session in
            session.seed(CrossGateAttemptsKey.self)
            session.provide(CrossGateSessionKey.self, lifetime: .scoped, dependsOn: CrossGateAttemptsKey.self) {
                attempts in
                // A plain read and write per attempt: resolves from two request scopes enter two resolve
                // gates, so only the session's cell orders the attempts (given up releasing, claimed
                // acquiring); the thread sanitizer reports this access if it does not.
                attempts.count += 1
                if attempts.count == 1 { throw TestFailure("the first attempt fails") }
                return "made by attempt \(attempts.count)"
            }
        }
        builder.inScope(.crossGateRequest) { request in
            request.provide(CrossGateRequestKey.self, lifetime: .scoped) { 1 }
        }
        let graph = try await builder.build()
        for _ in 0..<20 {
            let attempts = Attempts()
            let session = try graph.makeScope(
                .crossGateSession,
                seeding: ScopeSeed(CrossGateAttemptsKey.self, attempts)
            )
            let (first, second) = (try session.makeScope(.crossGateRequest), try session.makeScope(.crossGateRequest))
            let handOver = HandOver()
            // Both tasks spin, so each has a thread of its own: the first attempt fails in one, the next
            // runs in the other once it has, with no order between them but the library's.
            let failing = Task {
                _ = HandOver.spin(until: handOver.secondIsWaiting)
                let failed = (try? await first.resolve(CrossGateSessionKey.self)) == nil
                handOver.firstIsDone.store(true, ordering: .relaxed)
                return failed
            }
            let making = Task {
                handOver.secondIsWaiting.store(true, ordering: .relaxed)
                // Given up after the deadline: then ordered by the await, and still checked below.
                if !HandOver.spin(until: handOver.firstIsDone) { _ = await failing.value }
                return try await second.resolve(CrossGateSessionKey.self)
            }
            #expect(await failing.value, "the first attempt fails")
            #expect(try await making.value == "made by attempt 2")
            #expect(attempts.count == 2)
            try await first.close()
            try await second.close()
            try await session.close()
        }
        try await graph.shutdown()
    }
}
