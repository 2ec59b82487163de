import ServiceGraph
import Testing
import ServiceGraphTestSupport

private protocol Database: Sendable {}
private struct Memory: Database {}
private enum PrimaryDatabase: ServiceKey { typealias Value = any Database }
private enum ReplicaDatabase: ServiceKey { typealias Value = any Database }
private enum Repository: ServiceKey { typealias Value = Int }
private enum App: ServiceKey { typealias Value = Int }
private enum Config: ServiceKey { typealias Value = String }

@Suite("Missing providers")
struct MissingProviderTests {
    @Test func namesTheMissingKeyWhoNeedsItAndThePathFromARoot() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(App.self, dependsOn: Repository.self) { $0 }
        let line = #line + 1
        builder.provide(Repository.self, dependsOn: Config.self) { $0.count }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let problem = try #require(error.problems.first)
        #expect(error.problems.count == 1)
        #expect(problem.code == .missingProvider)
        #expect(problem.key == "Config")
        #expect(problem.path == ["App", "Repository", "Config"])
        #expect(problem.message.contains("Config has no provider; Repository requires it"))
        #expect(problem.site?.line == line)
        #expect(problem.description.contains("App → Repository → Config"))
        #expect(problem.description.contains("MissingProviderTests.swift:\(line)"))
    }

    @Test func suggestsKeysWithTheSameValueType() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(ReplicaDatabase.self) { Memory() }
        builder.provide(Repository.self, dependsOn: PrimaryDatabase.self) { _ in 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        #expect(error.problems[0].message.contains("Did you mean ReplicaDatabase?"))
        #expect(error.problems[0].message.contains("Database"))
    }

    @Test func aMissingKeyErrorOutlivesItsGraphWithoutKeepingItsServices() async throws {
        // The message is made when it is read, from the graph's key identities, not from the graph.
        final class Held: Database {}
        enum HeldDatabase: ServiceKey { typealias Value = Held }
        let registry = WeakRegistry()
        var error: ServiceGraphError?
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(ReplicaDatabase.self) { registry.track(Held()) }
            let graph = try await builder.build()
            error = #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(PrimaryDatabase.self) }
            try await graph.shutdown()
        }
        #expect(registry.tracked == 1)
        #expect(registry.alive == 0)
        let message = error?.problems.first?.message ?? ""
        #expect(message.contains("closest keys: ReplicaDatabase"), "\(message)")
    }

    @Test func noSuggestionWhenNoKeyHasTheSameValueType() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Repository.self, dependsOn: PrimaryDatabase.self) { _ in 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(!error.problems[0].message.contains("Did you mean"))
    }

    @Test func everyMissingEdgeIsReported() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(App.self, dependsOn: Repository.self, Config.self) { value, _ in value }
        builder.provide(IntKey.self, dependsOn: Config.self) { $0.count }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.map(\.key) == ["Repository", "Config", "Config"])
        #expect(error.problems.map(\.path) == [["App", "Repository"], ["App", "Config"], ["IntKey", "Config"]])
    }
}
