public import ServiceGraph

// The request scope of the SignupServer example, in a module of its own: the types are public to the
// scope's caller, as an app's are, so that no cast the library makes is folded away by the compiler.

/// A logger's shape: a label, a handler and metadata.
public struct RequestLogger: Sendable {
    public var label: String
    public var handler: LogHandler
    public var metadata: [String: String] = [:]

    public init(label: String, handler: LogHandler) {
        self.label = label
        self.handler = handler
    }
}

public final class LogHandler: Sendable {
    public init() {}
}

public final class SignupRepository: Sendable {
    public init() {}
}

/// The request-scoped service: made from a singleton and a seed of the scope.
public final class SignupService: Sendable {
    public let repository: SignupRepository
    public let logger: RequestLogger

    public init(repository: SignupRepository, logger: RequestLogger) {
        self.repository = repository
        self.logger = logger
    }
}

extension ScopeKind {
    public static let request = ScopeKind("request")
}

public enum RequestLoggerKey: ServiceKey { public typealias Value = RequestLogger }
public enum SignupRepositoryKey: ServiceKey { public typealias Value = SignupRepository }
public enum SignupServiceKey: ServiceKey { public typealias Value = SignupService }

/// The example server's graph, reduced to its request scope and what that scope's service needs.
public func makeRequestGraph() async throws -> ServiceGraph {
    var builder = ServiceGraph.Builder()
    builder.provide(SignupRepositoryKey.self) { SignupRepository() }
    builder.inScope(.request) { request in
        request.seed(RequestLoggerKey.self)
        request.provide(
            SignupServiceKey.self,
            lifetime: .scoped,
            dependsOn: SignupRepositoryKey.self,
            RequestLoggerKey.self
        ) { SignupService(repository: $0, logger: $1) }
    }
    return try await builder.build()
}
