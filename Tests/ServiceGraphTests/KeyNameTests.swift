import Foundation
import KeyNameFixtures
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// `ConfigKey` here and `KeyNameFixtures.ConfigKey` read alike without their modules.
enum ConfigKey: ServiceKey { typealias Value = Int }

private enum AppKey: ServiceKey { typealias Value = Int }
private enum ReaderKey: ServiceKey { typealias Value = String }
private enum BoxKey<Content: Sendable>: ServiceKey { typealias Value = Content }
private enum NumbersKey: ServiceKey { typealias Value = [Int] }
private enum MaybeNameKey: ServiceKey { typealias Value = String? }
private enum PairKey: ServiceKey { typealias Value = (Int, String) }
private enum TokensKey: ServiceKey { typealias Value = [Token] }
private enum SharedNameFirst: ServiceKey {
    typealias Value = Int
    static var serviceName: String { "Shared" }
}
private enum SharedNameSecond: ServiceKey {
    typealias Value = Int
    static var serviceName: String { "Shared" }
}

/// Two key types declared in two functions: both named `LocalKey`, in the same module.
private func firstLocalKey() -> any ServiceKey.Type {
    enum LocalKey: ServiceKey { typealias Value = Int }
    return LocalKey.self
}

private func secondLocalKey() -> any ServiceKey.Type {
    enum LocalKey: ServiceKey { typealias Value = Int }
    return LocalKey.self
}

extension ServiceGraph.Builder {
    /// Provides `key` as a singleton of the value `make` returns, with no dependencies.
    fileprivate mutating func provideInt(_ key: any ServiceKey.Type, _ make: @escaping @Sendable () -> Int) {
        func open<Key: ServiceKey>(_ key: Key.Type) {
            provide(key) { make() as! Key.Value }
        }
        open(key)
    }
}

