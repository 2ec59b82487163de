import Hummingbird
import Logging
import SQLiteNIO

/// A sign-up, as stored and as the API returns it.
public struct Signup: Codable, Equatable, Sendable, ResponseEncodable {
    public let id: Int
    public let email: String
    public let name: String

    public init(id: Int, email: String, name: String) {
        self.id = id
        self.email = email
        self.name = name
    }
}

/// Where sign-ups are kept. Creating one also queues its welcome mail, in the same transaction.
public protocol SignupRepository: Sendable {
    func create(email: String, name: String) async throws -> Signup
    func all() async throws -> [Signup]
    func find(id: Int) async throws -> Signup?
}

/// Sign-ups in the SQLite database.
public struct SQLiteSignupRepository: SignupRepository {
    let database: Database

    public init(database: Database) {
        self.database = database
    }

    /// The `signups` table and the `outbox` table the welcome mails are queued in.
    public static let migrations = [
        Migration(
            id: "1-signups",
            statements: [
                """
                CREATE TABLE signups (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL UNIQUE, \
                name TEXT NOT NULL, created_at TEXT NOT NULL)
                """
            ]
        )
    ]

    public func create(email: String, name: String) async throws -> Signup {
        try await database.transaction { connection in
            let existing = try await connection.query("SELECT id FROM signups WHERE email = ?", [.text(email)])
            guard existing.isEmpty else { throw SignupError.alreadySignedUp(email) }
            _ = try await connection.query(
                "INSERT INTO signups (email, name, created_at) VALUES (?, ?, datetime('now'))",
                [.text(email), .text(name)]
            )
            let id = try await connection.lastAutoincrementID()
            try await Outbox.enqueue(
                to: email,
                subject: "Welcome, \(name)!",
                body: "Thanks for signing up.",
                on: connection
            )
            return Signup(id: id, email: email, name: name)
        }
    }

    public func all() async throws -> [Signup] {
        try await database.withConnection { connection in
            try await connection.query("SELECT id, email, name FROM signups ORDER BY id").compactMap(Signup.init(row:))
        }
    }

    public func find(id: Int) async throws -> Signup? {
        try await database.withConnection { connection in
            try await connection.query("SELECT id, email, name FROM signups WHERE id = ?", [.integer(id)]).first
                .flatMap(Signup.init(row:))
        }
    }
}

extension Signup {
    init?(row: SQLiteRow) {
        guard let id = row.column("id")?.integer, let email = row.column("email")?.string,
            let name = row.column("name")?.string
        else { return nil }
        self.init(id: id, email: email, name: name)
    }
}

public enum SignupError: Error, Equatable, CustomStringConvertible {
    case invalidEmail(String)
    case missingName
    case alreadySignedUp(String)

    public var description: String {
        switch self {
        case .invalidEmail(let email): "\(email) is not an email address"
        case .missingName: "a name is required"
        case .alreadySignedUp(let email): "\(email) has already signed up"
        }
    }
}

/// The sign-up use case, one per request (a scoped service of the request scope): it checks the input
/// and logs with the request's logger, which carries the request's id.
public struct SignupService: Sendable {
    let repository: any SignupRepository
    let logger: Logger

    public init(repository: any SignupRepository, logger: Logger) {
        self.repository = repository
        self.logger = logger
    }

    public func signUp(email: String, name: String) async throws -> Signup {
        let email = email.trimmed().lowercased()
        let name = name.trimmed()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains(".") else { throw SignupError.invalidEmail(email) }
        guard !name.isEmpty else { throw SignupError.missingName }
        let signup = try await repository.create(email: email, name: name)
        logger.info("signed up \(email) as #\(signup.id)")
        return signup
    }

    public func all() async throws -> [Signup] { try await repository.all() }

    public func find(id: Int) async throws -> Signup? { try await repository.find(id: id) }
}

extension String {
    /// Without the spaces, tabs and newlines at either end.
    func trimmed() -> String {
        let isSpace = { (character: Character) in character.isWhitespace }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
