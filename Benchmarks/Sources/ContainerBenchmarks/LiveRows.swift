import ServiceGraph

/// The service a live update overrides in the 10,000-service random DAG, and how far the change reaches.
struct LiveLeaf {
    /// The service's index in the shape.
    let index: Int
    /// How many services depend on it directly.
    let direct: Int
    /// How many depend on it directly or through others: what an update overriding it makes again.
    let all: Int

    /// A service with no dependencies that two to four others depend on directly, the one of those with
    /// the fewest dependents in all: a configuration value a few services read, the kind of thing a
    /// running program swaps. The whole DAG's first services reach nearly everything, so picking one
    /// at random would measure a full rebuild under another name.
    static func pick(in shape: ScaleShape) -> LiveLeaf {
        var dependents = Array(repeating: [Int](), count: shape.count)
        for index in 0..<shape.count {
            for dependency in shape.dependencies(of: index) { dependents[dependency].append(index) }
        }
        var best: LiveLeaf?
        for index in 0..<shape.count
        where shape.dependencies(of: index).isEmpty && (2...4).contains(dependents[index].count) {
            var reached = Set<Int>()
            var stack = dependents[index]
            while let next = stack.popLast() {
                if reached.insert(next).inserted { stack += dependents[next] }
            }
            if best.map({ reached.count < $0.all }) ?? true {
                best = LiveLeaf(index: index, direct: dependents[index].count, all: reached.count)
            }
        }
        guard let best else {
            preconditionFailure("the random DAG has a service with no dependencies and 2 to 4 dependents")
        }
        return best
    }
}

/// Replaces the provider of `key` with a new one making the same kind of node; opened from the
/// existential key type so the override is the specialized call an application makes.
private func overrideLeaf<Key: ScaleKey>(_ key: Key.Type, in builder: inout ServiceGraph.Builder) {
    builder.override(key) { ScaleNode() }
}

/// Observes a generation without keeping it alive, to tell when its retirement has released it.
private final class WeakGraph {
    weak var graph: ServiceGraph?

    init(_ graph: ServiceGraph) {
        self.graph = graph
    }
}

