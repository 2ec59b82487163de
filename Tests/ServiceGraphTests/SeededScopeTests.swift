import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

private struct User: Sendable, Equatable {
    let id: Int
    let name: String
}

private enum SessionUser: ServiceKey { typealias Value = User }
private enum RequestID: ServiceKey { typealias Value = String }
private enum Greeting: ServiceKey { typealias Value = String }
private enum Cart: ServiceKey { typealias Value = HookedService }
private enum Connection: ServiceKey { typealias Value = HookedService }
private enum Clock: ServiceKey { typealias Value = Int }
private enum Audit: ServiceKey { typealias Value = String }

@Suite("Seeded scopes")
struct SeededScopeTests {
    /// A session graph: the user and the request id are seeds; a scoped cart and a transient greeting
    /// are made from them and a singleton.
    private func sessionBuilder(_ log: EventLog, carts: Tally = Tally()) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.seed(SessionUser.self)
        builder.seed(RequestID.self)
        builder.provide(Clock.self) { 42 }
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: SessionUser.self) { user in
            HookedService("Cart(\(user.name)#\(carts.increment()))", log: log)
        }
        builder.provide(Greeting.self, lifetime: .transient, dependsOn: SessionUser.self, RequestID.self, Clock.self) {
            "hello \($0.name) (\($1)) at \($2)"
        }
        builder.declareEntryPoints(Cart.self, Greeting.self)
        return builder
    }

    @Test func scopedAndTransientServicesAreMadeFromTheScopesSeeds() async throws {
        let log = EventLog()
        let graph = try await sessionBuilder(log).build()
        let ada = try graph.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 1, name: "Ada")),
            ScopeSeed(RequestID.self, "r-1")
        )
        let bob = try graph.makeScope(
            seeding: [ScopeSeed(RequestID.self, "r-2"), ScopeSeed(SessionUser.self, User(id: 2, name: "Bob"))]
        )
        #expect(try await ada.resolve(SessionUser.self) == User(id: 1, name: "Ada"))
        #expect(try ada.resolveSynchronously(SessionUser.self) == User(id: 1, name: "Ada"))
        #expect(try await bob.resolve(RequestID.self) == "r-2")
        #expect(try await ada.resolve(Greeting.self) == "hello Ada (r-1) at 42")
        #expect(try await bob.resolve(Greeting.self) == "hello Bob (r-2) at 42")
        let cart = try await ada.resolve(Cart.self)
        #expect(cart.name == "Cart(Ada#1)")
        #expect(try await ada.resolve(Cart.self) === cart)
        #expect(try await bob.resolve(Cart.self).name == "Cart(Bob#2)")
        try await ada.close()
        try await bob.close()
        try await graph.shutdown()
    }

    /// Seeds are placed by key in every order given, whether or not they come in the order the kind
    /// declares them (read without a lookup then); a repeated key is refused even when the count is right.
    @Test func seedsInAnyOrderArePlacedByKeyAndARepeatedOneIsRefused() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(SessionUser.self)
        builder.seed(RequestID.self)
        builder.seed(Audit.self)
        builder.declareEntryPoints(SessionUser.self, RequestID.self, Audit.self)
        let graph = try await builder.build()
        let seeds = [
            ScopeSeed(SessionUser.self, User(id: 7, name: "Eve")), ScopeSeed(RequestID.self, "r-7"),
            ScopeSeed(Audit.self, "audit-7"),
        ]
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let scope = try graph.makeScope(seeding: order.map { seeds[$0] })
            #expect(try scope.resolveSynchronously(SessionUser.self) == User(id: 7, name: "Eve"), "order \(order)")
            #expect(try scope.resolveSynchronously(RequestID.self) == "r-7", "order \(order)")
            #expect(try await scope.resolve(Audit.self) == "audit-7", "order \(order)")
            try await scope.close()
        }
        for repeated in [
            [seeds[0], seeds[1], seeds[1]], [seeds[0], seeds[0], seeds[2]], [seeds[2], seeds[1], seeds[2]],
        ] {
            let error = try #require(throws: ServiceGraphError.self) { try graph.makeScope(seeding: repeated) }
            #expect(error.problems.map(\.code).contains(.duplicateSeed))
            #expect(error.problems.map(\.code).contains(.missingSeed))
        }
        try await graph.shutdown()
    }

    @Test func aSeedIsTheSameValueForEveryConcurrentReader() async throws {
        let log = EventLog()
        let carts = Tally()
        let graph = try await sessionBuilder(log, carts: carts).build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 7, name: "Eve")),
            ScopeSeed(RequestID.self, "r")
        )
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<200 {
                group.addTask {
                    index.isMultiple(of: 2)
                        ? try await scope.resolve(SessionUser.self).name : try await scope.resolve(Cart.self).name
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(names == ["Eve", "Cart(Eve#1)"])
        #expect(carts.count == 1)
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func everyWrongSeedIsReportedAtOnceAndNoScopeIsMade() async throws {
        let log = EventLog()
        let opened = Tally()
        var builder = sessionBuilder(log)
        builder.eventHandler = { event in if event.kind == .scopeOpened { opened.increment() } }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(
                seeding: ScopeSeed(SessionUser.self, User(id: 1, name: "Ada")),
                ScopeSeed(SessionUser.self, User(id: 2, name: "Bob")),
                ScopeSeed(Clock.self, 1),
                ScopeSeed(Audit.self, "not in the graph")
            )
        }
        #expect(error.codes == [.duplicateSeed, .unexpectedSeed, .unexpectedSeed, .missingSeed])
        #expect(error.problems.map(\.key) == ["SessionUser", "Clock", "Audit", "RequestID"])
        #expect(error.problems[0].message == "SessionUser was given to a scope twice")
        #expect(error.problems[1].message.contains("the graph provides it"))
        #expect(error.problems[2].message.contains("declare it with builder.seed(_:)"))
        #expect(error.problems[3].message.contains("RequestID is a seed of the graph's scopes"))
        // The seed's declaration is the site of a missing seed.
        #expect(error.problems[3].site?.fileID.hasSuffix("SeededScopeTests.swift") == true)
        // `makeScope()` of a graph with seeds is missing all of them.
        let unseeded = try #require(throws: ServiceGraphError.self) { try graph.makeScope() }
        #expect(unseeded.codes == [.missingSeed, .missingSeed])
        #expect(unseeded.problems.map(\.key) == ["SessionUser", "RequestID"])
        #expect(opened.count == 0)
        try await graph.shutdown()
    }

    @Test func aGraphWithoutSeedsRefusesAnySeed() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Clock.self) { 1 }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(Clock.self, 2))
        }
        #expect(error.codes == [.unexpectedSeed])
        let scope = try graph.makeScope(seeding: [])
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func validationReportsEveryMisuseOfASeedWithPathAndSite() throws {
        var builder = ServiceGraph.Builder()
        builder.seed(SessionUser.self)
        builder.seed(SessionUser.self)  // declared twice
        builder.seed(RequestID.self)
        builder.provide(RequestID.self, lifetime: .scoped) { "provided as well" }  // a seed and a provider
        builder.provide(Greeting.self, dependsOn: SessionUser.self) { "\($0.name)" }  // a singleton on a seed
        builder.provide(Audit.self, dependsOn: Greeting.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider, .duplicateProvider, .captiveDependency])
        #expect(error.problems[0].message.hasPrefix("SessionUser is declared as a seed twice: first at "))
        #expect(error.problems[1].message.hasPrefix("RequestID is both a seed of each scope (at "))
        let captive = error.problems[2]
        #expect(captive.key == "Greeting")
        #expect(captive.path == ["Audit", "Greeting", "SessionUser"])
        #expect(captive.message.contains("depends on SessionUser (a seed, given to each scope)"))
        #expect(captive.site?.fileID.hasSuffix("SeededScopeTests.swift") == true)
    }

    @Test func aSeedCannotBeResolvedFromTheGraphItself() async throws {
        let log = EventLog()
        let graph = try await sessionBuilder(log).build()
        let error = try await #require(throws: ServiceGraphError.self) { try await graph.resolve(SessionUser.self) }
        #expect(error.codes == [.wrongLifetime])
        #expect(
            error.problems[0].message
                == "SessionUser is a seed, given to each scope; resolve it from a ServiceScope (graph.makeScope(seeding:))"
        )
        let transient = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(Greeting.self) }
        #expect(transient.codes == [.wrongLifetime])
        try await graph.shutdown()
    }

    @Test func seedsAreReleasedLastAndOnlyOwnedOnesGetWillRemove() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.seed(Cart.self)
        builder.provide(Audit.self, lifetime: .scoped, dependsOn: Connection.self, Cart.self) { connection, cart in
            "\(connection.name)+\(cart.name)"
        }
        let live = WeakRegistry()
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope(
                seeding: ScopeSeed(Connection.self, live.track(HookedService("owned", log: log)), ownedByScope: true),
                ScopeSeed(Cart.self, live.track(HookedService("borrowed", log: log)))
            )
            #expect(try await scope.resolve(Audit.self) == "owned+borrowed")
            try await scope.close()
        }
        // No didAdd for either; willRemove only for the owned one; the scope let both go.
        #expect(log.all == ["init owned", "init borrowed", "willRemove owned"])
        #expect(live.alive == 0)
        try await graph.shutdown()
    }

    @Test func anOwnedSeedGetsWillRemoveAfterEveryScopedInstance() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: Connection.self) { _ in HookedService("cart", log: log)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(Connection.self, HookedService("connection", log: log), ownedByScope: true)
        )
        _ = try await scope.resolve(Cart.self)
        try await graph.shutdown()  // closes the open scope first
        #expect(log.all == ["init connection", "init cart", "didAdd cart", "willRemove cart", "willRemove connection"])
    }

    @Test func aDroppedScopeRunsTheOwnedSeedsWillRemoveAndReleasesEverySeed() async throws {
        let log = EventLog()
        let live = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.seed(Cart.self)
        let graph = try await builder.build()
        do {
            _ = try graph.makeScope(
                seeding: ScopeSeed(Connection.self, live.track(HookedService("owned", log: log)), ownedByScope: true),
                ScopeSeed(Cart.self, live.track(HookedService("borrowed", log: log)))
            )
        }
        try await graph.shutdown()  // waits for the dropped scope's hooks
        #expect(log.all == ["init owned", "init borrowed", "willRemove owned"])
        #expect(live.alive == 0)
    }

    @Test func aScopeRefusesToOwnAnInstanceTheGraphOrAnotherScopeOwns() async throws {
        let log = EventLog()
        let shared = HookedService("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(Cart.self) { shared }
        builder.seed(Connection.self)
        let graph = try await builder.build()
        // The graph's singleton: the graph runs its hooks.
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(Connection.self, shared, ownedByScope: true))
        }
        #expect(error.codes == [.ownedSeedInUse])
        #expect(error.problems[0].key == "Connection")
        // Given without ownership, it is only read.
        let borrowing = try graph.makeScope(seeding: ScopeSeed(Connection.self, shared))
        try await borrowing.close()
        // One instance owned by one scope at a time; once that scope is closed, another may own it.
        let connection = HookedService("connection", log: log)
        let first = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        let second = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        }
        #expect(second.codes == [.ownedSeedInUse])
        try await first.close()
        let third = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        try await third.close()
        try await graph.shutdown()
        #expect(
            log.all == [
                "init shared", "didAdd shared", "init connection", "willRemove connection", "willRemove connection",
                "willRemove shared",
            ]
        )
    }

    @Test func aCallersSeedGetsNoHooksEvenThroughAScopedServiceThatHandsItOut() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: Connection.self) { $0 }
        let graph = try await builder.build()
        let connection = HookedService("caller's", log: log)
        for _ in 0..<2 {
            let scope = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection))
            #expect(try await scope.resolve(Cart.self) === connection)
            try await scope.close()
        }
        // Once no scope holds it, a scope may own it.
        let owning = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        #expect(try await owning.resolve(Cart.self) === connection)
        try await owning.close()
        try await graph.shutdown()
        #expect(log.all == ["init caller's", "willRemove caller's"])
    }

    @Test func aCallersSeedHeldByTwoOpenScopesGetsNoHooksWhenEitherCloses() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: Connection.self) { $0 }
        let graph = try await builder.build()
        let connection = HookedService("caller's", log: log)
        let first = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection))
        #expect(try await first.resolve(Cart.self) === connection)
        let second = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection))
        let third = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection))
        try await first.close()
        // The two still open share the claim the first one made: neither hands the hooks out.
        #expect(try await second.resolve(Cart.self) === connection)
        try await third.close()
        #expect(try await second.resolve(Cart.self) === connection)
        try await second.close()
        #expect(log.all == ["init caller's"])
        // Once no scope holds it, a scope may own it.
        let owning = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        try await owning.close()
        try await graph.shutdown()
        #expect(log.all == ["init caller's", "willRemove caller's"])
    }

    @Test func anInstanceOneScopeOwnsGetsItsHooksOnceWhenAnotherScopeBorrowsIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        builder.provide(Cart.self, lifetime: .scoped, dependsOn: Connection.self) { $0 }
        let graph = try await builder.build()
        let connection = HookedService("connection", log: log)
        let owning = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        // Borrowed by another scope, as the caller's seed, while the owner is open.
        let borrowing = try graph.makeScope(seeding: ScopeSeed(Connection.self, connection))
        try await owning.close()
        #expect(log.all == ["init connection", "willRemove connection"])
        // The borrower's service hands it out, and starts nothing: its owner ended it.
        #expect(try await borrowing.resolve(Cart.self) === connection)
        try await borrowing.close()
        try await graph.shutdown()
        #expect(log.all == ["init connection", "willRemove connection"])
    }

    @Test func aScopeThatIsNotMadeLeavesItsSeedsToTheCaller() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(Connection.self)
        let graph = try await builder.build()
        try await graph.shutdown()
        let connection = HookedService("connection", log: log)
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(seeding: ScopeSeed(Connection.self, connection, ownedByScope: true))
        }
        #expect(error.codes == [.graphShutDown])
        #expect(log.all == ["init connection"])
    }

    @Test func resolvingSynchronouslyInAScopeReadsSeedsAndNamesTheScopedServiceInTheWay() async throws {
        // A transient on a scoped service (not a seed) names the path to it.
        var builder = sessionBuilder(EventLog())
        builder.provide(Audit.self, lifetime: .transient, dependsOn: Greeting.self, Cart.self) { greeting, _ in greeting
        }
        let withCart = try await builder.build()
        let cartScope = try withCart.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 2, name: "Bo")),
            ScopeSeed(RequestID.self, "q")
        )
        let blocked = try #require(throws: ServiceGraphError.self) { try cartScope.resolveSynchronously(Audit.self) }
        #expect(blocked.codes == [.requiresAwait])
        #expect(blocked.problems[0].path == ["Audit", "Cart"])
        #expect(
            blocked.problems[0].message
                == "Audit cannot be resolved synchronously: it depends on the scoped service Cart, whose creation may suspend; use `try await scope.resolve`"
        )
        #expect(try await cartScope.resolve(Audit.self) == "hello Bo (q) at 42")
        try await cartScope.close()
        try await withCart.shutdown()

        let log = EventLog()
        let graph = try await sessionBuilder(log).build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 1, name: "Ada")),
            ScopeSeed(RequestID.self, "r")
        )
        #expect(try scope.resolveSynchronously(RequestID.self) == "r")
        #expect(try scope.resolveSynchronously(Clock.self) == 42)
        // A scoped instance is left to `resolve`, created or not: success must not depend on timing.
        for _ in 0..<2 {
            let error = try #require(throws: ServiceGraphError.self) { try scope.resolveSynchronously(Cart.self) }
            #expect(error.codes == [.requiresAwait])
            #expect(error.problems[0].message.contains("use `try await scope.resolve`"))
            _ = try await scope.resolve(Cart.self)
        }
        // A transient made from seeds and singletons is made without suspending, on either path.
        #expect(try scope.resolveSynchronously(Greeting.self) == "hello Ada (r) at 42")
        #expect(try await scope.resolve(Greeting.self) == "hello Ada (r) at 42")
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func seedReadsAreReportedWhenResolveEventsAreOn() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = sessionBuilder(log)
        builder.reportsResolveEvents = true
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 1, name: "Ada")),
            ScopeSeed(RequestID.self, "r")
        )
        #expect(try scope.resolveSynchronously(RequestID.self) == "r")
        #expect(try await scope.resolve(SessionUser.self).name == "Ada")
        let resolved = events.withLock { $0.filter { $0.kind == .resolved }.map(\.key) }
        #expect(resolved == ["RequestID", "SessionUser"])
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aChildGraphKeepsItsParentsSeedsAndMayReplaceOneWithAProvider() async throws {
        let log = EventLog()
        let parent = try await sessionBuilder(log).build()
        let child = try await parent.makeChildBuilder().build()
        let scope = try child.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 3, name: "Cy")),
            ScopeSeed(RequestID.self, "r-3")
        )
        #expect(try await scope.resolve(Greeting.self) == "hello Cy (r-3) at 42")
        try await scope.close()
        #expect(throws: ServiceGraphError.self) { try child.makeScope() }

        var fixed = parent.makeChildBuilder()
        fixed.override(RequestID.self) { "fixed" }
        let overridden = try await fixed.build()
        let session = try overridden.makeScope(seeding: ScopeSeed(SessionUser.self, User(id: 4, name: "Di")))
        #expect(try await session.resolve(Greeting.self) == "hello Di (fixed) at 42")
        try await session.close()
        // The code that seeds the scopes still passes the replaced seed: it is ignored.
        let seeded = try overridden.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 5, name: "Ed")),
            ScopeSeed(RequestID.self, "ignored")
        )
        #expect(try await seeded.resolve(Greeting.self) == "hello Ed (fixed) at 42")
        try await seeded.close()

        // A child's own provider of an inherited seed replaces it the same way.
        var provided = parent.makeChildBuilder()
        provided.provide(RequestID.self, lifetime: .scoped) { "child" }
        let providing = try await provided.build()
        let scoped = try providing.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 6, name: "Flo")),
            ScopeSeed(RequestID.self, "ignored")
        )
        #expect(try await scoped.resolve(Greeting.self) == "hello Flo (child) at 42")
        try await scoped.close()
        try await providing.shutdown()
        try await overridden.shutdown()
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func overridingASeedInATestGivesEveryScopeTheSameValue() async throws {
        let log = EventLog()
        var builder = sessionBuilder(log)
        builder.override(SessionUser.self) { User(id: 0, name: "Test") }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(RequestID.self, "t"))
        #expect(try await scope.resolve(Greeting.self) == "hello Test (t) at 42")
        try await scope.close()
        // The application's code that still seeds the user keeps working; the test's value wins.
        let seeded = try graph.makeScope(
            seeding: ScopeSeed(SessionUser.self, User(id: 9, name: "Real")),
            ScopeSeed(RequestID.self, "u")
        )
        #expect(try await seeded.resolve(Greeting.self) == "hello Test (u) at 42")
        try await seeded.close()
        try await graph.shutdown()
    }

    @Test func eventsAndTheStartupReportNameTheSeeds() async throws {
        let log = EventLog()
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = sessionBuilder(log)
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: ScopeSeed(RequestID.self, "r"),
            ScopeSeed(SessionUser.self, User(id: 1, name: "Ada"))
        )
        try await scope.close()
        let opened = events.withLock { $0.filter { $0.kind == .scopeOpened } }
        #expect(opened.map(\.key) == ["SessionUser, RequestID"])
        let report = graph.startupReport()
        #expect(report.seeds == ["SessionUser", "RequestID"])
        #expect(report.description.contains("Given to each scope (seeds): SessionUser, RequestID"))
        try await graph.shutdown()
    }

    @Test func lintNamesASeedNothingDependsOn() {
        var builder = ServiceGraph.Builder()
        builder.seed(RequestID.self)
        let warnings = builder.lint()
        #expect(
            warnings.map(\.message) == [
                "RequestID is declared as a seed but nothing depends on it; declare it as an entry point if the application resolves it"
            ]
        )
    }

    @Test func everyDumpFormatDrawsSeedsApart() async throws {
        let log = EventLog()
        let builder = sessionBuilder(log)
        let graph = try await builder.build()
        for dump in [builder.dump(.text), graph.dump(.text)] {
            #expect(dump.hasPrefix("ServiceGraph: 5 services (1 singleton, 3 scoped, 1 transient; 2 seeds)\n"))
            #expect(dump.contains("SessionUser: User [scoped seed] @ ServiceGraphTests/SeededScopeTests.swift:"))
            #expect(dump.contains("Cart: HookedService [scoped] @"))
        }
        for dot in [builder.dump(.dot), graph.dump(.dot)] {
            let seedLine = try #require(dot.split(separator: "\n").first { $0.contains("label=\"SessionUser\\n") })
            #expect(seedLine.contains("scoped seed"))
            #expect(seedLine.contains("shape=cds"))
            let cartLine = try #require(dot.split(separator: "\n").first { $0.contains("label=\"Cart\\n") })
            #expect(!cartLine.contains("shape=cds"))
        }
        for mermaid in [builder.dump(.mermaid), graph.dump(.mermaid)] {
            #expect(mermaid.contains("    s0[/\"SessionUser<br/>User<br/>scoped seed\"/]\n"))
            #expect(mermaid.contains("    class s0 seed\n"))
            #expect(mermaid.contains("    class s3 scoped\n"))
        }
        for json in [builder.dump(.json), graph.dump(.json)] {
            struct Dump: Decodable {
                struct Service: Decodable {
                    let key: String
                    let lifetime: String
                    let seed: Bool
                }
                let services: [Service]
            }
            let decoded = try JSONDecoder().decode(Dump.self, from: Data(json.utf8))
            #expect(decoded.services.filter(\.seed).map(\.key) == ["SessionUser", "RequestID"])
            #expect(decoded.services.filter(\.seed).allSatisfy { $0.lifetime == "scoped" })
        }
        try await graph.shutdown()
    }

    @Test func aDeepChainOfTransientsOnASeedIsMadeOnEveryPathWithTheScopesValue() async throws {
        // Key 0 is the seed; keys 1...200 are transients, each on the one before: deeper than the
        // recursion limit, so the iterative path reads the seed too.
        var builder = ServiceGraph.Builder()
        GeneratedKeys.seed(0, into: &builder)
        for index in 1...200 {
            GeneratedKeys.provide(index, lifetime: .transient, dependsOn: [index - 1], into: &builder)
        }
        let graph = try await builder.build()
        for seedValue in [10, 1_000] {
            let scope = try graph.makeScope(seeding: GeneratedKeys.scopeSeed(0, value: seedValue))
            #expect(try await scope.resolveGenerated(200).value == seedValue + 200)
            #expect(try scope.resolveGeneratedSynchronously(200).value == seedValue + 200)
            #expect(try scope.resolveGeneratedSynchronously(30).value == seedValue + 30)
            try await scope.close()
        }
        try await graph.shutdown()
    }

    @Test func asynchronousFactoriesReadSeedsBesideThePreparedDependencies() async throws {
        // Async factories whose dependencies mix seeds, created and new scoped services, transients and
        // singletons, in every order: each must get its own values, in declaration order.
        var builder = ServiceGraph.Builder()
        GeneratedKeys.provide(0, dependsOn: [], into: &builder)  // singleton, value 1
        GeneratedKeys.seed(1, into: &builder)
        GeneratedKeys.provide(2, lifetime: .scoped, dependsOn: [0], asynchronous: true, into: &builder)  // 2
        GeneratedKeys.provide(3, lifetime: .transient, dependsOn: [1], into: &builder)  // seed + 1
        GeneratedKeys.seed(4, into: &builder)
        GeneratedKeys.provide(5, lifetime: .scoped, dependsOn: [1, 2, 4], asynchronous: true, into: &builder)
        GeneratedKeys.provide(6, lifetime: .transient, dependsOn: [4, 3, 2], asynchronous: true, into: &builder)
        GeneratedKeys.provide(7, lifetime: .transient, dependsOn: [5, 1, 0], asynchronous: true, into: &builder)
        let graph = try await builder.build()
        let scope = try graph.makeScope(
            seeding: GeneratedKeys.scopeSeed(1, value: 100),
            GeneratedKeys.scopeSeed(4, value: 10_000)
        )
        #expect(try await scope.resolveGenerated(6).value == 1 + 10_000 + 101 + 2)
        #expect(try await scope.resolveGenerated(7).value == 1 + (1 + 100 + 2 + 10_000) + 100 + 1)
        #expect(try await scope.resolveGenerated(5).value == 1 + 100 + 2 + 10_000)
        try await scope.close()
        try await graph.shutdown()
    }
}
