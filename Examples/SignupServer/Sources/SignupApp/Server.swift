import GraphLifecycle
import Hummingbird
import Logging
import ServiceGraph
import Synchronization

/// The server: builds the graph, makes the HTTP application on it, and runs both in a service group
/// until a signal stops them.
public enum SignupServerApp {
    /// Builds the graph and runs the server until SIGTERM or SIGINT.
    ///
    /// - Throws: The build's error (naming the service that failed and its dependency path; nothing is
    ///   left started), or the service group's.
    public static func run(configuration: AppConfiguration, logger: Logger) async throws {
        let graph = try await GraphServiceGroup.build(
            makeAppBuilder(configuration: configuration, logger: logger),
            configuration: configuration.lifecycle
        )
        let group: GraphServiceGroup
        do {
            group = try GraphServiceGroup(
                graph: graph,
                server: ("HTTP server", makeApplication(graph: graph, configuration: configuration, logger: logger)),
                configuration: configuration.lifecycle,
                logger: logger
            )
        } catch {
            try? await graph.shutdown()
            throw error
        }
        try await group.run()
    }

    /// The HTTP application over `graph`: the API in request scopes, the debug endpoints when enabled,
    /// and the load check's three routes.
    public static func makeApplication(
        graph: ServiceGraph,
        configuration: AppConfiguration,
        logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router(context: AppRequestContext.self)
        let scopes = RequestScopes(graph: graph)
        SignupRoutes.add(to: router, scopes: scopes)
        if configuration.debugEndpoints { DebugRoutes.add(to: router, graph: graph) }
        LoadCheckRoutes.add(to: router, scopes: scopes, graph: graph)
        return Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in
                logger.info("listening on \(configuration.host):\(channel.localAddress?.port ?? configuration.port)")
            },
            logger: logger
        )
    }
}

/// Three routes that do the same work, for the load check: one through a request scope of the graph,
/// one hand-wired, and one hand-wired through a request scope written by hand.
enum LoadCheckRoutes {
    static func add(to router: Router<AppRequestContext>, scopes: RequestScopes, graph: ServiceGraph) {
        router.get("/load/scoped/:id", in: scopes) { _, context, services -> Signup in
            let id = try context.parameters.require("id", as: Int.self)
            let service = try await services.resolve(SignupServiceKey.self)
            guard let signup = try await service.find(id: id) else { throw HTTPError(.notFound) }
            return signup
        }
        // Hand-wired: the repository read once, the service made by hand for each request.
        let repository = graph[SignupRepositoryKey.self]
        router.get("/load/direct/:id") { _, context -> Signup in
            let id = try context.parameters.require("id", as: Int.self)
            let service = SignupService(repository: repository, logger: context.logger)
            guard let signup = try await service.find(id: id) else { throw HTTPError(.notFound) }
            return signup
        }
        // Hand-wired with a request scope written by hand: what any request scope costs this server,
        // the floor for the graph's.
        router.get("/load/handwritten/:id") { _, context -> Signup in
            let id = try context.parameters.require("id", as: Int.self)
            let scope = HandWrittenRequestScope(repository: repository, logger: context.logger)
            guard let signup = try await scope.signupService().find(id: id) else { throw HTTPError(.notFound) }
            return signup
        }
    }
}

/// A request scope written by hand, as a server without a graph would: one object per request holding
/// its seed, its scoped service made on first use under a lock and released with the object. The load
/// check's floor: what any request scope costs, before what a graph's does for it.
final class HandWrittenRequestScope: Sendable {
    private let repository: any SignupRepository
    private let logger: Logger
    private let service = Mutex<SignupService?>(nil)

    /// Out of line, as a scope that escapes into a request's context is: inlined, the object would be
    /// put on the stack.
    @inline(never)
    init(repository: any SignupRepository, logger: Logger) {
        self.repository = repository
        self.logger = logger
    }

    /// The request's service, made by the first call.
    func signupService() -> SignupService {
        service.withLock { service in
            if let service { return service }
            let made = SignupService(repository: repository, logger: logger)
            service = made
            return made
        }
    }
}
