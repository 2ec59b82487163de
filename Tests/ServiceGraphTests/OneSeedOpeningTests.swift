import ServiceGraph
import Testing
import ServiceGraphTestSupport

// `makeScope(seeding:)` and `makeScope(_:seeding:)` given one seed open without an array, on a path of
// their own; given an array of that one seed, the general path. Each case is run both ways, and the
// array path, the reference, must agree: the same values, the same hooks, the same errors.

private enum Account: ServiceKey { typealias Value = String }
private enum Owned: ServiceKey { typealias Value = HookedService }
private enum Greeting: ServiceKey { typealias Value = String }
private enum Config: ServiceKey { typealias Value = Int }
private enum SessionToken: ServiceKey { typealias Value = String }
private enum Stranger: ServiceKey { typealias Value = String }

extension ScopeKind {
    fileprivate static let oneSeedRequest = ScopeKind("one-seed request")
    fileprivate static let oneSeedSession = ScopeKind("one-seed session")
    fileprivate static let oneSeedNestedRequest = ScopeKind("one-seed nested request", inside: .oneSeedSession)
}

/// How a scope is opened: through the one-seed overload, or with an array of one (the reference).
enum OneSeedOpening: String, CaseIterable, CustomTestStringConvertible {
    case oneSeed, arrayOfOne

    var testDescription: String { rawValue }

    fileprivate func open(_ graph: ServiceGraph, _ seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try graph.makeScope(seeding: seed)
        case .arrayOfOne: try graph.makeScope(seeding: [seed])
        }
    }

    fileprivate func open(
        _ graph: ServiceGraph,
        _ kind: ScopeKind,
        _ seed: ScopeSeed
    ) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try graph.makeScope(kind, seeding: seed)
        case .arrayOfOne: try graph.makeScope(kind, seeding: [seed])
        }
    }

    /// A scope of `kind` opened inside `scope`.
    fileprivate func open(
        _ scope: ServiceScope,
        _ kind: ScopeKind,
        _ seed: ScopeSeed
    ) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try scope.makeScope(kind, seeding: seed)
        case .arrayOfOne: try scope.makeScope(kind, seeding: [seed])
        }
    }
}

