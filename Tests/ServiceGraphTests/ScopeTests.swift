import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum Session: ServiceKey { typealias Value = HookedService }
private enum Cart: ServiceKey { typealias Value = HookedService }
private enum Checkout: ServiceKey { typealias Value = String }
private enum Draining: ServiceKey { typealias Value = GatedRemoval }

/// A scoped service whose `willRemove` waits for the test: a close of its scope stops there.
private final class GatedRemoval: LifecycleHooks, Sendable {
    private let log: EventLog
    private let gate: Gate
    init(log: EventLog, gate: Gate) { (self.log, self.gate) = (log, gate) }
    func didAdd() async throws {}
    func willRemove() async throws {
        log.record("willRemove started")
        await gate.wait()
        log.record("willRemove ended")
    }
}

@Suite("Scopes")
struct ScopeTests {
    private func builder(_ log: EventLog, creations: Tally = Tally()) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(Session.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in
            HookedService("Session#\(creations.increment())", log: log)
        }
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: Session.self) { session in
            try await Task.sleep(for: .milliseconds(2))
            return HookedService("Cart(\(session.name))", log: log)
        }
        builder.provide(Checkout.self, lifetime: .transient, dependsOn: Cart.self, ServiceA.self) { cart, a in
            "\(cart.name)+\(a.name)"
        }
        return builder
    }

    @Test func aScopedInstanceIsCreatedOncePerScopeEvenWhenManyTasksAskAtOnce() async throws {
        let log = EventLog()
        let creations = Tally()
        let graph = try await builder(log, creations: creations).build()
        let scope = try graph.makeScope()
        let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<100 {
                group.addTask { ObjectIdentifier(try await scope.resolve(Cart.self)) }
            }
            return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(identities.count == 1)
        #expect(creations.count == 1)
        #expect(log.count(of: "didAdd Cart(Session#1)") == 1)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func eachScopeHasItsOwnInstancesAndSharesSingletons() async throws {
        let log = EventLog()
        let graph = try await builder(log).build()
        let first = try graph.makeScope()
        let second = try graph.makeScope()
        let one = try await first.resolve(Session.self)
        let two = try await second.resolve(Session.self)
        #expect(one !== two)
        #expect(try await first.resolve(Session.self) === one)
        #expect(first[ServiceA.self] === second[ServiceA.self])
        #expect(try await first.resolve(Checkout.self) == "Cart(\(one.name))+A")
        try await first.close()
        try await second.close()
        try await graph.shutdown()
    }

    @Test func closingReleasesScopedInstancesTogetherInReverseOrder() async throws {
        let log = EventLog()
        let graph = try await builder(log).build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(Checkout.self)
        try await scope.close()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove Cart(Session#1)", "willRemove Session#1"])
        #expect(scope.isClosed)
        try await graph.shutdown()
    }

    @Test func aClosedScopeRefusesNewWorkAndASecondClose() async throws {
        let graph = try await builder(EventLog()).build()
        let scope = try graph.makeScope()
        try await scope.close()
        let resolveError = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(Session.self) }
        #expect(resolveError?.codes == [.scopeClosed])
        #expect(resolveError?.description.contains("already closed") == true)
        let closeError = await #expect(throws: ServiceGraphError.self) { try await scope.close() }
        #expect(closeError?.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    /// A close while another is still running (the caller's, or the graph's shutdown's) throws
    /// scopeClosed at once, saying the scope is closing (not closed: its hooks are still running), and
    /// leaves the first to finish; once it has, a close says the scope is closed.
    @Test(arguments: ["close", "shutdown"])
    func aSecondCloseWhileTheFirstRunsSaysTheScopeIsClosing(_ first: String) async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(Draining.self, lifetime: .scoped) { GatedRemoval(log: log, gate: gate) }
        let graph = try await builder.build()
        try await withDeadline(.seconds(60)) {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(Draining.self)
            let running = Task {
                if first == "close" { try await scope.close() } else { try await graph.shutdown() }
            }
            try await log.waitFor("willRemove started")
            let closing = await #expect(throws: ServiceGraphError.self) { try await scope.close() }
            #expect(closing?.codes == [.scopeClosed])
            #expect(
                closing?.description.contains("close() was called on a scope that is already closing") == true,
                "\(String(describing: closing))"
            )
            // Refused without waiting for the first close, whose hook is still held.
            #expect(log.all == ["willRemove started"])
            await gate.open()
            try await running.value
            #expect(log.all == ["willRemove started", "willRemove ended"])
            let closed = await #expect(throws: ServiceGraphError.self) { try await scope.close() }
            #expect(closed?.codes == [.scopeClosed])
            #expect(
                closed?.description.contains("close() was called on a scope that is already closed") == true,
                "\(String(describing: closed))"
            )
            if first == "close" { try await graph.shutdown() }
        }
    }

    @Test func shutdownClosesOpenScopesBeforeReleasingSingletons() async throws {
        let log = EventLog()
        let graph = try await builder(log).build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(Cart.self)
        try await graph.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove Cart(Session#1)", "willRemove Session#1", "willRemove A"])
        #expect(scope.isClosed)
    }

    /// Scopes opened after others closed take their places among the graph's open scopes: the
    /// shutdown still finds every open one, and closes them newest first, whatever place each has.
    @Test func shutdownClosesScopesNewestFirstAfterOthersClosedAndWereReplaced() async throws {
        let log = EventLog()
        let graph = try await builder(log).build()
        var scopes: [ServiceScope] = []
        for _ in 0..<5 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(Session.self)
            scopes.append(scope)
        }
        // Sessions #2 and #4 close; #6 and #7 take their places, #8 a new one.
        try await scopes[1].close()
        try await scopes[3].close()
        for _ in 0..<3 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(Session.self)
            scopes.append(scope)
        }
        try await graph.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(
            removals == [
                "willRemove Session#2", "willRemove Session#4",
                "willRemove Session#8", "willRemove Session#7", "willRemove Session#6",
                "willRemove Session#5", "willRemove Session#3", "willRemove Session#1",
                "willRemove A",
            ]
        )
        #expect(scopes.allSatisfy { $0.isClosed })
    }

    @Test func aFailedScopedCreationIsReportedAndRetried() async throws {
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self, lifetime: .scoped) {
            if attempts.increment() == 1 { throw TestFailure("first attempt fails") }
            return 7
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let error = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(IntKey.self) }
        #expect(error?.codes == [.factoryFailed])
        #expect(error?.problems.first?.key == "IntKey")
        #expect(try await scope.resolve(IntKey.self) == 7)
        try await scope.close()
    }

    @Test func scopesResolveSynchronousTransientsWithoutAwait() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 2 }
        builder.provide(OtherIntKey.self, lifetime: .transient, dependsOn: IntKey.self) { $0 * 3 }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        #expect(try scope.resolveSynchronously(OtherIntKey.self) == 6)
        try await scope.close()
    }
}

private enum RequestID: ServiceKey { typealias Value = Int }
private enum RequestContext: ServiceKey { typealias Value = Int }

@Suite("Scoped services holding transients")
struct ScopedHoldingTransientTests {
    @Test func aScopedServiceGetsItsOwnTransientOncePerScope() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(RequestID.self, lifetime: .transient) { made.increment() }
        builder.provide(RequestContext.self, lifetime: .scoped, dependsOn: RequestID.self) { $0 }
        try builder.validate()
        let graph = try await builder.build()

        let first = try graph.makeScope()
        let held = try await first.resolve(RequestContext.self)
        #expect(try await first.resolve(RequestContext.self) == held)  // the scope keeps its instance
        let fresh = try await first.resolve(RequestID.self)
        #expect(fresh != held)  // the transient is still new on every resolve

        let second = try graph.makeScope()
        let other = try await second.resolve(RequestContext.self)
        #expect(other != held)  // each scope's instance got its own transient
        #expect(made.count == 3)

        try await first.close()
        try await second.close()
        try await graph.shutdown()
    }
}
