import GraphLifecycle
import Logging
import SQLiteNIO
import ServiceGraph
import ServiceLifecycle
import Synchronization

/// One schema change, contributed by the part of the application that owns the table
/// (``SchemaMigrationsKey``).
public struct Migration: Sendable {
    public let id: String
    public let statements: [String]

    public init(id: String, statements: [String]) {
        self.id = id
        self.statements = statements
    }
}

/// The schema's migrations, in order: each part of the application contributes its own.
public enum SchemaMigrationsKey: ContributionKey {
    public typealias Element = Migration
}

/// The SQLite database, shaped like a server database client: made (the file opened) by the graph's
/// build, but usable only while its `run()` is running, the way a postgres-nio client leases
/// connections only then. `run()` applies the pending migrations first, then says it is running
/// (``RunningGate``); its `willRemove` closes the file once nothing that uses it is left.
public final class Database: ReportsRunning, LifecycleHooks {
    public let path: String
    public let running = RunningGate()
    private let connection: SQLiteConnection
    private let migrations: [Migration]
    private let lock = AsyncLock()
    private let logger: Logger

    /// Opens (or creates) the file at `path`.
    ///
    /// - Throws: ``DatabaseOpenError`` naming the path.
    public static func open(path: String, migrations: [Migration], logger: Logger) async throws -> Database {
        do {
            let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            logger.info("database: opened \(path)")
            return Database(path: path, connection: connection, migrations: migrations, logger: logger)
        } catch {
            throw DatabaseOpenError(path: path, reason: "\(error)")
        }
    }

    private init(path: String, connection: SQLiteConnection, migrations: [Migration], logger: Logger) {
        self.path = path
        self.connection = connection
        self.migrations = migrations
        self.logger = logger
    }

    public func run() async throws {
        try await migrate()
        logger.info("database: running")
        running.markRunning()
        try? await gracefulShutdown()
        logger.info("database: stopped")
    }

    public func willRemove() async throws {
        try await lock.withLock { try await connection.close() }
        logger.info("database: closed \(path)")
    }

    /// Runs `body` alone on the connection, once the database is running.
    public func withConnection<T: Sendable>(
        _ body: @Sendable (SQLiteConnection) async throws -> T
    ) async throws -> T {
        try await running.waitUntilRunning()
        return try await lock.withLock { try await body(connection) }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T: Sendable>(
        _ body: @Sendable (SQLiteConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                let result = try await body(connection)
                _ = try await connection.query("COMMIT")
                return result
            } catch {
                await rollBack(connection)
                throw error
            }
        }
    }

    /// Rolls back the transaction under way. A rollback that fails leaves the connection in the
    /// transaction, where every later `BEGIN` fails: worth a loud log line.
    private func rollBack(_ connection: SQLiteConnection) async {
        do {
            _ = try await connection.query("ROLLBACK")
        } catch {
            logger.critical("database: ROLLBACK failed: \(error)")
        }
    }

    /// Applies each migration not yet recorded in `schema_migrations`, each in a transaction.
    private func migrate() async throws {
        try await lock.withLock {
            _ = try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            let applied = Set(
                try await connection.query("SELECT id FROM schema_migrations").compactMap {
                    $0.column("id")?.string
                }
            )
            for migration in migrations where !applied.contains(migration.id) {
                _ = try await connection.query("BEGIN IMMEDIATE")
                do {
                    // Checked again in the transaction: another process may have applied it meanwhile.
                    let done = try await connection.query(
                        "SELECT 1 FROM schema_migrations WHERE id = ?",
                        [.text(migration.id)]
                    )
                    if !done.isEmpty {
                        _ = try await connection.query("COMMIT")
                        continue
                    }
                    for statement in migration.statements { _ = try await connection.query(statement) }
                    _ = try await connection.query(
                        "INSERT INTO schema_migrations (id, applied_at) VALUES (?, datetime('now'))",
                        [.text(migration.id)]
                    )
                    _ = try await connection.query("COMMIT")
                } catch {
                    await rollBack(connection)
                    throw MigrationError(id: migration.id, reason: "\(error)")
                }
                logger.info("database: applied migration \(migration.id)")
            }
        }
    }
}

public struct DatabaseOpenError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot open the SQLite database at \(path): \(reason)" }
}

public struct MigrationError: Error, CustomStringConvertible {
    public let id: String
    public let reason: String
    public var description: String { "migration \(id) failed: \(reason)" }
}

/// A first-come, first-served lock for async code: SQLite runs one statement sequence at a time on a
/// connection, and a transaction's statements must not interleave with another's. A task cancelled
/// while it waits leaves the queue with a `CancellationError` and runs nothing.
final class AsyncLock: Sendable {
    private struct State {
        var isLocked = false
        var nextWaiter: UInt64 = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    private let state = Locked(State())

    func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await lock()
        defer { unlock() }
        return try await body()
    }

    private func lock() async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if !state.isLocked {
                        state.isLocked = true
                        return .success(())
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append((id, waiter))
                    return nil
                }
                if let outcome { waiter.resume(with: outcome) }
            }
        } onCancel: {
            // Only a waiter still queued is resumed here: one `unlock` already handed the lock to owns it.
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func unlock() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiters.isEmpty {
                state.isLocked = false
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }
}
