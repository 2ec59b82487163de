import Foundation
import GraphLifecycle
import Hummingbird
import Logging
import SQLiteNIO
import ServiceGraph
import ServiceGraphTesting
import SignupApp
import Synchronization
import Testing

/// Sign-ups kept in memory: the repository a unit test puts in the graph in place of SQLite.
final class InMemorySignupRepository: SignupRepository {
    private let signups = Locked<[Signup]>([])

    func create(email: String, name: String) async throws -> Signup {
        try signups.withLock { signups in
            guard !signups.contains(where: { $0.email == email }) else { throw SignupError.alreadySignedUp(email) }
            let signup = Signup(id: signups.count + 1, email: email, name: name)
            signups.append(signup)
            return signup
        }
    }

    func all() async throws -> [Signup] { signups.withLock { $0 } }

    func find(id: Int) async throws -> Signup? { signups.withLock { $0.first { $0.id == id } } }
}

/// Mails sent, kept for the test to read.
final class RecordingMailSender: MailSender {
    private let sent = Locked<[String]>([])

    func send(to address: String, subject: String, body: String) async throws {
        sent.withLock { $0.append("\(address): \(subject)") }
    }

    var all: [String] { sent.withLock { $0 } }
}

let quietLogger: Logger = {
    var logger = Logger(label: "signup-app-tests")
    logger.logLevel = .critical
    return logger
}()

/// A fresh SQLite file of its own for each call.
func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("signups-\(UUID().uuidString).sqlite").path
}

/// The application's graph with the repository in memory: nothing touches a database file. The
/// database service still opens its connection when the graph is built, to SQLite's in-memory storage,
/// so a test leaves no file behind.
func inMemoryBuilder() -> ServiceGraph.Builder {
    var builder = makeAppBuilder(
        configuration: AppConfiguration(databasePath: ":memory:"),
        logger: quietLogger
    )
    let repository = InMemorySignupRepository()
    builder.override(SignupRepositoryKey.self) { repository }
    return builder
}

/// Resolves the sign-up service in a request scope, as a request handler does, and closes the scope.
func withSignupService<T: Sendable>(
    in graph: ServiceGraph,
    _ body: (SignupService) async throws -> T
) async throws -> T {
    let scope = try graph.makeScope(.request, seeding: ScopeSeed(RequestLoggerKey.self, quietLogger))
    do {
        let result = try await body(try await scope.resolve(SignupServiceKey.self))
        try await scope.close()
        return result
    } catch {
        try await scope.close()
        throw error
    }
}

@Suite("Sign-ups, with the repository overridden", .isolatedGraph { inMemoryBuilder() })
struct SignupServiceTests {
    @Test func theApplicationsGraphIsValid() {
        expectValidGraph(makeAppBuilder(configuration: AppConfiguration(databasePath: "unused"), logger: quietLogger))
    }

    @Test func signsUpWithATrimmedLowercasedAddress() async throws {
        let signup = try await withSignupService(in: TestGraph.required) {
            try await $0.signUp(email: "  Ann@Example.ORG ", name: " Ann ")
        }
        #expect(signup == Signup(id: 1, email: "ann@example.org", name: "Ann"))
        let all = try await withSignupService(in: TestGraph.required) { try await $0.all() }
        #expect(all == [signup])
    }

