import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Values and keys

private final class SFStore: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

private final class SFItem: Sendable {
    let id: Int
    let store: SFStore
    let note: String
    init(id: Int, store: SFStore, note: String) {
        self.id = id
        self.store = store
        self.note = note
    }
}

private struct SFHolder: Sendable {
    let make: ArgumentFactory<SFItemKey, Int>.Synchronous.Value
}

private struct SFMaybeHolder: Sendable {
    let make: ArgumentFactory<SFItemKey, Int>.Synchronous.Value?
}

private enum SFStoreKey: ServiceKey { typealias Value = SFStore }
private enum SFScopedStoreKey: ServiceKey { typealias Value = SFStore }
private enum SFItemKey: ServiceKey { typealias Value = SFItem }
private enum SFHolderKey: ServiceKey { typealias Value = SFHolder }
private enum SFMaybeHolderKey: ServiceKey { typealias Value = SFMaybeHolder }
private enum SFLabelKey: ServiceKey { typealias Value = String }
private enum SFUserKey: ServiceKey { typealias Value = String }
private enum SFRequestKey: ServiceKey { typealias Value = String }
private enum SFOtherKey: ServiceKey { typealias Value = String }
private enum SFNumberKey: ServiceKey { typealias Value = Int }
private enum SFFailingKey: ServiceKey { typealias Value = Int }
private enum SFProbeKey: ServiceKey { typealias Value = Int }

private typealias SFAsync = ArgumentFactory<SFItemKey, Int>
private typealias SFSync = ArgumentFactory<SFItemKey, Int>.Synchronous
private typealias SFAsync3 = ArgumentFactory<SFItemKey, Int, String, Bool>
private typealias SFSync3 = ArgumentFactory<SFItemKey, Int, String, Bool>.Synchronous

extension ScopeKind {
    fileprivate static let sfSession = ScopeKind("sfSession")
    fileprivate static let sfRequest = ScopeKind("sfRequest", inside: .sfSession)
    fileprivate static let sfOther = ScopeKind("sfOther")
}

// Distinct key types made at run time: key `n` spells `n` in binary (`SFBit1<SFBit0<SFRoot>>` is 2).
private enum SFRoot: ServiceKey { typealias Value = Int }
private enum SFBit0<Next: ServiceKey>: ServiceKey { typealias Value = Int }
private enum SFBit1<Next: ServiceKey>: ServiceKey { typealias Value = Int }

private protocol SFKeyVisitor {
    mutating func visit<Key: ServiceKey>(_ key: Key.Type, number: Int) throws where Key.Value == Int
}

/// Visits keys `0..<limit`, each a distinct type, `bits` levels deep.
private func sfVisitKeys<Key: ServiceKey, Visitor: SFKeyVisitor>(
    _ key: Key.Type,
    bits: Int,
    prefix: Int,
    below limit: Int,
    _ visitor: inout Visitor
) throws where Key.Value == Int {
    guard prefix << bits < limit else { return }
    if bits == 0 {
        try visitor.visit(key, number: prefix)
        return
    }
    try sfVisitKeys(SFBit0<Key>.self, bits: bits - 1, prefix: prefix << 1, below: limit, &visitor)
    try sfVisitKeys(SFBit1<Key>.self, bits: bits - 1, prefix: prefix << 1 | 1, below: limit, &visitor)
}

private struct SFRegister: SFKeyVisitor {
    var builder: ServiceGraph.Builder
    mutating func visit<Key: ServiceKey>(_ key: Key.Type, number: Int) throws where Key.Value == Int {
        builder.provide(key, arguments: Int.self) { $0 + number }
    }
}

private struct SFCall: SFKeyVisitor {
    let graph: ServiceGraph
    var correct = 0
    mutating func visit<Key: ServiceKey>(_ key: Key.Type, number: Int) throws where Key.Value == Int {
        let make = try graph.resolveSynchronously(ArgumentFactory<Key, Int>.Synchronous.self)
        if try make(1) == number + 1 { correct += 1 }
    }
}

// MARK: - Helpers

/// The store singleton and a synchronous factory of items, noted `provide`.
private func sfBuilder(made: Tally = Tally()) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(SFStoreKey.self) { SFStore("main") }
    builder.provide(SFItemKey.self, arguments: Int.self, dependsOn: SFStoreKey.self) { id, store in
        made.increment()
        return SFItem(id: id, store: store, note: "provide")
    }
    return builder
}

/// The same, with an asynchronous closure: no synchronous form.
private func sfAsyncBuilder() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(SFStoreKey.self) { SFStore("main") }
    builder.provide(SFItemKey.self, arguments: Int.self, dependsOn: SFStoreKey.self) { id, store in
        await Task.yield()
        return SFItem(id: id, store: store, note: "provide")
    }
    return builder
}

private func sfAddHolder(_ builder: inout ServiceGraph.Builder) {
    builder.provide(SFHolderKey.self, dependsOn: SFSync.self) { SFHolder(make: $0) }
}

private func sfOverride(_ builder: inout ServiceGraph.Builder, synchronous: Bool, note: String) {
    if synchronous {
        builder.override(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore(note), note: note) }
    } else {
        builder.override(SFItemKey.self, arguments: Int.self) { id in
            await Task.yield()
            return SFItem(id: id, store: SFStore(note), note: note)
        }
    }
}

/// The text dump's line for `key`, whose name starts the line after the tree's branches.
private func sfLine(_ dump: String, _ key: String) -> String? {
    dump.split(separator: "\n").map(String.init).first { line in
        let trimmed = line.drop { !$0.isLetter }
        return trimmed.hasPrefix(key + ":")
    }
}

private struct SFJSONDump: Decodable {
    struct Service: Decodable {
        let key: String
        let valueType: String
        let lifetime: String?
        let arguments: [String]?
        let scopeKind: String?
    }
    let services: [Service]
}

private func sfServices(_ json: String) throws -> [SFJSONDump.Service] {
    try JSONDecoder().decode(SFJSONDump.self, from: Data(json.utf8)).services
}

// MARK: - Tests

@Suite("Synchronous argument factories, hostile")
struct SynchronousFormHostileTests {
    // MARK: Overrides

