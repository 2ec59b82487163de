import Logging
import ServiceGraph
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Runs a built graph's long-running services, and a server after them, in a swift-service-lifecycle
/// `ServiceGroup`, in the graph's order, then shuts the graph down.
///
/// - **Startup.** The graph's singletons that are `ServiceLifecycle.Service`s are started in the order
///   the build created them (``ServiceGraph/singletons(as:)``), each after what it depends on, and
///   each instance once (an instance under two keys runs under the first). swift-service-lifecycle
///   starts each in a task of its own without waiting for the previous one to be running: a service
///   that needs others running (``NeedsRunningServices``) has its `run()` called only once they are
///   (``ReportsRunning``). The server runs last, once every service that reports it is running.
/// - **Shutdown.** On a signal (SIGTERM and SIGINT by default) or ``triggerGracefulShutdown()``,
///   the group shuts its services down in reverse: the server stops accepting first, then each
///   service finishes, each after everything that depends on it. Then `graph.shutdown()` runs the
///   `willRemove` hooks in reverse dependency order.
/// - **Failure.** A service that throws, or returns before the group is shut down, shuts the group
///   down gracefully, and ``run()`` throws an error naming the service by its key.
/// - **Time limits.** The group's graceful-shutdown limit bounds how long the services take to
///   finish; past it, swift-service-lifecycle cancels every service still running, all at once (so
///   their order is lost). Then each `willRemove` hook, one after another, is bounded by the graph's
///   `hookTimeout` (see ``build(_:configuration:)``): a hook that hangs is abandoned and reported by
///   name. A shutdown's worst case is the graceful limit, plus how long the cancelled services take to
///   return, plus one `hookTimeout` per service with a hook.
public final class GraphServiceGroup: Sendable {
    public struct Configuration: Sendable {
        /// The signals that start a graceful shutdown.
        public var gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]
        /// How long the services may take to finish once a graceful shutdown starts before they are
        /// cancelled; nil waits forever.
        public var maximumGracefulShutdownDuration: Duration? = .seconds(20)
        /// How long cancelled services may take to return; nil (the default) waits for them. Past this
        /// limit swift-service-lifecycle ends the process with a `fatalError`, without running the
        /// graph's `willRemove` hooks: set it only to have a supervisor restart a server whose service
        /// ignores cancellation.
        public var maximumCancellationDuration: Duration?
        /// How long a service waits for those it needs running (and the server for every service that
        /// reports it); nil waits forever.
        public var readinessTimeout: Duration? = .seconds(30)
        /// The graph's `hookTimeout` when the builder sets none (``build(_:configuration:)``).
        public var hookTimeout: Duration = .seconds(10)

