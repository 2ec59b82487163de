import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// A request scope's usual life takes shortcuts: its seeds go straight to their cells, each scoped
/// instance's hooks test is remembered per dynamic type, and a close with nothing in flight runs
/// without suspending. These tests hold each shortcut to what the general path does.
@Suite("Request scope fast paths")
struct RequestScopeFastPathTests {
    protocol Greeter: Sendable {
        var name: String { get }
    }

    /// A greeter without hooks, a value.
    struct PlainGreeter: Greeter {
        let name: String
    }

    /// A greeter value with hooks.
    struct HookedValueGreeter: Greeter, LifecycleHooks {
        let name: String
        let log: EventLog

        func didAdd() async throws { log.record("didAdd \(name)") }
        func willRemove() async throws { log.record("willRemove \(name)") }
    }

    /// A greeter object with hooks.
    final class HookedGreeter: Greeter, LifecycleHooks {
        let name: String
        let log: EventLog

        init(name: String, log: EventLog) {
            self.name = name
            self.log = log
        }

        func didAdd() async throws { log.record("didAdd \(name)") }
        func willRemove() async throws { log.record("willRemove \(name)") }
    }

    /// A base class without hooks, whose subclass has them.
    class Connection: @unchecked Sendable {
        let name: String
        init(name: String) { self.name = name }
    }

    final class HookedConnection: Connection, LifecycleHooks, @unchecked Sendable {
        let log: EventLog

        init(name: String, log: EventLog) {
            self.log = log
            super.init(name: name)
        }

        func didAdd() async throws { log.record("didAdd \(name)") }
        func willRemove() async throws { log.record("willRemove \(name)") }
    }

    /// Notes its release in a log.
    final class Released: Sendable {
        let name: String
        let log: EventLog

        init(_ name: String, log: EventLog) {
            self.name = name
            self.log = log
        }

        deinit { log.record("released \(name)") }
    }

    /// A value too wide for an existential's inline storage (more than three words), with hooks.
    struct WideHookedValue: Greeter, LifecycleHooks {
        let name: String
        let log: EventLog
        var padding: (Int, Int, Int) = (1, 2, 3)

        func didAdd() async throws { log.record("didAdd \(name)") }
        func willRemove() async throws { log.record("willRemove \(name)") }
    }

    /// A value too wide for an existential's inline storage, without hooks.
    struct WidePlainValue: Greeter {
        let name: String
        var padding: (Int, Int, Int, Int) = (1, 2, 3, 4)
    }

    enum GreeterKey: ServiceKey { typealias Value = any Greeter }
    enum WideHookedKey: ServiceKey { typealias Value = WideHookedValue }
    enum WidePlainKey: ServiceKey { typealias Value = WidePlainValue }
    enum WideGreeterKey: ServiceKey { typealias Value = any Greeter }
    enum MaybeGreeterKey: ServiceKey { typealias Value = HookedValueGreeter? }
    enum ConnectionKey: ServiceKey { typealias Value = Connection }
    enum FirstSeed: ServiceKey { typealias Value = Released }
    enum SecondSeed: ServiceKey { typealias Value = Released }
    enum ThirdSeed: ServiceKey { typealias Value = Released }
    enum HolderKey: ServiceKey { typealias Value = Released }

    /// The kind of greeter the `index`th scope gets: the dynamic type changes from scope to scope, in
    /// runs and alone, so that a remembered answer is reused and replaced.
    static func greeter(_ index: Int, log: EventLog) -> any Greeter {
        switch [1, 0, 0, 1, 2, 2, 1, 0][index % 8] {
        case 0: HookedGreeter(name: "g\(index)", log: log)
        case 1: PlainGreeter(name: "g\(index)")
        default: HookedValueGreeter(name: "g\(index)", log: log)
        }
    }

    static func hasHooks(_ index: Int) -> Bool { [1, 0, 0, 1, 2, 2, 1, 0][index % 8] != 1 }

