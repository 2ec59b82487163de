import ColdScopeCycleServices
import ServiceGraph

// Runs request scope cycles (open seeded, resolve the scoped service, close), each one started with cold
// caches: before it, a buffer larger than the simulated last-level cache is read. Run under callgrind's
// cache simulation by `Scripts/cold_scope_cycle.sh`, which reports the code and data lines one cycle
// fetches from memory: what a server pays per request, where the network stack and the thread switches
// between two requests evict the scope's code and data (a warm loop shows a tenth of it).
//
//   ColdScopeCycle MODE COUNT     MODE: none (the cache sweep alone), openclose, full, handwritten (the same
//                                 request scope written by hand: the floor), minimal (the least a
//                                 container's scope does beyond it: ``MinimalGraph``); none, full,
//                                 handwritten and minimal with -phases: cold caches before each of open,
//                                 resolve and close; with -route: before open and before close (a route's
//                                 handler opens the scope and resolves at once, does its work, then closes)

/// Runs every job on the main thread: no thread is started (valgrind follows threads poorly here), and
/// the resolves and closes run as a request handler's do, in the caller's task.
final class InlineExecutor: TaskExecutor, @unchecked Sendable {
    private var jobs: [UnownedJob] = []

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.append(UnownedJob(job))
    }

    func drain(until isDone: () -> Bool) {
        while !isDone() {
            guard !jobs.isEmpty else { fatalError("no job to run, and the cycles have not finished") }
            jobs.removeFirst().runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "full"
let count = arguments.count > 2 ? Int(arguments[2]) ?? 10 : 10
let sweepBytes = 16 << 20

func runCycles() async throws {
    let graph = try await makeRequestGraph()
    // The request's logger, the one seed of the server's request scopes (the request's id is in its
    // label there): a new one each request, here one of two.
    let handler = LogHandler()
    let loggers = [
        RequestLogger(label: "request-0", handler: handler), RequestLogger(label: "request-1", handler: handler),
    ]
    let repository = graph[SignupRepositoryKey.self]
    let sweep = UnsafeMutablePointer<UInt8>.allocate(capacity: sweepBytes)
    sweep.initialize(repeating: 1, count: sweepBytes)
    defer { sweep.deallocate() }
    var checksum = 0
    // With `-phases`, the caches are made cold before each phase (open, resolve, close) rather than
    // once per cycle: as in a server, where a request scope is opened before the handler runs, used in
    // it and closed after it, with other code in between.
    // With `-route`, only before open and before close: as a route's handler that opens its scope,
    // resolves at once, does its work (which evicts the scope's lines), then closes.
    let phases = mode.hasSuffix("-phases")
    let route = mode.hasSuffix("-route")
    let shape = phases || route ? String(mode[..<mode.lastIndex(of: "-")!]) : mode
    precondition(["none", "openclose", "full", "handwritten", "minimal"].contains(shape), "no mode \(mode)")
    // Compared once: a comparison of strings in the loop would count as the cycle's.
    let (sweepOnly, byHand, resolves) = (shape == "none", shape == "handwritten", shape == "full")
    let minimal = shape == "minimal"
    let minimalGraph = MinimalGraph(repository: repository)
    enum Phase { case cycle, resolve, close }
    func coldCaches(before phase: Phase = .cycle) {
        switch phase {
        case .cycle: break
        case .resolve: guard phases else { return }
        case .close: guard phases || route else { return }
        }
        for offset in stride(from: 0, to: sweepBytes, by: 64) { checksum &+= Int(sweep[offset]) }
    }
    for cycle in 0..<count {
        coldCaches()
        if sweepOnly {
            coldCaches(before: .resolve)
            coldCaches(before: .close)
            continue
        }
        if byHand {
            var scope: HandWrittenRequestScope? = HandWrittenRequestScope(
                logger: loggers[cycle & 1],
                repository: repository
            )
            coldCaches(before: .resolve)
            checksum &+= scope.unsafelyUnwrapped.signupService().logger.label.utf8.count
            coldCaches(before: .close)
            scope = nil
            continue
        }
        if minimal {
            let scope = try minimalGraph.makeScope(logger: loggers[cycle & 1])
            coldCaches(before: .resolve)
            checksum &+= try scope.signupService().logger.label.utf8.count
            coldCaches(before: .close)
            scope.body.close()
            continue
        }
        let scope = try graph.makeScope(.request, seeding: ScopeSeed(RequestLoggerKey.self, loggers[cycle & 1]))
        coldCaches(before: .resolve)
        if resolves {
            checksum &+= try await scope.resolve(SignupServiceKey.self).logger.label.utf8.count
        }
        coldCaches(before: .close)
        try await scope.close()
    }
    print(checksum)
    try await graph.shutdown()
}

nonisolated(unsafe) var isDone = false
let executor = InlineExecutor()
Task(executorPreference: executor) {
    do {
        try await runCycles()
    } catch {
        print("error: \(error)")
    }
    isDone = true
}
executor.drain { isDone }
