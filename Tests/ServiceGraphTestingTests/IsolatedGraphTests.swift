import ServiceGraph
import ServiceGraphTesting
import Testing

/// Each case gets its own graph (built by the trait), mutates its own store, and must see only its
/// own state, while the cases run in parallel.
@Suite("Isolated graphs")
struct IsolatedGraphTests {
    @Test(.isolatedGraph { SampleApp.builder() }, arguments: 0..<64)
    func parallelCasesSeeOnlyTheirOwnGraph(_ index: Int) async throws {
        let graph = TestGraph.required
        let signup = try await graph.resolve(SignupKey.self)
        for copy in 0..<(index % 5 + 1) {
            signup.register("user\(index)-\(copy)@example.com")
            await Task.yield()
        }
        let accounts = graph[AccountStoreKey.self].all
        #expect(accounts.count == index % 5 + 1)
        #expect(accounts.allSatisfy { $0.hasPrefix("user\(index)-") }, "saw another case's state: \(accounts)")
    }

    @Test(.isolatedGraph { SampleApp.builder() })
    func theTraitsGraphIsTheCurrentGraph() async throws {
        let graph = try #require(TestGraph.current)
        #expect(graph[AccountStoreKey.self].all.isEmpty)
    }

    @Test func withIsolatedGraphBuildsAndShutsDown() async throws {
        let log = HookLog()
        var builder = SampleApp.builder()
        builder.provide(HookedKey.self) { Hooked(log: log) }
        let accounts = try await withIsolatedGraph(builder) { graph in
            #expect(TestGraph.current === graph)
            #expect(log.entries == ["didAdd"])
            return graph[AccountStoreKey.self].all
        }
        #expect(accounts.isEmpty)
        #expect(log.entries == ["didAdd", "willRemove"])
    }

    @Test func withIsolatedGraphReportsAFailedShutdown() async throws {
        var builder = SampleApp.builder()
        builder.provide(HookedKey.self) { Hooked(log: HookLog(), failsOnRemove: true) }
        let error = await #expect(throws: ServiceGraphError.self) {
            try await withIsolatedGraph(builder) { _ in }
        }
        #expect(error?.codes == [.willRemoveFailed])
    }
}

enum HookedKey: ServiceKey { typealias Value = Hooked }

final class HookLog: @unchecked Sendable {
    private(set) var entries: [String] = []
    func add(_ entry: String) { entries.append(entry) }
}

final class Hooked: LifecycleHooks, @unchecked Sendable {
    let log: HookLog
    let failsOnRemove: Bool

    init(log: HookLog, failsOnRemove: Bool = false) {
        self.log = log
        self.failsOnRemove = failsOnRemove
    }

    func didAdd() async throws { log.add("didAdd") }

    func willRemove() async throws {
        log.add("willRemove")
        if failsOnRemove { throw HookFailure() }
    }
}

struct HookFailure: Error {}

@Suite("Isolated graph trait reporting")
struct IsolatedGraphTraitReportingTests {
    @Test func aHookFailureAtTheEndOfATestIsRecordedAsATestIssue() async throws {
        let trait: IsolatedGraphTrait = .isolatedGraph {
            var builder = SampleApp.builder()
            builder.provide(HookedKey.self) { Hooked(log: HookLog(), failsOnRemove: true) }
            return builder
        }
        let test = try #require(Test.current)
        await withKnownIssue("willRemove throws when the trait shuts the graph down") {
            try await trait.provideScope(
                for: test,
                testCase: Test.Case.current,
                performing: {
                    #expect(TestGraph.current != nil)
                }
            )
        }
    }
}
