public import ServiceGraph
public import Testing

/// A Swift Testing trait that gives each test case a graph of its own, built before the case runs
/// and shut down after it, whether the case returns or throws.
///
/// A failing build (the builder closure's error, a validation or a factory error) or the test's own
/// error fails the case as thrown errors; hook failures at shutdown are recorded as issues of the
/// test, at the test's source location. When a test and its suite both have the trait, the test's
/// graph is the one ``TestGraph/current`` returns.
///
/// ```swift
/// @Test(.isolatedGraph { AppGraph.testBuilder() })
/// func signupSendsAWelcomeMail() async throws {
///     let graph = TestGraph.required
///     ...
/// }
/// ```
///
/// Test cases run in parallel without sharing anything: no global container, no leaking mocks.
public struct IsolatedGraphTrait: TestTrait, SuiteTrait, TestScoping {
    let makeBuilder: @Sendable () async throws -> ServiceGraph.Builder

    /// Applied to a suite, the trait gives each test (and each case of a parameterized test) its own
    /// graph too.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Only test cases get a graph: a suite's scope covers many tests, which must not share one.
        guard testCase != nil else {
            try await function()
            return
        }
        let graph = try await makeBuilder().build()
        do {
            try await TestGraph.$current.withValue(graph) { try await function() }
        } catch {
            await shutDown(graph, sourceLocation: test.sourceLocation)
            throw error
        }
        await shutDown(graph, sourceLocation: test.sourceLocation)
    }

    private func shutDown(_ graph: ServiceGraph, sourceLocation: SourceLocation) async {
        do {
            try await graph.shutdown()
        } catch {
            Issue.record(error, "the test's graph did not shut down cleanly", sourceLocation: sourceLocation)
        }
    }
}

extension Trait where Self == IsolatedGraphTrait {
    /// Each test case gets a graph of its own, built from `builder` and shut down afterwards.
    ///
    /// - Parameter builder: Makes the builder: typically the application's, with test overrides.
    public static func isolatedGraph(_ builder: @escaping @Sendable () async throws -> ServiceGraph.Builder) -> Self {
        IsolatedGraphTrait(makeBuilder: builder)
    }
}
