import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

extension ScopeKind {
    fileprivate static let mhSession = ScopeKind("mh-session")
}

private enum MHConfigKey: ServiceKey { typealias Value = String }
private enum MHClientKey: ServiceKey { typealias Value = String }
private enum MHCheckoutKey: ServiceKey { typealias Value = String }
private enum MHOutsideKey: ServiceKey { typealias Value = String }
private enum MHOtherKey: ServiceKey { typealias Value = String }
private enum MHMissingKey: ServiceKey { typealias Value = String }
private enum MHCycleAKey: ServiceKey { typealias Value = String }
private enum MHCycleBKey: ServiceKey { typealias Value = String }
private enum MHUserKey: ServiceKey { typealias Value = String }
private enum MHCartKey: ServiceKey { typealias Value = String }
private enum MHUnusedKey: ServiceKey { typealias Value = String }
private enum MHListKey: ContributionKey { typealias Element = String }

/// A module with one private key, used by the module's own provider, decorator and contribution.
private struct MHPaymentsModule: GraphModule {
    var registered = Tally()

    var privateKeys: [any ServiceKey.Type] { [MHClientKey.self] }

    func register(in builder: inout ServiceGraph.Builder) {
        registered.increment()
        builder.provide(MHClientKey.self, dependsOn: MHConfigKey.self) { "client(\($0))" }
        builder.provide(MHCheckoutKey.self, dependsOn: MHClientKey.self) { "checkout(\($0))" }
        builder.decorate(MHCheckoutKey.self, dependsOn: MHClientKey.self) { "\($0)+\($1)" }
        builder.contribute(MHListKey.self, id: "payments", dependsOn: MHClientKey.self) { "entry(\($0))" }
    }
}

/// Includes itself from its own `register`.
private struct MHSelfIncluding: GraphModule {
    let registered: Tally

    func register(in builder: inout ServiceGraph.Builder) {
        registered.increment()
        builder.include(self)
        builder.provide(MHOtherKey.self) { "self-including" }
    }
}

/// Two modules that include each other.
private struct MHPing: GraphModule {
    let tally: Tally
    func register(in builder: inout ServiceGraph.Builder) {
        tally.increment()
        builder.include(MHPong(tally: tally))
        builder.provide(MHCycleAKey.self) { "ping" }
    }
}

private struct MHPong: GraphModule {
    let tally: Tally
    func register(in builder: inout ServiceGraph.Builder) {
        tally.increment()
        builder.include(MHPing(tally: tally))
        builder.provide(MHCycleBKey.self) { "pong" }
    }
}

/// A module whose type is reused under several names; each contributes one element.
private struct MHNamedContributor: GraphModule {
    let name: String
    func register(in builder: inout ServiceGraph.Builder) {
        builder.contribute(MHListKey.self, id: name) { name }
    }
}

/// Two different module types that share a name.
private struct MHSameNameA: GraphModule {
    var name: String { "Shared" }
    func register(in builder: inout ServiceGraph.Builder) { builder.provide(MHCycleAKey.self) { "a" } }
}

private struct MHSameNameB: GraphModule {
    var name: String { "Shared" }
    func register(in builder: inout ServiceGraph.Builder) { builder.provide(MHCycleBKey.self) { "b" } }
}

/// Registers a seed and a scoped service in a scope kind; the seed is private.
private struct MHSessionModule: GraphModule {
    var privateKeys: [any ServiceKey.Type] { [MHUserKey.self] }
    func register(in builder: inout ServiceGraph.Builder) {
        builder.inScope(.mhSession) { session in
            session.seed(MHUserKey.self)
            session.provide(MHCartKey.self, lifetime: .scoped, dependsOn: MHUserKey.self) { "cart of \($0)" }
        }
    }
}

/// Registers a scoped service without choosing a kind: the includer decides.
private struct MHScopedModule: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(MHCartKey.self, lifetime: .scoped) { "scoped cart" }
    }
}

/// Lists a private key it does not provide itself.
private struct MHListsForeignKey: GraphModule {
    var privateKeys: [any ServiceKey.Type] { [MHConfigKey.self] }
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(MHCheckoutKey.self, dependsOn: MHConfigKey.self) { "checkout(\($0))" }
    }
}

/// Includes the payments module and depends on its private key: it is not the payments module.
private struct MHOuterModule: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.include(MHPaymentsModule())
        builder.provide(MHOutsideKey.self, dependsOn: MHClientKey.self) { $0 }
    }
}

