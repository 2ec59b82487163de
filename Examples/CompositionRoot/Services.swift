import ServiceGraph

// The services of a small sign-up backend. Nothing here knows about ServiceGraph except through
// `LifecycleHooks` and `Injectable`; the wiring lives in `Wiring.swift`.

struct AppConfig: Sendable {
    var appName = "signup-demo"
    var logLevel = "info"
    var storeName = "users"

    static func fromEnvironment() -> AppConfig { AppConfig() }
}

protocol AppLogger: Sendable {
    func log(_ message: String)
}

/// Prints log lines; records lifecycle events so the example can show their order.
final class ConsoleLogger: AppLogger, LifecycleHooks {
    let level: String
    let journal: Journal

    init(level: String, journal: Journal) {
        self.level = level
        self.journal = journal
    }

    func log(_ message: String) { print("  [\(level)] \(message)") }
    func didAdd() async throws { journal.record("didAdd ConsoleLogger") }
    func willRemove() async throws { journal.record("willRemove ConsoleLogger") }
}

/// Tags every line with the service that logged it, the app's name: a decorator of the logger, so
/// neither the console logger nor the services that log know about it.
struct TaggedLogger: AppLogger {
    let tag: String
    let wrapped: any AppLogger

    func log(_ message: String) { wrapped.log("\(tag): \(message)") }
}

protocol AppClock: Sendable {
    func now() -> Int
}

/// A clock that ticks once per call, so output is reproducible.
final class TickingClock: AppClock {
    private let ticks = Counter()
    func now() -> Int { ticks.increment() }
}

/// An in-memory key-value store that "opens" asynchronously, as a real database client would.
final class InMemoryStore: LifecycleHooks {
    let name: String
    private let rows = Rows()
    let journal: Journal

    static func open(name: String, journal: Journal) async throws -> InMemoryStore {
        try await Task.sleep(for: .milliseconds(20))
        return InMemoryStore(name: name, journal: journal)
    }

    private init(name: String, journal: Journal) {
        self.name = name
        self.journal = journal
    }

    func insert(_ key: String, _ value: String) { rows.set(key, value) }
    func value(for key: String) -> String? { rows.get(key) }
    var count: Int { rows.count }

    func didAdd() async throws { journal.record("didAdd InMemoryStore(\(name))") }
    func willRemove() async throws { journal.record("willRemove InMemoryStore(\(name)) with \(count) rows") }
}

struct User: Sendable, Equatable {
    let email: String
    let createdAt: Int
}

/// Stores users in the store.
struct UserRepository: Sendable {
    let store: InMemoryStore
    let logger: any AppLogger

    func save(_ user: User) {
        store.insert(user.email, "\(user.createdAt)")
        logger.log("saved \(user.email)")
    }

    func exists(_ email: String) -> Bool { store.value(for: email) != nil }
}

/// Sends mail out of the process. The application provides one where it has a mail server; this
/// example does not, so the outbox keeps what it would send (an optional dependency, listed by lint).
protocol MailRelay: Sendable {
    func send(to address: String, subject: String)
}

/// Collects outgoing mail; flushes it when the graph shuts down.
final class EmailOutbox: LifecycleHooks {
    private let pending = Rows()
    let logger: any AppLogger
    let journal: Journal
    let relay: (any MailRelay)?

    init(logger: any AppLogger, journal: Journal, relay: (any MailRelay)?) {
        self.logger = logger
        self.journal = journal
        self.relay = relay
    }

    func enqueue(to address: String, subject: String) {
        if let relay {
            relay.send(to: address, subject: subject)
            logger.log("sent mail to \(address): \(subject)")
            return
        }
        pending.set(address, subject)
        logger.log("queued mail to \(address): \(subject)")
    }

    func didAdd() async throws { journal.record("didAdd EmailOutbox") }
    func willRemove() async throws { journal.record("willRemove EmailOutbox (flushed \(pending.count) mails)") }
}

/// The welcome mail of one new user, made per sign-up from the user's address.
struct WelcomeMail: Sendable {
    let address: String
    let subject: String
}

/// Signs users up. `Injectable`: it declares its dependencies, so it is provided without a closure.
struct SignupService: Injectable {
    typealias Dependencies = Needs<
        UserRepositoryKey, EmailOutboxKey, ClockKey, ArgumentFactory<WelcomeMailKey, String>.Synchronous
    >