@Suite("One seed opens a scope as an array of one does")
struct OneSeedOpeningTests {
    /// The default kind's one seed is `Account`; a scoped greeting is made from it.
    private func accountGraph(greetings: Tally = Tally()) async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.seed(Account.self)
        builder.provide(Config.self) { 7 }
        builder.provide(Greeting.self, lifetime: .scoped, dependsOn: Account.self, Config.self) {
            "hello \($0) #\(greetings.increment()) (\($1))"
        }
        builder.declareEntryPoints(Greeting.self)
        return try await builder.build()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func theSeedIsReadAndTheScopedServiceMadeFromIt(_ opening: OneSeedOpening) async throws {
        let graph = try await accountGraph()
        let first = try opening.open(graph, ScopeSeed(Account.self, "ada"))
        let second = try opening.open(graph, ScopeSeed(Account.self, "bob"))
        #expect(try first.resolveSynchronously(Account.self) == "ada")
        #expect(try await second.resolve(Account.self) == "bob")
        let greeting = try await first.resolve(Greeting.self)
        #expect(greeting == "hello ada #1 (7)")
        #expect(try await first.resolve(Greeting.self) == greeting)
        #expect(try await second.resolve(Greeting.self) == "hello bob #2 (7)")
        try await first.close()
        await #expect(throws: ServiceGraphError.self) { try await first.resolve(Account.self) }
        try await second.close()
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aSeedTheGraphDoesNotDeclareIsRefusedAndNoScopeIsMade(_ opening: OneSeedOpening) async throws {
        let graph = try await accountGraph()
        let error = try #require(throws: ServiceGraphError.self) {
            try opening.open(graph, ScopeSeed(Stranger.self, "x"))
        }
        // The wrong key and the missing one, both, as the reference reports them.
        #expect(error.problems.map(\.code).sorted { "\($0)" < "\($1)" } == [.missingSeed, .unexpectedSeed])
        #expect(error.problems.contains { $0.code == .unexpectedSeed && $0.key.contains("Stranger") })
        #expect(error.problems.contains { $0.code == .missingSeed && $0.key.contains("Account") })
        // The graph is not left with a half-opened scope: its shutdown has nothing to close.
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aGraphWithTwoSeedsRefusesOneAndNamesTheOtherMissing(_ opening: OneSeedOpening) async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(Account.self)
        builder.seed(SessionToken.self)
        builder.provide(Greeting.self, lifetime: .scoped, dependsOn: Account.self, SessionToken.self) { "\($0) \($1)" }
        builder.declareEntryPoints(Greeting.self)
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try opening.open(graph, ScopeSeed(Account.self, "ada"))
        }
        #expect(error.problems.map(\.code) == [.missingSeed])
        #expect(error.problems.first?.key.contains("SessionToken") == true)
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aSeedTheScopeOwnsGetsItsHooksWhenTheScopeCloses(_ opening: OneSeedOpening) async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Owned.self)
        builder.provide(Greeting.self, lifetime: .scoped, dependsOn: Owned.self) { "hi \($0.name)" }
        builder.declareEntryPoints(Greeting.self)
        let graph = try await builder.build()
        let owned = HookedService("owned", log: log)
        let scope = try opening.open(graph, ScopeSeed(Owned.self, owned, ownedByScope: true))
        #expect(try await scope.resolve(Greeting.self) == "hi owned")
        #expect(try await scope.resolve(Owned.self) === owned)
        try await scope.close()
        #expect(log.all == ["init owned", "willRemove owned"])
        // A caller's seed (not owned) gets no hooks, on either path.
        let borrowed = HookedService("borrowed", log: log)
        let other = try opening.open(graph, ScopeSeed(Owned.self, borrowed))
        _ = try await other.resolve(Greeting.self)
        try await other.close()
        #expect(log.all == ["init owned", "willRemove owned", "init borrowed"])
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aKindsOneSeedOpensItsScopeAndAnotherKindsSeedIsRefused(_ opening: OneSeedOpening) async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.oneSeedSession) { session in
            session.seed(SessionToken.self)
        }
        builder.inScope(.oneSeedRequest) { request in
            request.seed(Account.self)
            request.provide(Greeting.self, lifetime: .scoped, dependsOn: Account.self) { "request of \($0)" }
        }
        builder.declareEntryPoints(Greeting.self, SessionToken.self)
        let graph = try await builder.build()
        let request = try opening.open(graph, .oneSeedRequest, ScopeSeed(Account.self, "ada"))
        #expect(request.scopeKind == .oneSeedRequest)
        #expect(try await request.resolve(Greeting.self) == "request of ada")
        try await request.close()
        let session = try opening.open(graph, .oneSeedSession, ScopeSeed(SessionToken.self, "t-1"))
        #expect(try session.resolveSynchronously(SessionToken.self) == "t-1")
        await #expect(throws: ServiceGraphError.self) { try await session.resolve(Greeting.self) }
        try await session.close()
        // The request kind's seed given to a session scope: refused, with the kind named.
        let error = try #require(throws: ServiceGraphError.self) {
            try opening.open(graph, .oneSeedSession, ScopeSeed(Account.self, "ada"))
        }
        #expect(error.problems.contains { $0.code == .unexpectedSeed && $0.message.contains("one-seed request") })
        // A kind the graph does not have.
        let unknown = try #require(throws: ServiceGraphError.self) {
            try opening.open(graph, ScopeKind("nowhere"), ScopeSeed(Account.self, "ada"))
        }
        #expect(unknown.problems.map(\.code) == [.wrongScopeKind])
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aNestedKindsOneSeedOpensItsScopeInsideItsParentsAndIsCheckedAsTheArraysIs(
        _ opening: OneSeedOpening
    ) async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.inScope(.oneSeedSession) { session in
            session.seed(SessionToken.self)
        }
        builder.inScope(.oneSeedNestedRequest) { request in
            request.seed(Owned.self)
            request.provide(Greeting.self, lifetime: .scoped, dependsOn: SessionToken.self, Owned.self) {
                "\($1.name) in \($0)"
            }
        }
        builder.declareEntryPoints(Greeting.self)
        let graph = try await builder.build()
        let session = try opening.open(graph, .oneSeedSession, ScopeSeed(SessionToken.self, "t-1"))
        let owned = HookedService("owned", log: log)
        let request = try opening.open(session, .oneSeedNestedRequest, ScopeSeed(Owned.self, owned, ownedByScope: true))
        #expect(try await request.resolve(Greeting.self) == "owned in t-1")
        // The same instance owned by a second request while the first owns it: refused, on either path.
        let twice = try #require(throws: ServiceGraphError.self) {
            try opening.open(session, .oneSeedNestedRequest, ScopeSeed(Owned.self, owned, ownedByScope: true))
        }
        #expect(twice.codes == [.ownedSeedInUse])
        // A wrong key, and a kind that does not open inside this one.
        let wrong = try #require(throws: ServiceGraphError.self) {
            try opening.open(session, .oneSeedNestedRequest, ScopeSeed(Stranger.self, "x"))
        }
        #expect(Set(wrong.codes) == [.missingSeed, .unexpectedSeed])
        let outside = try #require(throws: ServiceGraphError.self) {
            try opening.open(session, .oneSeedSession, ScopeSeed(SessionToken.self, "t-2"))
        }
        #expect(outside.codes == [.wrongScopeKind])
        // The session's close closes its open request first, which ends its owned seed.
        try await session.close()
        #expect(request.isClosed)
        #expect(log.all == ["init owned", "willRemove owned"])
        let late = try #require(throws: ServiceGraphError.self) {
            try opening.open(session, .oneSeedNestedRequest, ScopeSeed(Owned.self, HookedService("late", log: log)))
        }
        #expect(late.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func theDefaultKindNamedOpensWithItsOneSeed(_ opening: OneSeedOpening) async throws {
        let graph = try await accountGraph()
        let scope = try opening.open(graph, .default, ScopeSeed(Account.self, "ada"))
        #expect(scope.scopeKind == .default)
        #expect(try await scope.resolve(Greeting.self) == "hello ada #1 (7)")
        try await scope.close()
        try await graph.shutdown()
    }

    @Test(arguments: OneSeedOpening.allCases)
    func aScopeOpenedAfterShutdownIsRefusedAndTheSeedStaysTheCallers(_ opening: OneSeedOpening) async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Owned.self)
        let graph = try await builder.build()
        try await graph.shutdown()
        let owned = HookedService("late", log: log)
        let error = try #require(throws: ServiceGraphError.self) {
            try opening.open(graph, ScopeSeed(Owned.self, owned, ownedByScope: true))
        }
        #expect(error.problems.map(\.code) == [.graphShutDown])
        #expect(log.all == ["init late"])
    }

    @Test(arguments: OneSeedOpening.allCases)
    func manyScopesOpenedAtOnceEachReadTheirOwnSeed(_ opening: OneSeedOpening) async throws {
        let graph = try await accountGraph()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let scope = try opening.open(graph, ScopeSeed(Account.self, "user-\(index)"))
                    #expect(try await scope.resolve(Greeting.self).hasPrefix("hello user-\(index) #"))
                    try await scope.close()
                }
            }
            try await group.waitForAll()
        }
        try await graph.shutdown()
    }
}
