import ServiceGraph
import Testing
import ServiceGraphTestSupport

extension ScopeKind {
    fileprivate static let session = ScopeKind("session")
    fileprivate static let request = ScopeKind("request", inside: .session)
    fileprivate static let job = ScopeKind("job")
}

private struct User: Sendable, Equatable {
    let name: String
}

private struct Request: Sendable, Equatable {
    let id: Int
}

private enum UserKey: ServiceKey { typealias Value = User }
private enum RequestKey: ServiceKey { typealias Value = Request }
private enum CartKey: ServiceKey { typealias Value = HookedService }
private enum CheckoutKey: ServiceKey { typealias Value = HookedService }
private enum ReceiptKey: ServiceKey { typealias Value = String }
private enum LoggerKey: ServiceKey { typealias Value = HookedService }
private enum JobKey: ServiceKey { typealias Value = String }
private enum PlainKey: ServiceKey { typealias Value = HookedService }

@Suite("Kinds of scope: a request scope inside a session scope")
struct ScopeKindTests {
    private func builder(log: EventLog) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(LoggerKey.self) { HookedService("Logger", log: log) }
        builder.inScope(.session) { session in
            session.seed(UserKey.self)
            session.provide(CartKey.self, lifetime: .scoped, dependsOn: UserKey.self) { user in
                HookedService("Cart of \(user.name)", log: log)
            }
        }
        builder.inScope(.request) { request in
            request.seed(RequestKey.self)
            request.provide(CheckoutKey.self, lifetime: .scoped, dependsOn: RequestKey.self, CartKey.self) {
                request,
                cart in HookedService("Checkout #\(request.id) with \(cart.name)", log: log)
            }
            // A transient is the graph's: it needs a request scope through what it reads.
            request.provide(ReceiptKey.self, lifetime: .transient, dependsOn: CheckoutKey.self, UserKey.self) {
                "\($0.name) for \($1.name)"
            }
        }
        builder.provide(PlainKey.self, lifetime: .scoped) { HookedService("Plain", log: log) }
        return builder
    }

    @Test func aTransientNeedingARequestFromASessionIsTheWrongKindWithOrWithoutAwait() async throws {
        let log = EventLog()
        let graph = try await builder(log: log).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        // The receipt needs a request's checkout: no await makes a session scope one.
        let synchronous = try #require(throws: ServiceGraphError.self) {
            try session.resolveSynchronously(ReceiptKey.self)
        }
        #expect(synchronous.codes == [.wrongScopeKind])
        #expect(synchronous.problems[0].key == "CheckoutKey")
        #expect(synchronous.problems[0].path == ["ReceiptKey", "CheckoutKey"])
        #expect(synchronous.problems[0].message.contains("this session scope is not one nor inside one"))
        let awaited = try await #require(throws: ServiceGraphError.self) { try await session.resolve(ReceiptKey.self) }
        #expect(awaited.codes == [.wrongScopeKind])
        // From a request, the same transient only needs its await (its checkout is not made yet).
        let request = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 1)))
        let notYet = try #require(throws: ServiceGraphError.self) { try request.resolveSynchronously(ReceiptKey.self) }
        #expect(notYet.codes == [.requiresAwait])
        #expect(try await request.resolve(ReceiptKey.self) == "Checkout #1 with Cart of ada for ada")
        try await session.close()
        try await graph.shutdown()
    }

    @Test func aRequestScopeReadsItsSessionsServicesAndHasItsOwn() async throws {
        let log = EventLog()
        let graph = try await builder(log: log).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        #expect(session.scopeKind == .session)
        let first = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 1)))
        let second = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 2)))
        let cart = try await session.resolve(CartKey.self)
        #expect(try await first.resolve(CartKey.self) === cart, "one cart per session")
        #expect(try await second.resolve(CartKey.self) === cart)
        let checkout = try await first.resolve(CheckoutKey.self)
        #expect(checkout.name == "Checkout #1 with Cart of ada")
        #expect(try await second.resolve(CheckoutKey.self) !== checkout, "one checkout per request")
        #expect(try await first.resolve(ReceiptKey.self) == "Checkout #1 with Cart of ada for ada")
        #expect(try first.resolveSynchronously(UserKey.self) == User(name: "ada"), "the session's seed, in place")
        #expect(try await first.resolve(RequestKey.self) == Request(id: 1))
        try await first.close()
        #expect(log.index(of: "willRemove Checkout #1 with Cart of ada") != nil)
        #expect(log.index(of: "willRemove Cart of ada") == nil, "the session's cart outlives its requests")
        try await session.close()
        #expect(second.isClosed, "closing a session closes its requests first")
        let removed = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(
            removed == [
                "willRemove Checkout #1 with Cart of ada", "willRemove Checkout #2 with Cart of ada",
                "willRemove Cart of ada",
            ]
        )
        try await graph.shutdown()
    }

    @Test func aServiceOfAnInnerKindCannotBeResolvedFromAnOuterScope() async throws {
        let graph = try await builder(log: EventLog()).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        let error = try await #require(throws: ServiceGraphError.self) { try await session.resolve(CheckoutKey.self) }
        #expect(error.codes == [.wrongScopeKind])
        #expect(error.problems[0].message.contains("CheckoutKey belongs to session/request scopes"))
        let plain = try graph.makeScope()
        let fromPlain = try await #require(throws: ServiceGraphError.self) { try await plain.resolve(CartKey.self) }
        #expect(fromPlain.codes == [.wrongScopeKind])
        // A default scope still has the default kind's services.
        #expect(try await plain.resolve(PlainKey.self).name == "Plain")
        try await plain.close()
        try await session.close()
        try await graph.shutdown()
    }

    @Test func scopesOpenOnlyWhereTheirKindSays() async throws {
        let graph = try await builder(log: EventLog()).build()
        let fromGraph = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 1)))
        }
        #expect(fromGraph.codes == [.wrongScopeKind])
        #expect(fromGraph.problems[0].message.contains("opened from a session scope"))
        let unknown = try #require(throws: ServiceGraphError.self) { try graph.makeScope(.job) }
        #expect(unknown.codes == [.wrongScopeKind])
        #expect(unknown.problems[0].message.contains("the graph has no job scopes"))
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        let nested = try #require(throws: ServiceGraphError.self) {
            try session.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "bob")))
        }
        #expect(nested.codes == [.wrongScopeKind])
        try await session.close()
        let closed = try #require(throws: ServiceGraphError.self) {
            try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 1)))
        }
        #expect(closed.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    @Test func aKindMadeAnewOpensAsTheValueTheGraphWasBuiltWith() async throws {
        let graph = try await builder(log: EventLog()).build()
        // Equal to `.session`, but not a copy of it: its names are in storage of their own.
        let anew = ScopeKind(["ses", "sion"].joined())
        let session = try graph.makeScope(anew, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        #expect(session.scopeKind == .session)
        #expect(try await session.resolve(CartKey.self).name == "Cart of ada")
        let request = try session.makeScope(
            ScopeKind("request", inside: anew),
            seeding: ScopeSeed(RequestKey.self, Request(id: 7))
        )
        #expect(try await request.resolve(CheckoutKey.self).name == "Checkout #7 with Cart of ada")
        // And a nested kind made anew is refused from the graph, as `.request` is.
        let fromGraph = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(ScopeKind("request", inside: anew), seeding: ScopeSeed(RequestKey.self, Request(id: 8)))
        }
        #expect(fromGraph.codes == [.wrongScopeKind])
        try await request.close()
        try await session.close()
        try await graph.shutdown()
    }

    @Test func eachKindTakesItsOwnSeedsAllAtOnce() async throws {
        let graph = try await builder(log: EventLog()).build()
        let wrong = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(.session, seeding: ScopeSeed(RequestKey.self, Request(id: 1)))
        }
        #expect(Set(wrong.codes) == [.missingSeed, .unexpectedSeed])
        #expect(
            wrong.problems.contains {
                $0.code == .unexpectedSeed && $0.message.contains("a seed of session/request scopes")
            }
        )
        #expect(wrong.problems.contains { $0.code == .missingSeed && $0.key == "UserKey" })
        let plain = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        }
        #expect(plain.codes == [.unexpectedSeed])
        // A default scope needs none of the kinds' seeds.
        let scope = try graph.makeScope()
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func validationRefusesAServiceThatNeedsAKindItsScopesAreNotWithin() throws {
        var builder = builder(log: EventLog())
        builder.inScope(.session) { session in
            // A session's service on a request's: captive.
            session.provide(JobKey.self, lifetime: .scoped, dependsOn: CheckoutKey.self) { $0.name }
        }
        builder.inScope(.job) { job in
            job.provide(ScopedJobKey.self, lifetime: .scoped) { "job" }
        }
        // A transient that needs a request scope and a job scope: no scope has both.
        builder.provide(MixedKey.self, lifetime: .transient, dependsOn: ReceiptKey.self, ScopedJobKey.self) { $0 + $1 }
        // A default scope's service on a session's: not inside one.
        builder.provide(StrayKey.self, lifetime: .scoped, dependsOn: CartKey.self) { $0.name }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let byKey = Dictionary(error.problems.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(Set(byKey.keys) == ["JobKey", "MixedKey", "StrayKey"])
        #expect(byKey["JobKey"]?.code == .captiveDependency)
        #expect(byKey["JobKey"]?.message.contains("belongs to session/request scopes") == true)
        #expect(byKey["MixedKey"]?.code == .wrongScopeKind)
        #expect(byKey["MixedKey"]?.message.contains("no scope has both") == true)
        #expect(byKey["StrayKey"]?.code == .wrongScopeKind)
        #expect(byKey["StrayKey"]?.path.last == "CartKey")
    }

    @Test func theGraphsShutdownClosesRequestsBeforeTheirSession() async throws {
        let log = EventLog()
        let graph = try await builder(log: log).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        let request = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 7)))
        _ = try await request.resolve(CheckoutKey.self)
        _ = graph[LoggerKey.self]
        try await graph.shutdown()
        let removed = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removed == ["willRemove Checkout #7 with Cart of ada", "willRemove Cart of ada", "willRemove Logger"])
        #expect(request.isClosed && session.isClosed)
    }

    @Test func aDroppedRequestReleasesItsOwnOnly() async throws {
        let log = EventLog()
        let graph = try await builder(log: log).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        do {
            let request = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 3)))
            _ = try await request.resolve(CheckoutKey.self)
        }
        // The dropped request's hooks run in the background; the session's cart stays.
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Checkout #3 with Cart of ada") == 1)
        #expect(log.count(of: "willRemove Cart of ada") == 1)
        #expect(log.index(of: "willRemove Checkout #3 with Cart of ada")! < log.index(of: "willRemove Cart of ada")!)
    }

    @Test func providersAndLazyHandlesMadeInARequestResolveThere() async throws {
        var builder = builder(log: EventLog())
        builder.inScope(.request) { request in
            request.provide(
                HandlesKey.self,
                lifetime: .scoped,
                dependsOn: Provider<CartKey>.self,
                Lazy<CheckoutKey>.self
            ) {
                Handles(cart: $0, checkout: $1)
            }
        }
        let graph = try await builder.build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        let request = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: 5)))
        let handles = try await request.resolve(HandlesKey.self)
        #expect(try await handles.cart() === session.resolve(CartKey.self))
        #expect(try await handles.checkout.value === request.resolve(CheckoutKey.self))
        try await session.close()
        try await graph.shutdown()
    }

    @Test func manyRequestsOfOneSessionAtOnceShareOneCart() async throws {
        let log = EventLog()
        let graph = try await builder(log: log).build()
        let session = try graph.makeScope(.session, seeding: ScopeSeed(UserKey.self, User(name: "ada")))
        let carts = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for id in 0..<50 {
                group.addTask {
                    let request = try session.makeScope(.request, seeding: ScopeSeed(RequestKey.self, Request(id: id)))
                    let checkout = try await request.resolve(CheckoutKey.self)
                    #expect(checkout.name == "Checkout #\(id) with Cart of ada")
                    let cart = try await request.resolve(CartKey.self)
                    try await request.close()
                    return ObjectIdentifier(cart)
                }
            }
            return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(carts.count == 1)
        #expect(log.count(of: "didAdd Cart of ada") == 1)
        try await session.close()
        #expect(log.count(of: "willRemove Cart of ada") == 1)
        try await graph.shutdown()
    }

    @Test func dumpsNameTheKindOfEachScopedService() async throws {
        let graph = try await builder(log: EventLog()).build()
        let text = graph.dump(.text)
        #expect(text.contains("scoped seed in session"))
        #expect(text.contains("scoped in session/request"))
        let json = graph.dump(.json)
        #expect(json.contains("\"scopeKind\": \"session/request\""))
        #expect(json.contains("\"scopeKind\": null"))
        #expect(graph.dump(.dot).contains("scoped in session/request"))
        #expect(graph.dump(.mermaid).contains("scoped in session/request"))
        try await graph.shutdown()
    }
}

private enum ScopedJobKey: ServiceKey { typealias Value = String }
private enum MixedKey: ServiceKey { typealias Value = String }
private enum StrayKey: ServiceKey { typealias Value = String }
private enum HandlesKey: ServiceKey { typealias Value = Handles }

private struct Handles: Sendable {
    let cart: Provider<CartKey>
    let checkout: Lazy<CheckoutKey>
}

@Suite("Kinds of scope: identity")
struct ScopeKindIdentityTests {
    @Test func aKindNamedScopeIsNotTheDefault() {
        #expect(ScopeKind("scope") != .default)
        #expect(ScopeKind.default.name == "scope")
        #expect(ScopeKind.default.description == "scope")
        #expect(ScopeKind("request", inside: .default).description == "scope/request")
        #expect(ScopeKind("request", inside: .default).parent == .default)
        #expect(ScopeKind("request", inside: ScopeKind("scope")).parent != .default)
    }
}