    @Test(arguments: ["", "ann", "@example.org", "ann@", "ann@example", "a@b@c.org"])
    func refusesWhatIsNotAnAddress(email: String) async throws {
        await #expect(throws: SignupError.self) {
            try await withSignupService(in: TestGraph.required) { try await $0.signUp(email: email, name: "Ann") }
        }
        let all = try await withSignupService(in: TestGraph.required) { try await $0.all() }
        #expect(all.isEmpty)
    }

    @Test func refusesAMissingNameAndASecondSignUp() async throws {
        let graph = TestGraph.required
        await #expect(throws: SignupError.missingName) {
            try await withSignupService(in: graph) { try await $0.signUp(email: "ann@example.org", name: "  ") }
        }
        _ = try await withSignupService(in: graph) { try await $0.signUp(email: "ann@example.org", name: "Ann") }
        await #expect(throws: SignupError.alreadySignedUp("ann@example.org")) {
            try await withSignupService(in: graph) { try await $0.signUp(email: "ANN@example.org", name: "Ann") }
        }
    }

    /// Each test case has its own graph, so its own repository: parallel cases do not see each other's
    /// sign-ups.
    @Test(arguments: 1...8) func parallelCasesDoNotShareSignUps(index: Int) async throws {
        let graph = TestGraph.required
        _ = try await withSignupService(in: graph) { try await $0.signUp(email: "user\(index)@example.org", name: "U") }
        let all = try await withSignupService(in: graph) { try await $0.all() }
        #expect(all.map(\.email) == ["user\(index)@example.org"])
    }

    @Test func eachRequestGetsItsOwnServiceAndTheScopeIsReleased() async throws {
        let graph = TestGraph.required
        var logger = quietLogger
        logger[metadataKey: "hb.request.id"] = "request-1"
        let first = try graph.makeScope(.request, seeding: ScopeSeed(RequestLoggerKey.self, logger))
        // A request scope must be given its seeds: refused otherwise, naming the missing one.
        #expect(throws: ServiceGraphError.self) { try graph.makeScope(.request) }
        _ = try await first.resolve(SignupServiceKey.self)
        // The request's id is made from the logger's metadata, on first use only.
        #expect(try await first.resolve(RequestIDKey.self) == "request-1")
        try await first.close()
        #expect(first.isClosed)
    }
}

@Suite("The SQLite database, its migrations and the outbox")
struct DatabaseTests {
    /// Runs `body` with the database running, as the service group runs it, then stops it.
    func withRunningDatabase(
        path: String,
        _ body: @Sendable (ServiceGraph) async throws -> Void,
        sender: RecordingMailSender = RecordingMailSender()
    ) async throws {
        var builder = makeAppBuilder(configuration: AppConfiguration(databasePath: path), logger: quietLogger)
        builder.override(MailSenderKey.self) { sender }
        let graph = try await builder.build()
        var configuration = GraphServiceGroup.Configuration()
        configuration.gracefulShutdownSignals = []
        let group = try GraphServiceGroup(graph: graph, server: nil, configuration: configuration, logger: quietLogger)
        let run = Task { try await group.run() }
        do {
            try await graph[DatabaseKey.self].running.waitUntilRunning()
            try await body(graph)
        } catch {
            await group.triggerGracefulShutdown()
            try await run.value
            throw error
        }
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func migrationsRunOnceAndASignUpQueuesItsWelcomeMail() async throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sender = RecordingMailSender()
        try await withRunningDatabase(
            path: path,
            { graph in
                let signup = try await graph[SignupRepositoryKey.self].create(email: "ann@example.org", name: "Ann")
                #expect(signup.id == 1)
                let found = try await graph[SignupRepositoryKey.self].find(id: 1)
                #expect(found == signup)
            },
            sender: sender
        )
        // The outbox's last pass, at shutdown, sent the queued mail.
        #expect(sender.all == ["ann@example.org: Welcome, Ann!"])
        // A second run of the same file applies no migration again, and keeps the sign-up.
        try await withRunningDatabase(path: path) { graph in
            let all = try await graph[SignupRepositoryKey.self].all()
            #expect(all.map(\.email) == ["ann@example.org"])
        }
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let migrations = try await connection.query("SELECT id FROM schema_migrations ORDER BY id")
        #expect(migrations.compactMap { $0.column("id")?.string } == ["1-signups", "2-outbox"])
        let outbox = try await connection.query("SELECT address, sent_at FROM outbox")
        #expect(outbox.count == 1 && outbox[0].column("sent_at")?.isNull == false)
        try await connection.close()
    }

