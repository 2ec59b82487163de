import ServiceGraph

/// One element of a contributed list: a plugin holding a singleton.
final class Plugin: Sendable {
    let index: Int
    let logger: any Logging

    init(index: Int, logger: any Logging) {
        self.index = index
        self.logger = logger
    }
}

/// A decorator of a logger, as a hand-wired app would write it too.
final class WrappingLogger: Logging {
    let wrapped: any Logging

    init(wrapped: any Logging) {
        self.wrapped = wrapped
    }

    func log(_ message: String) { wrapped.log(message) }
}

/// A decorated singleton, read.
enum DecoratedLoggerKey: ServiceKey { typealias Value = any Logging }

/// A part of a scale graph: the services in `range`, registered by a module of their own.
struct ScaleModule: GraphModule {
    let range: Range<Int>
    let shape: ScaleShape
    let keys: [any ScaleKey.Type]

    var name: String { "part \(range.lowerBound / range.count)" }

    func register(in builder: inout ServiceGraph.Builder) {
        for index in range {
            ScaleGraph.provide(keys[index], shape.dependencies(of: index), keys: keys, into: &builder)
        }
    }
}

/// Ten contributions as a singleton list, and ten transient ones made into a list on every resolve.
enum PluginsKey: ContributionKey { typealias Element = Plugin }
enum TransientPluginsKey: ContributionKey { typealias Element = Plugin }

/// Composition against hand-wired code doing the same: reading a list of ten contributions (a
/// singleton), and resolving a transient list of ten transient contributions (ten objects and the
/// array, every time). The contenders of a row alternate their samples.
@MainActor
func compositionRows(_ effort: Effort) async throws -> [AsyncRow] {
    var builder = ServiceGraph.Builder()
    builder.provide(LoggerKey.self) { Logger() }
    for index in 0..<10 {
        // Stated out of order: the list is sorted by position.
        builder.contribute(PluginsKey.self, id: "p\(index)", position: 9 - index, dependsOn: LoggerKey.self) {
            Plugin(index: 9 - index, logger: $0)
        }
        builder.contribute(TransientPluginsKey.self, lifetime: .transient, dependsOn: LoggerKey.self) {
            Plugin(index: index, logger: $0)
        }
    }
    let graph = try await builder.build()
    let logger = graph[LoggerKey.self]
    let handList = (0..<10).map { Plugin(index: $0, logger: logger) }
    precondition(graph[PluginsKey.self].map(\.index) == Array(0..<10), "the list is in position order")

    let reads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(handList) } },
            { n in for _ in 0..<n { blackHole(graph[PluginsKey.self]) } },
        ]
    )
    let transients = try await measureInterleaved(
        effort,
        [
            { n in
                for _ in 0..<n {
                    var plugins: [Plugin] = []
                    plugins.reserveCapacity(10)
                    for index in 0..<10 { plugins.append(Plugin(index: index, logger: logger)) }
                    blackHole(plugins)
                }
            },
            { n in for _ in 0..<n { blackHole(try graph.resolveSynchronously(TransientPluginsKey.self)) } },
        ]
    )
    try await graph.shutdown()

    // A decorated singleton: the graph holds the wrapper, read as any singleton.
    var decorated = ServiceGraph.Builder()
    decorated.provide(LoggerKey.self) { Logger() }
    decorated.provide(DecoratedLoggerKey.self) { Logger() }
    decorated.decorate(DecoratedLoggerKey.self) { WrappingLogger(wrapped: $0) }
    let decoratedGraph = try await decorated.build()
    let handDecorated: any Logging = WrappingLogger(wrapped: Logger())
    let decoratedReads = try await measureInterleaved(
        effort,
        [
            { n in for _ in 0..<n { blackHole(handDecorated) } },
            { n in for _ in 0..<n { blackHole(decoratedGraph[DecoratedLoggerKey.self]) } },
            // The same read of a singleton nobody decorates, measured the same way.
            { n in for _ in 0..<n { blackHole(decoratedGraph[LoggerKey.self]) } },
        ]
    )
    try await decoratedGraph.shutdown()

    // Validate + build of 1,000 services (a random DAG, run-time key types), declared flat and split
    // into 20 modules of 50.
    let shape = ScaleShape.randomDAG(count: 1_000)
    let keys = ScaleGraph.keys(count: 1_000)
    let modules = (0..<20).map { ScaleModule(range: ($0 * 50)..<($0 * 50 + 50), shape: shape, keys: keys) }
    let builds = try await measureInterleaved(
        effort,
        [
            { n in
                for _ in 0..<n {
                    let builder = ScaleGraph.builder(shape, keys: keys)
                    try builder.validate()
                    let graph = try await builder.build()
                    try await graph.shutdown()
                }
            },
            { n in
                for _ in 0..<n {
                    var builder = ServiceGraph.Builder()
                    for module in modules { builder.include(module) }
                    try builder.validate()
                    let graph = try await builder.build()
                    try await graph.shutdown()
                }
            },
        ]
    )
    return [
        AsyncRow(scenario: "decorated singleton, read", contender: "hand-wired", median: decoratedReads[0]),
        AsyncRow(scenario: "decorated singleton, read", contender: "ServiceGraph", median: decoratedReads[1]),
        AsyncRow(
            scenario: "decorated singleton, read",
            contender: "ServiceGraph, undecorated",
            median: decoratedReads[2],
            note: "a singleton nobody decorates, read the same way"
        ),
        AsyncRow(
            scenario: "declare + validate + build 1,000, flat / in 20 modules",
            contender: "ServiceGraph, flat",
            median: builds[0]
        ),
        AsyncRow(
            scenario: "declare + validate + build 1,000, flat / in 20 modules",
            contender: "ServiceGraph, 20 modules",
            median: builds[1],
            note: "\((builds[1] / builds[0] * 100).rounded() / 100)x the flat graph"
        ),
        AsyncRow(scenario: "list of 10 contributions, read", contender: "hand-wired", median: reads[0]),
        AsyncRow(scenario: "list of 10 contributions, read", contender: "ServiceGraph", median: reads[1]),
        AsyncRow(scenario: "transient list of 10 transients", contender: "hand-wired", median: transients[0]),
        AsyncRow(scenario: "transient list of 10 transients", contender: "ServiceGraph", median: transients[1]),
    ]
}
