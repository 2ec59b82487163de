public import ServiceGraph
public import Testing

/// A Swift Testing trait that gives each test case a graph of its own, built before the case runs
/// and shut down after it, whether the case returns or throws.
///
/// A failing build (the builder closure's error, a validation or a factory error) or the test's own
/// error fails the case as thrown errors; hook failures at shutdown are recorded as issues of the
/// test, at the test's source location.
///
/// Applied to a suite, the trait gives each test of the suite and of its nested suites, and each case
/// of a parameterized test, a graph of its own. When the trait is at several levels — on a suite and
/// on a test inside it, on two nested suites, or twice on one test — the innermost one (the test's
/// own, else the nearest suite's; of two on one declaration, the last) builds the case's graph, and
/// the outer ones build nothing for that case: their builder closures are not called, so no other
/// graph is built, started or shut down beside the one ``TestGraph/current`` returns, and an outer
/// builder that would fail cannot fail the case. (One trait value applied at two levels builds one
/// graph.)
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

    /// Tells this trait value (and its copies) apart from the others among a test's traits.
    private final class Identity: Sendable {}

    private let identity = Identity()

    /// The trait value whose graph the running case has: a copy of that value further in (one value
    /// applied at two levels) builds nothing.
    @TaskLocal private static var providing: Identity?

    /// Applied to a suite, the trait gives each test (and each case of a parameterized test) its own
    /// graph too.
    public var isRecursive: Bool { true }

    /// Provides a scope for each test case whose innermost isolated-graph trait this is, and for
    /// nothing else.
    ///
    /// A test's traits list the ones it inherits from its suites first, outermost to innermost, then its
    /// own in the order written: the last isolated-graph trait among them builds the case's graph.
    ///
    /// - Returns: This trait for a test case whose innermost isolated-graph trait it is; nil for a suite,
    ///   for a test function as a whole, and for a case that a trait further in gives its graph.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        guard testCase != nil else { return nil }
        let innermost = test.traits.last { $0 is IsolatedGraphTrait } as? IsolatedGraphTrait
        if let innermost, innermost.identity !== identity { return nil }
        return self
    }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Only test cases get a graph: a suite's scope covers many tests, which must not share one. A
        // case that an outer copy of this same trait value already gives a graph gets no second one.
        guard testCase != nil, Self.providing !== identity else {
            try await function()
            return
        }
        let graph = try await makeBuilder().build()
        do {
            try await Self.$providing.withValue(identity) {
                try await TestGraph.$current.withValue(graph) { try await function() }
            }
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
    /// On a suite, each test case of the suite (and of its nested suites) gets one, unless a trait
    /// nearer the test, such as the test's own, gives it its graph: `builder` is then not called for it.
    ///
    /// - Parameter builder: Makes the builder: typically the application's, with test overrides.
    public static func isolatedGraph(_ builder: @escaping @Sendable () async throws -> ServiceGraph.Builder) -> Self {
        IsolatedGraphTrait(makeBuilder: builder)
    }
}
