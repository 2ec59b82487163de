public import ServiceGraph

/// The graph of the test that is running, when the test runs under an isolated graph
/// (``Testing/Trait/isolatedGraph(_:)`` or ``withIsolatedGraph(_:_:)``).
public enum TestGraph {
    /// The current test's own built graph; nil outside an isolated test.
    @TaskLocal public static var current: ServiceGraph?

    /// The current test's graph. Traps, naming the fix, when the test has no isolated graph.
    public static var required: ServiceGraph {
        guard let current else {
            preconditionFailure("no isolated graph: add `.isolatedGraph { ... }` to the test, or use withIsolatedGraph")
        }
        return current
    }
}

/// Builds a graph of its own for `body`, shuts it down afterwards, and reports hook failures.
///
/// Works with any test framework (and none). The graph is also ``TestGraph/current`` inside `body`.
///
/// - Throws: The build's ``ServiceGraphError``, `body`'s error, or the shutdown's
///   ``ServiceGraphError`` (after `body` succeeded).
public func withIsolatedGraph<Result: Sendable>(
    _ builder: ServiceGraph.Builder,
    _ body: (ServiceGraph) async throws -> Result
) async throws -> Result {
    let graph = try await builder.build()
    let result: Result
    do {
        result = try await TestGraph.$current.withValue(graph) { try await body(graph) }
    } catch {
        try? await graph.shutdown()
        throw error
    }
    try await graph.shutdown()
    return result
}