    @Test func aFailedTransactionLeavesNoRowBehind() async throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withRunningDatabase(path: path) { graph in
            let database = graph[DatabaseKey.self]
            // A transaction that inserts, then fails: neither its row nor anything after it is kept.
            await #expect(throws: SignupError.missingName) {
                try await database.transaction { connection in
                    _ = try await connection.query(
                        "INSERT INTO signups (email, name, created_at) VALUES ('gone@example.org', 'G', 'now')"
                    )
                    throw SignupError.missingName
                }
            }
            let repository = graph[SignupRepositoryKey.self]
            #expect(try await repository.all().isEmpty)
            // The connection is usable again after the rollback.
            _ = try await repository.create(email: "ann@example.org", name: "Ann")
            await #expect(throws: SignupError.alreadySignedUp("ann@example.org")) {
                try await repository.create(email: "ann@example.org", name: "Ann again")
            }
            // Many sign-ups at once: the transactions do not interleave.
            try await withThrowingTaskGroup { group in
                for index in 0..<50 {
                    group.addTask { _ = try await repository.create(email: "user\(index)@example.org", name: "U") }
                }
                try await group.waitForAll()
            }
            let count = try await repository.all().count
            #expect(count == 51)
        }
    }

    /// A task cancelled while it waits for the connection leaves the queue and runs nothing; the
    /// others go on.
    @Test func aCancelledWaiterRunsNothing() async throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withRunningDatabase(path: path) { graph in
            let database = graph[DatabaseKey.self]
            let holding = AsyncStream<Void>.makeStream()
            let release = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await database.withConnection { _ in
                    holding.continuation.yield()
                    for await _ in release.stream { break }
                }
            }
            for await _ in holding.stream { break }
            let ran = Locked(false)
            let waiter = Task {
                try await database.withConnection { connection in
                    ran.withLock { $0 = true }
                    _ = try await connection.query("SELECT 1")
                }
            }
            try await Task.sleep(for: .milliseconds(50))
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            release.continuation.yield()
            try await holder.value
            #expect(!ran.withLock { $0 })
            let rows = try await database.withConnection { try await $0.query("SELECT 1 AS one") }
            #expect(rows.count == 1)
        }
    }

    @Test func anUnwritablePathFailsTheBuildNamingTheDatabaseAndThePath() async throws {
        let builder = makeAppBuilder(
            configuration: AppConfiguration(databasePath: "/nonexistent-directory/signups.sqlite"),
            logger: quietLogger
        )
        await #expect {
            try await builder.build()
        } throws: { error in
            let message = "\(error)"
            return message.contains("DatabaseKey") && message.contains("/nonexistent-directory/signups.sqlite")
        }
    }
}

@Suite("Configuration from the command line")
struct ConfigurationTests {
    @Test func readsEveryOption() throws {
        let configuration = try AppConfiguration(arguments: [
            "--host", "0.0.0.0", "--port", "0", "--database", "/tmp/x.sqlite", "--debug-endpoints",
            "--outbox-interval-ms", "250", "--shutdown-limit-s", "3", "--hook-timeout-s", "2",
        ])
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 0)
        #expect(configuration.databasePath == "/tmp/x.sqlite")
        #expect(configuration.debugEndpoints)
        #expect(configuration.outboxInterval == .milliseconds(250))
        #expect(configuration.lifecycle.maximumGracefulShutdownDuration == .seconds(3))
        #expect(configuration.lifecycle.hookTimeout == .seconds(2))
    }

    @Test(arguments: [["--port", "x", "--database", "d"], ["--database"], [], ["--bogus"], ["--port", "-1"]])
    func refusesBadArguments(arguments: [String]) {
        #expect(throws: ConfigurationError.self) { try AppConfiguration(arguments: arguments) }
    }
}

/// A mail sender that fails its first `failures` mails.
final class FlakyMailSender: MailSender {
    private let state: Locked<(failuresLeft: Int, sent: [String])>

    init(failures: Int) {
        state = Locked((failures, []))
    }

    func send(to address: String, subject: String, body: String) async throws {
        try state.withLock { state in
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                throw SignupError.invalidEmail("mail server down")
            }
            state.sent.append(address)
        }
    }

    var sent: [String] { state.withLock { $0.sent } }
}

@Suite("The outbox rides out a failing mail server")
struct OutboxTests {
    @Test func aMailThatFailsStaysQueuedAndIsSentOnALaterPass() async throws {
        let path = temporaryDatabasePath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sender = FlakyMailSender(failures: 2)
        var builder = makeAppBuilder(configuration: AppConfiguration(databasePath: path), logger: quietLogger)
        builder.override(MailSenderKey.self) { sender }
        let graph = try await builder.build()
        let database = graph[DatabaseKey.self]
        let migration = Task { try await database.run() }
        try await database.running.waitUntilRunning()
        _ = try await graph[SignupRepositoryKey.self].create(email: "ann@example.org", name: "Ann")
        let outbox = graph[OutboxWorkerKey.self]
        // Two passes fail (the sender throws), neither throws out of the worker; the third sends.
        await outbox.sendQueued()
        await outbox.sendQueued()
        #expect(sender.sent.isEmpty)
        await outbox.sendQueued()
        #expect(sender.sent == ["ann@example.org"])
        await outbox.sendQueued()
        #expect(sender.sent == ["ann@example.org"])
        migration.cancel()
        _ = try? await migration.value
        try await graph.shutdown()
    }
}