    let repository: UserRepository
    let outbox: EmailOutbox
    let clock: any AppClock
    /// Makes the welcome mail of an address; called without `await` (`signUp` does not suspend).
    let makeWelcomeMail: @Sendable (String) throws -> WelcomeMail

    init(dependencies: (UserRepository, EmailOutbox, any AppClock, @Sendable (String) throws -> WelcomeMail)) {
        (repository, outbox, clock, makeWelcomeMail) = dependencies
    }

    enum SignupError: Error { case alreadyRegistered(String) }

    func signUp(email: String) throws -> User {
        guard !repository.exists(email) else { throw SignupError.alreadyRegistered(email) }
        let user = User(email: email, createdAt: clock.now())
        repository.save(user)
        let mail = try makeWelcomeMail(email)
        outbox.enqueue(to: mail.address, subject: mail.subject)
        return user
    }
}

/// One request's context: created once per request scope, released when the request ends.
final class RequestContext: LifecycleHooks {
    let requestID: Int
    let logger: any AppLogger
    let journal: Journal

    init(requestID: Int, logger: any AppLogger, journal: Journal) {
        self.requestID = requestID
        self.logger = logger
        self.journal = journal
    }

    func didAdd() async throws { journal.record("didAdd RequestContext #\(requestID)") }
    func willRemove() async throws { journal.record("willRemove RequestContext #\(requestID)") }
}

/// A request as the server received it: known only when it arrives, so each request scope is seeded
/// with it (`builder.seed(IncomingRequestKey.self)`).
struct IncomingRequest: Sendable {
    let id: Int
    let email: String
}

/// The operator logged in to the back office: known only at login, so each session scope is seeded
/// with it.
struct Operator: Sendable {
    let email: String
}

/// One operator's session: lives from login to logout, shared by every request made in it.
final class OperatorSession: LifecycleHooks {
    let operatorEmail: String
    let journal: Journal

    init(operator: Operator, journal: Journal) {
        self.operatorEmail = `operator`.email
        self.journal = journal
    }

    func didAdd() async throws { journal.record("didAdd OperatorSession(\(operatorEmail))") }
    func willRemove() async throws { journal.record("willRemove OperatorSession(\(operatorEmail))") }
}

/// Handles one sign-up request, using the request's context and the session it is made in.
/// Looks at a request before its handler runs: passes it on (nil) or refuses it, with the reason.
protocol Middleware: Sendable {
    func refusal(of request: IncomingRequest) -> String?
}

/// Logs every request it sees.
struct RequestLogMiddleware: Middleware {
    let logger: any AppLogger

    func refusal(of request: IncomingRequest) -> String? {
        logger.log("request #\(request.id) for \(request.email)")
        return nil
    }
}

/// Refuses addresses of blocked domains.
struct BlocklistMiddleware: Middleware {
    let blockedDomains: Set<String>

    func refusal(of request: IncomingRequest) -> String? {
        let domain = request.email.split(separator: "@").last.map(String.init) ?? ""
        return blockedDomains.contains(domain) ? "\(domain) is blocked" : nil
    }
}

struct SignupHandler: Sendable {
    let context: RequestContext
    let signup: SignupService
    let request: IncomingRequest
    let session: OperatorSession
    /// Run in order before the handler; the first refusal stops the request.
    let middleware: [any Middleware]

    func handle() -> String {
        let email = request.email
        if let refusal = middleware.lazy.compactMap({ $0.refusal(of: request) }).first {
            return "request #\(context.requestID): refused \(email) (\(refusal))"
        }
        do {
            let user = try signup.signUp(email: email)
            return "request #\(context.requestID) by \(session.operatorEmail): signed up \(user.email) at tick "
                + "\(user.createdAt)"
        } catch {
            return "request #\(context.requestID): refused \(email) (\(error))"
        }
    }
}

/// Sign-up statistics, costly to compute: only the admin console needs them, through a lazy handle, so
/// the graph creates the report on its first use instead of at startup, and removes it before the
/// store it reads.
final class SignupReport: LifecycleHooks {
    let accounts: Int
    let journal: Journal

    init(store: InMemoryStore, journal: Journal) {
        self.accounts = store.count
        self.journal = journal
    }

    func didAdd() async throws { journal.record("didAdd SignupReport (on first use, \(accounts) accounts)") }
    func willRemove() async throws { journal.record("willRemove SignupReport") }
}

/// The operators' console: holds the report lazily.
struct AdminConsole: Sendable {
    let report: Lazy<SignupReportKey>

    func summary() async throws -> String {
        "\(try await report.value.accounts) accounts signed up"
    }
}