        public init() {}
    }

    /// The graph whose services the group runs.
    public let graph: ServiceGraph
    /// The services in the order the group starts them, by key name; the server last.
    public let serviceNames: [String]
    private let group: ServiceGroup
    private let logger: Logger
    /// The services' own failures, first first: what ``run()`` reports, rather than a failure's
    /// consequences in the services that needed the one that failed.
    private let failures = FailureLog()
    /// Whether ``run()`` was called: a group runs once.
    private let hasRun = Atomic(false)

    /// Builds the graph from `builder`, with the configuration's `hookTimeout` when the builder sets
    /// none. A failed build has released what it created, so nothing is left running.
    public static func build(
        _ builder: ServiceGraph.Builder,
        configuration: Configuration = Configuration()
    ) async throws -> ServiceGraph {
        var builder = builder
        if builder.hookTimeout == nil { builder.hookTimeout = configuration.hookTimeout }
        return try await builder.build()
    }

    /// Prepares a group for the services of `graph` and `server`, the HTTP server, started last.
    ///
    /// - Throws: ``GraphLifecycleError`` when a service needs one running that does not start before
    ///   it (``NeedsRunningServices``); nothing has started then.
    public init(
        graph: ServiceGraph,
        server: (name: String, service: any Service)?,
        configuration: Configuration = Configuration(),
        logger: Logger
    ) throws(GraphLifecycleError) {
        self.graph = graph
        self.logger = logger
        // Each instance once, under the first key that holds it (an alias key, or the server itself
        // provided in the graph, would otherwise run it twice).
        var seen: Set<ObjectIdentifier> = []
        if let server, type(of: server.service) is AnyClass {
            seen.insert(ObjectIdentifier(server.service as AnyObject))
        }
        let services = graph.singletons(as: (any Service).self).filter { _, service in
            guard type(of: service) is AnyClass else { return true }
            return seen.insert(ObjectIdentifier(service as AnyObject)).inserted
        }
        var names: [ObjectIdentifier: String] = [:]
        for (name, service) in services {
            if let reporter = service as? any ReportsRunning { names[ObjectIdentifier(reporter.running)] = name }
        }
        var gates: [ObjectIdentifier: NeededService] = [:]
        var managed: [ManagedService] = []
        for (name, service) in services {
            var needs: [NeededService] = []
            for needed in (service as? any NeedsRunningServices)?.needsRunning ?? [] {
                guard let entry = gates[ObjectIdentifier(needed.running)] else {
                    let neededName = names[ObjectIdentifier(needed.running)] ?? "\(type(of: needed))"
                    throw GraphLifecycleError(service: name, reason: .needsServiceOutOfOrder(neededName))
                }
                needs.append(entry)
            }
            let started = RunningGate()
            let gate = (service as? any ReportsRunning)?.running
            if let gate { gates[ObjectIdentifier(gate)] = NeededService(name: name, running: gate, started: started) }
            managed.append(
                ManagedService(
                    name: name,
                    service: service,
                    gate: gate,
                    started: started,
                    needs: needs,
                    readinessTimeout: configuration.readinessTimeout,
                    failures: failures,
                    logger: logger
                )
            )
        }
        if let server {
            // The server accepts requests only once every service that reports it is running.
            managed.append(
                ManagedService(
                    name: server.name,
                    service: server.service,
                    gate: nil,
                    started: RunningGate(),
                    needs: Array(gates.values).sorted { $0.name < $1.name },
                    readinessTimeout: configuration.readinessTimeout,
                    failures: failures,
                    logger: logger
                )
            )
        }
        serviceNames = managed.map(\.name)
        var groupConfiguration = ServiceGroupConfiguration(
            services: managed.map {
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: $0,
                    successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup,
                    serviceName: $0.name
                )
            },
            gracefulShutdownSignals: configuration.gracefulShutdownSignals,
            logger: logger
        )
        groupConfiguration.maximumGracefulShutdownDuration = configuration.maximumGracefulShutdownDuration
        groupConfiguration.maximumCancellationDuration = configuration.maximumCancellationDuration
        group = ServiceGroup(configuration: groupConfiguration)
    }

    /// Runs the services until a signal, ``triggerGracefulShutdown()`` or a failure shuts the group
    /// down, then shuts the graph down (every `willRemove`, in reverse dependency order), even when the
    /// group failed.
    ///
    /// A group runs once: a second call throws ``GraphServiceGroupMisuse`` and touches nothing (the
    /// graph is not shut down under the services of the first).
    ///
    /// - Throws: ``GraphServiceGroupFailure`` with the group's error (a ``GraphLifecycleError`` naming
    ///   the service) and the graph shutdown's, when either failed.
    public func run() async throws {
        guard !hasRun.exchange(true, ordering: .relaxed) else { throw GraphServiceGroupMisuse() }
        logger.info("starting services", metadata: ["services": "\(serviceNames.joined(separator: ", "))"])
        var errors: [any Error] = []
        do {
            try await group.run()
        } catch {
            // The first service to fail, not one that stopped because it needed that one.
            let causes = failures.all
            errors += causes.isEmpty ? [error] : causes
            logger.error("service group stopped: \(errors.map { "\($0)" }.joined(separator: "; "))")
        }
        logger.info("services stopped; shutting down the graph")
        do {
            try await graph.shutdown()
        } catch {
            logger.error("graph shutdown: \(error)")
            errors.append(error)
        }
        if !errors.isEmpty { throw GraphServiceGroupFailure(errors: errors) }
        logger.info("graph shut down")
    }

    /// Starts a graceful shutdown, as a signal would.
    public func triggerGracefulShutdown() async {
        await group.triggerGracefulShutdown()
    }
}

