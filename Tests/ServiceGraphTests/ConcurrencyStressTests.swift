import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

private final class Session: Sendable {
    let id: Int

    init(id: Int) {
        self.id = id
    }
}

private final class Cart: Sendable {
    let session: Session

    init(session: Session) {
        self.session = session
    }
}

private enum SessionKey: ServiceKey { typealias Value = Session }
private enum CartKey: ServiceKey { typealias Value = Cart }
private enum ReceiptKey: ServiceKey { typealias Value = String }
private enum PriceKey: ServiceKey { typealias Value = Int }

/// Counts outcomes by name, from any task.
private final class Outcomes: Sendable {
    private let counts = Locked<[String: Int]>([:])

    func note(_ outcome: String) { counts.withLock { $0[outcome, default: 0] += 1 } }
    var counted: [String: Int] { counts.withLock { $0 } }
}

@Suite("Concurrency stress")
struct ConcurrencyStressTests {
    private func builder(sessions: Tally, carts: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 1 }
        builder.provide(PriceKey.self, lifetime: .transient, dependsOn: IntKey.self) { base in
            await Task.yield()
            return base * 10
        }
        builder.provide(SessionKey.self, lifetime: .scoped) {
            await Task.yield()
            return Session(id: sessions.increment())
        }
        builder.provide(CartKey.self, lifetime: .scoped, dependsOn: SessionKey.self) { session in
            carts.increment()
            return Cart(session: session)
        }
        builder.provide(ReceiptKey.self, lifetime: .transient, dependsOn: CartKey.self, PriceKey.self) { cart, price in
            "session \(cart.session.id): \(price)"
        }
        return builder
    }

    @Test func manyTasksResolvingAndOpeningAndClosingScopes() async throws {
        let sessions = Tally()
        let carts = Tally()
        let graph = try await builder(sessions: sessions, carts: carts).build()
        let scopesOpened = 40
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<scopesOpened {
                group.addTask {
                    let scope = try graph.makeScope()
                    // Many tasks in the same scope at once: one session, one cart.
                    let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { inner in
                        for _ in 0..<25 {
                            inner.addTask { ObjectIdentifier(try await scope.resolve(CartKey.self).session) }
                            inner.addTask { ObjectIdentifier(try await scope.resolve(SessionKey.self)) }
                        }
                        return try await inner.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
                    }
                    #expect(identities.count == 1)
                    _ = try await scope.resolve(ReceiptKey.self)
                    _ = try await graph.resolve(PriceKey.self)
                    try await scope.close()
                    await #expect(throws: ServiceGraphError.self) { try await scope.resolve(CartKey.self) }
                }
            }
            try await group.waitForAll()
        }
        #expect(sessions.count == scopesOpened, "one session per scope")
        #expect(carts.count == scopesOpened, "one cart per scope")
        try await graph.shutdown()
    }

    @Test func shuttingDownWhileOthersResolveGivesClearErrorsNotCrashes() async throws {
        let graph = try await builder(sessions: Tally(), carts: Tally()).build()
        let outcomes = Outcomes()
        @Sendable func note(_ outcome: String) { outcomes.note(outcome) }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for _ in 0..<50 {
                        do {
                            let scope = try graph.makeScope()
                            _ = try await scope.resolve(ReceiptKey.self)
                            _ = try await graph.resolve(PriceKey.self)
                            try await scope.close()
                            note("ok")
                        } catch let error as ServiceGraphError {
                            #expect(
                                error.codes == [.graphShutDown] || error.codes == [.scopeClosed],
                                "worker \(worker): \(error)"
                            )
                            note(error.codes.map(\.description).joined(separator: ", "))
                        } catch {
                            Issue.record("worker \(worker): unexpected \(error)")
                        }
                    }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(5))
                try? await graph.shutdown()
            }
        }
        let counted = outcomes.counted
        #expect(counted.values.reduce(0, +) == 16 * 50)
        // After shutdown nothing is resolved: a clear error instead.
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(PriceKey.self) }
        #expect(error?.codes == [.graphShutDown])
        #expect(throws: ServiceGraphError.self) { try graph.makeScope() }
    }

    @Test func singletonReadsFromManyTasksSeeOneInstance() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
        let graph = try await builder.build()
        let identities = await withTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<200 {
                group.addTask { ObjectIdentifier(graph[ServiceA.self]) }
            }
            return await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(identities.count == 1)
        try await graph.shutdown()
    }
}
