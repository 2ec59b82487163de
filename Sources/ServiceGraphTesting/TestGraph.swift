public import ServiceGraph
public import Testing

/// The graph of the test that is running, when the test runs under an isolated graph
/// (``Testing/Trait/isolatedGraph(_:)`` or ``withIsolatedGraph(_:sourceLocation:_:)``).
public enum TestGraph {
    /// The current test's own built graph; nil outside an isolated test. A task-local value: a
    /// `Task { }` made in the test inherits it (and finds it shut down if it outlives the test), a
    /// `Task.detached` does not.
    ///
    /// Under traits at several levels it is the innermost trait's graph, the only one built for the
    /// case; inside the body of a ``withIsolatedGraph(_:sourceLocation:_:)`` it is that call's graph.
    @TaskLocal public static var current: ServiceGraph?

    /// The current test's graph. Traps, naming the fix, when the test has no isolated graph.
    public static var required: ServiceGraph {
        guard let current else {
            // fatalError, not preconditionFailure: its message is printed in optimized builds too.
            fatalError("no isolated graph: add `.isolatedGraph { ... }` to the test, or use withIsolatedGraph")
        }
        return current
    }
}

/// Builds a graph of its own for `body`, shuts it down afterwards, and reports hook failures.
///
/// Works with any test framework (and none). The graph is also ``TestGraph/current`` inside `body`.
///
/// Called in a test that already has a graph (from an isolated-graph trait, or an enclosing call), it
/// builds its own graph all the same: that graph is ``TestGraph/current`` for `body` alone and is shut
/// down when `body` ends; the test's graph is current again afterwards, still running, untouched.
///
/// The graph is shut down whether `body` returns or throws. When `body` throws, its error is the one
/// thrown, and a failing shutdown (a `willRemove` that throws or times out) is recorded as an issue
/// of the running Swift Testing test, at `sourceLocation`, rather than lost; outside Swift Testing it
/// is not reported.
///
/// - Throws: The build's ``ServiceGraphError``, `body`'s error, or the shutdown's
///   ``ServiceGraphError`` (after `body` succeeded).
public func withIsolatedGraph<Result: Sendable>(
    _ builder: ServiceGraph.Builder,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (ServiceGraph) async throws -> Result
) async throws -> Result {
    let graph = try await builder.build()
    let result: Result
    do {
        result = try await TestGraph.$current.withValue(graph) { try await body(graph) }
    } catch {
        do {
            try await graph.shutdown()
        } catch let shutdownError where Test.current != nil {
            Issue.record(
                shutdownError,
                "the isolated graph did not shut down cleanly after the body threw \(error)",
                sourceLocation: sourceLocation
            )
        } catch {
            // Outside a Swift Testing test: nowhere to report it beside the body's error.
        }
        throw error
    }
    try await graph.shutdown()
    return result
}
