import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ServiceGraph
import Swinject

// Runs every scenario for every contender in one process and prints a table of medians with the
// ratio to hand-wired and to each peer. `--quick` is a smoke run (CI); `--csv PATH` also writes the
// build-time series for the plot.

let arguments = CommandLine.arguments
let effort = arguments.contains("--quick") ? Effort.quick : Effort.full
let csvPath = arguments.firstIndex(of: "--csv").map { arguments[$0 + 1] }
var results: [Result] = []

@MainActor
func record(_ scenario: String, _ contender: String, _ median: Double, unit: String = "ns/op", note: String = "") {
    results.append(Result(scenario: scenario, contender: contender, median: median, unit: unit, note: note))
    print("  \(scenario) · \(contender): \(format(median))\(note.isEmpty ? "" : " (\(note))")")
}

if arguments.contains("--profile-build") {
    let keys = GeneratedGraph.keys(count: 1_000)
    let isStatic = arguments.contains("--static")
    for _ in 0..<300 {
        let builder = isStatic ? StaticGraph.builder() : GeneratedGraph.builder(keys: keys)
        try builder.validate()
        blackHole(try await builder.build())
    }
    exit(0)
}

if let flag = arguments.firstIndex(of: "--profile-distinct") {
    // Rounds of the distinct-type row's ServiceGraph contender, for a profiler (`--profile-distinct 20`).
    let rounds = flag + 1 < arguments.count ? Int(arguments[flag + 1]) ?? 200 : 200
    for _ in 0..<rounds {
        let builder = DistinctServiceGraph.builder()
        try builder.validate()
        let graph = try await builder.build()
        DistinctServiceGraph.readEach(graph)
        try await graph.shutdown()
    }
    exit(0)
}

if let flag = arguments.firstIndex(of: "--profile-scale") {
    // Validate + build of the 1,000,000-service random DAG, for a profiler (`--profile-scale 3`); the
    // key types and the shape are made first, once.
    let rounds = flag + 1 < arguments.count ? Int(arguments[flag + 1]) ?? 3 : 3
    let shape = ScaleShape.randomDAG(count: 1_000_000)
    let keys = ScaleGraph.keys(count: shape.count)
    for _ in 0..<rounds {
        let builder = ScaleGraph.builder(shape, keys: keys)
        try builder.validate()
        let graph = try await builder.build()
        try await graph.shutdown()
    }
    exit(0)
}

if let flag = arguments.firstIndex(of: "--profile-live") {
    // Updates of a live 10,000-service random DAG, each overriding the same leaf, for a profiler
    // (`--profile-live 1000`); prints the heap in use and the median update every tenth of the run.
    let rounds = flag + 1 < arguments.count ? Int(arguments[flag + 1]) ?? 1_000 : 1_000
    try await profileLiveUpdates(rounds)
    exit(0)
}

if arguments.contains("--distinct") {
    // Only the rows of 1,000 distinct types.
    try await distinctTypeRows(Effort.full)
    printTable(results)
    exit(0)
}

if arguments.contains("--seeded") {
    // Only the seeded-scope rows.
    for row in try await seededScopeRows(effort) {
        record(row.scenario, row.contender, row.median, note: row.note)
    }
    printTable(results)
    exit(0)
}

if arguments.contains("--composition") {
    // Only the composition rows.
    for row in try await compositionRows(effort) {
        record(row.scenario, row.contender, row.median, note: row.note)
    }
    printTable(results)
    exit(0)
}

if arguments.contains("--live") {
    // Only the live-graph rows.
    print("Scenario: live graph (an update against a full build, a read through the holder)")
    for row in try await liveRows(effort) {
        record(row.scenario, row.contender, row.median, note: row.note)
    }
    printTable(results)
    exit(0)
}

if arguments.contains("--scale") {
    // Only the scale rows, every size (the full run has them too).
    let figures = try await scaleRows(Effort.full, sizes: Effort.full.scaleSizes)
    printTable(results)
    printScaleTable(figures)
    exit(0)
}