/// A service another needs running: its gate, and the group's own gate that opens when its `run()` is
/// called (once what it needs is running in turn).
struct NeededService: Sendable {
    let name: String
    let running: RunningGate
    let started: RunningGate
}

/// A service as the group runs it: it waits for those it needs running, reports when it stopped before
/// it was running, and turns an early return or a thrown error into a ``GraphLifecycleError`` naming
/// it.
struct ManagedService: Service, CustomStringConvertible {
    let name: String
    let service: any Service
    let gate: RunningGate?
    let started: RunningGate
    let needs: [NeededService]
    let readinessTimeout: Duration?
    let failures: FailureLog
    let logger: Logger

    var description: String { name }

    func run() async throws {
        do {
            try await runInOrder()
        } catch {
            // Those waiting for it to start or to run learn why it did not.
            let stopped = (error as? GraphLifecycleError) ?? GraphLifecycleError(service: name, reason: .failed(error))
            started.markStopped(stopped)
            gate?.markStopped(stopped)
            throw error
        }
        let stopped = GraphLifecycleError(service: name, reason: .stoppedBeforeRunning)
        started.markStopped(stopped)
        gate?.markStopped(stopped)
    }

    private func runInOrder() async throws {
        for needed in needs {
            do {
                try await cancelWhenGracefulShutdown { try await waitUntilRunning(needed) }
            } catch is CancellationError {
                // Shut down before it could start: it never ran, so it has nothing to stop.
                logger.info("not started: \(name) (shut down while waiting for \(needed.name))")
                return
            }
        }
        logger.info("started: \(name)")
        started.markRunning()
        do {
            try await service.run()
        } catch is CancellationError where Task.isShuttingDownGracefully || Task.isCancelled {
            // Stopped by the shutdown (cancelled past the graceful limit, or told to stop).
        } catch {
            logger.info("failed: \(name): \(error)")
            throw failures.record(GraphLifecycleError(service: name, reason: .failed(error)))
        }
        guard Task.isShuttingDownGracefully || Task.isCancelled else {
            logger.info("exited early: \(name)")
            throw failures.record(GraphLifecycleError(service: name, reason: .exitedEarly))
        }
        logger.info("stopped: \(name)")
    }

    /// Waits until `needed` is running. The readiness timeout counts from when its `run()` is called:
    /// while it waits for what it needs in turn, its own wait's timeout applies, and a failure there
    /// reaches this one as a stop.
    private func waitUntilRunning(_ needed: NeededService) async throws {
        do {
            try await needed.started.waitUntilRunning()
            guard let readinessTimeout else { return try await needed.running.waitUntilRunning() }
            try await withThrowingTaskGroup { group in
                group.addTask { try await needed.running.waitUntilRunning() }
                group.addTask {
                    try await Task.sleep(for: readinessTimeout)
                    throw failures.record(
                        GraphLifecycleError(
                            service: name,
                            reason: .neededServiceNotRunningInTime(needed.name, readinessTimeout)
                        )
                    )
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch let error as GraphLifecycleError where error.service == needed.name {
            throw GraphLifecycleError(service: name, reason: .neededServiceStopped(needed.name, cause: error))
        }
    }
}

/// The failures of a group's services, in the order they happened.
final class FailureLog: Sendable {
    private let failures = Locked<[GraphLifecycleError]>([])

    /// Records `failure` and returns it, to be thrown.
    func record(_ failure: GraphLifecycleError) -> GraphLifecycleError {
        failures.withLock { $0.append(failure) }
        return failure
    }

    var all: [GraphLifecycleError] { failures.withLock { $0 } }
}