/// A module with a hostile name.
private struct MHEvilNamed: GraphModule {
    static let evil = "Evil \"quoted\"\nsecond line \\ {x} <b> [y] |z| ;"
    var name: String { Self.evil }
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(MHOtherKey.self) { "evil" }
        builder.provide(MHOutsideKey.self, dependsOn: MHOtherKey.self) { $0 }
    }
}

/// A module whose only service fails to build.
private struct MHFailingModule: GraphModule {
    var name: String { "FailingFeature" }
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(MHOtherKey.self) { () throws -> String in throw TestFailure("boom on purpose") }
    }
}

/// A module with a private key and a service nothing uses.
private struct MHLintModule: GraphModule {
    var privateKeys: [any ServiceKey.Type] { [MHClientKey.self] }
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(MHClientKey.self) { "client" }
        builder.provide(MHCheckoutKey.self, dependsOn: MHClientKey.self) { $0 }
        builder.provide(MHUnusedKey.self) { "unused" }
    }
}

/// Keys built from bits, for many distinct private key types.
private enum MHRootKey: ServiceKey { typealias Value = Int }
private enum MHBit0<Inner: ServiceKey>: ServiceKey { typealias Value = Int }
private enum MHBit1<Inner: ServiceKey>: ServiceKey { typealias Value = Int }
private enum MHManyKey: ContributionKey { typealias Element = Int }
private enum MHManyOutsideKey: ServiceKey { typealias Value = Int }

private struct MHIndexedModule<Key: ServiceKey>: GraphModule where Key.Value == Int {
    let index: Int
    var name: String { "indexed\(index)" }
    var privateKeys: [any ServiceKey.Type] { [Key.self] }
    func register(in builder: inout ServiceGraph.Builder) {
        let index = index
        builder.provide(Key.self) { index }
        builder.contribute(MHManyKey.self, id: "m\(index)", dependsOn: Key.self) { $0 }
    }
}

/// Calls `body` with a key type unique to `index` (eight bits).
private func withIndexedKey<Key: ServiceKey>(
    _ index: Int,
    bit: Int = 0,
    from key: Key.Type,
    _ body: (any ServiceKey.Type) -> Void
) where Key.Value == Int {
    if bit == 8 { return body(key) }
    if index >> bit & 1 == 0 {
        withIndexedKey(index, bit: bit + 1, from: MHBit0<Key>.self, body)
    } else {
        withIndexedKey(index, bit: bit + 1, from: MHBit1<Key>.self, body)
    }
}

private func includeIndexed<Key: ServiceKey>(_ key: Key.Type, index: Int, in builder: inout ServiceGraph.Builder)
where Key.Value == Int {
    builder.include(MHIndexedModule<Key>(index: index))
}

private func dependOnIndexed<Key: ServiceKey>(_ key: Key.Type, in builder: inout ServiceGraph.Builder)
where Key.Value == Int {
    builder.provide(MHManyOutsideKey.self, dependsOn: Key.self) { $0 }
}

/// Whether every double-quoted string of `text` closes on its own line (backslash escapes honored).
private func quotedStringsStayOnOneLine(_ text: String) -> Bool {
    var inQuotes = false
    var escaped = false
    for character in text {
        if escaped {
            escaped = false
            continue
        }
        switch character {
        case "\\" where inQuotes: escaped = true
        case "\"": inQuotes.toggle()
        case "\n" where inQuotes: return false
        default: break
        }
    }
    return !inQuotes
}

@Suite("Modules, hostile")
struct ModuleHostileTests {
    @Test("a module that includes itself from register is registered once, without recursing")
    func selfInclusion() async throws {
        let tally = Tally()
        var builder = ServiceGraph.Builder()
        builder.include(MHSelfIncluding(registered: tally))
        #expect(tally.count == 1)
        let graph = try await builder.build()
        #expect(graph[MHOtherKey.self] == "self-including")
        try await graph.shutdown()
    }

    @Test("two modules including each other register once each")
    func mutualInclusion() async throws {
        let tally = Tally()
        var builder = ServiceGraph.Builder()
        builder.include(MHPing(tally: tally))
        builder.include(MHPong(tally: tally))
        #expect(tally.count == 2)
        let graph = try await builder.build()
        #expect(graph[MHCycleAKey.self] == "ping")
        #expect(graph[MHCycleBKey.self] == "pong")
        try await graph.shutdown()
    }

