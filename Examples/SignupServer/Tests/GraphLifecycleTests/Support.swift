import GraphLifecycle
import Logging
import ServiceGraph
import ServiceLifecycle
import Synchronization
import Testing

/// What happened, in order, across the services of one test.
final class Journal: Sendable {
    private let entries = Locked<[String]>([])

    func record(_ entry: String) { entries.withLock { $0.append(entry) } }

    var all: [String] { entries.withLock { $0 } }

    func index(of entry: String) -> Int? { all.firstIndex(of: entry) }

    /// The entries that start with `prefix`, in order.
    func matching(_ prefix: String) -> [String] { all.filter { $0.hasPrefix(prefix) } }

    /// Waits (polling) until `entry` is recorded; after `limit`, records a test issue and returns, so
    /// that the test goes on to shut down the group it started rather than leave it running.
    func waitFor(_ entry: String, limit: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while index(of: entry) == nil {
            guard clock.now < deadline else {
                Issue.record("\(entry) was not recorded; the journal: \(all)")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// How a fake service behaves.
struct Behaviour: Sendable {
    /// Says it is running at once, or waits for ``release`` first.
    var reportsRunning = true
    var waitsForRelease = false
    /// Throws this from `run()` once running.
    var fails: String?
    /// Returns from `run()` at once, before any shutdown.
    var exitsEarly = false
    /// Ignores graceful shutdown: only cancellation stops it.
    var ignoresGracefulShutdown = false
    /// Its `willRemove` hangs (ignoring cancellation) for this long.
    var willRemoveHangs: Duration?
}

/// A long-running service that journals its life: "run X" when its `run()` begins, "running X" when it
/// says it is running, "stop X" when it returns, "willRemove X" from its hook.
final class FakeService: NeedsRunningServices, ReportsRunning, LifecycleHooks {
    let name: String
    let journal: Journal
    let behaviour: Behaviour
    let running = RunningGate()
    let needsRunning: [any ReportsRunning]
    private let release = RunningGate()

    init(_ name: String, journal: Journal, behaviour: Behaviour = Behaviour(), needs: [any ReportsRunning] = []) {
        self.name = name
        self.journal = journal
        self.behaviour = behaviour
        self.needsRunning = needs
    }

    /// Lets a service that waits for it say it is running.
    func letRun() { release.markRunning() }

    func run() async throws {
        journal.record("run \(name)")
        defer { journal.record("stop \(name)") }
        if behaviour.waitsForRelease {
            try await cancelWhenGracefulShutdown { try await self.release.waitUntilRunning() }
        }
        if let failure = behaviour.fails { throw Failure(failure) }
        if behaviour.exitsEarly { return }
        if behaviour.reportsRunning {
            // Journaled first: marking it running lets its dependents go on at once.
            journal.record("running \(name)")
            running.markRunning()
        }
        if behaviour.ignoresGracefulShutdown {
            try await Task.sleep(for: .seconds(3600))
        } else {
            try await gracefulShutdown()
        }
    }

    func willRemove() async throws {
        journal.record("willRemove \(name)")
        if let hang = behaviour.willRemoveHangs {
            let until = ContinuousClock.now + hang
            while ContinuousClock.now < until { try? await Task.sleep(for: .milliseconds(10)) }
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum AKey: ServiceKey { typealias Value = FakeService }
enum BKey: ServiceKey { typealias Value = FakeService }
enum CKey: ServiceKey { typealias Value = FakeService }
/// A singleton that is not a `Service`: the group leaves it alone.
enum PlainKey: ServiceKey { typealias Value = Int }

let testLogger: Logger = {
    var logger = Logger(label: "graph-lifecycle-tests")
    logger.logLevel = .warning
    return logger
}()

/// A group whose configuration has no signals (a test triggers the shutdown) and short limits.
func testConfiguration(
    readinessTimeout: Duration? = .seconds(60),
    gracefulShutdown: Duration? = .seconds(60)
) -> GraphServiceGroup.Configuration {
    var configuration = GraphServiceGroup.Configuration()
    configuration.gracefulShutdownSignals = []
    configuration.readinessTimeout = readinessTimeout
    configuration.maximumGracefulShutdownDuration = gracefulShutdown
    configuration.maximumCancellationDuration = .seconds(60)
    return configuration
}

/// A server stand-in: journals like a service, reports nothing.
final class FakeServer: Service {
    let journal: Journal
    init(journal: Journal) { self.journal = journal }

    func run() async throws {
        journal.record("run server")
        defer { journal.record("stop server") }
        try await gracefulShutdown()
    }
}

/// The server a test's group starts last.
enum TestServer: Sendable {
    /// A ``FakeServer`` named "server".
    case standIn
    /// The test's own, under `name`.
    case custom(String, any Service)
}

/// Builds the graph from `builder` and prepares a group for it, with `server` started last (none when
/// `nil`) and `configuration` for both the build and the group. The test starts it with ``start(_:)``.
func makeGroup(
    _ builder: ServiceGraph.Builder,
    journal: Journal,
    server: TestServer? = .standIn,
    configuration: GraphServiceGroup.Configuration = testConfiguration()
) async throws -> (graph: ServiceGraph, group: GraphServiceGroup) {
    let graph = try await GraphServiceGroup.build(builder, configuration: configuration)
    let named: (name: String, service: any Service)? =
        switch server {
        case .standIn: ("server", FakeServer(journal: journal))
        case .custom(let name, let service): (name, service)
        case nil: nil
        }
    let group = try GraphServiceGroup(graph: graph, server: named, configuration: configuration, logger: testLogger)
    return (graph, group)
}

/// Runs `group` in a task and returns it, to be awaited once the test has triggered the shutdown.
func start(_ group: GraphServiceGroup) -> Task<Result<Void, any Error>, Never> {
    Task {
        do {
            try await group.run()
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}

/// The errors a failed run reported.
func errors(of result: Result<Void, any Error>) -> [any Error] {
    guard case .failure(let error) = result else { return [] }
    return (error as? GraphServiceGroupFailure)?.errors ?? [error]
}
