import GraphLifecycle
import Logging
import SQLiteNIO
import ServiceGraph
import ServiceLifecycle

/// Sends a mail.
public protocol MailSender: Sendable {
    func send(to address: String, subject: String, body: String) async throws
}

/// A mail sender that writes each mail to the log: the example's stand-in for an SMTP client.
public struct LoggingMailSender: MailSender {
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func send(to address: String, subject: String, body: String) async throws {
        logger.info("mail: to \(address): \(subject)")
    }
}

/// The outbox table: mails queued in the transaction that made them necessary, sent later by the
/// ``OutboxWorker``, so that a sign-up is never lost to a mail server being down.
public enum Outbox {
    public static let migrations = [
        Migration(
            id: "2-outbox",
            statements: [
                """
                CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, address TEXT NOT NULL, \
                subject TEXT NOT NULL, body TEXT NOT NULL, queued_at TEXT NOT NULL, sent_at TEXT)
                """
            ]
        )
    ]

    static func enqueue(
        to address: String,
        subject: String,
        body: String,
        on connection: SQLiteConnection
    )
        async throws
    {
        _ = try await connection.query(
            "INSERT INTO outbox (address, subject, body, queued_at) VALUES (?, ?, ?, datetime('now'))",
            [.text(address), .text(subject), .text(body)]
        )
    }
}

/// A background worker, a long-running `ServiceLifecycle.Service`: sends the queued mails, then waits
/// a moment and looks again, until the service group shuts down. It needs the database running, not
/// just built (``NeedsRunningServices``), before its first look.
public final class OutboxWorker: NeedsRunningServices, Sendable {
    let database: Database
    let sender: any MailSender
    let interval: Duration
    let logger: Logger

    public var needsRunning: [any ReportsRunning] { [database] }

    public init(database: Database, sender: any MailSender, interval: Duration, logger: Logger) {
        self.database = database
        self.sender = sender
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        logger.info("outbox: running")
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await sendQueued()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        // A last pass, so that what was queued before the server stopped accepting is sent.
        if !Task.isCancelled { await sendQueued() }
        logger.info("outbox: stopped")
    }

    /// Sends every queued mail, marking each sent as it goes. A mail that fails to send stays queued
    /// for the next pass, and a pass that fails is logged: an outbox rides out a mail server or a
    /// database being unavailable for a while rather than bringing the server down.
    public func sendQueued() async {
        let queued: [SQLiteRow]
        do {
            queued = try await database.withConnection { connection in
                try await connection.query(
                    "SELECT id, address, subject, body FROM outbox WHERE sent_at IS NULL ORDER BY id"
                )
            }
        } catch {
            logger.error("outbox: cannot read the queue: \(error)")
            return
        }
        for row in queued {
            guard let id = row.column("id")?.integer, let address = row.column("address")?.string,
                let subject = row.column("subject")?.string, let body = row.column("body")?.string
            else { continue }
            do {
                try await sender.send(to: address, subject: subject, body: body)
                _ = try await database.withConnection { connection in
                    try await connection.query(
                        "UPDATE outbox SET sent_at = datetime('now') WHERE id = ?",
                        [.integer(id)]
                    )
                }
            } catch {
                logger.error("outbox: mail #\(id) to \(address) stays queued: \(error)")
            }
        }
    }
}
