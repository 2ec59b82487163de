import GraphLifecycle

/// What the server is told at startup, from its command line.
public struct AppConfiguration: Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one (the log says which).
    public var port = 8080
    /// The SQLite file (created if missing).
    public var databasePath: String
    /// Whether `GET /debug/graph` and `GET /debug/startup` answer (off by default: a graph dump shows
    /// the application's insides).
    public var debugEndpoints = false
    /// How often the outbox looks for mails to send.
    public var outboxInterval: Duration = .milliseconds(100)
    /// The service group's time limits, and the graph's hook timeout.
    public var lifecycle = GraphServiceGroup.Configuration()

    public init(databasePath: String) {
        self.databasePath = databasePath
    }

    /// Reads `--host`, `--port`, `--database`, `--debug-endpoints`, `--outbox-interval-ms`,
    /// `--shutdown-limit-s` and `--hook-timeout-s`.
    public init(arguments: some Sequence<String>) throws(ConfigurationError) {
        var arguments = Array(arguments)[...]
        var databasePath: String?
        var configuration = AppConfiguration(databasePath: "")
        while let argument = arguments.popFirst() {
            func value() throws(ConfigurationError) -> String {
                guard let value = arguments.popFirst() else { throw ConfigurationError("\(argument) needs a value") }
                return value
            }
            func number() throws(ConfigurationError) -> Int {
                let text = try value()
                guard let number = Int(text), number >= 0 else {
                    throw ConfigurationError("\(argument) needs a whole number, not \(text)")
                }
                return number
            }
            switch argument {
            case "--host": configuration.host = try value()
            case "--port": configuration.port = try number()
            case "--database": databasePath = try value()
            case "--debug-endpoints": configuration.debugEndpoints = true
            case "--outbox-interval-ms": configuration.outboxInterval = .milliseconds(try number())
            case "--shutdown-limit-s": configuration.lifecycle.maximumGracefulShutdownDuration = .seconds(try number())
            case "--hook-timeout-s": configuration.lifecycle.hookTimeout = .seconds(try number())
            default: throw ConfigurationError("unknown option \(argument)")
            }
        }
        guard let databasePath else { throw ConfigurationError("--database PATH is required") }
        configuration.databasePath = databasePath
        self = configuration
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
