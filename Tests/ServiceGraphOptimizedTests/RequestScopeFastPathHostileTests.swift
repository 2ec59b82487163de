import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Doubles

/// A hooked object whose factory and `didAdd` can be held open by gates.
private final class GatedHooks: LifecycleHooks, Sendable {
    let name: String
    let log: EventLog
    let didAddGate: Gate?

    init(_ name: String, log: EventLog, didAddGate: Gate?) {
        self.name = name
        self.log = log
        self.didAddGate = didAddGate
        log.record("init \(name)")
    }

    func didAdd() async throws {
        log.record("didAdd \(name)")
        if let didAddGate { await didAddGate.wait() }
        log.record("finished didAdd \(name)")
    }

    func willRemove() async throws { log.record("willRemove \(name)") }
}

private protocol Widget: Sendable {
    var name: String { get }
}

private struct PlainWidget: Widget {
    let name: String
}

private struct HookedValueWidget: Widget, LifecycleHooks {
    let name: String
    let log: EventLog

    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

private final class HookedWidget: Widget, LifecycleHooks {
    let name: String
    let log: EventLog

    init(name: String, log: EventLog) {
        self.name = name
        self.log = log
    }

    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// A generic class with hooks for one argument only: each specialization is a dynamic type of its own.
private final class GenericWidget<Tag>: Widget, @unchecked Sendable {
    let name: String
    let log: EventLog

    init(name: String, log: EventLog) {
        self.name = name
        self.log = log
    }
}

extension GenericWidget: LifecycleHooks where Tag == Int {
    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// A non-final base class without hooks; some subclasses have them, one inherits them.
private class Vehicle: @unchecked Sendable {
    let name: String
    let log: EventLog

