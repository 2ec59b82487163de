import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Copies of a builder are independent values: each builds exactly its own registrations, however
/// the builders before it were validated, built and freed.
@Suite("Builder copies")
struct BuilderCopyTests {
    private enum NameKey: ServiceKey { typealias Value = String }
    private enum GreetingKey: ServiceKey { typealias Value = String }
    private enum NeverProvidedKey: ServiceKey { typealias Value = String }

    private static func base() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(NameKey.self) { "real" }
        builder.provide(GreetingKey.self, dependsOn: NameKey.self) { "hello \($0)" }
        return builder
    }

    @Test func eachCopyBuildsItsOwnOverride() async throws {
        let base = Self.base()
        var built: [String] = []
        for name in ["a", "b", "c", "d"] {
            var copy = base
            copy.override(NameKey.self, with: name)
            let graph = try await copy.build()
            built.append(graph[GreetingKey.self])
            try await graph.shutdown()
        }
        #expect(built == ["hello a", "hello b", "hello c", "hello d"])
        let graph = try await base.build()
        #expect(graph[GreetingKey.self] == "hello real")
    }

    @Test func validatingOneCopyDoesNotValidateAnother() async throws {
        let base = Self.base()
        for _ in 0..<20 {
            var valid = base
            valid.override(NameKey.self, with: "fine")
            try valid.validate()
            _ = try await valid.build()
            var invalid = base
            invalid.override(NeverProvidedKey.self, with: "typo")
            #expect(throws: ServiceGraphError.self) { try invalid.validate() }
            await #expect(throws: ServiceGraphError.self) { _ = try await invalid.build() }
        }
    }

    @Test func aChangeThatKeepsTheNumberOfRegistrationsIsValidatedAgain() async throws {
        // A second double for a key replaces the first: as many registrations as before, other ones.
        var builder = Self.base()
        builder.override(NameKey.self, withDouble: { "first" }, as: { $0 })
        try builder.validate()
        let firstGraph = try await builder.build()
        #expect(firstGraph[GreetingKey.self] == "hello first")
        try await firstGraph.shutdown()
        builder.override(NameKey.self, withDouble: { "second" }, as: { $0 })
        let secondGraph = try await builder.build()
        #expect(secondGraph[GreetingKey.self] == "hello second")
        try await secondGraph.shutdown()
    }

    @Test func copiesChangedAsManyTimesEachBuildTheirOwn() async throws {
        // Two copies that each make one change have as many changes behind them; each builds its own,
        // whichever was validated first, and validating one leaves the other's answer alone.
        let base = Self.base()
        var left = base
        var right = base
        left.override(NameKey.self, with: "left")
        right.override(NeverProvidedKey.self, with: "typo")
        try left.validate()
        #expect(throws: ServiceGraphError.self) { try right.validate() }
        try left.validate()
        let graph = try await left.build()
        #expect(graph[GreetingKey.self] == "hello left")
        try await graph.shutdown()
        await #expect(throws: ServiceGraphError.self) { _ = try await right.build() }
    }

    @Test func aCopyOverridingAnUnknownKeyFailsAfterTheBaseWasValidated() throws {
        let base = Self.base()
        try base.validate()
        var copy = base
        copy.override(NeverProvidedKey.self, with: "typo")
        let error = try #require(throws: ServiceGraphError.self) { try copy.validate() }
        #expect(error.codes == [.overrideOfUnknownKey])
        #expect(error.problems[0].key.contains("NeverProvidedKey"))
        try base.validate()
    }

    @Test func copiesBuiltInParallelGetTheirOwnOverrides() async throws {
        let base = Self.base()
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<64 {
                group.addTask {
                    var copy = base
                    copy.override(NameKey.self, with: "n\(index)")
                    try copy.validate()
                    let graph = try await copy.build()
                    defer { Task { try? await graph.shutdown() } }
                    return (index, graph[GreetingKey.self])
                }
            }
            for try await (index, greeting) in group {
                #expect(greeting == "hello n\(index)")
            }
        }
    }

    @Test func overridingWithADoubleTwiceKeepsTheLastLikeOverride() async throws {
        final class Double: Sendable {
            let label: String
            init(_ label: String) { self.label = label }
        }
        enum LabelKey: ServiceKey { typealias Value = String }
        var builder = ServiceGraph.Builder()
        builder.provide(LabelKey.self) { "real" }
        builder.override(LabelKey.self, withDouble: { Double("first") }, as: { $0.label })
        let second = builder.override(LabelKey.self, withDouble: { Double("second") }, as: { $0.label })
        let graph = try await builder.build()
        #expect(graph[LabelKey.self] == "second")
        #expect(graph[second].label == "second")
        try await graph.shutdown()
    }

    /// A builder of `count` generated services in a chain (service `i` depends on `i - 1`), so the
    /// value of service `i` is `i + 1` plus any override below it.
    private static func chain(_ count: Int) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in 0..<count {
            GeneratedKeys.provide(index, dependsOn: index == 0 ? [] : [index - 1], into: &builder)
        }
        return builder
    }

    private static func value(of index: Int, in graph: ServiceGraph) throws -> Int {
        func open<Key: GeneratedKey>(_ key: Key.Type) throws -> Int { try graph.resolveSynchronously(key).value }
        return try open(GeneratedKeys.key(index))
    }

    private static func override(_ index: Int, value: Int, asDouble: Bool, in builder: inout ServiceGraph.Builder) {
        func open<Key: GeneratedKey>(_ key: Key.Type) {
            let service = GeneratedService(index: index, value: value)
            if asDouble {
                _ = builder.override(key, withDouble: { service }, as: { $0 })
            } else {
                builder.override(key, with: service)
            }
        }
        open(GeneratedKeys.key(index))
    }

    @Test func copiesOfABuilderPastManyChunksOfRegistrationsStayIndependent() async throws {
        // Registrations are kept in chunks of 256: copies share them until one is changed.
        let base = Self.chain(700)
        var longer = base
        GeneratedKeys.provide(700, dependsOn: [699], into: &longer)
        var overridden = base
        // An override of a key in the first chunk, and a double of a key in the third (a double
        // removes earlier doubles of its key, rewriting the list).
        Self.override(10, value: 1_000, asDouble: false, in: &overridden)
        Self.override(600, value: 5, asDouble: true, in: &overridden)
        Self.override(600, value: 7, asDouble: true, in: &overridden)

        let baseGraph = try await base.build()
        #expect(try Self.value(of: 699, in: baseGraph) == 700)
        #expect(throws: ServiceGraphError.self) { try Self.value(of: 700, in: baseGraph) }
        let longerGraph = try await longer.build()
        #expect(try Self.value(of: 700, in: longerGraph) == 701)
        let overriddenGraph = try await overridden.build()
        #expect(try Self.value(of: 9, in: overriddenGraph) == 10)
        #expect(try Self.value(of: 11, in: overriddenGraph) == 1_001)
        #expect(try Self.value(of: 600, in: overriddenGraph) == 7)
        #expect(try Self.value(of: 699, in: overriddenGraph) == 7 + 99)
        // The base is as it was, after its copies were changed and built.
        let again = try await base.build()
        #expect(try Self.value(of: 699, in: again) == 700)
        for graph in [baseGraph, longerGraph, overriddenGraph, again] { try await graph.shutdown() }
    }
}