    @Test("one module type under two names is two modules; the same name again is not")
    func sameTypeDifferentNames() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(MHNamedContributor(name: "alpha"))
        builder.include(MHNamedContributor(name: "beta"))
        builder.include(MHNamedContributor(name: "alpha"))
        let graph = try await builder.build()
        #expect(graph[MHListKey.self] == ["alpha", "beta"])
        try await graph.shutdown()
    }

    @Test("two module types sharing a name are two modules, both included")
    func differentTypesSameName() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(MHSameNameA())
        builder.include(MHSameNameB())
        let graph = try await builder.build()
        #expect(graph[MHCycleAKey.self] == "a")
        #expect(graph[MHCycleBKey.self] == "b")
        try await graph.shutdown()
    }

    @Test("a module and the code outside it providing one key is a duplicate naming the module")
    func duplicateWithOutside() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "config" }
        builder.include(MHPaymentsModule())
        builder.provide(MHCheckoutKey.self) { "outside checkout" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider])
        #expect(error.problems.first?.message.contains("module MHPaymentsModule") == true)
    }

    @Test("a module's seeds and scoped services in inScope work, and its private seed is refused outside")
    func scopedSeedsInModule() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(MHSessionModule())
        let graph = try await builder.build()
        let session = try graph.makeScope(.mhSession, seeding: ScopeSeed(MHUserKey.self, "ada"))
        #expect(try await session.resolve(MHCartKey.self) == "cart of ada")
        try await session.close()
        try await graph.shutdown()

        var outside = ServiceGraph.Builder()
        outside.include(MHSessionModule())
        outside.inScope(.mhSession) { session in
            session.provide(MHOutsideKey.self, lifetime: .scoped, dependsOn: MHUserKey.self) { $0 }
        }
        let error = try #require(throws: ServiceGraphError.self) { try outside.validate() }
        #expect(error.codes == [.privateDependency])
        #expect(error.problems.first?.path == ["MHOutsideKey", "MHUserKey"])
    }

    @Test("include inside inScope puts the module's scoped services in that kind of scope")
    func includeInsideInScope() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.mhSession) { session in
            session.include(MHScopedModule())
            session.provide(MHOutsideKey.self, lifetime: .scoped, dependsOn: MHCartKey.self) { "has \($0)" }
        }
        let graph = try await builder.build()
        let session = try graph.makeScope(.mhSession)
        #expect(try await session.resolve(MHOutsideKey.self) == "has scoped cart")
        try await session.close()
        let plain = try graph.makeScope()
        await #expect(throws: ServiceGraphError.self) { _ = try await plain.resolve(MHCartKey.self) }
        try await plain.close()
        try await graph.shutdown()
    }

    @Test("the module's own decorators and contributions may use its private keys")
    func privateKeysInsideModule() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        try builder.validate()
        let graph = try await builder.build()
        #expect(graph[MHCheckoutKey.self] == "checkout(client(cfg))+client(cfg)")
        #expect(graph[MHListKey.self] == ["entry(client(cfg))"])
        try await graph.shutdown()
    }

    @Test("a decorator outside the module that depends on a private key is refused")
    func outsideDecoratorDependingOnPrivateKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.decorate(MHConfigKey.self, dependsOn: MHCheckoutKey.self) { config, _ in config }
        builder.provide(MHOtherKey.self) { "other" }
        builder.decorate(MHOtherKey.self, dependsOn: MHClientKey.self) { other, client in other + client }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.contains(.privateDependency))
    }

    @Test("a decorator outside the module that wraps a private key is refused")
    func outsideDecoratorOfPrivateKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.decorate(MHClientKey.self) { "hijacked " + $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
    }

    @Test("a contribution outside the module that depends on a private key is refused")
    func outsideContributionDependingOnPrivateKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.contribute(MHListKey.self, id: "outsider", dependsOn: MHClientKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
        #expect(error.problems.first?.message.contains("private to module MHPaymentsModule") == true)
    }

    @Test("lazy, optional and provider dependencies on a private key are refused outside the module")
    func wrappedDependenciesOnPrivateKey() throws {
        func builder(_ add: (inout ServiceGraph.Builder) -> Void) -> ServiceGraph.Builder {
            var builder = ServiceGraph.Builder()
            builder.provide(MHConfigKey.self) { "cfg" }
            builder.include(MHPaymentsModule())
            add(&builder)
            return builder
        }
        let lazy = builder { $0.provide(MHOutsideKey.self, dependsOn: Lazy<MHClientKey>.self) { _ in "lazy" } }
        let optional = builder { $0.provide(MHOutsideKey.self, dependsOn: MHClientKey?.self) { $0 ?? "none" } }
        let provider = builder {
            $0.provide(MHOutsideKey.self, dependsOn: Provider<MHClientKey>.self) { _ in "provider" }
        }
        for candidate in [lazy, optional, provider] {
            let error = try #require(throws: ServiceGraphError.self) { try candidate.validate() }
            #expect(error.codes == [.privateDependency])
        }
    }

    @Test("a listed private key the module does not provide stays usable by whoever provides it")
    func privateKeyProvidedElsewhere() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHListsForeignKey())
        builder.provide(MHOutsideKey.self, dependsOn: MHConfigKey.self) { "outside(\($0))" }
        let graph = try await builder.build()
        #expect(graph[MHCheckoutKey.self] == "checkout(cfg)")
        #expect(graph[MHOutsideKey.self] == "outside(cfg)")
        try await graph.shutdown()
    }

    @Test("a test may override a module's private key and public key from outside")
    func overridesFromOutside() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.override(MHClientKey.self) { "double" }
        let graph = try await builder.build()
        #expect(graph[MHCheckoutKey.self] == "checkout(double)+double")
        #expect(graph[MHListKey.self] == ["entry(double)"])
        try await graph.shutdown()

        var publicOverride = ServiceGraph.Builder()
        publicOverride.provide(MHConfigKey.self) { "cfg" }
        publicOverride.include(MHPaymentsModule())
        publicOverride.override(MHCheckoutKey.self) { "checkout double" }
        let other = try await publicOverride.build()
        #expect(other[MHCheckoutKey.self] == "checkout double+client(cfg)")
        try await other.shutdown()
    }

    @Test("an override outside the module that depends on a private key is refused")
    func overrideDependingOnPrivateKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.provide(MHOtherKey.self) { "other" }
        builder.override(MHOtherKey.self, dependsOn: MHClientKey.self) { "over \($0)" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
    }

    @Test("a module that includes another may not depend on the included module's private keys")
    func outerModuleDependingOnInnerPrivateKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHOuterModule())
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
        #expect(error.problems.first?.message.contains("in module MHOuterModule") == true)
        // The inner module's services are still the inner module's in the dump.
        #expect(builder.dump(.text).contains("MHCheckoutKey: String [singleton, module MHPaymentsModule]"))
    }

    @Test("a child graph's own service may not depend on its parent's module-private key")
    func childDependingOnParentPrivateKey() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        let graph = try await builder.build()
        var child = graph.makeChildBuilder()
        child.provide(MHOutsideKey.self, dependsOn: MHClientKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try child.validate() }
        #expect(error.codes == [.privateDependency])
        try await graph.shutdown()
    }

    @Test("a child graph's dumps still name the parent's modules")
    func childDumpsNameModules() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        let graph = try await builder.build()
        var child = graph.makeChildBuilder()
        child.provide(MHOutsideKey.self, dependsOn: MHCheckoutKey.self) { $0 }
        let childGraph = try await child.build()
        #expect(childGraph[MHOutsideKey.self] == "checkout(client(cfg))+client(cfg)")
        #expect(child.dump(.text).contains("module MHPaymentsModule"))
        try await childGraph.shutdown()
        try await graph.shutdown()
    }

    @Test("a module name with quotes, newlines and markup keeps every dump well formed")
    func hostileNameInDumps() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(MHEvilNamed())
        let name = MHEvilNamed.evil

        let json = try #require(builder.dump(.json).data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let services = try #require(object["services"] as? [[String: Any]])
        let modules = services.compactMap { $0["module"] as? String }
        #expect(modules == [name, name])

        let dot = builder.dump(.dot)
        #expect(quotedStringsStayOnOneLine(dot))
        #expect(!dot.contains(name))

        let mermaid = builder.dump(.mermaid)
        let subgraphLines = mermaid.split(separator: "\n").filter { $0.contains("subgraph module0") }
        #expect(subgraphLines.count == 1)
        // The subgraph's label closes on its own line (node labels break lines with <br/>).
        #expect(subgraphLines.first?.hasSuffix("\"]") == true)

        // The text dump keeps one line per service: the name's newline is escaped.
        let text = builder.dump(.text)
        #expect(!text.contains(name))

        let graph = try await builder.build()
        #expect(quotedStringsStayOnOneLine(graph.dump(.dot)))
        let builtJSON = try #require(graph.dump(.json).data(using: .utf8))
        #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: builtJSON) }
        try await graph.shutdown()
    }

    @Test("lint warns about a module's unused service, but not its privately used key")
    func lintUnusedModuleService() {
        var builder = ServiceGraph.Builder()
        builder.include(MHLintModule())
        builder.declareEntryPoints(MHCheckoutKey.self)
        let warnings = builder.lint()
        #expect(warnings.map(\.key) == ["MHUnusedKey"])
        #expect(warnings.first?.code == .unusedProvider)
    }

    @Test("validation reports a private dependency together with the graph's other problems")
    func privateDependencyAmongOthers() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MHConfigKey.self) { "cfg" }
        builder.include(MHPaymentsModule())
        builder.provide(MHOutsideKey.self, dependsOn: MHClientKey.self) { $0 }
        builder.provide(MHOtherKey.self, dependsOn: MHMissingKey.self) { $0 }
        builder.provide(MHCycleAKey.self, dependsOn: MHCycleBKey.self) { $0 }
        builder.provide(MHCycleBKey.self, dependsOn: MHCycleAKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.contains(.privateDependency))
        #expect(error.contains(.missingProvider))
        #expect(error.contains(.cycle))
        #expect(error.problems.filter { $0.code == .privateDependency }.count == 1)
    }

    @Test("200 modules with private keys build, and one outside use of one of them is reported once")
    func manyModules() async throws {
        var builder = ServiceGraph.Builder()
        for index in 0..<200 {
            withIndexedKey(index, from: MHRootKey.self) { key in
                (key as? any IntValued.Type)?.include(index: index, in: &builder)
            }
        }
        let graph = try await builder.build()
        #expect(graph[MHManyKey.self] == Array(0..<200))
        try await graph.shutdown()

        var outside = builder
        withIndexedKey(150, from: MHRootKey.self) { key in
            (key as? any IntValued.Type)?.dependOn(in: &outside)
        }
        let error = try #require(throws: ServiceGraphError.self) { try outside.validate() }
        #expect(error.codes == [.privateDependency])
        #expect(error.problems.first?.message.contains("module indexed150") == true)
    }

    @Test("copies of a builder after include are independent")
    func copiesAreIndependent() async throws {
        let tally = Tally()
        var original = ServiceGraph.Builder()
        original.provide(MHConfigKey.self) { "cfg" }
        original.include(MHPaymentsModule(registered: tally))
        var copy = original
        copy.include(MHPaymentsModule(registered: tally))
        #expect(tally.count == 1)
        copy.provide(MHOutsideKey.self, dependsOn: MHClientKey.self) { $0 }
        copy.include(MHNamedContributor(name: "copy only"))
        try original.validate()
        let error = try #require(throws: ServiceGraphError.self) { try copy.validate() }
        #expect(error.codes == [.privateDependency])
        let graph = try await original.build()
        #expect(graph[MHListKey.self] == ["entry(client(cfg))"])
        try await graph.shutdown()

        var before = ServiceGraph.Builder()
        var later = before
        later.include(MHNamedContributor(name: "later"))
        before.include(MHNamedContributor(name: "later"))
        try later.validate()
        let laterGraph = try await before.build()
        #expect(laterGraph[MHListKey.self] == ["later"])
        try await laterGraph.shutdown()
    }

    @Test("a module's service that fails at build names its module in the error")
    func buildFailureNamesModule() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(MHFailingModule())
        let error = try await #require(throws: ServiceGraphError.self) { _ = try await builder.build() }
        #expect(error.codes == [.factoryFailed])
        #expect("\(error)".contains("FailingFeature"))
    }
}

/// Opens an indexed key's `Int` value type for the generic helpers.
private protocol IntValued {
    static func include(index: Int, in builder: inout ServiceGraph.Builder)
    static func dependOn(in builder: inout ServiceGraph.Builder)
}

extension MHBit0: IntValued {
    static func include(index: Int, in builder: inout ServiceGraph.Builder) {
        includeIndexed(Self.self, index: index, in: &builder)
    }
    static func dependOn(in builder: inout ServiceGraph.Builder) { dependOnIndexed(Self.self, in: &builder) }
}

extension MHBit1: IntValued {
    static func include(index: Int, in builder: inout ServiceGraph.Builder) {
        includeIndexed(Self.self, index: index, in: &builder)
    }
    static func dependOn(in builder: inout ServiceGraph.Builder) { dependOnIndexed(Self.self, in: &builder) }
}
