import ServiceGraph
import ServiceGraphTestSupport
import ServiceGraphTesting
import Testing

// When `.isolatedGraph` is on a suite and on a test inside it (or on two nested suites), the innermost
// trait provides the test case's graph and the outer ones build nothing for that case. Each case records
// what happened to its graphs in a ledger of its own (a task-local set by `GraphLedgerTrait`, outside
// every isolated-graph trait), so the suites run in parallel without counting each other's builds; the
// ledger trait checks, once every inner scope has returned, that each graph built was shut down.

// MARK: - The ledger

/// What happened to the graphs of one test case, in order: "build T#N" when a builder closure runs,
/// "didAdd T#N" and "willRemove T#N" from the graph's probe.
private final class GraphLedger: Sendable {
    @TaskLocal static var current: GraphLedger?

    private let log = Locked<[String]>([])

    var events: [String] { log.withLock { $0 } }

    /// The graphs built so far, by name ("suite#1"), in build order.
    var builds: [String] {
        events.filter { $0.hasPrefix("build ") }.map { String($0.dropFirst("build ".count)) }
    }

    func record(_ event: String) { log.withLock { $0.append(event) } }

    /// Records a build of `tag`'s builder and returns the graph's name: the tag and the case's build count.
    func recordBuild(of tag: String) -> String {
        log.withLock { events in
            let name = "\(tag)#\(events.filter { $0.hasPrefix("build ") }.count + 1)"
            events.append("build \(name)")
            return name
        }
    }

    func count(_ event: String) -> Int { events.filter { $0 == event }.count }
}

/// Gives each test case a fresh ``GraphLedger``; afterwards, checks that every graph the case built had
/// its `didAdd` run once and was shut down (its `willRemove` run once). Put it first on the outermost
/// suite only, so that it wraps every isolated-graph trait.
private struct GraphLedgerTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else {
            try await function()
            return
        }
        let ledger = GraphLedger()
        do {
            try await GraphLedger.$current.withValue(ledger) { try await function() }
        } catch {
            check(ledger, of: test)
            throw error
        }
        check(ledger, of: test)
    }

    private func check(_ ledger: GraphLedger, of test: Test) {
        for name in ledger.builds {
            #expect(ledger.count("didAdd \(name)") == 1, "\(ledger.events)", sourceLocation: test.sourceLocation)
            #expect(
                ledger.count("willRemove \(name)") == 1,
                "graph \(name) was not shut down once: \(ledger.events)",
                sourceLocation: test.sourceLocation
            )
        }
    }
}

extension Trait where Self == GraphLedgerTrait {
    fileprivate static var graphLedger: Self { GraphLedgerTrait() }
}

// MARK: - The graphs

/// The one singleton of a probe graph: it logs its hooks in the case's ledger.
private final class LedgerProbe: LifecycleHooks, Sendable {
    let name: String
    let ledger: GraphLedger?

    init(name: String, ledger: GraphLedger?) {
        self.name = name
        self.ledger = ledger
    }

    func didAdd() async throws { ledger?.record("didAdd \(name)") }

    func willRemove() async throws { ledger?.record("willRemove \(name)") }
}

private enum LedgerProbeKey: ServiceKey { typealias Value = LedgerProbe }

private struct UnusedBuilderFailure: Error {}

private enum ProbeGraph {
    /// A builder whose graph is named after `tag` and the case's build count; making it records the build.
    static func builder(_ tag: String) -> ServiceGraph.Builder {
        let ledger = GraphLedger.current
        let name = ledger?.recordBuild(of: tag) ?? tag
        var builder = ServiceGraph.Builder()
        builder.provide(LedgerProbeKey.self) { LedgerProbe(name: name, ledger: ledger) }
        return builder
    }

    /// The name of the current test's graph.
    static var currentName: String? { TestGraph.current?[LedgerProbeKey.self].name }

    /// The ledger of the running case; records an issue when the case runs without one.
    static func ledger(sourceLocation: SourceLocation = #_sourceLocation) throws -> GraphLedger {
        try #require(GraphLedger.current, "the suite lacks .graphLedger", sourceLocation: sourceLocation)
    }
}

/// One trait value applied at two levels: the same builder closure, twice in a test's traits.
private let sharedTrait: IsolatedGraphTrait = .isolatedGraph { ProbeGraph.builder("shared") }

// MARK: - A suite with the trait

@Suite(
    "Nested isolated graphs: a suite's trait and a test's",
    .graphLedger,
    .isolatedGraph { ProbeGraph.builder("suite") }
)
struct SuiteAndTestIsolatedGraphTests {
    @Test func aTestWithoutATraitGetsOneGraphFromTheSuite() throws {
        let ledger = try ProbeGraph.ledger()
        #expect(ledger.builds == ["suite#1"])
        #expect(ProbeGraph.currentName == "suite#1")
        #expect(ledger.events == ["build suite#1", "didAdd suite#1"], "the graph is running during the test")
    }

    @Test(.isolatedGraph { ProbeGraph.builder("test") })
    func aTestsOwnTraitIsItsOnlyGraphAndTheSuitesBuilderIsNotCalled() throws {
        let ledger = try ProbeGraph.ledger()
        #expect(ledger.builds == ["test#1"], "the suite's trait built a graph the test never sees")
        #expect(ProbeGraph.currentName == "test#1")
    }

    @Test(.isolatedGraph { ProbeGraph.builder("test") }, arguments: 0..<8)
    func eachCaseOfAParameterizedTestWithItsOwnTraitBuildsOneGraph(_ index: Int) throws {
        let ledger = try ProbeGraph.ledger()
        #expect(ledger.builds == ["test#1"])
        #expect(ProbeGraph.currentName == "test#1")
    }