/// A request's service whose end is recorded, and whose `willRemove` fails when asked to.
final class RequestResource: LifecycleHooks {
    let removals: Locked<[String]>
    let failsToRemove: Bool

    init(removals: Locked<[String]>, failsToRemove: Bool) {
        self.removals = removals
        self.failsToRemove = failsToRemove
    }

    func willRemove() async throws {
        removals.withLock { $0.append("resource") }
        if failsToRemove { throw RemovalFailed() }
    }
}

struct RemovalFailed: Error {}
struct HandlerFailed: Error {}
struct RouteFailed: HTTPResponseError {
    var status: HTTPResponse.Status { .conflict }
    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status)
    }
}
enum RequestResourceKey: ServiceKey { typealias Value = RequestResource }

/// Keeps what is logged, for a test to read.
struct RecordingLogHandler: LogHandler {
    let messages: Locked<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.withLock { $0.append("\(event.level): \(event.message)") }
    }
}

/// A request's logger, logging to `messages`.
func requestLogger(logging messages: Locked<[String]>) -> Logger {
    Logger(label: "request") { _ in RecordingLogHandler(messages: messages) }
}

@Suite("Request scopes per route")
struct RequestScopesTests {
    /// A graph with the app's kind of request scope and a scoped service with a `willRemove` hook.
    func makeGraph(removals: Locked<[String]>, failsToRemove: Bool = false) async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.inScope(.request) { request in
            request.seed(RequestLoggerKey.self)
            request.provide(RequestResourceKey.self, lifetime: .scoped, dependsOn: RequestLoggerKey.self) { _ in
                RequestResource(removals: removals, failsToRemove: failsToRemove)
            }
        }
        return try await builder.build()
    }

    @Test func theHandlerGetsAnOpenScopeThatIsClosedWhenItReturns() async throws {
        let removals = Locked<[String]>([])
        let graph = try await makeGraph(removals: removals)
        let messages = Locked<[String]>([])
        weak var released: RequestResource?
        var seen: ServiceScope?
        let output = try await RequestScopes(graph: graph).run(logger: requestLogger(logging: messages)) { scope in
            #expect(!scope.isClosed)
            // Seeded with the request's logger.
            #expect(try scope.resolveSynchronously(RequestLoggerKey.self).label == "request")
            let resource = try await scope.resolve(RequestResourceKey.self)
            released = resource
            seen = scope
            return "done"
        }
        #expect(output == "done")
        #expect(seen?.isClosed == true)
        #expect(removals.withLock { $0 } == ["resource"])
        #expect(released == nil, "the request's service outlived its scope")
        #expect(messages.withLock { $0 }.isEmpty)
        try await graph.shutdown()
    }

    @Test func aHandlerThatThrowsStillClosesItsScope() async throws {
        let removals = Locked<[String]>([])
        let graph = try await makeGraph(removals: removals)
        var seen: ServiceScope?
        await #expect(throws: HandlerFailed.self) {
            try await RequestScopes(graph: graph).run(logger: requestLogger(logging: Locked([]))) { scope in
                _ = try await scope.resolve(RequestResourceKey.self)
                seen = scope
                throw HandlerFailed()
            }
        }
        #expect(seen?.isClosed == true)
        #expect(removals.withLock { $0 } == ["resource"])
        try await graph.shutdown()
    }

    @Test func aCloseThatFailsIsLoggedAndTheHandlersResultKept() async throws {
        let removals = Locked<[String]>([])
        let graph = try await makeGraph(removals: removals, failsToRemove: true)
        let messages = Locked<[String]>([])
        let output = try await RequestScopes(graph: graph).run(logger: requestLogger(logging: messages)) { scope in
            _ = try await scope.resolve(RequestResourceKey.self)
            return 42
        }
        #expect(output == 42)
        #expect(removals.withLock { $0 } == ["resource"])
        let logged = messages.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.hasPrefix("error: request scope:") == true)
        #expect(logged.first?.contains("RequestResourceKey") == true, "the error names the service: \(logged)")
        try await graph.shutdown()
    }

    @Test func aGraphShutDownRefusesNewRequestScopes() async throws {
        let graph = try await makeGraph(removals: Locked([]))
        try await graph.shutdown()
        var ran = false
        await #expect(throws: ServiceGraphError.self) {
            try await RequestScopes(graph: graph).run(logger: requestLogger(logging: Locked([]))) { _ in ran = true }
        }
        #expect(!ran)
    }
}

