import ServiceGraph

/// One row of the async-resolve scenarios, recorded by the caller.
struct AsyncRow: Sendable {
    let scenario: String
    let contender: String
    let median: Double
    var note: String = ""
}

/// The shapes whose async resolve is measured against the synchronous read of the same key.
private enum AsyncShape: CaseIterable {
    case singleton, transient, chain

    var name: String {
        switch self {
        case .singleton: "singleton read"
        case .transient: "transient, 3 deps"
        case .chain: "chain of 10"
        }
    }

    var syncName: String {
        switch self {
        case .singleton: "ServiceGraph, graph[Key]"
        case .transient, .chain: "ServiceGraph, resolveSynchronously"
        }
    }
}

/// `try await graph.resolve` of a created singleton, a transient with three dependencies and the top
/// of a chain of ten transients, each next to hand-wired and to the synchronous read of the same key,
/// first from the main actor, then from a task on the global executor. The three contenders of a row
/// alternate their samples; the async row's note gives its ratio to the synchronous one.
@MainActor
func asyncResolveRows(_ effort: Effort, graph: ServiceGraph, handWired: HandWired) async throws -> [AsyncRow] {
    var rows: [AsyncRow] = []
    for shape in AsyncShape.allCases {
        let medians = try await measureInterleaved(effort, mainActorBodies(shape, graph: graph, handWired: handWired))
        rows += asyncRows(shape, executor: "main actor", medians)
    }
    for shape in AsyncShape.allCases {
        let medians = try await Task.detached {
            try await measureInterleaved(effort, globalBodies(shape, graph: graph, handWired: handWired))
        }.value
        rows += asyncRows(shape, executor: "global executor", medians)
    }
    return rows
}

private func asyncRows(_ shape: AsyncShape, executor: String, _ medians: [Double]) -> [AsyncRow] {
    let scenario = "async \(shape.name), \(executor)"
    return [
        AsyncRow(scenario: scenario, contender: "hand-wired", median: medians[0]),
        AsyncRow(scenario: scenario, contender: shape.syncName, median: medians[1]),
        AsyncRow(
            scenario: scenario,
            contender: "ServiceGraph, try await resolve",
            median: medians[2],
            note: "async/sync \(String(format: medians[2] / medians[1], digits: 2))x"
        ),
    ]
}

/// The three contenders of `shape`, each running its loop on the main actor.
private func mainActorBodies(
    _ shape: AsyncShape,
    graph: ServiceGraph,
    handWired: HandWired
) -> [(Int) async throws -> Void] {
    switch shape {
    case .singleton:
        [
            { @MainActor n in for _ in 0..<n { blackHole(handWired.logger) } },
            { @MainActor n in for _ in 0..<n { blackHole(graph[LoggerKey.self]) } },
            { @MainActor n in for _ in 0..<n { blackHole(try await graph.resolve(LoggerKey.self)) } },
        ]
    case .transient:
        [
            { @MainActor n in for _ in 0..<n { blackHole(handWired.handler()) } },
            { @MainActor n in for _ in 0..<n { blackHole(try graph.resolveSynchronously(HandlerKey.self)) } },
            { @MainActor n in for _ in 0..<n { blackHole(try await graph.resolve(HandlerKey.self)) } },
        ]
    case .chain:
        [
            { @MainActor n in for _ in 0..<n { blackHole(handWired.chain()) } },
            { @MainActor n in for _ in 0..<n { blackHole(try graph.resolveSynchronously(Link9.self)) } },
            { @MainActor n in for _ in 0..<n { blackHole(try await graph.resolve(Link9.self)) } },
        ]
    }
}

/// The three contenders of `shape`, for a task on the global executor.
private func globalBodies(
    _ shape: AsyncShape,
    graph: ServiceGraph,
    handWired: HandWired
) -> [(Int) async throws -> Void] {
    switch shape {
    case .singleton:
        [
            { n in for _ in 0..<n { blackHole(handWired.logger) } },
            { n in for _ in 0..<n { blackHole(graph[LoggerKey.self]) } },
            { n in for _ in 0..<n { blackHole(try await graph.resolve(LoggerKey.self)) } },
        ]
    case .transient:
        [
            { n in for _ in 0..<n { blackHole(handWired.handler()) } },
            { n in for _ in 0..<n { blackHole(try graph.resolveSynchronously(HandlerKey.self)) } },
            { n in for _ in 0..<n { blackHole(try await graph.resolve(HandlerKey.self)) } },
        ]
    case .chain:
        [
            { n in for _ in 0..<n { blackHole(handWired.chain()) } },
            { n in for _ in 0..<n { blackHole(try graph.resolveSynchronously(Link9.self)) } },
            { n in for _ in 0..<n { blackHole(try await graph.resolve(Link9.self)) } },
        ]
    }
}
