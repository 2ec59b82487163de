import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

private struct AccountID: Sendable, Hashable { let raw: Int }

private final class Store: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

private final class Account: Sendable {
    let id: AccountID
    let store: Store
    let note: String
    init(id: AccountID, store: Store, note: String = "") {
        self.id = id
        self.store = store
        self.note = note
    }
}

private enum StoreKey: ServiceKey { typealias Value = Store }
private enum AccountKey: ServiceKey { typealias Value = Account }
private enum ScopedStoreKey: ServiceKey { typealias Value = Store }
private enum AccountListKey: ServiceKey { typealias Value = AccountList }
private enum AsyncListKey: ServiceKey { typealias Value = String }
private enum LoopKey: ServiceKey { typealias Value = String }

/// What a view model holds: the synchronous form, called where nothing can be awaited.
private struct AccountList: Sendable {
    let makeAccount: ArgumentFactory<AccountKey, AccountID>.Synchronous.Value
}

private typealias AccountFactory = ArgumentFactory<AccountKey, AccountID>
private typealias SynchronousAccountFactory = ArgumentFactory<AccountKey, AccountID>.Synchronous

@Suite("Factories with arguments, synchronous form")
struct SynchronousArgumentFactoryTests {
    private func builder(made: Tally = Tally()) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { Store(name: "main") }
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            made.increment()
            return Account(id: id, store: store)
        }
        builder.provide(AccountListKey.self, dependsOn: SynchronousAccountFactory.self) { AccountList(makeAccount: $0) }
        return builder
    }

    @Test func aClosureThatDoesNotAwaitGivesBothFormsFromOneClosure() async throws {
        let made = Tally()
        let graph = try await builder(made: made).build()
        #expect(made.count == 0, "the functions are made, not an account")
        let list = graph[AccountListKey.self]
        // No `await`: the synchronous form is an ordinary function.
        let first = try list.makeAccount(AccountID(raw: 1))
        let second = try list.makeAccount(AccountID(raw: 2))
        #expect(first.id.raw == 1 && second.id.raw == 2 && first !== second)
        #expect(first.store === graph[StoreKey.self])
        let asynchronous = graph[AccountFactory.self]
        let third = try await asynchronous(AccountID(raw: 3))
        #expect(third.store === graph[StoreKey.self])
        #expect(made.count == 3, "both forms run the one closure")
        let resolved = try graph.resolveSynchronously(SynchronousAccountFactory.self)
        #expect(try resolved(AccountID(raw: 4)).id.raw == 4)
        try await graph.shutdown()
    }

    @Test func threeArgumentsAndAThrowingClosure() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { Store(name: "main") }
        builder.provide(
            AccountKey.self,
            arguments: AccountID.self,
            String.self,
            Int.self,
            dependsOn: StoreKey.self
        ) { (id: AccountID, note: String, count: Int, store: Store) throws -> Account in
            guard count >= 0 else { throw TestFailure("negative count") }
            return Account(id: id, store: store, note: "\(note)×\(count)")
        }
        let graph = try await builder.build()
        let make = graph[ArgumentFactory<AccountKey, AccountID, String, Int>.Synchronous.self]
        #expect(try make(AccountID(raw: 1), "gift", 3).note == "gift×3")
        #expect(throws: TestFailure("negative count")) { try make(AccountID(raw: 1), "gift", -1) }
        // The asynchronous form throws the same error.
        let asynchronous = graph[ArgumentFactory<AccountKey, AccountID, String, Int>.self]
        await #expect(throws: TestFailure("negative count")) { try await asynchronous(AccountID(raw: 1), "", -1) }
        try await graph.shutdown()
    }

    @Test func aClosureThatAwaitsHasNoSynchronousFormAndValidationSaysWhy() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { Store(name: "main") }
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            await Task.yield()
            return Account(id: id, store: store)
        }
        var broken = builder
        broken.provide(AccountListKey.self, dependsOn: SynchronousAccountFactory.self) { AccountList(makeAccount: $0) }
        let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "synchronous AccountKey(AccountID)")
        #expect(error.problems[0].path == ["AccountListKey", "synchronous AccountKey(AccountID)"])
        #expect(
            error.problems[0].message.contains(
                "AccountKey(AccountID) has no synchronous form, as its closure is asynchronous: depend on "
                    + "ArgumentFactory<AccountKey, AccountID> and await it, or give it a closure that does not await"
            )
        )
        let graph = try await builder.build()
        let missing = try await #require(throws: ServiceGraphError.self) {
            try await graph.resolve(SynchronousAccountFactory.self)
        }
        #expect(missing.codes == [.keyNotFound])
        #expect(try await graph[AccountFactory.self](AccountID(raw: 5)).id.raw == 5)
        try await graph.shutdown()
    }

    @Test func aProblemOfTheFactoryIsReportedOnceNotPerForm() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(ScopedStoreKey.self, lifetime: .scoped) { Store(name: "scoped") }
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: ScopedStoreKey.self, StoreKey.self) {
            id,
            store,
            _ in Account(id: id, store: store)
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        // One missing provider and one captive dependency, each on the factory's asynchronous form.
        #expect(error.codes == [.missingProvider, .captiveDependency])
        #expect(error.problems.map(\.key) == ["StoreKey", "AccountKey(AccountID)"])
        #expect(error.problems.allSatisfy { $0.path.first == "AccountKey(AccountID)" })
    }

    @Test func aCycleThroughTheSynchronousFormIsReportedWithItsPath() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LoopKey.self, dependsOn: ArgumentFactory<AccountKey, AccountID>.Synchronous.self) { _ in "" }
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self, LoopKey.self) {
            id,
            store,
            _ in Account(id: id, store: store)
        }
        builder.provide(StoreKey.self) { Store(name: "main") }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes.contains(.cycle))
        let cycle = try #require(error.problems.first { $0.code == .cycle })
        #expect(cycle.message.contains("synchronous AccountKey(AccountID)"))
        #expect(cycle.message.contains("LoopKey"))
    }

    @Test func aSynchronousOverrideReplacesBothForms() async throws {
        var builder = builder()
        builder.override(AccountKey.self, arguments: AccountID.self) { id in
            Account(id: AccountID(raw: id.raw * 10), store: Store(name: "double"))
        }
        let graph = try await builder.build()
        let account = try graph[AccountListKey.self].makeAccount(AccountID(raw: 2))
        #expect(account.id.raw == 20 && account.store.name == "double")
        #expect(try await graph[AccountFactory.self](AccountID(raw: 3)).store.name == "double")
        try await graph.shutdown()
    }

    @Test func anAsynchronousOverrideTakesTheSynchronousFormAway() async throws {
        var builder = builder()
        builder.override(AccountKey.self, arguments: AccountID.self) { id in
            await Task.yield()
            return Account(id: id, store: Store(name: "double"))
        }
        // What depends on the synchronous form is told, at validation, and pointed at the override.
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "synchronous AccountKey(AccountID)")
        #expect(error.problems[0].message.contains("as its override's closure is asynchronous"))

        // Without that dependent, the graph builds with the override's asynchronous form only.
        var plain = ServiceGraph.Builder()
        plain.provide(StoreKey.self) { Store(name: "main") }
        plain.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        plain.override(AccountKey.self, arguments: AccountID.self) { id in
            await Task.yield()
            return Account(id: id, store: Store(name: "double"))
        }
        let graph = try await plain.build()
        #expect(try await graph[AccountFactory.self](AccountID(raw: 1)).store.name == "double")
        await #expect(throws: ServiceGraphError.self) { try await graph.resolve(SynchronousAccountFactory.self) }
        try await graph.shutdown()
    }

    @Test func theLastOverrideDecidesTheSynchronousForm() async throws {
        // Asynchronous, then synchronous: the form is back, the second override's.
        var back = builder()
        back.override(AccountKey.self, arguments: AccountID.self) { id in
            await Task.yield()
            return Account(id: id, store: Store(name: "first"))
        }
        back.override(AccountKey.self, arguments: AccountID.self) { id in Account(id: id, store: Store(name: "second"))
        }
        let graph = try await back.build()
        #expect(try graph[AccountListKey.self].makeAccount(AccountID(raw: 1)).store.name == "second")
        #expect(try await graph[AccountFactory.self](AccountID(raw: 1)).store.name == "second")
        try await graph.shutdown()

        // Synchronous, then asynchronous: gone.
        var gone = builder()
        gone.override(AccountKey.self, arguments: AccountID.self) { id in Account(id: id, store: Store(name: "first")) }
        gone.override(AccountKey.self, arguments: AccountID.self) { id in
            await Task.yield()
            return Account(id: id, store: Store(name: "second"))
        }
        let error = try #require(throws: ServiceGraphError.self) { try gone.validate() }
        #expect(error.codes == [.missingProvider])
    }

    @Test func aSynchronousOverrideGivesAnAsynchronousFactoryItsSynchronousForm() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { Store(name: "main") }
        builder.provide(ScopedStoreKey.self, lifetime: .scoped) { Store(name: "scoped") }
        builder.provide(AccountKey.self, lifetime: .scoped, arguments: AccountID.self, dependsOn: ScopedStoreKey.self) {
            id,
            store in
            await Task.yield()
            return Account(id: id, store: store)
        }
        // The override names no lifetime: both forms keep the replaced factory's, scoped.
        builder.override(AccountKey.self, arguments: AccountID.self, dependsOn: ScopedStoreKey.self) { id, store in
            Account(id: id, store: store, note: "override")
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let make = try await scope.resolve(SynchronousAccountFactory.self)
        let account = try make(AccountID(raw: 7))
        let scopedStore = try await scope.resolve(ScopedStoreKey.self)
        #expect(account.note == "override" && account.store === scopedStore)
        // Scoped, as the form it was added beside: the graph itself refuses it.
        let refused = try #require(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(SynchronousAccountFactory.self)
        }
        #expect(refused.codes == [.wrongLifetime])
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aChildGraphInheritsBothFormsAndItsOwnAsynchronousProviderReplacesThem() async throws {
        let parent = try await builder().build()
        let child = try await parent.makeChildBuilder().build()
        #expect(try child[AccountListKey.self].makeAccount(AccountID(raw: 1)).store === parent[StoreKey.self])
        #expect(try child[SynchronousAccountFactory.self](AccountID(raw: 2)).id.raw == 2)
        try await child.shutdown()

        var replacing = parent.makeChildBuilder()
        replacing.provide(AccountKey.self, arguments: AccountID.self) { id in
            await Task.yield()
            return Account(id: id, store: Store(name: "child"))
        }
        // The parent's synchronous form is not the child's factory: the child has none, and what
        // depends on one in the child is told at validation.
        let asynchronousChild = try await replacing.build()
        #expect(try await asynchronousChild[AccountFactory.self](AccountID(raw: 1)).store.name == "child")
        let withdrawn = try await #require(throws: ServiceGraphError.self) {
            try await asynchronousChild.resolve(SynchronousAccountFactory.self)
        }
        #expect(withdrawn.codes == [.keyNotFound])
        try await asynchronousChild.shutdown()
        replacing.provide(LoopKey.self, dependsOn: SynchronousAccountFactory.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try replacing.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "synchronous AccountKey(AccountID)")

        var synchronous = parent.makeChildBuilder()
        synchronous.provide(AccountKey.self, arguments: AccountID.self) { id in
            Account(id: id, store: Store(name: "child"))
        }
        synchronous.provide(AccountListKey.self, dependsOn: SynchronousAccountFactory.self) {
            AccountList(makeAccount: $0)
        }
        let own = try await synchronous.build()
        #expect(try own[AccountListKey.self].makeAccount(AccountID(raw: 3)).store.name == "child")
        #expect(try parent[AccountListKey.self].makeAccount(AccountID(raw: 3)).store.name == "main")
        try await own.shutdown()
        try await parent.shutdown()
    }

    @Test func lintCountsTheTwoFormsAsOneFactory() throws {
        // Used through the synchronous form only: neither form is unused.
        #expect(builder().lint().filter { $0.code == .unusedProvider }.map(\.key) == ["AccountListKey"])

        // Used through neither: one warning, for the factory.
        var unused = ServiceGraph.Builder()
        unused.provide(StoreKey.self) { Store(name: "main") }
        unused.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        #expect(unused.lint().filter { $0.code == .unusedProvider }.map(\.key) == ["AccountKey(AccountID)"])
    }

    @Test func dumpsDrawTheSynchronousFormWithItsFunctionType() async throws {
        let graph = try await builder().build()
        let text = graph.dump(.text)
        #expect(text.contains("synchronous AccountKey(AccountID): (AccountID) throws -> Account [singleton function"))
        #expect(text.contains("AccountKey(AccountID): (AccountID) async throws -> Account [singleton function"))
        #expect(graph.dump(.dot).contains("synchronous AccountKey(AccountID)\\n(AccountID) throws -> Account"))
        #expect(graph.dump(.mermaid).contains("synchronous AccountKey(AccountID)<br/>(AccountID) throws -#gt; Account"))
        struct Dump: Decodable {
            struct Service: Decodable {
                let key: String
                let valueType: String
                let arguments: [String]?
            }
            let services: [Service]
        }
        let services = try JSONDecoder().decode(Dump.self, from: Data(graph.dump(.json).utf8)).services
        let form = try #require(services.first { $0.key == "synchronous AccountKey(AccountID)" })
        #expect(form.valueType == "(AccountID) throws -> Account" && form.arguments == ["AccountID"])
        try await graph.shutdown()
    }

    @Test func manyThreadsCallTheSynchronousFormAtOnce() async throws {
        let made = Tally()
        let graph = try await builder(made: made).build()
        let make = graph[SynchronousAccountFactory.self]
        let store = graph[StoreKey.self]
        let sameStore = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 1_000) { index in
            guard let account = try? make(AccountID(raw: index)), account.id.raw == index else { return }
            if account.store === store { sameStore.withLock { $0 += 1 } }
        }
        #expect(sameStore.withLock { $0 } == 1_000)
        #expect(made.count == 1_000)
        try await graph.shutdown()
    }

    // MARK: - Review findings: forms that could make different things, problems reported twice

    @Test func overridingTheFunctionItselfTakesTheSynchronousFormAway() async throws {
        // A double of the asynchronous function only: the synchronous form must not keep making the
        // production value, nor be built from a provider validation never checked.
        var builder = ServiceGraph.Builder()
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: ScopedStoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        builder.override(AccountFactory.self) { { id in Account(id: id, store: Store(name: "double")) } }
        builder.provide(AccountListKey.self, dependsOn: SynchronousAccountFactory.self) { AccountList(makeAccount: $0) }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "synchronous AccountKey(AccountID)")
        #expect(error.problems[0].message.contains("as its override's closure is asynchronous"))

        var valued = ServiceGraph.Builder()
        valued.provide(StoreKey.self) { Store(name: "main") }
        valued.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        valued.override(AccountFactory.self, with: { id in Account(id: id, store: Store(name: "double")) })
        let graph = try await valued.build()
        #expect(try await graph[AccountFactory.self](AccountID(raw: 1)).store.name == "double")
        let withdrawn = try await #require(throws: ServiceGraphError.self) {
            try await graph.resolve(SynchronousAccountFactory.self)
        }
        #expect(withdrawn.codes == [.keyNotFound])
        try await graph.shutdown()
    }

    @Test func theSynchronousFormIsNotAKeyToProvideOrOverrideOnItsOwn() throws {
        // On its own, the synchronous form would make something the asynchronous form does not.
        var overridden = builder()
        overridden.override(SynchronousAccountFactory.self) { { id in Account(id: id, store: Store(name: "direct")) } }
        let error = try #require(throws: ServiceGraphError.self) { try overridden.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(error.problems[0].key == "synchronous AccountKey(AccountID)")
        #expect(
            error.problems[0].message
                == "synchronous AccountKey(AccountID) is a form of AccountKey(AccountID), made with it from one "
                + "closure, not a key to override on its own: override the factory with "
                + "`override(_:arguments:dependsOn:factory:)` and a closure that does not await, which gives both forms"
        )
        #expect(error.problems[0].site?.line != nil)

        var provided = ServiceGraph.Builder()
        provided.provide(StoreKey.self) { Store(name: "main") }
        provided.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            await Task.yield()
            return Account(id: id, store: store)
        }
        provided.provide(SynchronousAccountFactory.self) { { id in Account(id: id, store: Store(name: "direct")) } }
        let refused = try #require(throws: ServiceGraphError.self) { try provided.validate() }
        #expect(refused.codes == [.invalidKey])
        #expect(refused.problems[0].message.contains("not a key to provide on its own"))
    }

    @Test func aSynchronousOverrideOfAFactoryNeverProvidedIsOneProblem() throws {
        var builder = ServiceGraph.Builder()
        builder.override(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.overrideOfUnknownKey])
        #expect(error.problems[0].key == "AccountKey(AccountID)")
    }

    @Test func aFactoryProvidedTwiceOrWithAWrapperOfAWrapperIsOneProblem() throws {
        var twice = builder()
        twice.provide(AccountKey.self, arguments: AccountID.self) { id in Account(id: id, store: Store(name: "again")) }
        let duplicate = try #require(throws: ServiceGraphError.self) { try twice.validate() }
        #expect(duplicate.codes == [.duplicateProvider])
        #expect(duplicate.problems[0].key == "AccountKey(AccountID)")

        var wrapped = ServiceGraph.Builder()
        wrapped.provide(StoreKey.self) { Store(name: "main") }
        wrapped.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self, Provider<LoopKey>?.self) {
            id,
            store,
            _ in Account(id: id, store: store)
        }
        let nested = try #require(throws: ServiceGraphError.self) { try wrapped.validate() }
        #expect(nested.codes == [.invalidKey])
        #expect(nested.problems[0].key == "AccountKey(AccountID)")

        var optional = ServiceGraph.Builder()
        optional.provide(StoreKey.self) { Store(name: "main") }
        optional.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self, LoopKey?.self) {
            id,
            store,
            _ in Account(id: id, store: store)
        }
        optional.declareEntryPoints(AccountFactory.self)
        let warnings = optional.lint()
        #expect(warnings.map(\.code) == [.absentOptionalDependency])
        #expect(warnings.map(\.key) == ["AccountKey(AccountID)"])
    }

    @Test func anEntryPointOnEitherFormCoversTheFactory() {
        var builder = ServiceGraph.Builder()
        builder.provide(StoreKey.self) { Store(name: "main") }
        builder.provide(AccountKey.self, arguments: AccountID.self, dependsOn: StoreKey.self) { id, store in
            Account(id: id, store: store)
        }
        var synchronous = builder
        synchronous.declareEntryPoints(SynchronousAccountFactory.self)
        #expect(synchronous.lint().isEmpty)
        var asynchronous = builder
        asynchronous.declareEntryPoints(AccountFactory.self)
        #expect(asynchronous.lint().isEmpty)
        #expect(builder.lint().map(\.key) == ["AccountKey(AccountID)"])
    }

    @Test func aChildCountsItsInheritedFormsAsOneFactory() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.provide(StoreKey.self) { Store(name: "main") }
        parentBuilder.provide(ScopedStoreKey.self, lifetime: .scoped) { Store(name: "scoped") }
        parentBuilder.provide(
            AccountKey.self,
            lifetime: .transient,
            arguments: AccountID.self,
            dependsOn: ScopedStoreKey.self
        ) { id, store in Account(id: id, store: store) }
        parentBuilder.declareEntryPoints(AccountFactory.self)
        let parent = try await parentBuilder.build()
        var child = parent.makeChildBuilder()
        // The child's lint: one factory, unused in the child, reported once.
        #expect(child.lint().filter { $0.key.contains("AccountKey") }.map(\.key) == ["AccountKey(AccountID)"])
        // A child that makes the scoped store a singleton makes the factory's transient forms need no
        // scope, fine; one that makes the factory a singleton over a scoped store: one captive problem.
        child.override(AccountKey.self, lifetime: .singleton, arguments: AccountID.self, dependsOn: ScopedStoreKey.self)
        {
            id,
            store in Account(id: id, store: store)
        }
        let error = try #require(throws: ServiceGraphError.self) { try child.validate() }
        #expect(error.codes == [.captiveDependency])
        #expect(error.problems[0].key == "AccountKey(AccountID)")
        try await parent.shutdown()
    }
}