    /// The first letter is the provider's closure, the others the overrides', in order:
    /// `s` synchronous, `a` asynchronous. The last one decides whether the synchronous form exists.
    @Test(arguments: ["s", "a", "ss", "sa", "as", "aa", "sas", "asa", "ssa", "aas", "sasa", "asas", "sssa", "aaas"])
    func theLastOfAnySequenceOfOverridesDecides(_ sequence: String) async throws {
        var builder = sequence.first == "s" ? sfBuilder() : sfAsyncBuilder()
        for (index, form) in sequence.dropFirst().enumerated() {
            sfOverride(&builder, synchronous: form == "s", note: "override \(index)")
        }
        let expectedNote = sequence.count == 1 ? "provide" : "override \(sequence.count - 2)"
        var dependent = builder
        sfAddHolder(&dependent)
        let graph = try await builder.build()
        #expect(try await graph[SFAsync.self](1).note == expectedNote)
        if sequence.last == "s" {
            #expect(throws: Never.self) { try dependent.validate() }
            #expect(try graph.resolveSynchronously(SFSync.self)(2).note == expectedNote)
            #expect(graph.dump(.text).contains("synchronous SFItemKey(Int)"))
        } else {
            let error = try #require(throws: ServiceGraphError.self) { try dependent.validate() }
            #expect(error.codes == [.missingProvider])
            #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
            #expect(error.problems.first?.path == ["SFHolderKey", "synchronous SFItemKey(Int)"])
            let cause =
                sequence.count == 1 ? "as its closure is asynchronous" : "as its override's closure is asynchronous"
            #expect(error.problems.first?.message.contains(cause) == true)
            let missing = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
            #expect(missing.codes == [.keyNotFound])
            #expect(!graph.dump(.text).contains("synchronous SFItemKey(Int)"))
        }
        try await graph.shutdown()
    }

    @Test func overridesWithLifetimesKeepBothFormsAtOneLifetime() async throws {
        // Singleton, overridden as scoped (synchronous): both forms scoped.
        var scoped = sfBuilder()
        scoped.override(SFItemKey.self, lifetime: .scoped, arguments: Int.self) {
            SFItem(id: $0, store: SFStore("scoped"), note: "scoped")
        }
        let graph = try await scoped.build()
        let syncRefused = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(syncRefused.codes == [.wrongLifetime])
        let asyncRefused = try await #require(throws: ServiceGraphError.self) { try await graph.resolve(SFAsync.self) }
        #expect(asyncRefused.codes == [.wrongLifetime])
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(SFSync.self)(1).note == "scoped")
        #expect(try await scope.resolve(SFAsync.self)(1).note == "scoped")
        try await scope.close()
        try await graph.shutdown()

