import Hummingbird
import Logging
import ServiceGraph

extension ScopeKind {
    /// The scope of one HTTP request: its services are made for the request and released with it.
    public static let request = ScopeKind("request")
}

/// The request's id, a scoped service of each request scope: read from the request logger's metadata
/// when a service asks for it, not formatted for every request.
public enum RequestIDKey: ServiceKey { public typealias Value = String }
/// The request's logger (with its id in the metadata), the seed of each request scope.
public enum RequestLoggerKey: ServiceKey { public typealias Value = Logger }

/// The request context: Hummingbird's core storage. The request's services are not in it: a route that
/// needs them is added with its request scope (``RequestScopes``), which its handler is given.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: Source) {
        coreContext = .init(source: source)
    }
}

/// Opens a scope of the graph for each request of a route, seeded with the request's logger, and closes
/// it (releasing the request's services) once the handler has returned.
///
/// Per route rather than a middleware: a middleware's call and the copy of the context it hands on cost
/// this server about as much as the scope itself (the example's README has the figures). The scope closes
/// before Hummingbird turns the handler's result into a response, so a handler returns values, not a
/// response body that still reads from the request's services.
public struct RequestScopes: Sendable {
    let graph: ServiceGraph

    public init(graph: ServiceGraph) {
        self.graph = graph
    }

    /// Runs `handler` in a new request scope seeded with the request's `logger`, and closes the scope,
    /// whether the handler returns or throws. A close that fails (a `willRemove` hook's error) is logged,
    /// not turned into the response: the handler's work is done.
    public func run<Output>(
        logger: Logger,
        _ handler: (ServiceScope) async throws -> Output
    ) async throws -> Output {
        let scope = try graph.makeScope(.request, seeding: ScopeSeed(RequestLoggerKey.self, logger))
        let output: Output
        do {
            output = try await handler(scope)
        } catch {
            await close(scope, logger: logger)
            throw error
        }
        await close(scope, logger: logger)
        return output
    }

    private func close(_ scope: ServiceScope, logger: Logger) async {
        do {
            try await scope.close()
        } catch {
            logger.error("request scope: \(error)")
        }
    }
}

extension RouterMethods {
    /// Adds a route whose handler gets its services from a request scope of `scopes`: opened for each
    /// request, closed once the handler has returned.
    @discardableResult
    public func on<Output: ResponseGenerator>(
        _ path: RouterPath,
        method: HTTPRequest.Method,
        in scopes: RequestScopes,
        use handler: @escaping @Sendable (Request, Context, ServiceScope) async throws -> Output
    ) -> Self {
        on(path, method: method) { request, context in
            try await scopes.run(logger: context.logger) { scope in try await handler(request, context, scope) }
        }
    }

    /// A GET route in a request scope: see ``on(_:method:in:use:)``.
    @discardableResult
    public func get<Output: ResponseGenerator>(
        _ path: RouterPath,
        in scopes: RequestScopes,
        use handler: @escaping @Sendable (Request, Context, ServiceScope) async throws -> Output
    ) -> Self {
        on(path, method: .get, in: scopes, use: handler)
    }

    /// A POST route in a request scope: see ``on(_:method:in:use:)``.
    @discardableResult
    public func post<Output: ResponseGenerator>(
        _ path: RouterPath,
        in scopes: RequestScopes,
        use handler: @escaping @Sendable (Request, Context, ServiceScope) async throws -> Output
    ) -> Self {
        on(path, method: .post, in: scopes, use: handler)
    }
}