if let profile = arguments.firstIndex(of: "--profile").map({ arguments[$0 + 1] }) {
    // A long loop of one operation, for a profiler.
    let graph = try await ServiceGraphContender.builder().build()
    for _ in 0..<20_000_000 {
        switch profile {
        case "singleton": blackHole(graph[LoggerKey.self])
        case "transient": blackHole(try graph.resolveSynchronously(HandlerKey.self))
        default: blackHole(try graph.resolveSynchronously(Link9.self))
        }
    }
    exit(0)
}

let handWired = HandWired()
let locator = NaiveLocator.make()
let swinject = SwinjectContender.make()
let swinjectSynchronized = swinject.synchronize()
let reader = DependenciesReader()
let graph = try await ServiceGraphContender.builder().build()

if arguments.contains("--async") {
    // Only the async-resolve rows.
    print("Scenario: async resolve against the synchronous read, from the main actor and the global executor")
    for row in try await asyncResolveRows(effort, graph: graph, handWired: handWired) {
        record(row.scenario, row.contender, row.median, note: row.note)
    }
    printTable(results)
    exit(0)
}

print("Scenario: singleton read")
record("singleton read", "hand-wired", measure(effort) { n in for _ in 0..<n { blackHole(handWired.logger) } })
record(
    "singleton read",
    "naive locator",
    measure(effort) { n in for _ in 0..<n { blackHole(locator.resolve((any Logging).self)) } }
)
record(
    "singleton read",
    "Swinject",
    measure(effort) { n in for _ in 0..<n { blackHole(swinject.resolve((any Logging).self)!) } }
)
record(
    "singleton read",
    "Swinject (synchronized)",
    measure(effort) { n in
        for _ in 0..<n { blackHole(swinjectSynchronized.resolve((any Logging).self)!) }
    }
)
record("singleton read", "swift-dependencies", measure(effort) { n in for _ in 0..<n { blackHole(reader.logger) } })
record("singleton read", "ServiceGraph", measure(effort) { n in for _ in 0..<n { blackHole(graph[LoggerKey.self]) } })

print("Scenario: transient with three singleton dependencies")
record("transient, 3 deps", "hand-wired", measure(effort) { n in for _ in 0..<n { blackHole(handWired.handler()) } })
record(
    "transient, 3 deps",
    "naive locator",
    measure(effort) { n in for _ in 0..<n { blackHole(locator.resolve(Handler.self)) } }
)
record(
    "transient, 3 deps",
    "Swinject",
    measure(effort) { n in for _ in 0..<n { blackHole(swinject.resolve(Handler.self)!) } }
)
record(
    "transient, 3 deps",
    "Swinject (synchronized)",
    measure(effort) { n in
        for _ in 0..<n { blackHole(swinjectSynchronized.resolve(Handler.self)!) }
    }
)
record(
    "transient, 3 deps",
    "swift-dependencies",
    measure(effort) { n in for _ in 0..<n { blackHole(reader.handler()) } }
)
record(
    "transient, 3 deps",
    "ServiceGraph",
    try measure(effort) { n in
        for _ in 0..<n { blackHole(try graph.resolveSynchronously(HandlerKey.self)) }
    }
)

print("Scenario: top of a chain of ten transients")
record("chain of 10", "hand-wired", measure(effort) { n in for _ in 0..<n { blackHole(handWired.chain()) } })
record(
    "chain of 10",
    "Swinject",
    measure(effort) { n in for _ in 0..<n { blackHole(swinject.resolve(Link.self, name: "link9")!) } }
)
record(
    "chain of 10",
    "Swinject (synchronized)",
    measure(effort) { n in
        for _ in 0..<n { blackHole(swinjectSynchronized.resolve(Link.self, name: "link9")!) }
    }
)
record(
    "chain of 10",
    "ServiceGraph",
    try measure(effort) { n in
        for _ in 0..<n { blackHole(try graph.resolveSynchronously(Link9.self)) }
    }
)

