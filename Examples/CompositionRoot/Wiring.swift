import ServiceGraph

// Two kinds of scope: an operator's session, and the requests served inside it.
extension ScopeKind {
    static let session = ScopeKind("session")
    static let request = ScopeKind("request", inside: .session)
}

// Keys name the services and fix their types.
enum JournalKey: ServiceKey { typealias Value = Journal }
enum ConfigKey: ServiceKey { typealias Value = AppConfig }
/// The log level, read from the configuration: its own key, so that reloading it (see `main.swift`)
/// makes again only the logger and what logs, not the store.
enum LogLevelKey: ServiceKey { typealias Value = String }
enum LoggerKey: ServiceKey { typealias Value = any AppLogger }
enum ClockKey: ServiceKey { typealias Value = any AppClock }
enum StoreKey: ServiceKey { typealias Value = InMemoryStore }
enum UserRepositoryKey: ServiceKey { typealias Value = UserRepository }
enum EmailOutboxKey: ServiceKey { typealias Value = EmailOutbox }
enum MailRelayKey: ServiceKey { typealias Value = any MailRelay }
enum OperatorKey: ServiceKey { typealias Value = Operator }
enum OperatorSessionKey: ServiceKey { typealias Value = OperatorSession }
enum IncomingRequestKey: ServiceKey { typealias Value = IncomingRequest }
enum RequestContextKey: ServiceKey { typealias Value = RequestContext }
enum SignupHandlerKey: ServiceKey { typealias Value = SignupHandler }
enum SignupReportKey: ServiceKey { typealias Value = SignupReport }
enum AdminConsoleKey: ServiceKey { typealias Value = AdminConsole }
enum WelcomeMailKey: ServiceKey { typealias Value = WelcomeMail }
/// The request middleware: a list the features contribute to, in the order they state.
enum MiddlewareKey: ContributionKey { typealias Element = any Middleware }

/// The application's composition root: every provider, in one place.
func makeApplicationBuilder(journal: Journal) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(JournalKey.self) { journal }
    builder.provide(ConfigKey.self) { AppConfig.fromEnvironment() }
    builder.provide(LogLevelKey.self, dependsOn: ConfigKey.self) { $0.logLevel }
    builder.provide(LoggerKey.self, dependsOn: LogLevelKey.self, JournalKey.self) { level, journal in
        ConsoleLogger(level: level, journal: journal)
    }
    // Every service that logs gets the tagged logger; the console logger's hooks still run, once.
    builder.decorate(LoggerKey.self, dependsOn: ConfigKey.self) { logger, config in
        TaggedLogger(tag: config.appName, wrapped: logger)
    }
    builder.provide(ClockKey.self) { TickingClock() }
    builder.provide(StoreKey.self, dependsOn: ConfigKey.self, JournalKey.self) { config, journal in
        try await InMemoryStore.open(name: config.storeName, journal: journal)
    }
    builder.provide(UserRepositoryKey.self, dependsOn: StoreKey.self, LoggerKey.self) {
        UserRepository(store: $0, logger: $1)
    }
    // A relay where the application provides one (this one does not: lint says so).
    builder.provide(EmailOutboxKey.self, dependsOn: LoggerKey.self, JournalKey.self, MailRelayKey?.self) {
        EmailOutbox(logger: $0, journal: $1, relay: $2)
    }
    // Made per sign-up from an address only the caller knows: a factory with arguments. Its closure does
    // not await, so the sign-up service, which does not suspend, depends on its synchronous form.
    builder.provide(WelcomeMailKey.self, arguments: String.self, dependsOn: ConfigKey.self) { address, config in
        WelcomeMail(address: address, subject: "Welcome to \(config.appName)!")
    }
    builder.provide(SignupService.self, lifetime: .transient)
    // Each session scope is given the operator who logged in (`graph.makeScope(.session, seeding:)`).
    builder.inScope(.session) { session in
        session.seed(OperatorKey.self)
        session.provide(OperatorSessionKey.self, lifetime: .scoped, dependsOn: OperatorKey.self, JournalKey.self) {
            OperatorSession(operator: $0, journal: $1)
        }
    }
    // Each request scope, opened in a session, is given the request it serves
    // (`session.makeScope(.request, seeding:)`).
    builder.inScope(.request) { request in
        request.seed(IncomingRequestKey.self)
        request.provide(
            RequestContextKey.self,
            lifetime: .scoped,
            dependsOn: IncomingRequestKey.self,
            LoggerKey.self,
            JournalKey.self
        ) {
            RequestContext(requestID: $0.id, logger: $1, journal: $2)
        }
    }
    addBlocklist(to: &builder)
    addRequestLog(to: &builder)
    builder.provide(
        SignupHandlerKey.self,
        lifetime: .transient,
        dependsOn: RequestContextKey.self,
        SignupService.self,
        IncomingRequestKey.self,
        OperatorSessionKey.self,
        MiddlewareKey.self
    ) { context, signup, request, session, middleware in
        SignupHandler(context: context, signup: signup, request: request, session: session, middleware: middleware)
    }
    // Only a lazy handle reaches the report: it is created on first use, not at startup.
    builder.provide(SignupReportKey.self, dependsOn: StoreKey.self, JournalKey.self) { store, journal in
        SignupReport(store: store, journal: journal)
    }
    builder.provide(AdminConsoleKey.self, dependsOn: Lazy<SignupReportKey>.self) { AdminConsole(report: $0) }
    builder.declareEntryPoints(SignupHandlerKey.self, AdminConsoleKey.self)
    return builder
}

// Features contribute their middleware where they are set up; each says where it goes.

func addBlocklist(to builder: inout ServiceGraph.Builder) {
    builder.contribute(MiddlewareKey.self, id: "blocklist") { BlocklistMiddleware(blockedDomains: ["spam.example"]) }
}

func addRequestLog(to builder: inout ServiceGraph.Builder) {
    // Every request is logged, refused ones too: the log comes before the blocklist.
    builder.contribute(MiddlewareKey.self, id: "log", before: ["blocklist"], dependsOn: LoggerKey.self) {
        RequestLogMiddleware(logger: $0)
    }
}