        // Scoped asynchronous provider, overridden as a synchronous singleton: the graph has both forms.
        var singleton = ServiceGraph.Builder()
        singleton.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self) { id in
            await Task.yield()
            return SFItem(id: id, store: SFStore("scoped"), note: "scoped")
        }
        singleton.override(SFItemKey.self, lifetime: .singleton, arguments: Int.self) {
            SFItem(id: $0, store: SFStore("s"), note: "singleton")
        }
        sfAddHolder(&singleton)
        let singletonGraph = try await singleton.build()
        #expect(try singletonGraph[SFHolderKey.self].make(4).note == "singleton")
        #expect(try await singletonGraph[SFAsync.self](4).note == "singleton")
        try await singletonGraph.shutdown()
    }

    /// Tokens: the provider, then the overrides; `s`/`a` for a synchronous/asynchronous closure, then the
    /// lifetime it names, if any (`S` singleton, `T` transient, `C` scoped).
    @Test(arguments: [
        "s aT s", "s aC s", "s sT s", "aC s", "aC aT s", "sC a s", "s aT sC", "sT a s", "s aT a s", "aT s",
        "sT aS s", "sC aC s", "s a s", "aT sC a s",
    ])
    func bothFormsOfTheLastOverrideHaveOneLifetime(_ sequence: String) async throws {
        var builder = ServiceGraph.Builder()
        var expected = Lifetime.singleton
        for (index, token) in sequence.split(separator: " ").enumerated() {
            let lifetime: Lifetime? =
                switch token.dropFirst().first {
                case "S": .singleton
                case "T": .transient
                case "C": .scoped
                default: nil
                }
            expected = lifetime ?? expected
            if index == 0 {
                builder.provide(SFItemKey.self, lifetime: expected, arguments: Int.self) { id in
                    await Task.yield()
                    return SFItem(id: id, store: SFStore("p"), note: "provide")
                }
                if token.first == "s" {
                    builder = ServiceGraph.Builder()
                    builder.provide(SFItemKey.self, lifetime: expected, arguments: Int.self) {
                        SFItem(id: $0, store: SFStore("p"), note: "provide")
                    }
                }
            } else {
                if token.first == "s" {
                    builder.override(SFItemKey.self, lifetime: lifetime, arguments: Int.self) {
                        SFItem(id: $0, store: SFStore("o"), note: "override")
                    }
                } else {
                    builder.override(SFItemKey.self, lifetime: lifetime, arguments: Int.self) { id in
                        await Task.yield()
                        return SFItem(id: id, store: SFStore("o"), note: "override")
                    }
                }
            }
        }
        let lifetimeOfLast = expected
        let check = {
            let graph = try await builder.build()
            let services = try sfServices(graph.dump(.json))
            let asyncForm = try #require(services.first { $0.key == "SFItemKey(Int)" })
            let syncForm = try #require(services.first { $0.key == "synchronous SFItemKey(Int)" })
            // An override names its lifetime or keeps the one of the provider it replaces; the two forms of
            // one closure cannot differ.
            #expect(asyncForm.lifetime == syncForm.lifetime)
            #expect(asyncForm.lifetime == "\(lifetimeOfLast)")
            let scope = try graph.makeScope()
            let viaSync = try await scope.resolve(SFSync.self)(1)
            let viaAsync = try await scope.resolve(SFAsync.self)(1)
            #expect(viaSync.note == "override" && viaAsync.note == "override")
            try await scope.close()
            try await graph.shutdown()
        }
        // The synchronous form takes the lifetime the asynchronous form has, even where an asynchronous
        // override in between named another one than the synchronous form's own.
        try await check()
    }

    @Test func aSynchronousOverrideAfterAScopedAsynchronousOneBuildsAScopedFactory() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFScopedStoreKey.self, lifetime: .scoped) { SFStore("scoped") }
        builder.provide(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore("p"), note: "provide") }
        builder.override(SFItemKey.self, lifetime: .scoped, arguments: Int.self, dependsOn: SFScopedStoreKey.self) {
            id,
            store in
            await Task.yield()
            return SFItem(id: id, store: store, note: "async")
        }
        builder.override(SFItemKey.self, arguments: Int.self, dependsOn: SFScopedStoreKey.self) {
            SFItem(id: $0, store: $1, note: "last")
        }
        // Validation passes; the build must then not fail on a form that validation accepted.
        #expect(throws: Never.self) { try builder.validate() }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let item = try await scope.resolve(SFSync.self)(1)
        let store = try await scope.resolve(SFScopedStoreKey.self)
        #expect(item.note == "last" && item.store === store)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aSynchronousOverrideRegisteredBeforeAnAsynchronousProviderStillGivesTheSynchronousForm() async throws {
        var builder = ServiceGraph.Builder()
        builder.override(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore("o"), note: "override") }
        builder.provide(SFStoreKey.self) { SFStore("main") }
        builder.provide(SFItemKey.self, arguments: Int.self, dependsOn: SFStoreKey.self) { id, store in
            await Task.yield()
            return SFItem(id: id, store: store, note: "provide")
        }
        sfAddHolder(&builder)
        // An override replaces the provider whatever the order of registration; the override's closure does
        // not await, so both forms exist.
        #expect(throws: Never.self) { try builder.validate() }
        let graph = try await builder.build()
        #expect(try graph[SFHolderKey.self].make(1).note == "override")
        #expect(try await graph[SFAsync.self](1).note == "override")
        try await graph.shutdown()
    }

    @Test func anAsynchronousOverrideRegisteredBeforeASynchronousProviderTakesTheFormAway() async throws {
        var builder = ServiceGraph.Builder()
        builder.override(SFItemKey.self, arguments: Int.self) { id in
            await Task.yield()
            return SFItem(id: id, store: SFStore("o"), note: "override")
        }
        builder.provide(SFStoreKey.self) { SFStore("main") }
        builder.provide(SFItemKey.self, arguments: Int.self, dependsOn: SFStoreKey.self) { id, store in
            SFItem(id: id, store: store, note: "provide")
        }
        var dependent = builder
        sfAddHolder(&dependent)
        let error = try #require(throws: ServiceGraphError.self) { try dependent.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
        let graph = try await builder.build()
        #expect(try await graph[SFAsync.self](1).note == "override")
        // The provider's synchronous form must not survive next to the override's asynchronous function.
        #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        try await graph.shutdown()
    }

    // MARK: Copies of a builder

    @Test func copiesOfABuilderDivergeEvenAfterTheOriginalWasValidatedAndDumped() async throws {
        var app = sfBuilder()
        sfAddHolder(&app)
        try app.validate()
        #expect(app.dump(.text).contains("synchronous SFItemKey(Int)"))

        var test = app
        sfOverride(&test, synchronous: false, note: "double")
        let error = try #require(throws: ServiceGraphError.self) { try test.validate() }
        #expect(error.codes == [.missingProvider])
        // The original is untouched by its copy's override, and its cached plan is not the copy's.
        #expect(throws: Never.self) { try app.validate() }
        let appGraph = try await app.build()
        #expect(try appGraph[SFHolderKey.self].make(1).note == "provide")
        try await appGraph.shutdown()

        // A copy of the copy, given a synchronous override: the form is back there only.
        var fixed = test
        sfOverride(&fixed, synchronous: true, note: "fixed")
        #expect(throws: Never.self) { try fixed.validate() }
        #expect(throws: ServiceGraphError.self) { try test.validate() }
        let fixedGraph = try await fixed.build()
        #expect(try fixedGraph[SFHolderKey.self].make(2).note == "fixed")
        try await fixedGraph.shutdown()

        // And the other way: an asynchronous application, a copy given a synchronous override.
        var asyncApp = sfAsyncBuilder()
        _ = asyncApp.dump(.json)
        var syncTest = asyncApp
        sfOverride(&syncTest, synchronous: true, note: "sync double")
        sfAddHolder(&syncTest)
        sfAddHolder(&asyncApp)
        #expect(throws: Never.self) { try syncTest.validate() }
        #expect(throws: ServiceGraphError.self) { try asyncApp.validate() }
    }

    // MARK: Child graphs

    @Test func childGraphsOfChildGraphsInheritAndHideTheSynchronousForm() async throws {
        var rootBuilder = sfBuilder()
        sfAddHolder(&rootBuilder)
        let root = try await rootBuilder.build()

        // Child: its own asynchronous provider hides the root's synchronous form.
        var childBuilder = root.makeChildBuilder()
        childBuilder.provide(SFItemKey.self, arguments: Int.self) { id in
            await Task.yield()
            return SFItem(id: id, store: SFStore("child"), note: "child")
        }
        let child = try await childBuilder.build()
        #expect(try await child[SFAsync.self](1).note == "child")
        #expect(throws: ServiceGraphError.self) { try child.resolveSynchronously(SFSync.self) }

        // The root's singleton holder, inherited, is the root's: the child's asynchronous factory does not
        // break it.
        #expect(try child[SFHolderKey.self].make(1).note == "provide")

        // Grandchild of it, with nothing of its own: inherits the child's factory, so no synchronous form.
        let grandchild = try await child.makeChildBuilder().build()
        #expect(try await grandchild[SFAsync.self](1).note == "child")
        let inherited = try #require(throws: ServiceGraphError.self) {
            try grandchild.resolveSynchronously(SFSync.self)
        }
        #expect(inherited.codes == [.keyNotFound])

        // A grandchild that provides the factory synchronously has both forms again, its own.
        var ownBuilder = child.makeChildBuilder()
        ownBuilder.provide(SFItemKey.self, arguments: Int.self) {
            SFItem(id: $0, store: SFStore("g"), note: "grandchild")
        }
        let own = try await ownBuilder.build()
        #expect(try own.resolveSynchronously(SFSync.self)(3).note == "grandchild")
        #expect(try await own[SFAsync.self](3).note == "grandchild")

        // The root keeps its own forms throughout.
        #expect(try root[SFHolderKey.self].make(4).note == "provide")
        #expect(try root.resolveSynchronously(SFSync.self)(4).note == "provide")
        try await own.shutdown()
        try await grandchild.shutdown()
        try await child.shutdown()
        try await root.shutdown()
    }

    @Test func aChildsAsynchronousOverrideHidesTheParentsFormFromAnInheritedTransientDependent() async throws {
        var parentBuilder = sfBuilder()
        parentBuilder.provide(SFLabelKey.self, lifetime: .transient, dependsOn: SFSync.self) { try $0(1).note }
        let parent = try await parentBuilder.build()
        #expect(try parent.resolveSynchronously(SFLabelKey.self) == "provide")

        // The inherited transient is made in the child, from the child's factory: an asynchronous double
        // there is reported at validation, where the application calls it without await.
        var childBuilder = parent.makeChildBuilder()
        sfOverride(&childBuilder, synchronous: false, note: "double")
        let error = try #require(throws: ServiceGraphError.self) { try childBuilder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
        #expect(error.problems.first?.path == ["SFLabelKey", "synchronous SFItemKey(Int)"])

        // A grandchild of a child with a synchronous double: the double's form, both ways.
        var syncChildBuilder = parent.makeChildBuilder()
        sfOverride(&syncChildBuilder, synchronous: true, note: "double")
        let syncChild = try await syncChildBuilder.build()
        let grandchild = try await syncChild.makeChildBuilder().build()
        #expect(try grandchild.resolveSynchronously(SFLabelKey.self) == "double")
        #expect(try grandchild.resolveSynchronously(SFSync.self)(1).note == "double")
        #expect(try parent.resolveSynchronously(SFLabelKey.self) == "provide")
        try await grandchild.shutdown()
        try await syncChild.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildsOwnProviderOfTheAsynchronousFunctionHidesTheInheritedFormFromOptionalDependents() async throws {
        var parentBuilder = sfBuilder()
        parentBuilder.provide(SFMaybeHolderKey.self, lifetime: .transient, dependsOn: SFSync?.self) {
            SFMaybeHolder(make: $0)
        }
        let parent = try await parentBuilder.build()
        #expect(try parent.resolveSynchronously(SFMaybeHolderKey.self).make?(1).note == "provide")

        for byOverride in [false, true] {
            var childBuilder = parent.makeChildBuilder()
            let double: SFAsync.Value = { id in SFItem(id: id, store: SFStore("child"), note: "function") }
            if byOverride {
                childBuilder.override(SFAsync.self) { double }
            } else {
                childBuilder.provide(SFAsync.self) { double }
            }
            let child = try await childBuilder.build()
            #expect(try await child[SFAsync.self](1).note == "function", "override: \(byOverride)")
            // The inherited transient is made in the child: its optional synchronous form is gone there.
            #expect(try child.resolveSynchronously(SFMaybeHolderKey.self).make == nil, "override: \(byOverride)")
            #expect(throws: ServiceGraphError.self) { try child.resolveSynchronously(SFSync.self) }
            try await child.shutdown()
        }
        #expect(try parent.resolveSynchronously(SFMaybeHolderKey.self).make?(2).note == "provide")
        try await parent.shutdown()
    }

    // MARK: Lifetimes and kinds of scope

    @Test func aScopedFactorysTwoFormsShareTheScopesDependencies() async throws {
        let stores = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(SFScopedStoreKey.self, lifetime: .scoped) {
            SFStore("scoped #\(stores.increment())")
        }
        builder.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self, dependsOn: SFScopedStoreKey.self) {
            SFItem(id: $0, store: $1, note: "scoped")
        }
        let graph = try await builder.build()
        let first = try graph.makeScope()
        let second = try graph.makeScope()
        let syncInFirst = try await first.resolve(SFSync.self)
        let asyncInFirst = try await first.resolve(SFAsync.self)
        let syncInSecond = try await second.resolve(SFSync.self)
        let a = try syncInFirst(1)
        let b = try await asyncInFirst(2)
        let c = try syncInSecond(3)
        #expect(a.store === b.store, "both forms of one scope hold the scope's one store")
        #expect(a.store !== c.store, "another scope, another store")
        #expect(stores.count == 2)
        // The graph itself refuses the scoped function, in both forms.
        #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        try await first.close()
        // Asked of a closed scope: scopeClosed, naming the synchronous form.
        let closed = try await #require(throws: ServiceGraphError.self) { try await first.resolve(SFSync.self) }
        #expect(closed.codes == [.scopeClosed])
        let closedSync = try #require(throws: ServiceGraphError.self) { try first.resolveSynchronously(SFSync.self) }
        #expect(closedSync.codes == [.scopeClosed])
        try await second.close()
        try await graph.shutdown()
    }

    @Test func aTransientFactoryIsANewFunctionWithNewDependenciesPerResolve() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(SFStoreKey.self, lifetime: .transient) { SFStore("t#\(made.increment())") }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFStoreKey.self) {
            SFItem(id: $0, store: $1, note: "transient")
        }
        let graph = try await builder.build()
        let one = try graph.resolveSynchronously(SFSync.self)
        let two = try graph.resolveSynchronously(SFSync.self)
        let x = try one(1)
        let y = try one(2)
        let z = try two(3)
        #expect(x.store === y.store, "one function, one set of dependencies")
        #expect(x.store !== z.store)
        #expect(made.count == 2)
        try await graph.shutdown()
    }

    @Test func aSynchronousClosureWithAnAsynchronousDependencyStillHasASynchronousForm() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFStoreKey.self, lifetime: .transient) {
            await Task.yield()
            return SFStore("awaited")
        }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFStoreKey.self) {
            SFItem(id: $0, store: $1, note: "made")
        }
        let graph = try await builder.build()
        // The function must be made with await (its dependency awaits); calling it then does not.
        let refused = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(refused.codes == [.requiresAwait])
        let make = try await graph.resolve(SFSync.self)
        #expect(try make(5).store.name == "awaited")
        try await graph.shutdown()
    }

    @Test func kindsOfScopeApplyToTheSynchronousForm() async throws {
        let stores = Tally()
        var builder = ServiceGraph.Builder()
        builder.inScope(.sfSession) { session in
            session.seed(SFUserKey.self)
            session.provide(SFScopedStoreKey.self, lifetime: .scoped, dependsOn: SFUserKey.self) {
                SFStore("\($0) #\(stores.increment())")
            }
            session.provide(
                SFItemKey.self,
                lifetime: .scoped,
                arguments: Int.self,
                dependsOn: SFUserKey.self,
                SFScopedStoreKey.self
            ) { id, user, store in
                SFItem(id: id, store: store, note: user)
            }
        }
        builder.inScope(.sfRequest) { request in
            request.seed(SFRequestKey.self)
            request.provide(SFLabelKey.self, lifetime: .scoped, dependsOn: SFSync.self, SFRequestKey.self) {
                try "\($0(1).note)/\($1)"
            }
        }
        builder.inScope(.sfOther) { other in
            other.provide(SFOtherKey.self, lifetime: .scoped) { "other" }
        }
        let graph = try await builder.build()
        let session = try graph.makeScope(.sfSession, seeding: ScopeSeed(SFUserKey.self, "ada"))
        let request = try session.makeScope(.sfRequest, seeding: ScopeSeed(SFRequestKey.self, "r1"))
        let fromSession = try await session.resolve(SFSync.self)(1)
        let fromRequest = try await request.resolve(SFSync.self)(2)
        #expect(fromSession.note == "ada" && fromRequest.note == "ada")
        #expect(fromSession.store === fromRequest.store, "the session's function, whichever request asks")
        #expect(try await request.resolve(SFLabelKey.self) == "ada/r1")
        #expect(stores.count == 1)

        let other = try graph.makeScope(.sfOther)
        let wrong = try await #require(throws: ServiceGraphError.self) { try await other.resolve(SFSync.self) }
        #expect(wrong.codes == [.wrongScopeKind])
        #expect(wrong.problems.first?.key == "synchronous SFItemKey(Int)")
        #expect(wrong.problems.first?.message.contains("sfSession") == true)

        // Dumps give both forms the same kind.
        let services = try sfServices(graph.dump(.json))
        let kinds = services.filter { $0.key.hasSuffix("SFItemKey(Int)") }.map(\.scopeKind)
        #expect(kinds == ["sfSession", "sfSession"])
        try await other.close()
        try await session.close()
        try await graph.shutdown()
    }

    @Test func validationOfKindsReachesThroughTheSynchronousForm() throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.sfSession) { session in
            session.seed(SFUserKey.self)
            session.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self, dependsOn: SFUserKey.self) {
                SFItem(id: $0, store: SFStore($1), note: $1)
            }
        }
        builder.inScope(.sfOther) { other in
            other.provide(SFOtherKey.self, lifetime: .scoped, dependsOn: SFSync.self) { try $0(1).note }
        }
        // A singleton holding a scoped function: captive.
        builder.provide(SFHolderKey.self, dependsOn: SFSync.self) { SFHolder(make: $0) }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(Set(error.codes) == [.wrongScopeKind, .captiveDependency])
        #expect(error.problems.count == 2)
        let wrong = try #require(error.problems.first { $0.code == .wrongScopeKind })
        #expect(wrong.path == ["SFOtherKey", "synchronous SFItemKey(Int)"])
        let captive = try #require(error.problems.first { $0.code == .captiveDependency })
        #expect(captive.path.first == "SFHolderKey")
        #expect(captive.message.contains("synchronous SFItemKey(Int)"))
    }

    @Test func aSynchronousOverrideOutsideTheKindKeepsBothFormsInOneKind() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.sfSession) { session in
            session.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self) { id in
                await Task.yield()
                return SFItem(id: id, store: SFStore("s"), note: "session")
            }
        }
        builder.override(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore("o"), note: "override") }
        let graph = try await builder.build()
        let services = try sfServices(graph.dump(.json))
        let asyncForm = try #require(services.first { $0.key == "SFItemKey(Int)" })
        let syncForm = try #require(services.first { $0.key == "synchronous SFItemKey(Int)" })
        #expect(asyncForm.scopeKind == syncForm.scopeKind)
        #expect(asyncForm.lifetime == syncForm.lifetime)
        try await graph.shutdown()
    }

    // MARK: Wrappers

    @Test func anOptionalSynchronousFormIsNilExactlyWhenTheFactoryAwaits() async throws {
        for synchronous in [true, false] {
            var builder = synchronous ? sfBuilder() : sfAsyncBuilder()
            builder.provide(SFMaybeHolderKey.self, dependsOn: SFSync?.self) { SFMaybeHolder(make: $0) }
            #expect(throws: Never.self) { try builder.validate() }
            let absent = builder.lint().filter { $0.code == .absentOptionalDependency }
            let unused = builder.lint().filter { $0.code == .unusedProvider }.map(\.key)
            let graph = try await builder.build()
            let make = graph[SFMaybeHolderKey.self].make
            if synchronous {
                #expect(try make?(1).note == "provide")
                #expect(absent.isEmpty)
                #expect(unused == ["SFMaybeHolderKey"], "the factory is used, through the optional form")
            } else {
                #expect(make == nil)
                #expect(absent.map(\.key) == ["SFMaybeHolderKey"])
                #expect(absent.first?.message.contains("synchronous SFItemKey(Int)") == true)
            }
            try await graph.shutdown()
        }
        // An asynchronous override makes it nil too.
        var overridden = sfBuilder()
        overridden.provide(SFMaybeHolderKey.self, dependsOn: SFSync?.self) { SFMaybeHolder(make: $0) }
        sfOverride(&overridden, synchronous: false, note: "double")
        let graph = try await overridden.build()
        #expect(graph[SFMaybeHolderKey.self].make == nil)
        try await graph.shutdown()
    }

    @Test func providersAndLazyHandlesOfTheSynchronousForm() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFStoreKey.self, lifetime: .transient) { SFStore("t") }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFStoreKey.self) {
            SFItem(id: $0, store: $1, note: "transient")
        }
        builder.provide(SFLabelKey.self, dependsOn: Provider<SFSync>.self) { provider in
            try provider.resolveSynchronously()(1).note
        }
        // Transient holders: a singleton would hold the transient function captive, lazily or not.
        builder.provide(SFNumberKey.self, lifetime: .transient, dependsOn: Lazy<SFSync>.self) { lazy in
            lazy.isMade ? 1 : 0
        }
        builder.provide(SFProbeKey.self, lifetime: .transient, dependsOn: Lazy<SFSync>.self) { lazy in
            try await lazy.value(7).id
        }
        #expect(builder.lint().filter { $0.code == .unusedProvider }.map(\.key).contains("SFItemKey(Int)") == false)
        let graph = try await builder.build()
        #expect(graph[SFLabelKey.self] == "transient")
        #expect(try graph.resolveSynchronously(SFNumberKey.self) == 0)
        #expect(try await graph.resolve(SFProbeKey.self) == 7)
        try await graph.shutdown()

        // Of a factory that awaits: a missing provider, saying why, through either wrapper.
        for wrapper in ["Provider", "Lazy"] {
            var broken = sfAsyncBuilder()
            if wrapper == "Provider" {
                broken.provide(SFLabelKey.self, dependsOn: Provider<SFSync>.self) { _ in "" }
            } else {
                broken.provide(SFLabelKey.self, dependsOn: Lazy<SFSync>.self) { _ in "" }
            }
            let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
            #expect(error.codes == [.missingProvider], "\(wrapper)")
            #expect(error.problems.first?.key == "synchronous SFItemKey(Int)", "\(wrapper)")
            #expect(error.problems.first?.message.contains("has no synchronous form") == true, "\(wrapper)")
        }
    }

    @Test func aSingletonsProviderOfAScopedSynchronousFormIsCaptiveAndAWrapperOfAWrapperIsRefused() throws {
        var captive = ServiceGraph.Builder()
        captive.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self) {
            SFItem(id: $0, store: SFStore("s"), note: "scoped")
        }
        captive.provide(SFLabelKey.self, dependsOn: Provider<SFSync>.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try captive.validate() }
        #expect(error.codes == [.captiveDependency])
        #expect(error.problems.first?.message.contains("synchronous SFItemKey(Int)") == true)

        var nested = sfBuilder()
        nested.provide(SFLabelKey.self, dependsOn: Provider<SFSync>?.self) { _ in "" }
        let refused = try #require(throws: ServiceGraphError.self) { try nested.validate() }
        #expect(refused.codes == [.invalidKey])
    }

    // MARK: Three arguments

    @Test func threeArgumentsThroughOverridesAndProviders() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFStoreKey.self) { SFStore("main") }
        builder.provide(SFItemKey.self, arguments: Int.self, String.self, Bool.self, dependsOn: SFStoreKey.self) {
            id,
            note,
            flag,
            store in
            await Task.yield()
            return SFItem(id: id, store: store, note: "\(note) \(flag)")
        }
        builder.override(SFItemKey.self, arguments: Int.self, String.self, Bool.self, dependsOn: SFStoreKey.self) {
            id,
            note,
            flag,
            store in
            guard flag else { throw TestFailure("flag is off for \(note)") }
            return SFItem(id: id, store: store, note: "override \(note)")
        }
        builder.provide(SFLabelKey.self, lifetime: .transient, dependsOn: Provider<SFSync3>.self) { provider in
            try provider.resolveSynchronously()(1, "via provider", true).note
        }
        let graph = try await builder.build()
        let make = try graph.resolveSynchronously(SFSync3.self)
        #expect(try make(3, "x", true).note == "override x")
        #expect(try make(3, "x", true).store === graph[SFStoreKey.self])
        #expect(throws: TestFailure("flag is off for y")) { try make(3, "y", false) }
        #expect(try graph.resolveSynchronously(SFLabelKey.self) == "override via provider")
        // The arguments in another order are another key, and the error names it.
        let missing = try #require(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(ArgumentFactory<SFItemKey, String, Int, Bool>.Synchronous.self)
        }
        #expect(missing.codes == [.keyNotFound])
        #expect(missing.problems.first?.key == "synchronous SFItemKey(String, Int, Bool)")
        let dump = graph.dump(.text)
        #expect(dump.contains("synchronous SFItemKey(Int, String, Bool): (Int, String, Bool) throws -> SFItem"))
        try await graph.shutdown()
    }

    // MARK: Concurrency

    @Test func manyThreadsAndTasksResolveAndCallBothFormsOfATransientFactory() async throws {
        let made = Tally()
        let stores = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(SFStoreKey.self, lifetime: .transient) { SFStore("#\(stores.increment())") }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFStoreKey.self) {
            made.increment()
            return SFItem(id: $0, store: $1, note: "t")
        }
        let graph = try await builder.build()
        let correct = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 2_000) { index in
            guard let make = try? graph.resolveSynchronously(SFSync.self),
                let item = try? make(index), item.id == index
            else { return }
            correct.withLock { $0 += 1 }
        }
        #expect(correct.withLock { $0 } == 2_000)
        let fromTasks = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    if index.isMultiple(of: 2) {
                        return try await graph.resolve(SFSync.self)(index).id == index
                    }
                    return try await graph.resolve(SFAsync.self)(index).id == index
                }
            }
            var count = 0
            for try await ok in group where ok { count += 1 }
            return count
        }
        #expect(fromTasks == 1_000)
        #expect(made.count == 3_000)
        #expect(stores.count == 3_000, "a new function per resolve, each with its own transient store")
        try await graph.shutdown()
    }

    @Test func manyScopesOnManyThreadsEachMakeTheirOwnScopedFunction() async throws {
        let stores = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(SFScopedStoreKey.self, lifetime: .scoped) { SFStore("#\(stores.increment())") }
        builder.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self, dependsOn: SFScopedStoreKey.self) {
            SFItem(id: $0, store: $1, note: "scoped")
        }
        let graph = try await builder.build()
        let sameStore = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let scope = try graph.makeScope()
                    async let viaSync = scope.resolve(SFSync.self)
                    async let viaAsync = scope.resolve(SFAsync.self)
                    let first = try await viaSync(index)
                    let second = try await viaAsync(index)
                    try await scope.close()
                    return first.store === second.store
                }
            }
            var count = 0
            for try await same in group where same { count += 1 }
            return count
        }
        #expect(sameStore == 200)
        #expect(stores.count == 200)
        try await graph.shutdown()
    }

    // MARK: Shutdown

    @Test func afterShutdownTheFormIsRefusedAndAFunctionKeptFromBeforeStillRuns() async throws {
        let graph = try await sfBuilder().build()
        let make = graph[SFSync.self]
        try await graph.shutdown()
        let refused = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(refused.codes == [.graphShutDown])
        #expect(refused.problems.first?.key == "synchronous SFItemKey(Int)")
        let refusedAsync = try await #require(throws: ServiceGraphError.self) { try await graph.resolve(SFSync.self) }
        #expect(refusedAsync.codes == [.graphShutDown])
        // Documented here, not by the library: the function holds its dependencies' values, not the graph,
        // so a function kept from before the shutdown still makes values (with the released store).
        let item = try make(9)
        #expect(item.id == 9 && item.store.name == "main")
    }

    @Test func aScopedFunctionKeptAfterItsScopeClosedStillRuns() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFScopedStoreKey.self, lifetime: .scoped) { SFStore("scoped") }
        builder.provide(SFItemKey.self, lifetime: .scoped, arguments: Int.self, dependsOn: SFScopedStoreKey.self) {
            SFItem(id: $0, store: $1, note: "scoped")
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let make = try await scope.resolve(SFSync.self)
        try await scope.close()
        #expect(try make(1).store.name == "scoped")
        try await graph.shutdown()
    }

    // MARK: Errors

    @Test func aThrowingClosureCalledByASingletonAtBuildFailsTheBuildNamingTheSingleton() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFItemKey.self, arguments: Int.self) { (id: Int) throws -> SFItem in
            throw TestFailure("no item \(id)")
        }
        builder.provide(SFLabelKey.self, dependsOn: SFSync.self) { make in try make(4).note }
        let error = try await #require(throws: ServiceGraphError.self) { try await builder.build() }
        #expect(error.codes == [.factoryFailed])
        #expect(error.problems.first?.key == "SFLabelKey")
        #expect(error.problems.first?.underlyingError as? TestFailure == TestFailure("no item 4"))
    }

    @Test func aFailingDependencyOfATransientFunctionIsReportedWithThePathThroughTheSynchronousForm() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SFFailingKey.self, lifetime: .transient) { () throws -> Int in throw TestFailure("broken") }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFFailingKey.self) {
            SFItem(id: $0 + $1, store: SFStore("never"), note: "never")
        }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(error.codes == [.factoryFailed])
        #expect(error.problems.first?.path == ["synchronous SFItemKey(Int)", "SFFailingKey"])
        #expect(error.problems.first?.underlyingError as? TestFailure == TestFailure("broken"))
        #expect(error.description.contains("synchronous SFItemKey(Int)"))
        try await graph.shutdown()
    }

    @Test func resolveErrorsNameTheSynchronousFormAndWhyItIsMissing() async throws {
        // Nothing makes SFItemKey at all: no claim about an asynchronous closure.
        var nothing = ServiceGraph.Builder()
        sfAddHolder(&nothing)
        let none = try #require(throws: ServiceGraphError.self) { try nothing.validate() }
        #expect(none.codes == [.missingProvider])
        #expect(none.problems.first?.key == "synchronous SFItemKey(Int)")
        #expect(none.problems.first?.message.contains("asynchronous") == false)

        // Another argument type: missing, and not blamed on an asynchronous closure either.
        var otherArgument = sfBuilder()
        otherArgument.provide(SFLabelKey.self, dependsOn: ArgumentFactory<SFItemKey, String>.Synchronous.self) {
            try $0("x").note
        }
        let other = try #require(throws: ServiceGraphError.self) { try otherArgument.validate() }
        #expect(other.codes == [.missingProvider])
        #expect(other.problems.first?.key == "synchronous SFItemKey(String)")
        #expect(other.problems.first?.message.contains("closure is asynchronous") == false)

        // Resolving the form of a factory that awaits: the error names the form.
        let graph = try await sfAsyncBuilder().build()
        let missing = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(missing.codes == [.keyNotFound])
        #expect(missing.problems.first?.key == "synchronous SFItemKey(Int)")
        #expect(missing.problems.first?.message.contains("synchronous SFItemKey(Int)") == true)
        try await graph.shutdown()
    }

    @Test func duplicatesAndUnknownOverridesAreReportedOncePerFactory() throws {
        var twice = sfBuilder()
        twice.provide(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore("2"), note: "second") }
        let duplicate = try #require(throws: ServiceGraphError.self) { try twice.validate() }
        #expect(duplicate.codes == [.duplicateProvider])
        #expect(duplicate.problems.first?.key == "SFItemKey(Int)")

        var mixed = sfBuilder()
        mixed.provide(SFItemKey.self, arguments: Int.self) { id in
            await Task.yield()
            return SFItem(id: id, store: SFStore("2"), note: "second")
        }
        let mixedError = try #require(throws: ServiceGraphError.self) { try mixed.validate() }
        #expect(mixedError.codes == [.duplicateProvider])

        var unknown = ServiceGraph.Builder()
        unknown.override(SFItemKey.self, arguments: Int.self) { SFItem(id: $0, store: SFStore("o"), note: "o") }
        let unknownError = try #require(throws: ServiceGraphError.self) { try unknown.validate() }
        #expect(unknownError.codes == [.overrideOfUnknownKey])
        #expect(unknownError.problems.first?.key == "SFItemKey(Int)")
    }

    @Test func providingTheSynchronousKeyByHandIsNotSilentlyDropped() async throws {
        // A factory that awaits, and a synchronous function of the same type given by hand under the key of
        // the synchronous form: the two forms would make different things, so validation refuses the
        // hand-made one, naming it (never a "missing provider" for a key that was provided).
        var builder = sfAsyncBuilder()
        builder.provide(SFSync.self) { { id in SFItem(id: id, store: SFStore("hand"), note: "by hand") } }
        sfAddHolder(&builder)
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
    }

    @Test func overridingTheAsynchronousFunctionItselfTakesTheSynchronousFormAway() async throws {
        var builder = sfBuilder()
        builder.override(SFAsync.self) { { id in SFItem(id: id, store: SFStore("x"), note: "function double") } }
        var dependent = builder
        sfAddHolder(&dependent)
        // Otherwise the synchronous form would still make the provider's items, the asynchronous the double's.
        let error = try #require(throws: ServiceGraphError.self) { try dependent.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
        let graph = try await builder.build()
        #expect(try await graph[SFAsync.self](1).note == "function double")
        let gone = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(gone.codes == [.keyNotFound])
        try await graph.shutdown()

        // A synchronous override after it gives both forms back, the override's.
        var back = builder
        sfOverride(&back, synchronous: true, note: "back")
        sfAddHolder(&back)
        let backGraph = try await back.build()
        #expect(try backGraph[SFHolderKey.self].make(2).note == "back")
        #expect(try await backGraph[SFAsync.self](2).note == "back")
        try await backGraph.shutdown()
    }

    @Test func overridingTheSynchronousFormItselfNeverLeavesTheFormsMakingDifferentThings() async throws {
        var builder = sfBuilder()
        builder.override(SFSync.self) { { id in SFItem(id: id, store: SFStore("x"), note: "sync double") } }
        // Refused at validation: on its own, the override would make the synchronous form differ.
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(error.problems.first?.key == "synchronous SFItemKey(Int)")
        await #expect(throws: ServiceGraphError.self) { try await builder.build() }
    }

    @Test func anEntryPointDeclaredForEitherFormCoversTheFactory() {
        var viaSync = sfBuilder()
        viaSync.declareEntryPoints(SFSync.self)
        #expect(viaSync.lint().filter { $0.code == .unusedProvider }.isEmpty)
        var viaAsync = sfBuilder()
        viaAsync.declareEntryPoints(SFAsync.self)
        #expect(viaAsync.lint().filter { $0.code == .unusedProvider }.isEmpty)
        // An entry point on the synchronous form of a factory that has none covers nothing.
        var asyncOnly = sfAsyncBuilder()
        asyncOnly.declareEntryPoints(SFSync.self)
        #expect(asyncOnly.lint().filter { $0.code == .unusedProvider }.map(\.key) == ["SFItemKey(Int)"])
    }

    @Test func aDecoratingOverrideThatDependsOnItsOwnSynchronousFormIsACycle() throws {
        var builder = sfBuilder()
        builder.override(SFItemKey.self, arguments: Int.self, dependsOn: SFSync.self) { id, original in
            let item = try original(id)
            return SFItem(id: item.id, store: item.store, note: "decorated")
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes.contains(.cycle))
        let cycle = try #require(error.problems.first { $0.code == .cycle })
        #expect(cycle.message.contains("synchronous SFItemKey(Int)"))
    }

    @Test func aTransientFunctionOfSeedsIsMadeInTheScopeWithoutAwait() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(SFUserKey.self)
        builder.provide(SFStoreKey.self) { SFStore("main") }
        builder.provide(
            SFItemKey.self,
            lifetime: .transient,
            arguments: Int.self,
            dependsOn: SFUserKey.self,
            SFStoreKey.self
        ) { id, user, store in
            SFItem(id: id, store: store, note: user)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(SFUserKey.self, "ada"))
        let make = try scope.resolveSynchronously(SFSync.self)
        #expect(try make(1).note == "ada")
        #expect(try make(1).store === graph[SFStoreKey.self])
        let refused = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        #expect(refused.codes == [.wrongLifetime])
        try await scope.close()
        // The function made in the scope still runs after it closed: it holds the seed's value.
        #expect(try make(2).note == "ada")
        try await graph.shutdown()
    }

    @Test func theClosureRunsOnTheCallingThread() async throws {
        let threads = Locked<[Int: Thread]>([:])
        var builder = ServiceGraph.Builder()
        builder.provide(SFNumberKey.self, arguments: Int.self) { index in
            threads.withLock { $0[index] = Thread.current }
            return index
        }
        let graph = try await builder.build()
        let make = graph[ArgumentFactory<SFNumberKey, Int>.Synchronous.self]
        let sameThread = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            guard (try? make(index)) == index else { return }
            if threads.withLock({ $0[index] }) === Thread.current { sameThread.withLock { $0 += 1 } }
        }
        #expect(sameThread.withLock { $0 } == 200)
        try await graph.shutdown()
    }

    @Test func shutdownWhileManyThreadsResolveTheFormNeverCrashesOrHangs() async throws {
        for _ in 0..<20 {
            let graph = try await sfBuilder().build()
            let outcomes = Locked((made: 0, refused: 0, other: 0))
            let threads = Task.detached {
                DispatchQueue.concurrentPerform(iterations: 400) { index in
                    do {
                        let item = try graph.resolveSynchronously(SFSync.self)(index)
                        outcomes.withLock { $0.made += item.id == index ? 1 : 0 }
                    } catch let error as ServiceGraphError where error.codes == [.graphShutDown] {
                        outcomes.withLock { $0.refused += 1 }
                    } catch {
                        outcomes.withLock { $0.other += 1 }
                    }
                }
            }
            try await withDeadline(.seconds(60)) { try await graph.shutdown() }
            await threads.value
            let result = outcomes.withLock { $0 }
            #expect(result.made + result.refused == 400)
            #expect(result.other == 0)
        }
    }

    // MARK: Re-entrancy

    @Test func theClosureMayCallItsOwnSynchronousFormThroughACapturedGraph() async throws {
        let captured = Captured<ServiceGraph>()
        var builder = ServiceGraph.Builder()
        builder.provide(SFNumberKey.self, arguments: Int.self) { n in
            n <= 1
                ? 1
                : try n * captured.value.resolveSynchronously(ArgumentFactory<SFNumberKey, Int>.Synchronous.self)(n - 1)
        }
        let graph = try await builder.build()
        captured.fill(graph)
        #expect(try graph[ArgumentFactory<SFNumberKey, Int>.Synchronous.self](10) == 3_628_800)
        #expect(try await graph[ArgumentFactory<SFNumberKey, Int>.self](5) == 120)
        captured.fill(nil)
        try await graph.shutdown()
    }

    @Test func aDependencyThatResolvesTheFunctionBeingMadeIsRefused() async throws {
        let captured = Captured<ServiceGraph>()
        var builder = ServiceGraph.Builder()
        builder.provide(SFProbeKey.self, lifetime: .transient) {
            _ = try captured.value.resolveSynchronously(SFSync.self)
            return 0
        }
        builder.provide(SFItemKey.self, lifetime: .transient, arguments: Int.self, dependsOn: SFProbeKey.self) {
            SFItem(id: $0 + $1, store: SFStore("r"), note: "r")
        }
        let graph = try await builder.build()
        captured.fill(graph)
        let error = try await withDeadline(.seconds(30)) {
            try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(SFSync.self) }
        }
        #expect(error.contains(.reentrantResolution))
        #expect(error.description.contains("synchronous SFItemKey(Int)"))
        let asyncError = try await withDeadline(.seconds(30)) {
            try await #require(throws: ServiceGraphError.self) { try await graph.resolve(SFSync.self) }
        }
        #expect(asyncError.contains(.reentrantResolution))
        captured.fill(nil)
        try await graph.shutdown()
    }

    // MARK: Scale

    @Test func tenThousandFactoriesInOneGraph() async throws {
        let count = 10_000
        try await withDeadline(.seconds(300)) {
            var register = SFRegister(builder: ServiceGraph.Builder())
            try sfVisitKeys(SFRoot.self, bits: 14, prefix: 0, below: count, &register)
            let builder = register.builder
            let unused = builder.lint().filter { $0.code == .unusedProvider }
            #expect(unused.count == count, "one warning per factory, not per form")
            #expect(unused.allSatisfy { !$0.key.hasPrefix("synchronous") })
            let graph = try await builder.build()
            var call = SFCall(graph: graph)
            try sfVisitKeys(SFRoot.self, bits: 14, prefix: 0, below: count, &call)
            #expect(call.correct == count)
            let services = try sfServices(graph.dump(.json))
            #expect(services.count == 2 * count)
            #expect(services.filter { $0.key.hasPrefix("synchronous ") }.count == count)
            #expect(graph.dump(.text).components(separatedBy: ": (Int) throws -> Int").count - 1 == count)
            #expect(graph.dump(.dot).components(separatedBy: "(Int) throws -> Int").count - 1 == count)
            #expect(graph.dump(.mermaid).components(separatedBy: "(Int) throws -#gt; Int").count - 1 == count)
            try await graph.shutdown()
        }
    }

    // MARK: Dumps and lint

    @Test func dumpsInAllFormatsDropTheFormAnAsynchronousOverrideTookAway() async throws {
        var builder = sfBuilder()
        builder.provide(SFOtherKey.self, arguments: Int.self, String.self, Bool.self) { "\($0)\($1)\($2)" }
        sfOverride(&builder, synchronous: false, note: "double")
        for format in [DumpFormat.text, .dot, .mermaid, .json] {
            let registered = builder.dump(format)
            #expect(!registered.contains("synchronous SFItemKey(Int)"), "\(format)")
            #expect(registered.contains("synchronous SFOtherKey(Int, String, Bool)"), "\(format)")
        }
        let graph = try await builder.build()
        for format in [DumpFormat.text, .dot, .mermaid, .json] {
            let built = graph.dump(format)
            #expect(!built.contains("synchronous SFItemKey(Int)"), "\(format)")
            #expect(built.contains("SFItemKey(Int)"), "\(format)")
            #expect(built.contains("synchronous SFOtherKey(Int, String, Bool)"), "\(format)")
        }
        try await graph.shutdown()
    }

    @Test func aBrokenBuildersDumpMarksTheMissingSynchronousForm() throws {
        var builder = sfAsyncBuilder()
        sfAddHolder(&builder)
        for format in [DumpFormat.text, .dot, .mermaid, .json] {
            let dump = builder.dump(format)
            #expect(dump.contains("synchronous SFItemKey(Int)"), "\(format)")
            #expect(dump.contains("SFHolderKey"), "\(format)")
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let text = try #require(error.dump(.text))
        #expect(text.contains("synchronous SFItemKey(Int)"))
    }

    @Test func overrideMarksInDumpsAgreeBetweenTheForms() async throws {
        var builder = sfBuilder()
        sfOverride(&builder, synchronous: true, note: "double")
        let graph = try await builder.build()
        let text = graph.dump(.text)
        let asyncLine = try #require(sfLine(text, "SFItemKey(Int)"))
        let syncLine = try #require(sfLine(text, "synchronous SFItemKey(Int)"))
        #expect(asyncLine.contains("override") == syncLine.contains("override"))
        #expect(syncLine.contains("override"))
        try await graph.shutdown()
    }

    @Test func lintSeesTheFactoryUsedThroughAnyWrapperOfEitherForm() {
        for wrapper in ["Provider", "Lazy", "Optional", "plain"] {
            var builder = sfBuilder()
            switch wrapper {
            case "Provider": builder.provide(SFLabelKey.self, dependsOn: Provider<SFSync>.self) { _ in "" }
            case "Lazy": builder.provide(SFLabelKey.self, dependsOn: Lazy<SFSync>.self) { _ in "" }
            case "Optional": builder.provide(SFLabelKey.self, dependsOn: SFSync?.self) { _ in "" }
            default: builder.provide(SFLabelKey.self, dependsOn: SFSync.self) { _ in "" }
            }
            let unused = builder.lint().filter { $0.code == .unusedProvider }.map(\.key)
            #expect(unused == ["SFLabelKey"], "\(wrapper)")
        }
        // Overridden asynchronously, with a dependent of the synchronous form only through an optional:
        // nothing uses the factory, and the optional dependency is absent.
        var overridden = sfBuilder()
        overridden.provide(SFLabelKey.self, dependsOn: SFSync?.self) { _ in "" }
        sfOverride(&overridden, synchronous: false, note: "double")
        let warnings = overridden.lint()
        #expect(warnings.filter { $0.code == .absentOptionalDependency }.map(\.key) == ["SFLabelKey"])
        #expect(warnings.filter { $0.code == .unusedProvider }.map(\.key).contains("SFItemKey(Int)"))
    }
}