print("Scenario: a scoped service inside a scope")
let handScope = HandWired.RequestScope(root: handWired)
record("scoped in scope", "hand-wired", measure(effort) { n in for _ in 0..<n { blackHole(handScope.session) } })
let swinjectRequest = SwinjectContender.requestScope(of: swinject)
record(
    "scoped in scope",
    "Swinject",
    measure(effort) { n in for _ in 0..<n { blackHole(swinjectRequest.resolve(Session.self)!) } }
)
DependenciesReader.withRequest {
    record(
        "scoped in scope",
        "swift-dependencies",
        measure(effort) { n in for _ in 0..<n { blackHole(reader.session) } }
    )
}
let scope = try graph.makeScope()
record(
    "scoped in scope",
    "ServiceGraph",
    try await measureAsync(effort) { @Sendable n in
        for _ in 0..<n { blackHole(try await scope.resolve(SessionKey.self)) }
    }
)
try await scope.close()

print("Scenario: seeded scopes (a scope given the signed-in user), against hand-wired sessions")
for row in try await seededScopeRows(effort) {
    record(row.scenario, row.contender, row.median, note: row.note)
}

print("Scenario: composition (contributed lists), against hand-wired lists")
for row in try await compositionRows(effort) {
    record(row.scenario, row.contender, row.median, note: row.note)
}

print("Scenario: live graph (an update against a full build, a read through the holder)")
for row in try await liveRows(effort) {
    record(row.scenario, row.contender, row.median, note: row.note)
}

print("Scenario: async resolve against the synchronous read, from the main actor and the global executor")
for row in try await asyncResolveRows(effort, graph: graph, handWired: handWired) {
    record(row.scenario, row.contender, row.median, note: row.note)
}

print("Scenario: two threads reading singletons at once")
/// Wall time per read when two threads each do `n` reads at the same moment.
func twoThreads(_ read: @escaping @Sendable (Int) -> Void) -> Double {
    measure(effort) { n in DispatchQueue.concurrentPerform(iterations: 2) { _ in read(n) } }
}
let sharedSwinject = UncheckedSendable(value: swinjectSynchronized)
record("two threads", "hand-wired", twoThreads { n in for _ in 0..<n { blackHole(handWired.logger) } })
record(
    "two threads",
    "naive locator",
    twoThreads { n in for _ in 0..<n { blackHole(locator.resolve((any Logging).self)) } }
)
record(
    "two threads",
    "Swinject (synchronized)",
    twoThreads { n in
        for _ in 0..<n { blackHole(sharedSwinject.value.resolve((any Logging).self)!) }
    }
)
record("two threads", "swift-dependencies", twoThreads { n in for _ in 0..<n { blackHole(reader.logger) } })
record("two threads", "ServiceGraph", twoThreads { n in for _ in 0..<n { blackHole(graph[LoggerKey.self]) } })