/// A live graph against making its graph anew: `live.update` overriding one leaf of a 10,000-service
/// random DAG (run-time key types, as the scale rows make them), against validate + build of the same
/// graph, with hand-wired for scale and `live.plan` (the dry run: validation and the diff, nothing
/// built) to tell where an update's time goes. Then reading a singleton through the holder,
/// `live.current[Key.self]`, against `graph[Key.self]` on a fixed graph.
///
/// Only the update is timed: the generation it replaces retires in a task of its own, which the
/// samples do not wait for, as a program would not. What that leaves behind is measured apart, by
/// ``liveUpdateMemory(shape:keys:leaf:updates:)``.
@MainActor
func liveRows(_ effort: Effort) async throws -> [AsyncRow] {
    let size = 10_000
    let shape = ScaleShape.randomDAG(count: size)
    let keys = ScaleGraph.keys(count: size)
    let leaf = LiveLeaf.pick(in: shape)
    let leafKey = keys[leaf.index]
    print(
        "  overriding service \(leaf.index) of \(size): no dependencies, \(leaf.direct) dependents directly, \(leaf.all) in all"
    )

    let live = try await LiveGraph(ScaleGraph.builder(shape, keys: keys))
    // Calibrated on one update and one dry run, after a first update whose one-time costs the samples
    // should not see. The samples alternate contenders whose setup (declaring the builder) must stay
    // outside the clock, which `measure` cannot do.
    try await live.update { overrideLeaf(leafKey, in: &$0) }
    let calibrating = clock.now
    var plan = try await live.update { overrideLeaf(leafKey, in: &$0) }
    let firstUpdate = calibrating.duration(to: clock.now).nanoseconds
    let (_, firstPlan) = try timed { try live.plan { overrideLeaf(leafKey, in: &$0) } }
    let updateRuns = max(1, Int(effort.targetSampleNanoseconds / max(firstUpdate, 1)))
    let planRuns = max(1, Int(effort.targetSampleNanoseconds / max(firstPlan, 1)))

    var hand: [Double] = []
    var declare: [Double] = []
    var build: [Double] = []
    var update: [Double] = []
    var dryRun: [Double] = []
    for _ in 0..<effort.samples {
        let (nodes, handTime) = timed { ScaleGraph.handWired(shape) }
        hand.append(handTime)
        withExtendedLifetime(nodes) {}

        let (builder, declareTime) = timed { ScaleGraph.builder(shape, keys: keys) }
        declare.append(declareTime)
        let start = clock.now
        try builder.validate()
        let graph = try await builder.build()
        build.append(start.duration(to: clock.now).nanoseconds)
        try await graph.shutdown()

        let updates = clock.now
        for _ in 0..<updateRuns {
            plan = try await live.update { overrideLeaf(leafKey, in: &$0) }
        }
        update.append(updates.duration(to: clock.now).nanoseconds / Double(updateRuns))

        let plans = clock.now
        for _ in 0..<planRuns {
            blackHole(try live.plan { overrideLeaf(leafKey, in: &$0) })
        }
        dryRun.append(plans.duration(to: clock.now).nanoseconds / Double(planRuns))
    }
    try await live.shutdown()
    let updateMedian = median(update)
    let buildMedian = median(build)
    let memory = try await liveUpdateMemory(
        shape: shape,
        keys: keys,
        leaf: leafKey,
        updates: effort.samples > 3 ? 500 : 50
    )

    let reads = try await liveReadRows(effort)
    let scenario = "live update, 10,000 random DAG"
    return [
        AsyncRow(scenario: scenario, contender: "hand-wired, build", median: median(hand)),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, validate + build",
            median: buildMedian,
            note: "declaring \(format(median(declare))) before"
        ),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, live.update (override one leaf)",
            median: updateMedian,
            note:
                "rebuilt \(plan.rebuiltCount), shared \(plan.sharedCount); \(String(format: updateMedian / buildMedian, digits: 2))x the time of validate + build; \(memory)"
        ),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, live.plan (dry run)",
            median: median(dryRun),
            note:
                "validation and diff, nothing built: \(String(format: median(dryRun) / updateMedian, digits: 2))x the update"
        ),
    ] + reads
}

/// What a run of `updates` updates leaves behind: how many replaced generations are still alive
/// (retiring) right after the last one, how long they take to go once the updates stop, and the heap
/// the live graph keeps (glibc's mallinfo2), once retirements are done: after the first update (the
/// step from a built graph to a live one that has updated) and per update after that. Also the
/// update's time over the first and the last tenth of the run, since each update keeps its override
/// in the live graph's builder.
@MainActor
func liveUpdateMemory(
    shape: ScaleShape,
    keys: [any ScaleKey.Type],
    leaf: any ScaleKey.Type,
    updates: Int
) async throws -> String {
    let live = try await LiveGraph(ScaleGraph.builder(shape, keys: keys))
    let heapBefore = heapInUse()
    var heapAfterFirst: Int?
    var replaced: [WeakGraph] = []
    var times: [Double] = []
    for round in 0..<updates {
        replaced.append(WeakGraph(live.current))
        let start = clock.now
        try await live.update { overrideLeaf(leaf, in: &$0) }
        times.append(start.duration(to: clock.now).nanoseconds)
        if round == 0 {
            _ = try await waitForRetirement(of: replaced)
            heapAfterFirst = heapInUse()
        }
    }
    let aliveAfterUpdates = replaced.count { $0.graph != nil }
    let drainTime = try await waitForRetirement(of: replaced)
    let aliveAfterWaiting = replaced.count { $0.graph != nil }
    replaced = []
    let heapSettled = heapInUse()
    try await live.shutdown()

    let tenth = max(1, updates / 10)
    var note =
        "\(updates) updates in a row: \(aliveAfterUpdates) replaced generations alive right after, \(aliveAfterWaiting) after \(format(drainTime))"
    if let heapBefore, let heapAfterFirst, let heapSettled {
        let perUpdate = (heapSettled - heapAfterFirst) / max(1, updates - 1)
        note +=
            "; heap +\((heapAfterFirst - heapBefore) / 1024) KiB at the first update, then \(perUpdate < 0 ? "-" : "+")\(abs(perUpdate)) B/update"
    }
    note +=
        "; update \(format(median(Array(times.prefix(tenth))))) first tenth, \(format(median(Array(times.suffix(tenth))))) last"
    print("  \(note)")
    return note
}

