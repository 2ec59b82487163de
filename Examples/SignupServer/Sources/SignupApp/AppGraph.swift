import GraphLifecycle
import Logging
import ServiceGraph

public enum ConfigurationKey: ServiceKey { public typealias Value = AppConfiguration }
public enum LoggerKey: ServiceKey { public typealias Value = Logger }
public enum DatabaseKey: ServiceKey { public typealias Value = Database }
public enum SignupRepositoryKey: ServiceKey { public typealias Value = any SignupRepository }
public enum MailSenderKey: ServiceKey { public typealias Value = any MailSender }
public enum OutboxWorkerKey: ServiceKey { public typealias Value = OutboxWorker }
/// The sign-up use case, made per request.
public enum SignupServiceKey: ServiceKey { public typealias Value = SignupService }

/// The application's graph. The database is created first (it opens the file), the repository and
/// the outbox worker after it; the service group starts the database, then the outbox, then the HTTP
/// server, and stops them in reverse.
public func makeAppBuilder(configuration: AppConfiguration, logger: Logger) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(ConfigurationKey.self) { configuration }
    builder.provide(LoggerKey.self) { logger }
    // Each table's owner contributes its migration; the outbox's comes after the sign-ups'.
    for migration in SQLiteSignupRepository.migrations {
        builder.contribute(SchemaMigrationsKey.self, id: migration.id) { migration }
    }
    for migration in Outbox.migrations {
        builder.contribute(SchemaMigrationsKey.self, id: migration.id, after: ["1-signups"]) { migration }
    }
    builder.provide(DatabaseKey.self, dependsOn: ConfigurationKey.self, SchemaMigrationsKey.self, LoggerKey.self) {
        configuration,
        migrations,
        logger in
        try await Database.open(path: configuration.databasePath, migrations: migrations, logger: logger)
    }
    builder.provide(SignupRepositoryKey.self, dependsOn: DatabaseKey.self) { SQLiteSignupRepository(database: $0) }
    builder.provide(MailSenderKey.self, dependsOn: LoggerKey.self) { LoggingMailSender(logger: $0) }
    builder.provide(
        OutboxWorkerKey.self,
        dependsOn: DatabaseKey.self,
        MailSenderKey.self,
        ConfigurationKey.self,
        LoggerKey.self
    ) {
        database,
        sender,
        configuration,
        logger in
        OutboxWorker(database: database, sender: sender, interval: configuration.outboxInterval, logger: logger)
    }
    builder.inScope(.request) { request in
        request.seed(RequestLoggerKey.self)
        // The id is in the logger's metadata, where Hummingbird puts it: read when a service asks for it,
        // rather than formatted and seeded for every request.
        request.provide(RequestIDKey.self, lifetime: .scoped, dependsOn: RequestLoggerKey.self) { logger in
            logger[metadataKey: "hb.request.id"]?.description ?? "-"
        }
        request.provide(
            SignupServiceKey.self,
            lifetime: .scoped,
            dependsOn: SignupRepositoryKey.self,
            RequestLoggerKey.self
        ) { SignupService(repository: $0, logger: $1) }
    }
    // The graph's lifecycle in the log: each didAdd and willRemove, and the end of the shutdown. Only
    // these kinds are made: the graph makes no event per request scope.
    builder.eventKinds = [.didAdd, .willRemove, .shutdownFinished, .buildFinished, .buildFailed]
    builder.eventHandler = { event in
        logger.info("graph: \(event)")
    }
    return builder
}