@Suite("Key names")
struct KeyNameTests {
    /// A builder with `ConfigKey` of both modules, and a reader of each.
    private func twoConfigKeys() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self) { 1 }
        builder.provide(KeyNameFixtures.ConfigKey.self) { "config" }
        builder.provide(AppKey.self, dependsOn: ConfigKey.self) { $0 }
        builder.provide(ReaderKey.self, dependsOn: KeyNameFixtures.ConfigKey.self) { $0 }
        return builder
    }

    @Test func keysThatReadAlikeAreQualifiedWithTheirModulesInEveryDump() async throws {
        let builder = twoConfigKeys()
        let text = builder.dump(.text)
        #expect(text.contains("ServiceGraphTests.ConfigKey: Int [singleton]"), "\(text)")
        #expect(text.contains("KeyNameFixtures.ConfigKey: String [singleton]"), "\(text)")
        #expect(!text.contains("\nConfigKey"))
        #expect(text.contains("AppKey: Int"), "names that are not shared stay short")

        let dot = builder.dump(.dot)
        let nodes = dot.split(separator: "\n").filter { $0.contains("[label=") }
        #expect(nodes.count == 4, "one node per key: \(dot)")
        #expect(dot.contains(#"  s0 [label="ServiceGraphTests.ConfigKey\n"#))
        #expect(dot.contains(#"  s1 [label="KeyNameFixtures.ConfigKey\n"#))
        #expect(dot.contains("  s2 -> s0;\n"), "AppKey → ServiceGraphTests.ConfigKey")
        #expect(dot.contains("  s3 -> s1;\n"), "ReaderKey → KeyNameFixtures.ConfigKey")

        let mermaid = builder.dump(.mermaid)
        #expect(mermaid.contains(#"s0["ServiceGraphTests.ConfigKey<br/>"#))
        #expect(mermaid.contains(#"s1["KeyNameFixtures.ConfigKey<br/>"#))

        let graph = try await builder.build()
        let json = try JSONDecoder().decode(GraphDump.self, from: Data(graph.dump(.json).utf8))
        #expect(
            json.services.map(\.key) == [
                "ServiceGraphTests.ConfigKey", "KeyNameFixtures.ConfigKey", "AppKey", "ReaderKey",
            ]
        )
        #expect(json.services[2].dependencies == ["ServiceGraphTests.ConfigKey"])
        #expect(json.services[3].dependencies == ["KeyNameFixtures.ConfigKey"])
        let ids = try JSONSerialization.jsonObject(with: Data(graph.dump(.json).utf8)) as? [String: Any]
        let services = try #require(ids?["services"] as? [[String: Any]])
        #expect(services.map { $0["id"] as? Int } == [0, 1, 2, 3])
        #expect(services[3]["dependencyIds"] as? [Int] == [1])
    }

    @Test func errorsQualifyKeysThatReadAlike() async throws {
        var builder = twoConfigKeys()
        builder.override(KeyNameFixtures.ConfigKey.self) { throw TestFailure("no config") }
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let problem = try #require(error?.problems.first)
        #expect(problem.key == "KeyNameFixtures.ConfigKey")
        #expect(problem.message.contains("the factory of KeyNameFixtures.ConfigKey threw"))
    }

    @Test func aMissingKeyThatReadsLikeAProvidedOneIsQualified() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self) { 1 }
        builder.provide(ReaderKey.self, dependsOn: KeyNameFixtures.ConfigKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        #expect(error.problems[0].key == "KeyNameFixtures.ConfigKey")
        #expect(error.problems[0].path == ["ReaderKey", "KeyNameFixtures.ConfigKey"])
        #expect(error.problems[0].message.hasPrefix("KeyNameFixtures.ConfigKey has no provider; ReaderKey requires it"))

        let text = builder.dump(.text)
        #expect(text.contains("ServiceGraphTests.ConfigKey: Int [singleton]"))
        #expect(text.contains("└─ KeyNameFixtures.ConfigKey (missing provider)"))
        let dot = builder.dump(.dot)
        #expect(dot.contains(#"  m0 [label="KeyNameFixtures.ConfigKey\nmissing provider""#))
        #expect(dot.contains("  s1 -> m0 [style=dashed"), "the edge goes to the missing key, not the provided one")
        #expect(!dot.contains("  s1 -> s0"))
        let mermaid = builder.dump(.mermaid)
        #expect(mermaid.contains("    s1 -.-> m0\n"))
    }

    @Test func resolvingAKeyThatReadsLikeAGraphKeyQualifiesBoth() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self) { 1 }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(KeyNameFixtures.ConfigKey.self)
        }
        #expect(error.codes == [.keyNotFound])
        #expect(
            error.problems[0].message
                == "KeyNameFixtures.ConfigKey is not in this graph; closest keys: ServiceGraphTests.ConfigKey"
        )
    }

    @Test func keysOfOneNameInOneModuleAreNumbered() throws {
        var builder = ServiceGraph.Builder()
        builder.provideInt(firstLocalKey()) { 1 }
        builder.provideInt(secondLocalKey()) { 2 }
        let json = try JSONDecoder().decode(GraphDump.self, from: Data(builder.dump(.json).utf8))
        #expect(json.services.map(\.key) == ["ServiceGraphTests.LocalKey", "ServiceGraphTests.LocalKey (2)"])
        let dot = builder.dump(.dot)
        #expect(dot.contains("  s0 [label=") && dot.contains("  s1 [label="))
    }

    @Test func aNameAKeyGivesItselfIsKeptAndItsNodeStaysApart() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SharedNameFirst.self) { 1 }
        builder.provide(SharedNameSecond.self, dependsOn: SharedNameFirst.self) { $0 }
        let json = try JSONDecoder().decode(GraphDump.self, from: Data(builder.dump(.json).utf8))
        #expect(json.services.map(\.key) == ["Shared", "Shared"])
        let dot = builder.dump(.dot)
        #expect(dot.contains("  s1 -> s0;\n"), "edges join slots, not names: \(dot)")
        #expect(!dot.contains("s0 -> s0") && !dot.contains("s1 -> s1"))
    }

    @Test func namesShowStandardLibraryTypesWithoutTheirModule() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(BoxKey<Int>.self) { 1 }
        builder.provide(NumbersKey.self) { [1] }
        builder.provide(MaybeNameKey.self) { nil }
        builder.provide(PairKey.self) { (1, "one") }
        builder.provide(TokensKey.self) { [Token()] }
        builder.provide(BoxKey<Token>.self) { Token() }
        let json = try JSONDecoder().decode(GraphDump.self, from: Data(builder.dump(.json).utf8))
        #expect(
            json.services.map(\.key) == [
                "BoxKey<Int>", "NumbersKey", "MaybeNameKey", "PairKey", "TokensKey", "BoxKey<KeyNameFixtures.Token>",
            ]
        )
        #expect(
            json.services.map(\.valueType) == [
                "Int", "Array<Int>", "Optional<String>", "(Int, String)", "Array<KeyNameFixtures.Token>",
                "Token",
            ]
        )
        let text = builder.dump(.text)
        #expect(!text.contains("Swift."), "\(text)")
        #expect(BoxKey<Int>.serviceName == "BoxKey<Int>")
        #expect(BoxKey<[String: Int?]>.serviceName == "BoxKey<Dictionary<String, Optional<Int>>>")
    }

    @Test func errorsShowStandardLibraryTypesWithoutTheirModule() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(AppKey.self, dependsOn: BoxKey<Int>.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems[0].key == "BoxKey<Int>")
        #expect(!error.description.contains("Swift."), "\(error)")
        let graph = try await ServiceGraph.Builder().build()
        let missing = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(PairKey.self) }
        #expect(missing.problems[0].key == "PairKey")
        let boxed = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(BoxKey<Int>.self) }
        #expect(boxed.description == "ServiceGraph: BoxKey<Int> is not in this graph")
    }
}