/// Waits, up to 10 s, until none of the `replaced` generations is alive, and returns how long that took.
@MainActor
private func waitForRetirement(of replaced: [WeakGraph]) async throws -> Double {
    let start = clock.now
    while replaced.contains(where: { $0.graph != nil }) && start.duration(to: clock.now) < .seconds(10) {
        try await Task.sleep(for: .milliseconds(1))
    }
    return start.duration(to: clock.now).nanoseconds
}

/// Reading a singleton through a live graph, `live.current[LoggerKey.self]`, against the same read on
/// a fixed graph and hand-wired, single-threaded; and `live.current` alone, the holder's part of it. The
/// live graph is read at its second generation, after an update that made the singleton again.
@MainActor
func liveReadRows(_ effort: Effort) async throws -> [AsyncRow] {
    let handWired = HandWired()
    let graph = try await ServiceGraphContender.builder().build()
    let live = try await LiveGraph(ServiceGraphContender.builder())
    try await live.update { $0.override(LoggerKey.self) { Logger() } }
    let reads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(handWired.logger) } },
            { n in for _ in 0..<n { blackHole(graph[LoggerKey.self]) } },
            { n in for _ in 0..<n { blackHole(live.current[LoggerKey.self]) } },
            { n in for _ in 0..<n { blackHole(live.current) } },
        ]
    )
    try await live.shutdown()
    try await graph.shutdown()
    let scenario = "live singleton read"
    return [
        AsyncRow(scenario: scenario, contender: "hand-wired", median: reads[0]),
        AsyncRow(scenario: scenario, contender: "ServiceGraph, graph[Key]", median: reads[1]),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, live.current[Key]",
            median: reads[2],
            note: "\(String(format: reads[2] / reads[1], digits: 2))x graph[Key] (target: within 2x)"
        ),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, live.current alone",
            median: reads[3],
            note: "the holder's part: its lock-free load of the generation, and the graph's retain and release"
        ),
    ]
}

/// `rounds` updates of a live 10,000-service random DAG, each overriding the same leaf, printing every
/// tenth of the run the heap in use (glibc's mallinfo2) and the median update of that tenth: whether an
/// update's cost or what the live graph keeps grows with the number of updates behind it.
@MainActor
func profileLiveUpdates(_ rounds: Int) async throws {
    let shape = ScaleShape.randomDAG(count: 10_000)
    let keys = ScaleGraph.keys(count: shape.count)
    let leaf = keys[LiveLeaf.pick(in: shape).index]
    let live = try await LiveGraph(ScaleGraph.builder(shape, keys: keys))
    let tenth = max(1, rounds / 10)
    print("before: heap \(heapInUse().map { "\($0 / 1024) KiB" } ?? "not measured")")
    var times: [Double] = []
    for round in 1...rounds {
        let start = clock.now
        try await live.update { overrideLeaf(leaf, in: &$0) }
        times.append(start.duration(to: clock.now).nanoseconds)
        if round % tenth == 0 {
            let heap = heapInUse().map { "\($0 / 1024) KiB" } ?? "not measured"
            print("after \(round) updates: heap \(heap), median update \(format(median(times)))")
            times = []
        }
    }
    try await live.shutdown()
}