print("Scenario: validate + build generated graphs")
var buildSeries: [(size: Int, handWired: Double, serviceGraph: Double)] = []
let allKeys = GeneratedGraph.keys(count: effort.graphSizes.max()!)
for size in effort.graphSizes {
    let keys = Array(allKeys.prefix(size))
    let runs =
        size >= 100_000
        ? Effort(samples: min(effort.samples, 5), targetSampleNanoseconds: 0, graphSizes: [])
        : Effort(samples: effort.samples, targetSampleNanoseconds: effort.targetSampleNanoseconds, graphSizes: [])
    let hand = measure(runs) { n in for _ in 0..<n { blackHole(HandWired.buildGraph(count: size)) } } / Double(size)
    record("build \(size) (one type)", "hand-wired", hand, unit: "ns/service")
    if size <= 10_000 {
        let swinjectBuild = measure(runs) { n in for _ in 0..<n { blackHole(SwinjectContender.buildGraph(count: size)) }
        }
        record(
            "build \(size) (one type)",
            "Swinject",
            swinjectBuild / Double(size),
            unit: "ns/service",
            note: "register + resolve all"
        )
    }
    let serviceGraph =
        try await measureAsync(runs) { @Sendable n in
            for _ in 0..<n {
                let builder = GeneratedGraph.builder(keys: keys)
                try builder.validate()
                blackHole(try await builder.build())
            }
        } / Double(size)

    // Retained heap: what a built graph keeps beyond the services themselves (hand-wired's nodes).
    var note = "peak RSS \(peakResidentBytes() / 1_048_576) MiB"
    if let before = heapInUse() {
        let nodes = HandWired.buildGraph(count: size)
        let handBytes = heapInUse()! - before
        withExtendedLifetime(nodes) {}
        let middle = heapInUse()!
        let built = try await GeneratedGraph.builder(keys: keys).build()
        let graphBytes = heapInUse()! - middle
        withExtendedLifetime(built) {}
        note += ", retains \((graphBytes - handBytes) / size) B/service beyond the services"
    }
    record("build \(size) (one type)", "ServiceGraph", serviceGraph, unit: "ns/service", note: note)
    buildSeries.append((size, hand, serviceGraph))
}

print("Scenario: validate + build 1,000 services with static keys (as an application writes them)")
do {
    let size = StaticGraph.count
    let hand = measure(effort) { n in for _ in 0..<n { blackHole(HandWired.buildGraph(count: size)) } } / Double(size)
    record("build 1000 static keys (one type)", "hand-wired", hand, unit: "ns/service")
    let serviceGraph =
        try await measureAsync(effort) { @Sendable n in
            for _ in 0..<n {
                let builder = StaticGraph.builder()
                try builder.validate()
                blackHole(try await builder.build())
            }
        } / Double(size)
    record("build 1000 static keys (one type)", "ServiceGraph", serviceGraph, unit: "ns/service")
}

try await distinctTypeRows(effort)

print("Scenario: parallel startup (singletons waiting on async work)")
let layers = 4
let width = 8
let delay = Duration.milliseconds(effort.samples > 3 ? 20 : 5)
let startupKeys = Array(allKeys.prefix(layers * width))
let criticalPath = (delay * layers).nanoseconds
let startupRuns = Effort(samples: min(effort.samples, 9), targetSampleNanoseconds: 0, graphSizes: [])
let handStartup = try await measureAsync(startupRuns) { n in
    for _ in 0..<n {
        // Hand-wired concurrency: each layer's services started together with a task group.
        for _ in 0..<layers {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<width { group.addTask { try await Task.sleep(for: delay) } }
                try await group.waitForAll()
            }
        }
    }
}
record(
    "startup, critical path \(format(criticalPath))",
    "hand-wired (task groups)",
    handStartup,
    unit: "ns/build",
    note: "\(String(format: handStartup / criticalPath, digits: 2))x the critical path"
)
let startupBuilder = GeneratedGraph.startupBuilder(keys: startupKeys, layers: layers, width: width, delay: delay)
let graphStartup = try await measureAsync(startupRuns) { n in
    for _ in 0..<n { blackHole(try await startupBuilder.build()) }
}
record(
    "startup, critical path \(format(criticalPath))",
    "ServiceGraph",
    graphStartup,
    unit: "ns/build",
    note:
        "\(String(format: graphStartup / criticalPath, digits: 2))x the critical path, sum of factories \(format(criticalPath * Double(width)))"
)

let scaleFigures = try await scaleRows(effort, sizes: effort.scaleSizes)

printTable(results)
printScaleTable(scaleFigures)
if let csvPath {
    var csv = "services,hand_wired_ns_per_service,servicegraph_ns_per_service\n"
    for row in buildSeries { csv += "\(row.size),\(row.handWired),\(row.serviceGraph)\n" }
    try writeFile(csvPath, csv)
    print("\nwrote \(csvPath)")
}
