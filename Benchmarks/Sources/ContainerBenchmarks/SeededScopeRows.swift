import ServiceGraph

/// The logged-in user a session scope is seeded with.
struct SignedInUser: Sendable {
    let id: Int
    let name: String
}

/// A scoped service made from the session's user and a singleton.
final class UserSession: Sendable {
    let user: SignedInUser
    let logger: any Logging

    init(user: SignedInUser, logger: any Logging) {
        self.user = user
        self.logger = logger
    }
}

enum SignedInUserKey: ServiceKey { typealias Value = SignedInUser }
enum UserSessionKey: ServiceKey { typealias Value = UserSession }
/// A screen made per user: by an argument factory, and by a provider of a transient.
enum UserScreenKey: ServiceKey { typealias Value = UserSession }
enum ScreenOfTheDayKey: ServiceKey { typealias Value = UserSession }
enum ProviderHolderKey: ServiceKey { typealias Value = Provider<ScreenOfTheDayKey> }
/// A singleton only a lazy handle reaches (created on first use), and the handle's holder.
enum HeavyReportKey: ServiceKey { typealias Value = UserSession }
enum LazyHolderKey: ServiceKey { typealias Value = Lazy<HeavyReportKey> }
/// A session's scoped service, read from the session and from a request scope opened in it.
enum SessionCartKey: ServiceKey { typealias Value = UserSession }

extension ScopeKind {
    static let benchmarkSession = ScopeKind("session")
    static let benchmarkRequest = ScopeKind("request", inside: .benchmarkSession)
}

/// Hand-wired sessions: the scope object holds the user it was made with and makes its session on
/// first use, as the graph's scope does.
final class HandWiredSession {
    let user: SignedInUser
    let logger: any Logging
    private var cached: UserSession?

    init(user: SignedInUser, logger: any Logging) {
        self.user = user
        self.logger = logger
    }

    var session: UserSession {
        if let cached { return cached }
        let session = UserSession(user: user, logger: logger)
        cached = session
        return session
    }
}

