import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum Present: ServiceKey { typealias Value = Int }
private enum Absent: ServiceKey { typealias Value = Int }
private enum Slow: ServiceKey { typealias Value = Int }
private enum PerRequest: ServiceKey { typealias Value = Int }

/// Every public entry point given bad input: each gives a clear error, none crashes.
@Suite("Misuse")
struct MisuseTests {
    private func graph() async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.provide(Present.self) { 1 }
        builder.provide(Slow.self, lifetime: .transient) {
            await Task.yield()
            return 2
        }
        builder.provide(PerRequest.self, lifetime: .scoped) { 3 }
        return try await builder.build()
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let code: ServiceGraphError.Code
        let message: String
        let run: @Sendable (ServiceGraph) async throws -> Void
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "resolving a key that is not there", code: .keyNotFound, message: "Absent is not in this graph") {
            _ = try await $0.resolve(Absent.self)
        },
        Case(name: "resolving synchronously a key that is not there", code: .keyNotFound, message: "closest keys") {
            _ = try $0.resolveSynchronously(Absent.self)
        },
        Case(name: "resolving after shutdown", code: .graphShutDown, message: "after the graph was shut down") {
            try await $0.shutdown()
            _ = try await $0.resolve(Present.self)
        },
        Case(name: "opening a scope after shutdown", code: .graphShutDown, message: "after the graph was shut down") {
            try await $0.shutdown()
            _ = try $0.makeScope()
        },
        Case(
            name: "closing a scope twice",
            code: .scopeClosed,
            message: "close() was called on a scope that is already closed"
        ) {
            let scope = try $0.makeScope()
            try await scope.close()
            try await scope.close()
        },
        Case(name: "resolving from a closed scope", code: .scopeClosed, message: "PerRequest was asked of a scope") {
            let scope = try $0.makeScope()
            try await scope.close()
            _ = try await scope.resolve(PerRequest.self)
        },
        Case(name: "resolving a scoped service outside a scope", code: .wrongLifetime, message: "resolve it from a") {
            _ = try await $0.resolve(PerRequest.self)
        },
        Case(name: "resolving an async service synchronously", code: .requiresAwait, message: "use `try await resolve`")
        {
            _ = try $0.resolveSynchronously(Slow.self)
        },
    ]

    @Test(arguments: cases)
    func misuseGivesAClearError(_ misuse: Case) async throws {
        let graph = try await graph()
        let error = await #expect(throws: ServiceGraphError.self) { try await misuse.run(graph) }
        #expect(error?.codes == [misuse.code])
        #expect(error?.description.contains(misuse.message) == true, "\(String(describing: error))")
    }

    @Test func overridingAKeyThatWasNeverProvidedIsAValidationError() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Present.self) { 1 }
        let line = #line + 1
        builder.override(Absent.self) { 2 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.overrideOfUnknownKey])
        #expect(error.description.contains("Absent is overridden but was never provided"))
        #expect(error.problems[0].site?.line == line)
    }

    @Test func buildingTheSameBuilderTwiceGivesTwoIndependentGraphs() async throws {
        // Not misuse: a builder is a description, so each build makes its own instances.
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(Present.self) { calls.increment() }
        let first = try await builder.build()
        let second = try await builder.build()
        #expect(first[Present.self] == 1)
        #expect(second[Present.self] == 2)
        try await first.shutdown()
        #expect(second[Present.self] == 2)
    }
}
