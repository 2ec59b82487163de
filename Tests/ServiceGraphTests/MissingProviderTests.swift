import ServiceGraph
import Testing

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