    init(name: String, log: EventLog) {
        self.name = name
        self.log = log
    }
}

private final class PlainCar: Vehicle, @unchecked Sendable {}

private class HookedTruck: Vehicle, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// Inherits its hooks from its superclass.
private final class HeavyTruck: HookedTruck, @unchecked Sendable {}

private final class Note: Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}

private struct ValueHooks: LifecycleHooks {
    let name: String
    let log: EventLog

    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

// MARK: - Keys

private enum HookedKey: ServiceKey { typealias Value = HookedService }
private enum AliasKey: ServiceKey { typealias Value = HookedService }
private enum SingletonHookedKey: ServiceKey { typealias Value = HookedService }
private enum ScopedViewKey: ServiceKey { typealias Value = HookedService }
private enum NoteKey: ServiceKey { typealias Value = Note }
private enum GatedKey: ServiceKey { typealias Value = GatedHooks }
private enum SlowFactoryKey: ServiceKey { typealias Value = GatedHooks }
private enum WidgetKey: ServiceKey { typealias Value = any Widget }
private enum VehicleKey: ServiceKey { typealias Value = Vehicle }
private enum HookedSeed: ServiceKey { typealias Value = HookedService }
private enum NoteSeed: ServiceKey { typealias Value = Note }
private enum OtherNoteSeed: ServiceKey { typealias Value = Note }
private enum ValueHooksSeed: ServiceKey { typealias Value = ValueHooks }
private enum HandOutKey: ServiceKey { typealias Value = HookedService }
private enum UserSeed: ServiceKey { typealias Value = Note }
private enum RequestSeed: ServiceKey { typealias Value = Note }
private enum CartKey: ServiceKey { typealias Value = HookedService }
private enum CheckoutKey: ServiceKey { typealias Value = HookedService }

extension ScopeKind {
    fileprivate static let hostileSession = ScopeKind("hostile session")
    fileprivate static let hostileRequest = ScopeKind("hostile request", inside: .hostileSession)
}

// MARK: - Helpers

/// Runs `body`, swallowing a ``ServiceGraphError`` whose codes are all in `allowed`: the outcomes a
/// race may legitimately end in. Anything else is rethrown.
private func tolerating(
    _ allowed: Set<ServiceGraphError.Code>,
    _ body: () async throws -> Void
) async throws {
    do {
        try await body()
    } catch {
        guard let graphError = error as? ServiceGraphError, Set(graphError.codes).isSubset(of: allowed) else {
            throw error
        }
    }
}

/// Fails unless every instance the log saw made (`init <name>`) had at most one `didAdd`, and exactly
/// as many `willRemove`s as `didAdd`s; returns how many had their hooks run.
@discardableResult
private func expectEveryHookOnce(_ log: EventLog, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
    let entries = log.all
    var counts: [String: (made: Int, added: Int, removed: Int)] = [:]
    for entry in entries {
        if entry.hasPrefix("init ") {
            counts[String(entry.dropFirst(5)), default: (0, 0, 0)].made += 1
        } else if entry.hasPrefix("didAdd ") {
            counts[String(entry.dropFirst(7)), default: (0, 0, 0)].added += 1
        } else if entry.hasPrefix("willRemove ") {
            counts[String(entry.dropFirst(11)), default: (0, 0, 0)].removed += 1
        }
    }
    var hooked = 0
    for (name, count) in counts {
        #expect(count.made == 1, "\(name) made \(count.made) times", sourceLocation: sourceLocation)
        #expect(count.added <= 1, "\(name): didAdd ran \(count.added) times", sourceLocation: sourceLocation)
        #expect(
            count.removed == count.added,
            "\(name): didAdd ran \(count.added) times, willRemove \(count.removed)",
            sourceLocation: sourceLocation
        )
        if count.added == 1 { hooked += 1 }
    }
    return hooked
}

/// Waits, yielding, until `condition` holds (bounded by the caller's `withDeadline`).
private func waitUntil(_ condition: () -> Bool) async throws {
    while !condition() {
        try Task.checkCancellation()
        await Task.yield()
    }
}

// MARK: - Tests

/// Hostile tests of a request scope's fast paths (a synchronous close when nothing is in flight,
/// exact plain seeds written straight to their cells, and each scoped instance's hooks test remembered
/// per dynamic type): each race or odd input must end as the general path would.
@Suite("Request scope fast paths, hostile")
struct RequestScopeFastPathHostileTests {
    @Test func closesRacingResolvesAndAShutdownRunEveryHookOnceAndLeakNothing() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            let made = Tally()
            var builder = ServiceGraph.Builder()
            builder.provide(HookedKey.self, lifetime: .scoped) {
                registry.track(HookedService("s\(made.increment())", log: log))
            }
            builder.provide(NoteKey.self, lifetime: .scoped) { registry.track(Note("plain")) }
            let graph = try await builder.build()
            let scopes = try (0..<96).map { _ in try graph.makeScope() }
            let closes = Tally()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, scope) in scopes.enumerated() {
                    for round in 0..<4 {
                        group.addTask {
                            try await tolerating([.scopeClosed, .graphShutDown]) {
                                if round.isMultiple(of: 2) {
                                    _ = try await scope.resolve(HookedKey.self)
                                    _ = try await scope.resolve(NoteKey.self)
                                } else {
                                    _ = try await scope.resolve(NoteKey.self)
                                    _ = try await scope.resolve(HookedKey.self)
                                }
                            }
                        }
                    }
                    group.addTask {
                        try await tolerating([.scopeClosed]) {
                            try await scope.close()
                            closes.increment()
                        }
                    }
                    if index == scopes.count / 2 {
                        group.addTask { try await graph.shutdown() }
                    }
                }
                try await group.waitForAll()
            }
            // The shutdown closed whatever the scopes' own closes did not; each scope closed once.
            #expect(scopes.allSatisfy { $0.isClosed })
            #expect(closes.count <= scopes.count)
            expectEveryHookOnce(log)
            // Every hooked instance made was one of a scope: each got its willRemove.
            #expect(log.all.filter { $0.hasPrefix("didAdd") }.count == made.count)
            // The scopes are still referenced here: their instances were released by the closes.
            #expect(registry.alive == 0, "\(registry.alive) of \(registry.tracked) still alive")
        }
    }

    @Test func aCloseDuringACreationWaitsForItAndRunsTheHooksItOwes() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            let made = Tally()
            let gates = Locked<[Int: Gate]>([:])
            let factoryGates = Locked<[Int: Gate]>([:])
            var builder = ServiceGraph.Builder()
            // Suspended in didAdd.
            builder.provide(GatedKey.self, lifetime: .scoped) { () -> GatedHooks in
                let index = made.increment()
                let gate = gates.withLock { $0[index] }
                return registry.track(GatedHooks("d\(index)", log: log, didAddGate: gate))
            }
            // Suspended in the factory.
            builder.provide(SlowFactoryKey.self, lifetime: .scoped) { () async throws -> GatedHooks in
                let index = made.increment()
                log.record("factory f\(index)")
                if let gate = factoryGates.withLock({ $0[index] }) { await gate.wait() }
                return registry.track(GatedHooks("f\(index)", log: log, didAddGate: nil))
            }
            let graph = try await builder.build()
            for round in 0..<12 {
                let gate = Gate()
                let index = made.count + 1
                let inFactory = round.isMultiple(of: 2)
                let name = inFactory ? "f\(index)" : "d\(index)"
                if inFactory {
                    factoryGates.withLock { $0[index] = gate }
                } else {
                    gates.withLock { $0[index] = gate }
                }
                let scope = try graph.makeScope()
                let resolve = Task {
                    try await tolerating([.scopeClosed]) {
                        let value =
                            inFactory
                            ? try await scope.resolve(SlowFactoryKey.self) : try await scope.resolve(GatedKey.self)
                        #expect(value.name == name)
                    }
                }
                try await log.waitFor(inFactory ? "factory \(name)" : "didAdd \(name)")
                let close = Task { try await scope.close() }
                try await waitUntil { scope.isClosed }
                // The close is waiting for the creation: no willRemove before its didAdd finished.
                #expect(log.count(of: "willRemove \(name)") == 0)
                #expect(log.count(of: "finished didAdd \(name)") == 0)
                await gate.open()
                try await close.value
                try await resolve.value
                let entries = log.all.filter { $0.hasSuffix(" \(name)") }
                let expected =
                    inFactory
                    ? [
                        "factory \(name)", "init \(name)", "didAdd \(name)", "finished didAdd \(name)",
                        "willRemove \(name)",
                    ]
                    : ["init \(name)", "didAdd \(name)", "finished didAdd \(name)", "willRemove \(name)"]
                // A made instance either has both hooks or, refused by the closing scope, neither.
                let refused = inFactory ? ["factory \(name)"] : []
                #expect(entries == expected || entries == refused, "round \(round): \(entries)")
                #expect(registry.alive == 0, "round \(round)")
            }
            try await graph.shutdown()
            expectEveryHookOnce(log)
        }
    }

    @Test func scopesDroppedOrClosedByAnotherTaskReleaseEverythingOnce() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            let made = Tally()
            var builder = ServiceGraph.Builder()
            builder.seed(NoteSeed.self)
            builder.provide(HookedKey.self, lifetime: .scoped, dependsOn: NoteSeed.self) { note in
                registry.track(HookedService("\(note.text)-\(made.increment())", log: log))
            }
            let graph = try await builder.build()
            var closers: [Task<Void, any Error>] = []
            for index in 0..<150 {
                let scope = try graph.makeScope(seeding: ScopeSeed(NoteSeed.self, registry.track(Note("n\(index)"))))
                _ = try await scope.resolve(HookedKey.self)
                switch index % 3 {
                case 0:
                    // Dropped without a close: the graph closes it in the background.
                    break
                case 1:
                    // The only reference left is the closing task's.
                    closers.append(Task.detached { try await scope.close() })
                default:
                    // Closed by one task while another resolves.
                    closers.append(
                        Task.detached {
                            try await tolerating([.scopeClosed]) { _ = try await scope.resolve(HookedKey.self) }
                        }
                    )
                    try await scope.close()
                }
            }
            for closer in closers { try await closer.value }
            try await graph.shutdown()
            #expect(expectEveryHookOnce(log) == 150)
            #expect(log.all.filter { $0.hasPrefix("willRemove") }.count == 150)
            #expect(registry.alive == 0, "\(registry.alive) of \(registry.tracked) still alive")
        }
    }

    @Test func ownedOrHookedSeedsStillHaveTheirHooksDecidedByTheCheckedPath() async throws {
        try await withDeadline {
            let log = EventLog()
            var builder = ServiceGraph.Builder()
            builder.seed(HookedSeed.self)
            builder.seed(NoteSeed.self)
            builder.provide(HandOutKey.self, lifetime: .scoped, dependsOn: HookedSeed.self) { $0 }
            builder.provide(HookedKey.self, lifetime: .scoped, dependsOn: HookedSeed.self) { seed in
                HookedService("scoped over \(seed.name)", log: log)
            }
            let graph = try await builder.build()

            // Owned: its willRemove runs at the close, after the scoped instance's, and no didAdd.
            for index in 0..<20 {
                let owned = HookedService("owned\(index)", log: log)
                let scope = try graph.makeScope(
                    seeding: ScopeSeed(NoteSeed.self, Note("n")),
                    ScopeSeed(HookedSeed.self, owned, ownedByScope: true)
                )
                #expect(try await scope.resolve(HandOutKey.self) === owned)
                if index.isMultiple(of: 2) { _ = try await scope.resolve(HookedKey.self) }
                // The same instance, owned, cannot be given to a second scope while this one holds it.
                let inUse = #expect(throws: ServiceGraphError.self) {
                    try graph.makeScope(
                        seeding: ScopeSeed(HookedSeed.self, owned, ownedByScope: true),
                        ScopeSeed(NoteSeed.self, Note("n"))
                    )
                }
                #expect(inUse?.codes == [.ownedSeedInUse], "\(String(describing: inUse))")
                try await scope.close()
                let entries = log.all.filter { $0.hasSuffix("owned\(index)") }
                let expected =
                    index.isMultiple(of: 2)
                    ? [
                        "init owned\(index)", "init scoped over owned\(index)", "didAdd scoped over owned\(index)",
                        "willRemove scoped over owned\(index)", "willRemove owned\(index)",
                    ]
                    : ["init owned\(index)", "willRemove owned\(index)"]
                #expect(entries == expected, "\(entries)")
            }

            // The caller's, not owned: no hook runs on it, not even through the scoped service handing it
            // out, scope after scope (one at a time: scopes that overlap are not tested here).
            let callers = HookedService("caller's", log: log)
            let callersEntries = {
                log.all.filter { ["init caller's", "didAdd caller's", "willRemove caller's"].contains($0) }
            }
            for _ in 0..<16 {
                let scope = try graph.makeScope(
                    seeding: ScopeSeed(HookedSeed.self, callers),
                    ScopeSeed(NoteSeed.self, Note("n"))
                )
                #expect(try await scope.resolve(HandOutKey.self) === callers)
                _ = try await scope.resolve(HookedKey.self)
                try await scope.close()
            }
            #expect(callersEntries() == ["init caller's"])
            try await graph.shutdown()
            #expect(callersEntries() == ["init caller's"])
        }
    }

    @Test func aValueWithHooksSeededIsOnlyRemovedWhenOwned() async throws {
        try await withDeadline {
            let log = EventLog()
            var builder = ServiceGraph.Builder()
            builder.seed(ValueHooksSeed.self)
            let graph = try await builder.build()
            for index in 0..<10 {
                let owned = index.isMultiple(of: 2)
                let scope = try graph.makeScope(
                    seeding: ScopeSeed(
                        ValueHooksSeed.self,
                        ValueHooks(name: "v\(index)", log: log),
                        ownedByScope: owned
                    )
                )
                #expect(try scope.resolveSynchronously(ValueHooksSeed.self).name == "v\(index)")
                try await scope.close()
            }
            try await graph.shutdown()
            #expect(log.all == stride(from: 0, to: 10, by: 2).map { "willRemove v\($0)" })
        }
    }

    @Test func aChildGraphsProviderOfAParentSeedIgnoresTheValueGivenForIt() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            var parentBuilder = ServiceGraph.Builder()
            parentBuilder.seed(NoteSeed.self)
            parentBuilder.seed(OtherNoteSeed.self)
            parentBuilder.provide(NoteKey.self, lifetime: .scoped, dependsOn: NoteSeed.self, OtherNoteSeed.self) {
                Note("\($0.text)+\($1.text)")
            }
            let parent = try await parentBuilder.build()
            var childBuilder = parent.makeChildBuilder()
            let made = Tally()
            childBuilder.provide(NoteSeed.self, lifetime: .scoped) { Note("made\(made.increment())") }
            childBuilder.provide(HookedKey.self, lifetime: .scoped, dependsOn: NoteSeed.self) { note in
                HookedService("hooked over \(note.text)", log: log)
            }
            let child = try await childBuilder.build()

            for index in 0..<8 {
                // The parent still takes both seeds.
                let parentScope = try parent.makeScope(
                    seeding: ScopeSeed(OtherNoteSeed.self, Note("o")),
                    ScopeSeed(NoteSeed.self, Note("p\(index)"))
                )
                #expect(try await parentScope.resolve(NoteKey.self).text == "p\(index)+o")

                // The child: the value given for the replaced seed is ignored, whatever the order.
                let seeds = [
                    ScopeSeed(NoteSeed.self, registry.track(Note("given\(index)"))),
                    ScopeSeed(OtherNoteSeed.self, registry.track(Note("other\(index)"))),
                ]
                let scope = try child.makeScope(seeding: index.isMultiple(of: 2) ? seeds : seeds.reversed())
                let note = try await scope.resolve(NoteSeed.self)
                #expect(note.text.hasPrefix("made"), "\(note.text)")
                #expect(try await scope.resolve(NoteKey.self).text == "\(note.text)+other\(index)")
                #expect(try await scope.resolve(HookedKey.self).name == "hooked over \(note.text)")
                try await scope.close()

                // Only the remaining seed: exact for the child.
                let exact = try child.makeScope(seeding: ScopeSeed(OtherNoteSeed.self, Note("x")))
                let exactNote = try await exact.resolve(NoteSeed.self)
                #expect(exactNote.text.hasPrefix("made"))
                #expect(try await exact.resolve(NoteKey.self).text == "\(exactNote.text)+x")
                try await exact.close()
                try await parentScope.close()
            }
            #expect(registry.alive == 0, "\(registry.alive) of \(registry.tracked) still alive")
            #expect(expectEveryHookOnce(log) == 8)
            try await child.shutdown()
            try await parent.shutdown()
        }
    }

    @Test func seedsOfTheWrongKindAreReportedEvenWhenTheirCountIsRight() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.hostileSession) { session in
            session.seed(UserSeed.self)
        }
        builder.inScope(.hostileRequest) { request in
            request.seed(RequestSeed.self)
        }
        let graph = try await builder.build()
        // One seed each, as each kind has, but the other kind's.
        let sessionError = #expect(throws: ServiceGraphError.self) {
            try graph.makeScope(.hostileSession, seeding: ScopeSeed(RequestSeed.self, Note("r")))
        }
        #expect(
            Set(sessionError?.codes ?? []) == [.unexpectedSeed, .missingSeed],
            "\(String(describing: sessionError))"
        )
        let session = try graph.makeScope(.hostileSession, seeding: ScopeSeed(UserSeed.self, Note("u")))
        let requestError = #expect(throws: ServiceGraphError.self) {
            try session.makeScope(.hostileRequest, seeding: ScopeSeed(UserSeed.self, Note("u2")))
        }
        #expect(
            Set(requestError?.codes ?? []) == [.unexpectedSeed, .missingSeed],
            "\(String(describing: requestError))"
        )
        // The same seed twice, for a kind of two: no second seed given.
        let request = try session.makeScope(.hostileRequest, seeding: ScopeSeed(RequestSeed.self, Note("r")))
        #expect(try request.resolveSynchronously(UserSeed.self).text == "u")
        #expect(try request.resolveSynchronously(RequestSeed.self).text == "r")
        #expect(try session.resolveSynchronously(UserSeed.self).text == "u")
        try await request.close()
        try await session.close()
        try await graph.shutdown()
    }

    @Test func requestScopesClosingInsideASessionThatClosesRunEveryHookOnceInOrder() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            var builder = ServiceGraph.Builder()
            builder.inScope(.hostileSession) { session in
                session.seed(UserSeed.self)
                session.provide(CartKey.self, lifetime: .scoped, dependsOn: UserSeed.self) { user in
                    registry.track(HookedService("cart of \(user.text)", log: log))
                }
            }
            builder.inScope(.hostileRequest) { request in
                request.seed(RequestSeed.self)
                request.provide(CheckoutKey.self, lifetime: .scoped, dependsOn: RequestSeed.self, CartKey.self) {
                    registry.track(HookedService("checkout \($0.text) with \($1.name)", log: log))
                }
            }
            let graph = try await builder.build()
            for round in 0..<6 {
                let session = try graph.makeScope(
                    .hostileSession,
                    seeding: ScopeSeed(UserSeed.self, registry.track(Note("u\(round)")))
                )
                let cart = try await session.resolve(CartKey.self)
                let opened = Tally()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<60 {
                        group.addTask {
                            try await tolerating([.scopeClosed]) {
                                let request = try session.makeScope(
                                    .hostileRequest,
                                    seeding: ScopeSeed(RequestSeed.self, registry.track(Note("r\(round).\(index)")))
                                )
                                opened.increment()
                                try await tolerating([.scopeClosed]) {
                                    let checkout = try await request.resolve(CheckoutKey.self)
                                    #expect(checkout.name == "checkout r\(round).\(index) with \(cart.name)")
                                }
                                try await tolerating([.scopeClosed]) { try await request.close() }
                                #expect(request.isClosed)
                            }
                        }
                        if index == 30 {
                            group.addTask { try await session.close() }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(session.isClosed)
                #expect(opened.count >= 30)
                let entries = log.all
                let cartRemoved = try #require(entries.firstIndex(of: "willRemove cart of u\(round)"))
                let lastCheckoutRemoved = entries.lastIndex {
                    $0.hasPrefix("willRemove checkout r\(round).")
                }
                if let lastCheckoutRemoved {
                    #expect(lastCheckoutRemoved < cartRemoved, "a request's checkout removed after its session's cart")
                }
            }
            expectEveryHookOnce(log)
            #expect(registry.alive == 0, "\(registry.alive) of \(registry.tracked) still alive")
            try await graph.shutdown()
        }
    }

    /// The kind of widget the `index`th made is: a value, a hooked value, a hooked class, and a generic
    /// class whose hooks depend on its argument, in an order that mixes runs and single changes.
    static let widgetPattern = [0, 1, 1, 2, 3, 4, 3, 4, 4, 0, 2, 2, 1, 4, 3, 0, 0, 0, 2, 1, 3]

    private static func widget(_ index: Int, log: EventLog) -> any Widget {
        let name = "w\(index)"
        switch widgetPattern[index % widgetPattern.count] {
        case 0: return PlainWidget(name: name)
        case 1: return HookedValueWidget(name: name, log: log)
        case 2: return HookedWidget(name: name, log: log)
        case 3: return GenericWidget<Int>(name: name, log: log)
        default: return GenericWidget<String>(name: name, log: log)
        }
    }

    static func widgetHasHooks(_ index: Int) -> Bool {
        [1, 2, 3].contains(widgetPattern[index % widgetPattern.count])
    }

    static let vehiclePattern = [0, 1, 2, 2, 0, 1, 1, 3, 0, 2, 3, 3, 1]

    private static func vehicle(_ index: Int, log: EventLog) -> Vehicle {
        let name = "v\(index)"
        switch vehiclePattern[index % vehiclePattern.count] {
        case 0: return Vehicle(name: name, log: log)
        case 1: return HookedTruck(name: name, log: log)
        case 2: return HeavyTruck(name: name, log: log)
        default: return PlainCar(name: name, log: log)
        }
    }

    static func vehicleHasHooks(_ index: Int) -> Bool {
        [1, 2].contains(vehiclePattern[index % vehiclePattern.count])
    }

    @Test(arguments: 0..<3) func dynamicTypesAlternatingAcrossManyScopesAtOnceGetExactlyTheirOwnHooks(
        round: Int
    ) async throws {
        try await withDeadline {
            let log = EventLog()
            let widgets = Tally()
            let vehicles = Tally()
            var builder = ServiceGraph.Builder()
            builder.provide(WidgetKey.self, lifetime: .scoped) { Self.widget(widgets.increment() - 1, log: log) }
            builder.provide(VehicleKey.self, lifetime: .scoped) { Self.vehicle(vehicles.increment() - 1, log: log) }
            let graph = try await builder.build()
            let scopeCount = 240
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<scopeCount {
                    group.addTask {
                        let scope = try graph.makeScope()
                        // Several resolves of the scope at once: one instance each, one didAdd.
                        let names = try await withThrowingTaskGroup(of: [String].self) { inner in
                            for _ in 0..<3 {
                                inner.addTask {
                                    [
                                        try await scope.resolve(WidgetKey.self).name,
                                        try await scope.resolve(VehicleKey.self).name,
                                    ]
                                }
                            }
                            return try await inner.reduce(into: Set<[String]>()) { $0.insert($1) }
                        }
                        #expect(names.count == 1, "\(names)")
                        try await scope.close()
                    }
                }
                try await group.waitForAll()
            }
            #expect(widgets.count == scopeCount)
            #expect(vehicles.count == scopeCount)
            let hooked =
                (0..<scopeCount).filter(Self.widgetHasHooks).map { "w\($0)" }
                + (0..<scopeCount).filter(Self.vehicleHasHooks).map { "v\($0)" }
            let entries = log.all
            #expect(
                entries.filter { $0.hasPrefix("didAdd ") }.map { String($0.dropFirst(7)) }.sorted() == hooked.sorted()
            )
            #expect(
                entries.filter { $0.hasPrefix("willRemove ") }.map { String($0.dropFirst(11)) }.sorted()
                    == hooked.sorted()
            )
            try await graph.shutdown()
        }
    }

    @Test func oneHookedInstanceUnderTwoScopedKeysRunsItsHooksOnce() async throws {
        try await withDeadline {
            let log = EventLog()
            let registry = WeakRegistry()
            let made = Tally()
            var builder = ServiceGraph.Builder()
            builder.provide(HookedKey.self, lifetime: .scoped) {
                registry.track(HookedService("i\(made.increment())", log: log))
            }
            builder.provide(AliasKey.self, lifetime: .scoped, dependsOn: HookedKey.self) { $0 }
            builder.provide(SingletonHookedKey.self) { HookedService("singleton", log: log) }
            builder.provide(ScopedViewKey.self, lifetime: .scoped, dependsOn: SingletonHookedKey.self) { $0 }
            let graph = try await builder.build()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<120 {
                    group.addTask {
                        let scope = try graph.makeScope()
                        let (first, second): (HookedService, HookedService)
                        switch index % 3 {
                        case 0:
                            first = try await scope.resolve(AliasKey.self)
                            second = try await scope.resolve(HookedKey.self)
                        case 1:
                            second = try await scope.resolve(HookedKey.self)
                            first = try await scope.resolve(AliasKey.self)
                        default:
                            async let alias = scope.resolve(AliasKey.self)
                            async let direct = scope.resolve(HookedKey.self)
                            (first, second) = try await (alias, direct)
                        }
                        #expect(first === second)
                        _ = try await scope.resolve(ScopedViewKey.self)
                        try await scope.close()
                    }
                }
                try await group.waitForAll()
            }
            #expect(made.count == 120)
            #expect(registry.alive == 0, "\(registry.alive) of \(registry.tracked) still alive")
            // The singleton handed out by each scope is removed by the graph, not by any scope.
            #expect(log.count(of: "didAdd singleton") == 1)
            #expect(log.count(of: "willRemove singleton") == 0)
            try await graph.shutdown()
            #expect(log.count(of: "willRemove singleton") == 1)
            #expect(expectEveryHookOnce(log) == 121)
        }
    }

    @Test func resolvesRacingACloseNeverOutliveItsRelease() async throws {
        try await withDeadline {
            let registry = WeakRegistry()
            let made = Tally()
            var builder = ServiceGraph.Builder()
            builder.seed(NoteSeed.self)
            builder.provide(NoteKey.self, lifetime: .scoped, dependsOn: NoteSeed.self) { seed in
                made.increment()
                return registry.track(Note("over \(seed.text)"))
            }
            let graph = try await builder.build()
            for round in 0..<200 {
                let scope = try graph.makeScope(seeding: ScopeSeed(NoteSeed.self, registry.track(Note("s\(round)"))))
                let seen = Locked<Set<ObjectIdentifier>>([])
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<6 {
                        group.addTask {
                            try await tolerating([.scopeClosed]) {
                                if task.isMultiple(of: 2) {
                                    // A seed, read without suspending while the close may release it.
                                    #expect(try scope.resolveSynchronously(NoteSeed.self).text == "s\(round)")
                                } else {
                                    let note = try await scope.resolve(NoteKey.self)
                                    #expect(note.text == "over s\(round)")
                                    seen.withLock { _ = $0.insert(ObjectIdentifier(note)) }
                                }
                            }
                        }
                    }
                    group.addTask { try await scope.close() }
                    try await group.waitForAll()
                }
                // One instance at most per scope, and none outlives the close, resolved or not.
                #expect(seen.withLock { $0.count } <= 1)
                #expect(registry.alive == 0, "round \(round): \(registry.alive) still alive")
            }
            #expect(made.count <= 200)
            try await graph.shutdown()
        }
    }
}
