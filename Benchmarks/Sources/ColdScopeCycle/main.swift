import ColdScopeCycleServices
import ServiceGraph

// Runs request scope cycles (open seeded, resolve the scoped service, close), each one started with cold
// caches: before it, a buffer larger than the simulated last-level cache is read. Run under callgrind's
// cache simulation by `Scripts/cold_scope_cycle.sh`, which reports the code and data lines one cycle
// fetches from memory: what a server pays per request, where the network stack and the thread switches
// between two requests evict the scope's code and data (a warm loop shows a tenth of it).
//
//   ColdScopeCycle MODE COUNT     MODE: none (the cache sweep alone), openclose, full, handwritten (the same
//                                 request scope written by hand: the floor)

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
    let logger = RequestLogger(label: "request", handler: LogHandler())
    let ids = ["request-0", "request-1"]
    let repository = graph[SignupRepositoryKey.self]
    let sweep = UnsafeMutablePointer<UInt8>.allocate(capacity: sweepBytes)
    sweep.initialize(repeating: 1, count: sweepBytes)
    defer { sweep.deallocate() }
    var checksum = 0
    for cycle in 0..<count {
        for offset in stride(from: 0, to: sweepBytes, by: 64) { checksum &+= Int(sweep[offset]) }
        if mode == "none" { continue }
        if mode == "handwritten" {
            let scope = HandWrittenRequestScope(requestID: ids[cycle & 1], logger: logger, repository: repository)
            checksum &+= scope.signupService().logger.label.utf8.count
            continue
        }
        let scope = try graph.makeScope(
            .request,
            seeding: ScopeSeed(RequestIDKey.self, ids[cycle & 1]),
            ScopeSeed(RequestLoggerKey.self, logger)
        )
        if mode == "full" {
            checksum &+= try await scope.resolve(SignupServiceKey.self).logger.label.utf8.count
        }
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
