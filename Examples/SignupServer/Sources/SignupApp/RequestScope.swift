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

/// The request context: Hummingbird's, plus the request's scope of the graph.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The request's scope, opened by ``RequestScopeMiddleware``.
    public var scope: ServiceScope?

    public init(source: Source) {
        coreContext = .init(source: source)
    }

    /// The request's scope.
    public var services: ServiceScope {
        get throws {
            guard let scope else { throw HTTPError(.internalServerError, message: "no request scope") }
            return scope
        }
    }
}

/// Opens a request scope of the graph for each request, seeded with the request's logger, and
/// closes it (releasing the request's services) once the response is made.
public struct RequestScopeMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext
    let graph: ServiceGraph

    public init(graph: ServiceGraph) {
        self.graph = graph
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        let scope = try graph.makeScope(.request, seeding: ScopeSeed(RequestLoggerKey.self, context.logger))
        context.scope = scope
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            await close(scope, context: context)
            throw error
        }
        await close(scope, context: context)
        return response
    }

    private func close(_ scope: ServiceScope, context: Context) async {
        do {
            try await scope.close()
        } catch {
            context.logger.error("request scope: \(error)")
        }
    }
}