/// Runtime values against hand-wired code doing the same: seeded scopes: reading the seed of an open scope
/// (synchronously and with `await`), and a whole session: open a scope with the user, make its
/// scoped service from it, close. The contenders of a row alternate their samples.
@MainActor
func seededScopeRows(_ effort: Effort) async throws -> [AsyncRow] {
    var builder = ServiceGraph.Builder()
    builder.provide(LoggerKey.self) { Logger() }
    builder.seed(SignedInUserKey.self)
    builder.provide(UserSessionKey.self, lifetime: .scoped, dependsOn: SignedInUserKey.self, LoggerKey.self) {
        UserSession(user: $0, logger: $1)
    }
    let graph = try await builder.build()
    let user = SignedInUser(id: 1, name: "Ada")
    let logger = graph[LoggerKey.self]
    let hand = HandWiredSession(user: user, logger: logger)
    let scope = try graph.makeScope(seeding: ScopeSeed(SignedInUserKey.self, user))

    let reads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(hand.user) } },
            { n in for _ in 0..<n { blackHole(try scope.resolveSynchronously(SignedInUserKey.self)) } },
            { n in for _ in 0..<n { blackHole(try await scope.resolve(SignedInUserKey.self)) } },
        ]
    )
    try await scope.close()

    /// Opens a session scope per iteration, makes its scoped service, and closes it; the hand-wired
    /// contender does the same with its own session object.
    @Sendable func sessionBodies() -> [(Int) async throws -> Void] {
        [
            { n in
                for index in 0..<n {
                    let scope = HandWiredSession(user: SignedInUser(id: index, name: "Ada"), logger: logger)
                    blackHole(scope.session)
                }
            },
            { n in
                for index in 0..<n {
                    let scope = try graph.makeScope(
                        seeding: ScopeSeed(SignedInUserKey.self, SignedInUser(id: index, name: "Ada"))
                    )
                    blackHole(try await scope.resolve(UserSessionKey.self))
                    try await scope.close()
                }
            },
        ]
    }
    let sessions = try await measureInterleaved(effort, sessionBodies())
    let globalSessions = try await Task.detached { try await measureInterleaved(effort, sessionBodies()) }.value
    try await graph.shutdown()

    // A factory with arguments, and a provider of a transient, each called from a singleton's
    // perspective, against calling the initializer by hand.
    var factories = ServiceGraph.Builder()
    factories.provide(LoggerKey.self) { Logger() }
    factories.provide(UserScreenKey.self, arguments: SignedInUser.self, dependsOn: LoggerKey.self) { user, logger in
        UserSession(user: user, logger: logger)
    }
    factories.provide(ScreenOfTheDayKey.self, lifetime: .transient, dependsOn: LoggerKey.self) { logger in
        UserSession(user: SignedInUser(id: 0, name: "Ada"), logger: logger)
    }
    factories.provide(ProviderHolderKey.self, dependsOn: Provider<ScreenOfTheDayKey>.self) { $0 }
    let factoryGraph = try await factories.build()
    let makeScreen = factoryGraph[ArgumentFactory<UserScreenKey, SignedInUser>.self]
    let makeScreenSynchronously = factoryGraph[ArgumentFactory<UserScreenKey, SignedInUser>.Synchronous.self]
    let screenOfTheDay = factoryGraph[ProviderHolderKey.self]
    let factoryLogger = factoryGraph[LoggerKey.self]
    // What a user writes by hand to hand out the same function type: the floor of any
    // `(SignedInUser) async throws -> UserSession`, whoever makes it.
    let handWiredFactory = handWiredScreenFactory(logger: factoryLogger)
    let calls = try await measureInterleaved(
        effort,
        [
            { n in
                for index in 0..<n {
                    blackHole(UserSession(user: SignedInUser(id: index, name: "Ada"), logger: factoryLogger))
                }
            },
            { n in for index in 0..<n { blackHole(try await makeScreen(SignedInUser(id: index, name: "Ada"))) } },
            { n in
                for index in 0..<n { blackHole(try await handWiredFactory(SignedInUser(id: index, name: "Ada"))) }
            },
            { n in
                for index in 0..<n { blackHole(try makeScreenSynchronously(SignedInUser(id: index, name: "Ada"))) }
            },
            { n in
                for _ in 0..<n { blackHole(UserSession(user: SignedInUser(id: 0, name: "Ada"), logger: factoryLogger)) }
            },
            { n in for _ in 0..<n { blackHole(try screenOfTheDay.resolveSynchronously()) } },
            { n in for _ in 0..<n { blackHole(try await screenOfTheDay()) } },
        ]
    )
    try await factoryGraph.shutdown()

    // A lazy value read once made, against a hand-wired lazy property (a cached optional) and against
    // reading a singleton.
    var lazyBuilder = ServiceGraph.Builder()
    lazyBuilder.provide(LoggerKey.self) { Logger() }
    lazyBuilder.provide(HeavyReportKey.self, dependsOn: LoggerKey.self) { logger in
        UserSession(user: SignedInUser(id: 0, name: "Ada"), logger: logger)
    }
    lazyBuilder.provide(LazyHolderKey.self, dependsOn: Lazy<HeavyReportKey>.self) { $0 }
    let lazyGraph = try await lazyBuilder.build()
    let report = lazyGraph[LazyHolderKey.self]
    blackHole(try await report.value)
    blackHole(hand.session)
    let lazyReads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(hand.session) } },
            { n in for _ in 0..<n { blackHole(lazyGraph[HeavyReportKey.self]) } },
            { n in for _ in 0..<n { blackHole(try await report.value) } },
        ]
    )
    try await lazyGraph.shutdown()

    // Kinds of scope: a session's created scoped service read from the session itself and from a
    // request scope opened in it, against the hand-wired session's cached property.
    var kindsBuilder = ServiceGraph.Builder()
    kindsBuilder.provide(LoggerKey.self) { Logger() }
    kindsBuilder.inScope(.benchmarkSession) { session in
        session.seed(SignedInUserKey.self)
        session.provide(SessionCartKey.self, lifetime: .scoped, dependsOn: SignedInUserKey.self, LoggerKey.self) {
            UserSession(user: $0, logger: $1)
        }
    }
    kindsBuilder.inScope(.benchmarkRequest) { _ in }
    let kindsGraph = try await kindsBuilder.build()
    let sessionScope = try kindsGraph.makeScope(.benchmarkSession, seeding: ScopeSeed(SignedInUserKey.self, user))
    let requestScope = try sessionScope.makeScope(.benchmarkRequest)
    blackHole(try await sessionScope.resolve(SessionCartKey.self))
    let nestedReads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(hand.session) } },
            { n in for _ in 0..<n { blackHole(try await sessionScope.resolve(SessionCartKey.self)) } },
            { n in for _ in 0..<n { blackHole(try await requestScope.resolve(SessionCartKey.self)) } },
        ]
    )
    try await sessionScope.close()
    try await kindsGraph.shutdown()

    let read = "seed read in scope"
    let session = "seeded scope: open, make a scoped service, close, main actor"
    let globalSession = "seeded scope: open, make a scoped service, close, global executor"
    return [
        AsyncRow(scenario: read, contender: "hand-wired", median: reads[0]),
        AsyncRow(
            scenario: read,
            contender: "ServiceGraph, resolveSynchronously",
            median: reads[1],
            note: "\(String(format: reads[1] / reads[0], digits: 2))x hand-wired"
        ),
        AsyncRow(
            scenario: read,
            contender: "ServiceGraph, try await resolve",
            median: reads[2],
            note: "\(String(format: reads[2] / reads[0], digits: 2))x hand-wired"
        ),
        AsyncRow(scenario: session, contender: "hand-wired", median: sessions[0]),
        AsyncRow(
            scenario: session,
            contender: "ServiceGraph",
            median: sessions[1],
            note: "\(String(format: sessions[1] / sessions[0], digits: 2))x hand-wired"
        ),
        AsyncRow(scenario: "argument factory call", contender: "hand-wired, the initializer", median: calls[0]),
        AsyncRow(
            scenario: "argument factory call",
            contender: "hand-wired, an async closure calling it",
            median: calls[2],
            note: "\(String(format: calls[2] / calls[0], digits: 2))x the initializer: the function type's own cost"
        ),
        AsyncRow(
            scenario: "argument factory call",
            contender: "ServiceGraph, try await makeScreen(user)",
            median: calls[1],
            note:
                "\(String(format: calls[1] / calls[0], digits: 2))x the initializer, \(String(format: calls[1] / calls[2], digits: 2))x the closure"
        ),
        AsyncRow(
            scenario: "argument factory call",
            contender: "ServiceGraph, synchronous form, try makeScreen(user)",
            median: calls[3],
            note: "\(String(format: calls[3] / calls[0], digits: 2))x the initializer"
        ),
        AsyncRow(scenario: "provider call", contender: "hand-wired, the initializer", median: calls[4]),
        AsyncRow(
            scenario: "provider call",
            contender: "ServiceGraph, resolveSynchronously()",
            median: calls[5],
            note: "\(String(format: calls[5] / calls[4], digits: 2))x hand-wired"
        ),
        AsyncRow(
            scenario: "provider call",
            contender: "ServiceGraph, try await provider()",
            median: calls[6],
            note: "\(String(format: calls[6] / calls[4], digits: 2))x hand-wired"
        ),
        AsyncRow(scenario: "lazy read, made", contender: "hand-wired, a cached lazy property", median: lazyReads[0]),
        AsyncRow(
            scenario: "lazy read, made",
            contender: "ServiceGraph, graph[Key] (the singleton itself)",
            median: lazyReads[1],
            note: "\(String(format: lazyReads[1] / lazyReads[0], digits: 2))x hand-wired"
        ),
        AsyncRow(
            scenario: "lazy read, made",
            contender: "ServiceGraph, try await lazy.value",
            median: lazyReads[2],
            note: "\(String(format: lazyReads[2] / lazyReads[0], digits: 2))x hand-wired, "
                + "\(String(format: lazyReads[2] / lazyReads[1], digits: 2))x a singleton read"
        ),
        AsyncRow(
            scenario: "session's scoped service, made",
            contender: "hand-wired, a cached lazy property",
            median: nestedReads[0]
        ),
        AsyncRow(
            scenario: "session's scoped service, made",
            contender: "ServiceGraph, from the session scope",
            median: nestedReads[1],
            note: "\(String(format: nestedReads[1] / nestedReads[0], digits: 2))x hand-wired"
        ),
        AsyncRow(
            scenario: "session's scoped service, made",
            contender: "ServiceGraph, from a request scope inside it",
            median: nestedReads[2],
            note: "\(String(format: nestedReads[2] / nestedReads[0], digits: 2))x hand-wired"
        ),
        AsyncRow(scenario: globalSession, contender: "hand-wired", median: globalSessions[0]),
        AsyncRow(
            scenario: globalSession,
            contender: "ServiceGraph",
            median: globalSessions[1],
            note: "\(String(format: globalSessions[1] / globalSessions[0], digits: 2))x hand-wired"
        ),
    ]
}

/// The hand-wired counterpart of an argument factory: a closure of the same function type, made where
/// the compiler cannot see through it (as a composition root hands it to a view model).
@inline(never)
func handWiredScreenFactory(
    logger: any Logging
) -> nonisolated(nonsending) @Sendable (SignedInUser) async throws -> UserSession {
    { user in UserSession(user: user, logger: logger) }
}
