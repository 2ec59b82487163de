import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Chains of transients far deeper than a graph needs, resolved on the cooperative pool's threads (whose
/// stacks are smaller than the main thread's): the resolve path must not use stack in proportion to the
/// depth. Each test runs in an exit test, so a stack overflow fails the test instead of ending the run.
@Suite(
    "Deep chains",
    .enabled(if: !ProcessEnvironment.isSanitizerRun, "deep chains run in the plain run")
)
struct DeepChainTests {
    /// The depth every build must reach: 10,000 in debug, 100,000 in release.
    static var depth: Int {
        #if DEBUG
        10_000
        #else
        100_000
        #endif
    }

    /// A singleton (or `root`) as key 0 under a chain of `length` services, key `n` depending on key
    /// `n - 1`; each value is one more than its dependency's, so the top is worth `length + 1`.
    static func chain(
        length: Int,
        lifetime: Lifetime = .transient,
        root: Lifetime = .singleton,
        asynchronous: Bool = false,
        failingAt failing: Int? = nil
    ) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        GeneratedKeys.provide(0, lifetime: root, dependsOn: [], into: &builder)
        let recorder = failing.map { GraphRecorder(plan: FailurePlan(failingFactory: $0)) }
        for index in 1...length {
            GeneratedKeys.provide(
                index,
                lifetime: lifetime,
                dependsOn: [index - 1],
                asynchronous: asynchronous,
                recorder: recorder,
                into: &builder
            )
        }
        return builder
    }

    /// Resolves generated key `index` with `resolveSynchronously`, on a thread of the cooperative pool.
    static func resolveSynchronously(_ index: Int, in graph: ServiceGraph) async throws -> GeneratedService {
        func open<K: GeneratedKey>(_ key: K.Type) throws -> GeneratedService { try graph.resolveSynchronously(key) }
        return try await Task.detached { try open(GeneratedKeys.key(index)) }.value
    }

    /// Resolves generated key `index` with `resolve`, on a thread of the cooperative pool.
    static func resolve(_ index: Int, in graph: ServiceGraph) async throws -> GeneratedService {
        func open<K: GeneratedKey>(_ key: K.Type) async throws -> GeneratedService { try await graph.resolve(key) }
        return try await Task.detached { try await open(GeneratedKeys.key(index)) }.value
    }

    /// Resolves generated key `index` from `scope`, on a thread of the cooperative pool.
    static func resolve(_ index: Int, in scope: ServiceScope) async throws -> GeneratedService {
        try await Task.detached { try await scope.resolveGenerated(index) }.value
    }

    @Test func aDeepSynchronousChainResolvesSynchronously() async {
        await #expect(processExitsWith: .success) {
            let depth = DeepChainTests.depth
            let graph = try await DeepChainTests.chain(length: depth).build()
            let top = try await DeepChainTests.resolveSynchronously(depth, in: graph)
            #expect(top.value == depth + 1)
            #expect(top.index == depth)
        }
    }

    @Test func aDeepSynchronousChainResolvesWithAwait() async {
        await #expect(processExitsWith: .success) {
            let depth = DeepChainTests.depth
            let graph = try await DeepChainTests.chain(length: depth).build()
            #expect(try await DeepChainTests.resolve(depth, in: graph).value == depth + 1)
        }
    }

    @Test func aDeepChainOfAsynchronousFactoriesResolves() async {
        await #expect(processExitsWith: .success) {
            let graph = try await DeepChainTests.chain(length: 10_000, asynchronous: true).build()
            #expect(try await DeepChainTests.resolve(10_000, in: graph).value == 10_001)
        }
    }

    @Test func aDeepTransientChainOverAScopedServiceResolvesFromAScope() async {
        await #expect(processExitsWith: .success) {
            let graph = try await DeepChainTests.chain(length: 10_000, root: .scoped).build()
            let scope = try graph.makeScope()
            #expect(try await DeepChainTests.resolve(10_000, in: scope).value == 10_001)
            try await scope.close()
        }
    }

    @Test func aDeepScopedChainResolvesAndCloses() async {
        await #expect(processExitsWith: .success) {
            let graph = try await DeepChainTests.chain(length: 10_000, lifetime: .scoped).build()
            let scope = try graph.makeScope()
            #expect(try await DeepChainTests.resolve(10_000, in: scope).value == 10_001)
            try await scope.close()
        }
    }

    @Test func aFailureAtTheBottomOfADeepSynchronousChainReportsTheWholePath() async {
        await #expect(processExitsWith: .success) {
            let depth = DeepChainTests.depth
            let graph = try await DeepChainTests.chain(length: depth, failingAt: 1).build()
            // Caught, not `#expect(throws:)`: the test library's report of a 100,000-name path is slow.
            var failure: ServiceGraphError?
            do {
                _ = try await DeepChainTests.resolveSynchronously(depth, in: graph)
            } catch {
                failure = error as? ServiceGraphError
            }
            let problem = try #require(failure?.problems.first)
            #expect(problem.code == .factoryFailed)
            #expect(problem.key == GeneratedKeys.name(1))
            let path = problem.path
            #expect(path.count == depth)
            #expect(path.first == GeneratedKeys.name(depth))
            #expect(path.last == GeneratedKeys.name(1))
        }
    }

    @Test func aFailureAtTheBottomOfADeepChainNamesTheWholePath() async throws {
        // Each level the failure leaves puts its service in front of the path. Copying the path at
        // every level made this quadratic (seconds at 20,000 levels); the path is now a shared list.
        // How long it takes is for a benchmark to say, not a unit test on a shared machine.
        let graph = try await DeepChainTests.chain(length: 20_000, failingAt: 1).build()
        func open<K: GeneratedKey>(_ key: K.Type) async -> ServiceGraphError? {
            do {
                _ = try await graph.resolve(key)
                return nil
            } catch {
                return error as? ServiceGraphError
            }
        }
        let failure = await open(GeneratedKeys.key(20_000))
        let problem = try #require(failure?.problems.first)
        #expect(problem.code == .factoryFailed)
        let path = problem.path
        #expect(path.count == 20_000)
        #expect(path.first == GeneratedKeys.name(20_000))
        #expect(path.last == GeneratedKeys.name(1))
    }
}