/// A request context made from a logger alone, for a router driven without a server.
struct TestRequestContext: RequestContext {
    struct Source: RequestContextSource {
        let logger: Logger
    }

    var coreContext: CoreRequestContextStorage

    init(source: Source) {
        coreContext = .init(source: source)
    }
}

@Suite("Routes added with a request scope")
struct RequestScopeRouteTests {
    /// The router's answer to `method path`, with the request's logger logging to `messages`.
    func respond(
        _ router: Router<TestRequestContext>,
        _ method: HTTPRequest.Method,
        _ path: String,
        logging messages: Locked<[String]> = Locked([])
    ) async throws -> Response {
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path),
            body: RequestBody(buffer: ByteBuffer())
        )
        let context = TestRequestContext(source: .init(logger: requestLogger(logging: messages)))
        return try await router.buildResponder().respond(to: request, context: context)
    }

    @Test func eachRequestGetsAScopeClosedOnceItsHandlerReturned() async throws {
        let removals = Locked<[String]>([])
        let graph = try await RequestScopesTests().makeGraph(removals: removals)
        let scopes = RequestScopes(graph: graph)
        let router = Router(context: TestRequestContext.self)
        let seen = Locked<[ServiceScope]>([])
        router.get("/resource/:id", in: scopes) { _, context, services -> String in
            let resource = try await services.resolve(RequestResourceKey.self)
            // Made once per request: the scope's own instance.
            #expect(try await services.resolve(RequestResourceKey.self) === resource)
            seen.withLock { $0.append(services) }
            return try context.parameters.require("id")
        }
        router.post("/resource", in: scopes) { _, _, services -> HTTPResponse.Status in
            _ = try await services.resolve(RequestResourceKey.self)
            seen.withLock { $0.append(services) }
            return .created
        }
        let first = try await respond(router, .get, "/resource/7")
        #expect(first.status == .ok)
        #expect(removals.withLock { $0 } == ["resource"])
        let second = try await respond(router, .post, "/resource")
        #expect(second.status == .created)
        #expect(removals.withLock { $0 } == ["resource", "resource"])
        let scopesSeen = seen.withLock { $0 }
        #expect(scopesSeen.count == 2 && scopesSeen[0] !== scopesSeen[1], "each request gets a scope of its own")
        #expect(scopesSeen.allSatisfy { $0.isClosed })
        try await graph.shutdown()
    }

    @Test func aHandlersErrorIsTheResponseAndItsScopeIsStillClosed() async throws {
        let removals = Locked<[String]>([])
        let graph = try await RequestScopesTests().makeGraph(removals: removals)
        let router = Router(context: TestRequestContext.self)
        router.get("/fails", in: RequestScopes(graph: graph)) { _, _, services -> String in
            _ = try await services.resolve(RequestResourceKey.self)
            throw RouteFailed()
        }
        // The router makes the handler's error its response.
        #expect(try await respond(router, .get, "/fails").status == .conflict)
        #expect(removals.withLock { $0 } == ["resource"])
        try await graph.shutdown()
    }

    /// The handler threw, then the close failed too: the close's error is logged, the handler's is the
    /// response.
    @Test func aFailingCloseAfterAFailingHandlerIsLoggedAndTheHandlersErrorKept() async throws {
        let removals = Locked<[String]>([])
        let graph = try await RequestScopesTests().makeGraph(removals: removals, failsToRemove: true)
        let router = Router(context: TestRequestContext.self)
        router.get("/fails", in: RequestScopes(graph: graph)) { _, _, services -> String in
            _ = try await services.resolve(RequestResourceKey.self)
            throw RouteFailed()
        }
        let messages = Locked<[String]>([])
        #expect(try await respond(router, .get, "/fails", logging: messages).status == .conflict)
        #expect(removals.withLock { $0 } == ["resource"])
        let logged = messages.withLock { $0 }
        #expect(logged.count == 1 && logged.first?.hasPrefix("error: request scope:") == true, "\(logged)")
        try await graph.shutdown()
    }
}