    @Test func theHooksOfEachScopedInstanceRunByItsOwnDynamicTypeNotTheLastOnesMade() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(GreeterKey.self, lifetime: .scoped) { Self.greeter(made.increment() - 1, log: log) }
        let graph = try await builder.build()
        for index in 0..<16 {
            let scope = try graph.makeScope()
            #expect(try await scope.resolve(GreeterKey.self).name == "g\(index)")
            try await scope.close()
        }
        let expected = (0..<16).filter(Self.hasHooks).flatMap { ["didAdd g\($0)", "willRemove g\($0)"] }
        #expect(log.all == expected)
        try await graph.shutdown()
    }

    /// A wide value's hooks test is remembered under its static type (found without boxing the value);
    /// behind an existential, under each value's dynamic type, which changes from scope to scope.
    @Test func wideValuesRunTheirHooksInEveryScopeTypedOrBehindAnExistential() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(WideHookedKey.self, lifetime: .scoped) {
            WideHookedValue(name: "h\(made.increment())", log: log)
        }
        builder.provide(WidePlainKey.self, lifetime: .scoped) { WidePlainValue(name: "p") }
        let greeters = Tally()
        builder.provide(WideGreeterKey.self, lifetime: .scoped) { () -> any Greeter in
            let index = greeters.increment()
            return index % 2 == 0 ? WideHookedValue(name: "g\(index)", log: log) : WidePlainValue(name: "g\(index)")
        }
        let graph = try await builder.build()
        for _ in 1...6 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(WideHookedKey.self)
            #expect(try await scope.resolve(WidePlainKey.self).padding == (1, 2, 3, 4))
            _ = try await scope.resolve(WideGreeterKey.self)
            try await scope.close()
        }
        let expected = (1...6).flatMap { index in
            index % 2 == 0
                ? ["didAdd h\(index)", "didAdd g\(index)", "willRemove g\(index)", "willRemove h\(index)"]
                : ["didAdd h\(index)", "willRemove h\(index)"]
        }
        #expect(log.all == expected)
        try await graph.shutdown()
    }

    /// The hooks test looks inside an optional, so its answer is the wrapped value's: one scope's `nil`
    /// must not be remembered for the next scope's value.
    @Test func anOptionalValueRunsTheHooksOfWhatItHoldsInEachScope() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(MaybeGreeterKey.self, lifetime: .scoped) { () -> HookedValueGreeter? in
            let index = made.increment()
            return index % 2 == 0 ? HookedValueGreeter(name: "g\(index)", log: log) : nil
        }
        let graph = try await builder.build()
        for _ in 1...4 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(MaybeGreeterKey.self)
            try await scope.close()
        }
        let expected = [2, 4].flatMap { ["didAdd g\($0)", "willRemove g\($0)"] }
        #expect(log.all == expected)
        try await graph.shutdown()
    }

    @Test func aSubclassWithHooksGetsThemWhereItsBaseClassHasNone() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(ConnectionKey.self, lifetime: .scoped) { () -> Connection in
            let index = made.increment()
            return index % 3 == 0 ? HookedConnection(name: "c\(index)", log: log) : Connection(name: "c\(index)")
        }
        let graph = try await builder.build()
        for _ in 1...9 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(ConnectionKey.self)
            try await scope.close()
        }
        #expect(log.all == [3, 6, 9].flatMap { ["didAdd c\($0)", "willRemove c\($0)"] })
        try await graph.shutdown()
    }

    @Test(arguments: 0..<4) func scopesMadeAtOnceWithTypesThatChangeRunEveryHookOnce(round: Int) async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(GreeterKey.self, lifetime: .scoped) { Self.greeter(made.increment() - 1, log: log) }
        let graph = try await builder.build()
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    let scope = try graph.makeScope()
                    let name = try await scope.resolve(GreeterKey.self).name
                    try await scope.close()
                    return name
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(names).count == 200)
        let hooked = (0..<200).filter(Self.hasHooks).map { "g\($0)" }
        let entries = log.all
        #expect(entries.filter { $0.hasPrefix("didAdd") }.sorted() == hooked.map { "didAdd \($0)" }.sorted())
        #expect(entries.filter { $0.hasPrefix("willRemove") }.sorted() == hooked.map { "willRemove \($0)" }.sorted())
        try await graph.shutdown()
    }

    @Test func seedsGivenInAnyOrderAreReleasedLastInTheSameOrder() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(FirstSeed.self)
        builder.seed(SecondSeed.self)
        builder.seed(ThirdSeed.self)
        let log = EventLog()
        builder.provide(HolderKey.self, lifetime: .scoped, dependsOn: SecondSeed.self) {
            Released("holder of \($0.name)", log: log)
        }
        let graph = try await builder.build()
        var orders: [[String]] = []
        for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]] {
            let scopeLog = EventLog()
            let scope: ServiceScope
            do {
                // The scope holds the only references once this block ends.
                let seeds = [
                    ScopeSeed(FirstSeed.self, Released("first", log: scopeLog)),
                    ScopeSeed(SecondSeed.self, Released("second", log: scopeLog)),
                    ScopeSeed(ThirdSeed.self, Released("third", log: scopeLog)),
                ]
                scope = try graph.makeScope(seeding: order.map { seeds[$0] })
            }
            #expect(scopeLog.all.isEmpty)
            #expect(try scope.resolveSynchronously(ThirdSeed.self).name == "third")
            #expect(try await scope.resolve(HolderKey.self).name == "holder of second")
            try await scope.close()
            orders.append(scopeLog.all)
        }
        // Each seed at its own key whatever the order given, all released at the close, in one order.
        #expect(orders.allSatisfy { $0 == orders[0] }, "\(orders)")
        #expect(Set(orders[0]) == ["released first", "released second", "released third"])
        #expect(log.all == Array(repeating: "released holder of second", count: 4))
        try await graph.shutdown()
    }

    @Test func aSeedGivenTwiceOrMissingIsStillReportedWhenTheCountIsRight() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(FirstSeed.self)
        builder.seed(SecondSeed.self)
        let graph = try await builder.build()
        let log = EventLog()
        // Two seeds, as the kind has, but the same key twice: one is missing.
        let error = try #require(throws: ServiceGraphError.self) {
            try graph.makeScope(
                seeding: ScopeSeed(FirstSeed.self, Released("a", log: log)),
                ScopeSeed(FirstSeed.self, Released("b", log: log))
            )
        }
        #expect(Set(error.codes) == [.duplicateSeed, .missingSeed], "\(error)")
        try await graph.shutdown()
    }

    @Test func aCloseWithNothingInFlightReleasesEverythingAndCannotBeRepeated() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(FirstSeed.self)
        builder.provide(HolderKey.self, lifetime: .scoped, dependsOn: FirstSeed.self) { _ in
            Released("holder", log: log)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(FirstSeed.self, Released("seed", log: log)))
        _ = try await scope.resolve(HolderKey.self)
        try await scope.close()
        #expect(log.all == ["released holder", "released seed"])
        #expect(scope.isClosed)
        let again = await #expect(throws: ServiceGraphError.self) { try await scope.close() }
        #expect(again?.codes == [.scopeClosed])
        let resolve = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(HolderKey.self) }
        #expect(resolve?.codes == [.scopeClosed])
        try await graph.shutdown()
        #expect(log.all == ["released holder", "released seed"])
    }
}
