import CMallocStats
import ServiceGraph

/// The figures of one scale graph, per service.
struct ScaleFigures {
    let size: Int
    let shape: String
    let handWired: Double
    let declare: Double
    let validate: Double
    let build: Double
    let handMemory: MemoryUse?
    let graphMemory: MemoryUse?

    var validateAndBuild: Double { validate + build }
}

/// What one build did to memory, in bytes per service.
struct MemoryUse {
    /// The resident high-water mark during the build, above the resident size before it.
    let peak: Int
    /// Of `peak`, what the declared registrations took (zero for hand-wired).
    let declared: Int
    /// The resident high-water mark during the build alone, above the resident size once declared: what
    /// `build()` adds at its peak to the registrations it is given.
    let buildPeak: Int
    /// Heap still allocated once the build is done and its inputs are released (glibc's mallinfo2).
    let retained: Int
}

/// Runs `declare` then `build`, and measures memory: the resident high-water mark above the starting
/// resident size (free heap is returned to the system first, so reused memory counts again), and the
/// heap still in use afterwards. Nil where the platform cannot tell.
@MainActor
func measureMemory<Declared, Built>(
    services: Int,
    declare: () -> Declared,
    build: (Declared) async throws -> Built
) async rethrows -> (MemoryUse?, Built) {
    cmallocstats_trim()
    let resident = cmallocstats_resident_bytes()
    let heap = cmallocstats_heap_in_use()
    let canMeasure = resident >= 0 && heap >= 0 && cmallocstats_reset_peak_resident() == 0
    let declared = declare()
    let afterDeclaring = cmallocstats_peak_resident_since_reset()
    // The high-water mark started again from what is resident now, for the build's own peak.
    let residentDeclared = cmallocstats_resident_bytes()
    let canMeasureBuild = residentDeclared >= 0 && cmallocstats_reset_peak_resident() == 0
    let built = try await build(consume declared)
    let buildPeak = cmallocstats_peak_resident_since_reset()
    let retained = cmallocstats_heap_in_use()
    guard canMeasure, canMeasureBuild, buildPeak >= 0, afterDeclaring >= 0 else { return (nil, built) }
    let use = MemoryUse(
        peak: Int(max(buildPeak, afterDeclaring) - resident) / services,
        declared: Int(afterDeclaring - resident) / services,
        buildPeak: Int(buildPeak - residentDeclared) / services,
        retained: Int(retained - heap) / services
    )
    return (use, built)
}

/// The value `body` returns and the nanoseconds it took; the value is released after the clock is read.
func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = clock.now
    let value = try body()
    return (value, start.duration(to: clock.now).nanoseconds)
}

/// Validate + build of 1,000 to 1,000,000 services with run-time key types, a random DAG and a chain,
/// against a hand-wired build of the same graph. Each sample declares a new builder, since a builder
/// keeps the plan it validated; declaring, validating and building are timed apart. The hand-wired
/// build and the graph's alternate within each sample.
@MainActor
func scaleRows(_ effort: Effort, sizes: [Int]) async throws -> [ScaleFigures] {
    print("Scenario: validate + build at scale (one key type per service, made at run time)")
    let (keys, keysTime) = timed { ScaleGraph.keys(count: sizes.max() ?? 0) }
    print("  made \(keys.count) key types in \(format(keysTime)) (not timed below)")
    var figures: [ScaleFigures] = []
    for size in sizes {
        for shape in [ScaleShape.randomDAG(count: size), ScaleShape.chain(count: size)] {
            let samples =
                size >= 1_000_000 ? min(effort.samples, 3) : size >= 100_000 ? min(effort.samples, 5) : effort.samples
            var hand: [Double] = []
            var declare: [Double] = []
            var validate: [Double] = []
            var build: [Double] = []
            for _ in 0..<samples {
                let (nodes, handTime) = timed { ScaleGraph.handWired(shape) }
                hand.append(handTime)
                withExtendedLifetime(nodes) {}
                let (builder, declareTime) = timed { ScaleGraph.builder(shape, keys: keys) }
                let ((), validateTime) = try timed { try builder.validate() }
                let start = clock.now
                let graph = try await builder.build()
                build.append(start.duration(to: clock.now).nanoseconds)
                withExtendedLifetime(builder) {}
                declare.append(declareTime)
                validate.append(validateTime)
                try await graph.shutdown()
            }
            let (handMemory, nodes) = await measureMemory(services: size) {
                shape
            } build: {
                ScaleGraph.handWired($0)
            }
            withExtendedLifetime(nodes) {}
            let (graphMemory, graph) = try await measureMemory(services: size) {
                ScaleGraph.builder(shape, keys: keys)
            } build: { builder in
                try builder.validate()
                return try await builder.build()
            }
            try await graph.shutdown()

            let perService = { (values: [Double]) in median(values) / Double(size) }
            let row = ScaleFigures(
                size: size,
                shape: shape.name,
                handWired: perService(hand),
                declare: perService(declare),
                validate: perService(validate),
                build: perService(build),
                handMemory: handMemory,
                graphMemory: graphMemory
            )
            figures.append(row)
            let scenario = "scale \(size), \(shape.name)"
            record(scenario, "hand-wired", row.handWired, unit: "ns/service", note: memoryNote(handMemory))
            record(
                scenario,
                "ServiceGraph",
                row.validateAndBuild,
                unit: "ns/service",
                note:
                    "validate + build \(format(row.validateAndBuild * Double(size))) (validate \(format(row.validate)), build \(format(row.build)) /service); declaring \(format(row.declare)) /service before; \(memoryNote(graphMemory))"
            )
        }
    }
    return figures
}

func memoryNote(_ use: MemoryUse?) -> String {
    guard let use else { return "memory not measured on this platform" }
    let declared = use.declared > 0 ? " (declared registrations \(use.declared))" : ""
    return "peak +\(use.peak) B/service\(declared), build() alone +\(use.buildPeak), retains \(use.retained) B/service"
}

/// Prints the scale figures as a Markdown table of their own.
func printScaleTable(_ figures: [ScaleFigures]) {
    print(
        "\n| services | shape | hand-wired | declare | validate | build | validate + build | × hand-wired | peak B/service (hand-wired) | build() alone at peak B/service (hand-wired) | retained B/service (hand-wired) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in figures {
        let total = format(row.validateAndBuild * Double(row.size))
        let ratio = String(format: row.validateAndBuild / row.handWired, digits: 1)
        let peak = "\(row.graphMemory.map { "\($0.peak)" } ?? "—") (\(row.handMemory.map { "\($0.peak)" } ?? "—"))"
        let buildPeak =
            "\(row.graphMemory.map { "\($0.buildPeak)" } ?? "—") (\(row.handMemory.map { "\($0.buildPeak)" } ?? "—"))"
        let retained =
            "\(row.graphMemory.map { "\($0.retained)" } ?? "—") (\(row.handMemory.map { "\($0.retained)" } ?? "—"))"
        print(
            "| \(row.size) | \(row.shape) | \(format(row.handWired)) | \(format(row.declare)) | \(format(row.validate)) | \(format(row.build)) | \(format(row.validateAndBuild)) (\(total)) | \(ratio)x | \(peak) | \(buildPeak) | \(retained) |"
        )
    }
}