    @Test(arguments: 0..<8)
    func eachCaseOfAParameterizedTestWithoutATraitGetsOneGraphFromTheSuite(_ index: Int) throws {
        let ledger = try ProbeGraph.ledger()
        #expect(ledger.builds == ["suite#1"])
        #expect(ProbeGraph.currentName == "suite#1")
    }

    @Test(.isolatedGraph { ProbeGraph.builder("first") }, .isolatedGraph { ProbeGraph.builder("second") })
    func ofTwoTraitsOnOneTestTheLastIsTheInnermost() throws {
        let ledger = try ProbeGraph.ledger()
        #expect(ledger.builds == ["second#1"])
        #expect(ProbeGraph.currentName == "second#1")
    }

    @Test func withIsolatedGraphInATraitsTestNestsItsOwnGraphForItsBodyAndRestoresTheTraits() async throws {
        let ledger = try ProbeGraph.ledger()
        let traitGraph = try #require(TestGraph.current)
        let inner = try await withIsolatedGraph(ProbeGraph.builder("explicit")) { graph in
            #expect(TestGraph.current === graph)
            #expect(ProbeGraph.currentName == "explicit#2")
            return graph[LedgerProbeKey.self].name
        }
        #expect(inner == "explicit#2")
        #expect(TestGraph.current === traitGraph, "the trait's graph is current again")
        #expect(ProbeGraph.currentName == "suite#1")
        #expect(ledger.builds == ["suite#1", "explicit#2"])
        #expect(ledger.count("willRemove explicit#2") == 1, "the explicit graph is shut down when its body returns")
        #expect(ledger.count("willRemove suite#1") == 0, "the trait's graph runs until the test ends")
    }
}

// MARK: - A suite whose trait is never used

@Suite(
    "Nested isolated graphs: a suite's trait that no test uses",
    .graphLedger,
    .isolatedGraph { throw UnusedBuilderFailure() }
)
struct ShadowedSuiteTraitTests {
    @Test(.isolatedGraph { ProbeGraph.builder("test") })
    func theSuitesBuilderIsNotCalledSoItsFailureCannotFailTheTest() throws {
        #expect(try ProbeGraph.ledger().builds == ["test#1"])
        #expect(ProbeGraph.currentName == "test#1")
    }

    @Test(.isolatedGraph { ProbeGraph.builder("test") }, arguments: ["a", "b", "c"])
    func norForAnyCaseOfAParameterizedTest(_ argument: String) throws {
        #expect(try ProbeGraph.ledger().builds == ["test#1"])
    }
}

// MARK: - Traits at two levels of suites

@Suite("Nested isolated graphs: two levels of suites", .graphLedger, .isolatedGraph { ProbeGraph.builder("outer") })
struct OuterSuiteIsolatedGraphTests {
    @Test func aTestOfTheOuterSuiteGetsTheOuterGraph() throws {
        #expect(try ProbeGraph.ledger().builds == ["outer#1"])
        #expect(ProbeGraph.currentName == "outer#1")
    }

    @Suite(.isolatedGraph { ProbeGraph.builder("inner") })
    struct InnerSuite {
        @Test func aTestOfTheInnerSuiteGetsOnlyTheInnerGraph() throws {
            #expect(try ProbeGraph.ledger().builds == ["inner#1"], "the outer suite's trait built a graph too")
            #expect(ProbeGraph.currentName == "inner#1")
        }

        @Test(arguments: 0..<4)
        func eachCaseOfTheInnerSuiteGetsOnlyTheInnerGraph(_ index: Int) throws {
            #expect(try ProbeGraph.ledger().builds == ["inner#1"])
            #expect(ProbeGraph.currentName == "inner#1")
        }

        @Test(.isolatedGraph { ProbeGraph.builder("test") })
        func aTestWithItsOwnTraitGetsOnlyItsOwnGraph() throws {
            #expect(try ProbeGraph.ledger().builds == ["test#1"])
            #expect(ProbeGraph.currentName == "test#1")
        }
    }

    @Suite struct SuiteWithoutATrait {
        @Test func aTestOfASuiteWithoutATraitGetsTheOuterGraph() throws {
            #expect(try ProbeGraph.ledger().builds == ["outer#1"])
            #expect(ProbeGraph.currentName == "outer#1")
        }
    }
}

// MARK: - No trait on the suite

@Suite("Nested isolated graphs: a suite without the trait", .graphLedger)
struct SuiteWithoutIsolatedGraphTests {
    @Test(.isolatedGraph { ProbeGraph.builder("test") })
    func aTestWithTheTraitGetsOneGraph() throws {
        #expect(try ProbeGraph.ledger().builds == ["test#1"])
        #expect(ProbeGraph.currentName == "test#1")
    }

    @Test func aTestWithoutTheTraitGetsNone() throws {
        #expect(try ProbeGraph.ledger().builds.isEmpty)
        #expect(TestGraph.current == nil)
    }
}

// MARK: - One trait value at two levels

@Suite("Nested isolated graphs: one trait value on the suite and the test", .graphLedger, sharedTrait)
struct SharedTraitValueTests {
    @Test(sharedTrait)
    func theSameTraitOnTheSuiteAndTheTestBuildsOneGraph() throws {
        #expect(try ProbeGraph.ledger().builds == ["shared#1"])
        #expect(ProbeGraph.currentName == "shared#1")
    }

    @Test func aTestWithoutItGetsTheSuitesGraph() throws {
        #expect(try ProbeGraph.ledger().builds == ["shared#1"])
    }
}
