import ServiceGraph
import ServiceGraphTestSupport
import Testing

// Hostile tests of `ServiceGraph.makeScope(seeding:)` and `makeScope(_:seeding:)` given one seed, which
// open without an array (and write the seed straight to its cell when it is the kind's one seed and has
// no hooks to claim). Their contract: the same as `makeScope(seeding: [seed])`, the reference. Each test
// runs its scenario both ways and records everything observable (values read, hooks run, events sent,
// errors thrown, instances released) into a transcript: the two transcripts must be the same, and the
// reference's must say what the docs promise.

// MARK: - Openings

extension ScopeKind {
    fileprivate static let osPlain = ScopeKind("os-plain")
    fileprivate static let osEmpty = ScopeKind("os-empty")
    fileprivate static let osSession = ScopeKind("os-session")
    fileprivate static let osRequest = ScopeKind("os-request", inside: .osSession)
    fileprivate static let osStep = ScopeKind("os-step", inside: .osRequest)
}

/// How a scope is opened given one seed: the one-seed overloads, or an array of one (the reference).
enum OneSeedWay: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case oneSeed, arrayOfOne

    var testDescription: String { rawValue }

    func open(_ graph: ServiceGraph, _ seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try graph.makeScope(seeding: seed)
        case .arrayOfOne: try graph.makeScope(seeding: [seed])
        }
    }

    func open(_ graph: ServiceGraph, _ kind: ScopeKind, _ seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try graph.makeScope(kind, seeding: seed)
        case .arrayOfOne: try graph.makeScope(kind, seeding: [seed])
        }
    }

    /// A nested scope: `ServiceScope` has only the variadic and array overloads, so one argument is a
    /// variadic list of one.
    func open(_ scope: ServiceScope, _ kind: ScopeKind, _ seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        switch self {
        case .oneSeed: try scope.makeScope(kind, seeding: seed)
        case .arrayOfOne: try scope.makeScope(kind, seeding: [seed])
        }
    }
}

// MARK: - Values and doubles

private struct User: Sendable, Equatable {
    let id: Int
}

/// A plain class, without hooks (a one-seed scope writes it straight to its cell), that logs its end.
private final class Tracked: Sendable {
    let name: String
    let log: EventLog

    init(_ name: String, log: EventLog) {
        self.name = name
        self.log = log
    }

    deinit { log.record("deinit \(name)") }
}

private protocol Shape: Sendable {
    var area: Double { get }
}

private struct Square: Shape {
    var side: Double
    var area: Double { side * side }
}

/// A value type that adopts the hooks, behind `any Shape`.
private struct HookedSquare: Shape, LifecycleHooks {
    let side: Double
    let log: EventLog
    var area: Double { side * side }

    func didAdd() async throws { log.record("didAdd square \(side)") }
    func willRemove() async throws { log.record("willRemove square \(side)") }
}

/// A class that adopts the hooks, behind `any Shape`.
private final class HookedCircle: Shape, LifecycleHooks, Sendable {
    let radius: Double
    let log: EventLog
    init(_ radius: Double, log: EventLog) {
        self.radius = radius
        self.log = log
    }
    var area: Double { 3 * radius * radius }

    func didAdd() async throws { log.record("didAdd circle \(radius)") }
    func willRemove() async throws { log.record("willRemove circle \(radius)") }
}

/// A value far larger than an existential's inline buffer.
private struct Large: Sendable, Equatable {
    var numbers: (Int, Int, Int, Int, Int, Int, Int, Int)
    var label: String

    init(_ seed: Int) {
        numbers = (seed, seed &* 3, seed &* 5, seed &* 7, seed &* 11, seed &* 13, seed &* 17, seed &* 19)
        label = "large #\(seed) — ünïcødé ✓"
    }

    static func == (lhs: Large, rhs: Large) -> Bool {
        lhs.label == rhs.label && lhs.numbers.0 == rhs.numbers.0 && lhs.numbers.7 == rhs.numbers.7
    }
}

/// Keys that are classes: a subclass's metatype passed as its base's.
private class BaseKey: ServiceKey, @unchecked Sendable {
    typealias Value = String
}

private final class SubKey: BaseKey, @unchecked Sendable {}

// MARK: - Keys

private enum ConnKey: ServiceKey { typealias Value = HookedService }
private enum OtherConnKey: ServiceKey { typealias Value = HookedService }
private enum AliasKey: ServiceKey { typealias Value = HookedService }
private enum CartKey: ServiceKey { typealias Value = HookedService }
private enum GreetingKey: ServiceKey { typealias Value = String }
private enum ConfigKey: ServiceKey { typealias Value = Int }
private enum UserKey: ServiceKey { typealias Value = User }
private enum ProfileKey: ServiceKey { typealias Value = String }
private enum TrackedKey: ServiceKey { typealias Value = Tracked }
private enum TrackedChildKey: ServiceKey { typealias Value = Tracked }
private enum ShapeKey: ServiceKey { typealias Value = any Shape }
private enum ShapeAliasKey: ServiceKey { typealias Value = any Shape }
private enum AreaKey: ServiceKey { typealias Value = Double }
private enum OptionalConnKey: ServiceKey { typealias Value = HookedService? }
private enum UnwrappedKey: ServiceKey { typealias Value = HookedService }
private enum NestedOptionalKey: ServiceKey { typealias Value = Int?? }
private enum NestedOptionalTextKey: ServiceKey { typealias Value = String }
private enum LargeKey: ServiceKey { typealias Value = Large }
private enum LargeLabelKey: ServiceKey { typealias Value = String }
private enum InstanceKey: ServiceKey { typealias Value = LiveInstance }
private enum InstanceIDKey: ServiceKey { typealias Value = Int }
private enum StrangerKey: ServiceKey { typealias Value = String }
private enum SessionUserKey: ServiceKey { typealias Value = User }
private enum RequestConnKey: ServiceKey { typealias Value = HookedService }
private enum StepKey: ServiceKey { typealias Value = String }
private enum CheckoutKey: ServiceKey { typealias Value = HookedService }
private enum PlainScopedKey: ServiceKey { typealias Value = String }

// MARK: - Helpers

/// Every part of an error a caller can see.
private func describe(_ error: any Error) -> String {
    guard let error = error as? ServiceGraphError else { return "unexpected \(error)" }
    let problems = error.problems.map { problem in
        "[\(problem.code)] \(problem.key) @\(problem.site?.description ?? "-"): \(problem.message)"
    }
    return "error " + problems.joined(separator: " | ")
}

/// Opens a scope and records the outcome under `label`: the scope's kind, or the error.
private func attempt(_ log: EventLog, _ label: String, _ body: () throws -> ServiceScope) -> ServiceScope? {
    do {
        let scope = try body()
        log.record("\(label): opened \(scope.scopeKind), closed \(scope.isClosed)")
        return scope
    } catch {
        log.record("\(label): \(describe(error))")
        return nil
    }
}

/// Closes `scope` and records the outcome under `label`.
private func close(_ scope: ServiceScope, _ log: EventLog, _ label: String) async {
    do {
        try await scope.close()
        log.record("\(label): closed")
    } catch {
        log.record("\(label): close \(describe(error))")
    }
}

/// Shuts `graph` down and records the outcome.
private func shutDown(_ graph: ServiceGraph, _ log: EventLog) async {
    do {
        try await graph.shutdown()
        log.record("shut down")
    } catch {
        log.record("shutdown \(describe(error))")
    }
}

/// Records the graph's events of the kinds a scope's life makes into `log`.
private func recordingEvents(
    _ builder: inout ServiceGraph.Builder,
    into log: EventLog,
    also extra: Set<ServiceGraphEvent.Kind> = []
) {
    builder.requiresShutdown = false  // a test that throws early must not stop the run
    let kinds: Set<ServiceGraphEvent.Kind> = [.scopeOpened, .scopeClosed, .scopeDropped, .didAdd, .willRemove]
    builder.eventKinds = kinds.union(extra)
    builder.eventHandler = { event in
        let failure = event.error.map { " failed: \($0)" } ?? ""
        log.record("event \(event.kind) \(event.key ?? "-")\(failure)")
    }
}

/// Waits, polling, until `condition` holds: a hang guard, not a timing assertion.
private func waitUntil(_ what: String, limit: Duration = .seconds(60), _ condition: () -> Bool) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    while !condition() {
        if clock.now - start > limit { throw TestFailure("timed out waiting until \(what)") }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// Where two transcripts part, for a failure's message.
private func firstDifference(_ one: [String], _ reference: [String]) -> String {
    for index in 0..<max(one.count, reference.count) {
        let left = index < one.count ? one[index] : "(end)"
        let right = index < reference.count ? reference[index] : "(end)"
        if left != right { return "at line \(index): one seed «\(left)», array of one «\(right)»" }
    }
    return "none"
}

/// Runs `scenario` once per opening, each with its own log, and expects the same transcript; returns
/// the reference's (the array of one), for the test's own expectations. Under a hang guard.
private func bothWays(
    _ scenario: @escaping @Sendable (OneSeedWay, EventLog) async throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String] {
    var transcripts: [OneSeedWay: [String]] = [:]
    for opening in OneSeedWay.allCases {
        let log = EventLog()
        try await withDeadline(.seconds(120)) { try await scenario(opening, log) }
        transcripts[opening] = log.all
    }
    let one = transcripts[.oneSeed] ?? []
    let reference = transcripts[.arrayOfOne] ?? []
    #expect(
        one == reference,
        "the paths disagree \(firstDifference(one, reference))\none seed: \(one)\narray of one: \(reference)",
        sourceLocation: sourceLocation
    )
    return reference
}

/// The transcript of a scenario run with both of its scopes opened by an array of one (the reference),
/// once every other pair of openings' transcript (keyed "first+second") is checked to match it.
private func agreeingReference(
    _ transcripts: [String: [String]],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> [String] {
    let reference = try #require(transcripts["arrayOfOne+arrayOfOne"], sourceLocation: sourceLocation)
    for (openings, transcript) in transcripts {
        #expect(
            transcript == reference,
            "\(openings) \(firstDifference(transcript, reference))\n\(transcript)\n\(reference)",
            sourceLocation: sourceLocation
        )
    }
    return reference
}

/// The default kind's seed `ConnKey` with a scoped cart made from it, and the `osPlain` kind's plain seed
/// `TrackedKey` with a scoped child: one scope whose seed has hooks, one whose seed has none.
private func addCartAndPlainKind(to builder: inout ServiceGraph.Builder, log: EventLog) {
    builder.seed(ConnKey.self)
    builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self) {
        HookedService("cart of \($0.name)", log: log)
    }
    builder.inScope(.osPlain) { plain in
        plain.seed(TrackedKey.self)
        plain.provide(TrackedChildKey.self, lifetime: .scoped, dependsOn: TrackedKey.self) {
            Tracked("child of \($0.name)", log: log)
        }
    }
}

/// How many times `entry` is in `transcript`.
private func count(_ entry: String, in transcript: [String]) -> Int {
    transcript.filter { $0 == entry }.count
}

/// Whether `first` comes before `second` in `transcript`, both there.
private func isBefore(_ first: String, _ second: String, in transcript: [String]) -> Bool {
    guard let one = transcript.firstIndex(of: first), let two = transcript.firstIndex(of: second) else { return false }
    return one < two
}

/// Whether `scope` reads `value` for `ConnKey`, without the caller keeping what it read.
private func reads(_ scope: ServiceScope, _ value: HookedService) throws -> Bool {
    try scope.resolveSynchronously(ConnKey.self) === value
}

// MARK: - Tests

@Suite("One seed opens a scope as an array of one does, hostile")
struct OneSeedOpeningHostileTests {
    // MARK: Hooks and ownership

    @Test func aBorrowedHookedSeedGetsNoHookUnderAnyKeyAndIsClaimedWhileTheScopeIsOpen() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(ConnKey.self)
            builder.provide(AliasKey.self, lifetime: .scoped, dependsOn: ConnKey.self) { $0 }
            builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self) {
                HookedService("cart of \($0.name)", log: log)
            }
            builder.provide(GreetingKey.self, lifetime: .transient, dependsOn: ConnKey.self) { "hi \($0.name)" }
            let graph = try await builder.build()
            let connection = HookedService("c", log: log)
            let scope = try #require(
                attempt(log, "borrowed") { try opening.open(graph, ScopeSeed(ConnKey.self, connection)) }
            )
            log.record("seed read back: \(try reads(scope, connection))")
            log.record("alias is the seed: \(try await scope.resolve(AliasKey.self) === connection)")
            log.record("made: \(try await scope.resolve(CartKey.self).name)")
            log.record("transient: \(try scope.resolveSynchronously(GreetingKey.self))")
            // While a scope borrows it, another scope cannot own it; nothing is opened for the refusal.
            _ = attempt(log, "owned while borrowed") {
                try opening.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
            }
            // Borrowed by a second scope at once: allowed, still no hooks.
            let second = try #require(
                attempt(log, "borrowed twice") { try opening.open(graph, ScopeSeed(ConnKey.self, connection)) }
            )
            await close(second, log, "second borrower")
            await close(scope, log, "first borrower")
            // Both closed: the claim is given back, and a scope may own it now.
            let owner = try #require(
                attempt(log, "owned after") {
                    try opening.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
                }
            )
            log.record("alias of the owned seed: \(try await owner.resolve(AliasKey.self) === connection)")
            await close(owner, log, "owner")
            await shutDown(graph, log)
        }
        #expect(transcript.contains("seed read back: true"))
        #expect(transcript.contains("alias is the seed: true"))
        #expect(transcript.contains("alias of the owned seed: true"))
        #expect(count("didAdd c", in: transcript) == 0, "\(transcript)")
        #expect(count("willRemove c", in: transcript) == 1, "\(transcript)")
        #expect(isBefore("willRemove c", "owner: closed", in: transcript))
        #expect(transcript.contains { $0.hasPrefix("owned while borrowed: error [owned seed in use] ConnKey") })
        #expect(transcript.contains { $0.hasPrefix("borrowed twice: opened") && $0.hasSuffix("closed false") })
        #expect(count("willRemove cart of c", in: transcript) == 1)
    }

    @Test(arguments: [false, true])
    func anOwnedSeedGetsOnlyWillRemoveAfterEveryScopedInstanceAndAFailureIsReportedByClose(
        _ failing: Bool
    ) async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(ConnKey.self)
            builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self) {
                HookedService("cart of \($0.name)", log: log)
            }
            builder.provide(AliasKey.self, lifetime: .scoped, dependsOn: ConnKey.self) { $0 }
            let graph = try await builder.build()
            let connection = HookedService("c", log: log, failWillRemove: failing)
            let scope = try #require(
                attempt(log, "owned") {
                    try opening.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
                }
            )
            log.record("made: \(try await scope.resolve(CartKey.self).name)")
            log.record("alias is the seed: \(try await scope.resolve(AliasKey.self) === connection)")
            await close(scope, log, "scope")
            await close(scope, log, "again")
            await shutDown(graph, log)
        }
        #expect(count("didAdd c", in: transcript) == 0, "\(transcript)")
        #expect(count("willRemove c", in: transcript) == 1, "\(transcript)")
        #expect(isBefore("willRemove cart of c", "willRemove c", in: transcript))
        #expect(transcript.contains { $0.hasPrefix("again: close error [scope closed]") })
        if failing {
            #expect(
                transcript.contains { $0.hasPrefix("scope: close error [willRemove failed] ConnKey") },
                "\(transcript)"
            )
        } else {
            #expect(transcript.contains("scope: closed"))
        }
    }

    @Test func aPlainSeedIsReleasedLastWhenTheScopeClosesOwnedOrNot() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(TrackedKey.self)
            builder.provide(TrackedChildKey.self, lifetime: .scoped, dependsOn: TrackedKey.self) {
                Tracked("child of \($0.name)", log: log)
            }
            let graph = try await builder.build()
            for owned in [false, true] {
                let name = owned ? "owned" : "borrowed"
                // Made in the call, so that the scope holds the only reference once it returns.
                let scope = try #require(
                    attempt(log, name) {
                        try opening.open(
                            graph,
                            ScopeSeed(TrackedKey.self, Tracked(name, log: log), ownedByScope: owned)
                        )
                    }
                )
                log.record("made: \(try await scope.resolve(TrackedChildKey.self).name)")
                log.record("closing \(name)")
                await close(scope, log, name)
                // The handle is still held here: the close alone let go of both.
                log.record("handle still held: \(scope.isClosed)")
            }
            await shutDown(graph, log)
        }
        for name in ["borrowed", "owned"] {
            #expect(isBefore("closing \(name)", "deinit child of \(name)", in: transcript), "\(transcript)")
            #expect(isBefore("deinit child of \(name)", "deinit \(name)", in: transcript), "\(transcript)")
            #expect(isBefore("deinit \(name)", "\(name): closed", in: transcript), "\(transcript)")
        }
    }

    @Test func anExistentialSeedWhoseDynamicTypeHasHooksIsClaimedAsTheReferenceClaimsIt() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(ShapeKey.self)
            builder.provide(ShapeAliasKey.self, lifetime: .scoped, dependsOn: ShapeKey.self) { $0 }
            builder.provide(AreaKey.self, lifetime: .scoped, dependsOn: ShapeKey.self) { $0.area }
            let graph = try await builder.build()
            let circle = HookedCircle(2, log: log)
            let shapes: [(String, any Shape)] = [
                ("plain square", Square(side: 1)),
                ("hooked square", HookedSquare(side: 3, log: log)),
                ("hooked circle", circle),
            ]
            for (name, shape) in shapes {
                for owned in [false, true] {
                    let label = "\(name) \(owned ? "owned" : "borrowed")"
                    guard
                        let scope = attempt(
                            log,
                            label,
                            {
                                try opening.open(graph, ScopeSeed(ShapeKey.self, shape, ownedByScope: owned))
                            }
                        )
                    else { continue }
                    log.record("\(label): area \(try await scope.resolve(AreaKey.self))")
                    let alias = try await scope.resolve(ShapeAliasKey.self)
                    log.record("\(label): alias area \(alias.area), same object \((alias as? HookedCircle) === circle)")
                    await close(scope, log, label)
                }
            }
            // The circle borrowed by an open scope cannot be owned by another.
            let borrower = try #require(
                attempt(log, "circle borrowed") { try opening.open(graph, ScopeSeed(ShapeKey.self, circle)) }
            )
            _ = attempt(log, "circle owned while borrowed") {
                try opening.open(graph, ScopeSeed(ShapeKey.self, circle, ownedByScope: true))
            }
            await close(borrower, log, "circle borrower")
            await shutDown(graph, log)
        }
        #expect(transcript.contains("hooked circle borrowed: alias area 12.0, same object true"))
        #expect(isBefore("willRemove circle 2.0", "hooked circle owned: closed", in: transcript))
        // A borrowed seed whose key's Value is an existential is cast for its hooks (its dynamic type's),
        // and claimed: a scoped service that hands it out runs no hook on the caller's instance, and no
        // other scope may own it while this one borrows it. (`ScopeSeed.init` once took it for a plain
        // value: `type(of:)` of a value typed `Key.Value` is the existential's own metatype.)
        #expect(count("didAdd circle 2.0", in: transcript) == 0, "\(transcript)")
        #expect(count("willRemove circle 2.0", in: transcript) == 1, "\(transcript)")
        #expect(transcript.contains { $0.hasPrefix("circle owned while borrowed: error [owned seed in use]") })
        #expect(transcript.contains("plain square owned: area 1.0"))
        // The owned square gets its willRemove (on the seed, as a value it owns).
        #expect(count("willRemove square 3.0", in: transcript) >= 1, "\(transcript)")
    }

    @Test func optionalSeedsKeepNilAndNestedNilOnBothPaths() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(NestedOptionalKey.self)
            builder.provide(NestedOptionalTextKey.self, lifetime: .scoped, dependsOn: NestedOptionalKey.self) {
                switch $0 {
                case .none: "none"
                case .some(.none): "some(none)"
                case .some(.some(let value)): "some(some(\(value)))"
                }
            }
            let graph = try await builder.build()
            let values: [Int??] = [nil, .some(nil), .some(.some(3)), .some(.some(-1))]
            for value in values {
                let scope = try #require(
                    attempt(log, "\(String(describing: value))") {
                        try opening.open(graph, ScopeSeed(NestedOptionalKey.self, value))
                    }
                )
                log.record("seed \(String(describing: try scope.resolveSynchronously(NestedOptionalKey.self)))")
                log.record("made \(try await scope.resolve(NestedOptionalTextKey.self))")
                await close(scope, log, "scope")
            }
            await shutDown(graph, log)
        }
        for text in ["none", "some(none)", "some(some(3))", "some(some(-1))"] {
            #expect(transcript.contains("made \(text)"), "\(transcript)")
        }
        #expect(transcript.contains("seed Optional(nil)"))
        #expect(transcript.contains("seed nil"))
    }

    @Test func anOptionalHookedSeedIsHandledAlikeOnBothPaths() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(OptionalConnKey.self)
            builder.provide(UnwrappedKey.self, lifetime: .scoped, dependsOn: OptionalConnKey.self) {
                $0 ?? HookedService("fallback", log: log)
            }
            let graph = try await builder.build()
            let borrowed = HookedService("borrowed", log: log)
            let owned = HookedService("owned", log: log)
            let cases: [(String, HookedService?, Bool)] = [
                ("nil", nil, false), ("nil owned", nil, true), ("borrowed", borrowed, false), ("owned", owned, true),
            ]
            for (label, value, isOwned) in cases {
                let scope = try #require(
                    attempt(log, label) {
                        try opening.open(graph, ScopeSeed(OptionalConnKey.self, value, ownedByScope: isOwned))
                    }
                )
                let read = try scope.resolveSynchronously(OptionalConnKey.self)
                log.record("\(label): seed \(read?.name ?? "nil"), same \(read === value)")
                log.record("\(label): unwrapped \(try await scope.resolve(UnwrappedKey.self).name)")
                await close(scope, log, label)
            }
            await shutDown(graph, log)
        }
        #expect(transcript.contains("borrowed: seed borrowed, same true"))
        #expect(transcript.contains("nil: unwrapped fallback"))
        #expect(count("willRemove owned", in: transcript) == 1, "\(transcript)")
        #expect(count("didAdd owned", in: transcript) == 0, "\(transcript)")
        // "No hook runs on it in the scope, not even through a scoped service that hands it out": the seed
        // of an optional is cast for its hooks, which looks inside it, and claimed (`ScopeSeed.init` once
        // took it for a plain value, as `anExistentialSeed...` says).
        #expect(
            count("didAdd borrowed", in: transcript) + count("willRemove borrowed", in: transcript) == 0,
            "\(transcript)"
        )
    }

    // MARK: Seeds an override or a child graph replaced

    @Test func aSeedTheGraphOverrodeIsIgnoredOwnedOrNotAndTheOverrideWins() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(ConnKey.self)
            builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self) {
                HookedService("cart of \($0.name)", log: log)
            }
            builder.override(ConnKey.self) { HookedService("fixture", log: log) }
            let graph = try await builder.build()
            let registry = WeakRegistry()
            for owned in [false, true] {
                let label = owned ? "owned" : "borrowed"
                let given = registry.track(HookedService("ignored \(label)", log: log))
                let scope = try #require(
                    attempt(log, label) { try opening.open(graph, ScopeSeed(ConnKey.self, given, ownedByScope: owned)) }
                )
                log.record("\(label): seed \(try await scope.resolve(ConnKey.self).name)")
                log.record("\(label): cart \(try await scope.resolve(CartKey.self).name)")
                await close(scope, log, label)
                // Ignored: never the scope's, and can still be owned by another scope.
                log.record("\(label): still the caller's \(given.name)")
            }
            // A key that is not a seed at all is still refused, as the reference refuses it.
            _ = attempt(log, "stranger") { try opening.open(graph, ScopeSeed(StrangerKey.self, "x")) }
            await shutDown(graph, log)
            log.record("alive after shutdown: \(registry.alive)")
        }
        #expect(transcript.contains("owned: seed fixture"))
        #expect(transcript.contains("borrowed: cart cart of fixture"))
        #expect(!transcript.contains { $0.contains("willRemove ignored") || $0.contains("didAdd ignored") })
        #expect(count("willRemove fixture", in: transcript) == 2)
        #expect(transcript.contains("alive after shutdown: 0"))
        #expect(transcript.contains { $0.hasPrefix("stranger: error [unexpected seed] StrangerKey") })
    }

    @Test func aSeedOverriddenWithASingletonValueIsIgnoredAndTheOtherSeedStillWanted() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(ConnKey.self)
            builder.seed(UserKey.self)
            builder.provide(ProfileKey.self, lifetime: .scoped, dependsOn: ConnKey.self, UserKey.self) {
                "\($0.name) for \($1.id)"
            }
            builder.override(UserKey.self, with: User(id: 42))
            let graph = try await builder.build()
            let connection = HookedService("c", log: log)
            // The seed left is the kind's one seed: given alone, it opens.
            if let scope = attempt(
                log,
                "the seed left",
                { try opening.open(graph, ScopeSeed(ConnKey.self, connection)) }
            ) {
                log.record("profile \(try await scope.resolve(ProfileKey.self))")
                await close(scope, log, "the seed left")
            }
            // The overridden one alone: ignored, and the one left is missing.
            _ = attempt(log, "the overridden one") { try opening.open(graph, ScopeSeed(UserKey.self, User(id: 1))) }
            // Owned, for the seed left, then the overridden one given owned: ignored, no hooks.
            if let scope = attempt(
                log,
                "owned",
                { try opening.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: true)) }
            ) {
                await close(scope, log, "owned")
            }
            await shutDown(graph, log)
        }
        #expect(transcript.contains("profile c for 42"))
        #expect(
            transcript.contains { $0.hasPrefix("the overridden one: error [missing seed] ConnKey") },
            "\(transcript)"
        )
        #expect(count("willRemove c", in: transcript) == 1)
    }

    @Test func aChildGraphsSeedsAreTakenAlikeOnBothPaths() async throws {
        let transcript = try await bothWays { opening, log in
            var parentBuilder = ServiceGraph.Builder()
            recordingEvents(&parentBuilder, into: log)
            parentBuilder.seed(ConnKey.self)
            parentBuilder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self) {
                HookedService("cart of \($0.name)", log: log)
            }
            let parent = try await parentBuilder.build()
            // A child that adds nothing: the parent's seed is its one seed.
            let same = try await parent.makeChildBuilder().build()
            // A child that provides the parent's seed: it takes none.
            var replacing = parent.makeChildBuilder()
            replacing.provide(ConnKey.self, lifetime: .scoped) { HookedService("child's own", log: log) }
            let replaced = try await replacing.build()
            // A child that adds a seed: it takes two.
            var adding = parent.makeChildBuilder()
            adding.seed(UserKey.self)
            let added = try await adding.build()

            let connection = HookedService("c", log: log)
            let inParent = try #require(
                attempt(log, "parent borrows") { try opening.open(parent, ScopeSeed(ConnKey.self, connection)) }
            )
            // One graph family: the child's scope cannot own what the parent's scope borrows.
            _ = attempt(log, "same child owns") {
                try opening.open(same, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
            }
            if let scope = attempt(
                log,
                "same child borrows",
                { try opening.open(same, ScopeSeed(ConnKey.self, connection)) }
            ) {
                log.record("same child: \(try await scope.resolve(CartKey.self).name)")
                await close(scope, log, "same child")
            }
            if let scope = attempt(
                log,
                "replacing child",
                { try opening.open(replaced, ScopeSeed(ConnKey.self, connection, ownedByScope: true)) }
            ) {
                log.record("replacing child: \(try await scope.resolve(CartKey.self).name)")
                await close(scope, log, "replacing child")
            }
            _ = attempt(log, "adding child") { try opening.open(added, ScopeSeed(ConnKey.self, connection)) }
            _ = attempt(log, "adding child, its own seed") {
                try opening.open(added, ScopeSeed(UserKey.self, User(id: 1)))
            }
            await close(inParent, log, "parent")
            for child in [same, replaced, added] { await shutDown(child, log) }
            await shutDown(parent, log)
        }
        #expect(transcript.contains { $0.hasPrefix("same child owns: error [owned seed in use]") }, "\(transcript)")
        #expect(transcript.contains("same child: cart of c"))
        #expect(transcript.contains("replacing child: cart of child's own"))
        #expect(transcript.contains { $0.hasPrefix("adding child: error [missing seed] UserKey") }, "\(transcript)")
        #expect(transcript.contains { $0.hasPrefix("adding child, its own seed: error [missing seed] ConnKey") })
        #expect(count("willRemove c", in: transcript) == 0)
        #expect(count("didAdd c", in: transcript) == 0)
    }

    // MARK: Kinds with no seed, or another kind's

    @Test func aKindWithNoSeedGivenOneRefusesItAndTheValueStaysTheCallers() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.provide(ConfigKey.self) { 1 }
            builder.inScope(.osEmpty) { empty in
                empty.provide(PlainScopedKey.self, lifetime: .scoped) { "plain" }
            }
            builder.inScope(.osPlain) { plain in
                plain.seed(ConnKey.self)
            }
            let graph = try await builder.build()
            let connection = HookedService("c", log: log)
            let owned = ScopeSeed(ConnKey.self, connection, ownedByScope: true)
            // The default kind has no seed and no service; the empty kind has no seed.
            _ = attempt(log, "default, a seed of another kind") { try opening.open(graph, owned) }
            _ = attempt(log, "empty, a seed of another kind") { try opening.open(graph, .osEmpty, owned) }
            _ = attempt(log, "empty, a provided key") {
                try opening.open(graph, .osEmpty, ScopeSeed(ConfigKey.self, 2))
            }
            _ = attempt(log, "empty, a stranger") {
                try opening.open(graph, .osEmpty, ScopeSeed(StrangerKey.self, "x"))
            }
            _ = attempt(log, "explicit default") { try opening.open(graph, .default, ScopeSeed(ConfigKey.self, 2)) }
            _ = attempt(log, "unknown kind") { try opening.open(graph, ScopeKind("os-nowhere"), owned) }
            _ = attempt(log, "nested kind from the graph") { try opening.open(graph, .osRequest, owned) }
            // Every refusal left the value the caller's: the kind that takes it may own it.
            if let scope = attempt(log, "its own kind", { try opening.open(graph, .osPlain, owned) }) {
                await close(scope, log, "its own kind")
            }
            await shutDown(graph, log)
        }
        #expect(
            !transcript.contains { $0.hasPrefix("event scope opened") && !$0.hasSuffix("ConnKey") },
            "\(transcript)"
        )
        #expect(count("event scope opened ConnKey", in: transcript) == 1)
        #expect(count("willRemove c", in: transcript) == 1)
        for label in ["default, a seed of another kind", "empty, a seed of another kind", "empty, a provided key"] {
            #expect(
                transcript.contains { $0.hasPrefix("\(label): error [unexpected seed]") },
                "\(label): \(transcript)"
            )
        }
        #expect(transcript.contains { $0.hasPrefix("unknown kind: error [wrong scope kind]") })
        #expect(transcript.contains { $0.hasPrefix("nested kind from the graph: error [wrong scope kind]") })
    }

    @Test func aKeyPassedAsItsBaseClassMetatypeIsTreatedAlike() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            builder.seed(BaseKey.self)
            let graph = try await builder.build()
            let exact: BaseKey.Type = BaseKey.self
            let sub: BaseKey.Type = SubKey.self
            if let scope = attempt(log, "base", { try opening.open(graph, ScopeSeed(exact, "base value")) }) {
                log.record("base reads \(try scope.resolveSynchronously(BaseKey.self))")
                await close(scope, log, "base")
            }
            if let scope = attempt(log, "subclass", { try opening.open(graph, ScopeSeed(sub, "sub value")) }) {
                log.record("subclass reads \(try scope.resolveSynchronously(BaseKey.self))")
                await close(scope, log, "subclass")
            }
            await shutDown(graph, log)
        }
        #expect(transcript.contains("base reads base value"))
    }

    // MARK: One instance, two scopes

    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func oneInstanceSeededToTwoOpenScopesIsTheSameWhicheverPathOpensEach(
        _ ownership: (first: Bool, second: Bool)
    ) async throws {
        var transcripts: [String: [String]] = [:]
        for first in OneSeedWay.allCases {
            for second in OneSeedWay.allCases {
                let log = EventLog()
                try await withDeadline {
                    var builder = ServiceGraph.Builder()
                    recordingEvents(&builder, into: log)
                    builder.seed(ConnKey.self)
                    builder.provide(AliasKey.self, lifetime: .scoped, dependsOn: ConnKey.self) { $0 }
                    let graph = try await builder.build()
                    let connection = HookedService("c", log: log)
                    let one = attempt(log, "first") {
                        try first.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: ownership.first))
                    }
                    let two = attempt(log, "second") {
                        try second.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: ownership.second))
                    }
                    for (label, scope) in [("first", one), ("second", two)] {
                        guard let scope else { continue }
                        log.record("\(label) alias: \(try await scope.resolve(AliasKey.self) === connection)")
                    }
                    if let one { await close(one, log, "first") }
                    if let two { await close(two, log, "second") }
                    // Both closed: the instance is free again, to be owned once more.
                    if let again = attempt(
                        log,
                        "again",
                        {
                            try second.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
                        }
                    ) {
                        await close(again, log, "again")
                    }
                    await shutDown(graph, log)
                }
                transcripts["\(first)+\(second)"] = log.all
            }
        }
        let reference = try agreeingReference(transcripts)
        #expect(reference.contains("again: closed"), "\(reference)")
        #expect(count("didAdd c", in: reference) == 0)
        // Ended once by the first scope if it owned it (the second, refused or borrowing, never), and once
        // by the last: never twice by two open owners.
        #expect(count("willRemove c", in: reference) == (ownership.first ? 2 : 1), "\(reference)")
        if ownership.second {
            #expect(reference.contains { $0.hasPrefix("second: error [owned seed in use]") }, "\(reference)")
        } else {
            #expect(reference.contains("second: closed"), "\(reference)")
        }
    }

    @Test func oneScopeSeedValueGivenToManyScopesAtOnceStaysIntactInEach() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log, also: [])
            builder.eventKinds = [.didAdd, .willRemove]
            builder.seed(LargeKey.self)
            builder.provide(LargeLabelKey.self, lifetime: .scoped, dependsOn: LargeKey.self) { $0.label }
            builder.inScope(.osPlain) { plain in
                plain.seed(ConnKey.self)
                plain.provide(AliasKey.self, lifetime: .scoped, dependsOn: ConnKey.self) { $0 }
            }
            let graph = try await builder.build()
            // One ScopeSeed each, reused by every scope: its box is shared by all of their cells.
            let large = Large(7)
            let seed = ScopeSeed(LargeKey.self, large)
            let connection = HookedService("shared", log: log)
            let borrowed = ScopeSeed(ConnKey.self, connection)
            let wrong = Tally()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        if index.isMultiple(of: 2) {
                            let scope = try opening.open(graph, seed)
                            if try scope.resolveSynchronously(LargeKey.self) != large { wrong.increment() }
                            if try await scope.resolve(LargeLabelKey.self) != large.label { wrong.increment() }
                            if !index.isMultiple(of: 3) { try await scope.close() }
                        } else {
                            let scope = try opening.open(graph, .osPlain, borrowed)
                            if try await scope.resolve(AliasKey.self) !== connection { wrong.increment() }
                            if !index.isMultiple(of: 3) { try await scope.close() }
                        }
                    }
                }
                try await group.waitForAll()
            }
            log.record("wrong reads: \(wrong.count)")
            // The seed survives every scope it opened.
            let last = try opening.open(graph, seed)
            log.record("after all: \(try last.resolveSynchronously(LargeKey.self) == large)")
            await close(last, log, "last")
            // Every borrower gone: the instance can be owned.
            if let owner = attempt(
                log,
                "owner",
                {
                    try opening.open(graph, .osPlain, ScopeSeed(ConnKey.self, connection, ownedByScope: true))
                }
            ) {
                await close(owner, log, "owner")
            }
            await shutDown(graph, log)
        }
        #expect(transcript.contains("wrong reads: 0"))
        #expect(transcript.contains("after all: true"))
        #expect(transcript.contains("owner: closed"))
        #expect(count("willRemove shared", in: transcript) == 1)
        #expect(count("didAdd shared", in: transcript) == 0)
    }

    // MARK: Dropped scopes

    @Test func aScopeDroppedWithoutCloseIsReportedAndReleasedAlikeOnBothPaths() async throws {
        let transcript = try await bothWays { opening, log in
            let registry = WeakRegistry()
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log)
            addCartAndPlainKind(to: &builder, log: log)
            let graph = try await builder.build()
            // A plain seed (the one-seed path writes it to its cell) whose scope owes no hook.
            do {
                let scope = try opening.open(graph, .osPlain, ScopeSeed(TrackedKey.self, Tracked("plain", log: log)))
                log.record("made \(try await scope.resolve(TrackedChildKey.self).name)")
                log.record("dropping plain")
            }
            try await log.waitFor("event scope dropped -")
            try await waitUntil("the plain seed is released") { log.index(of: "deinit plain") != nil }
            // Owned and borrowed hooked seeds, whose scopes owe hooks when dropped.
            for owned in [true, false] {
                let label = owned ? "owned" : "borrowed"
                do {
                    let connection = registry.track(HookedService(label, log: log))
                    let scope = try opening.open(graph, ScopeSeed(ConnKey.self, connection, ownedByScope: owned))
                    log.record("made \(try await scope.resolve(CartKey.self).name)")
                    log.record("dropping \(label)")
                }
                try await log.waitFor("willRemove cart of \(label)")
                try await waitUntil("the dropped \(label) scope is reported") {
                    log.all.filter { $0.hasPrefix("event scope dropped") }.count == (owned ? 2 : 3)
                }
                if owned { try await log.waitFor("willRemove owned") }
            }
            await shutDown(graph, log)
            log.record("alive \(registry.alive)")
        }
        #expect(transcript.contains("event scope dropped -"), "\(transcript)")
        #expect(isBefore("deinit child of plain", "deinit plain", in: transcript))
        #expect(transcript.contains("alive 0"))
        #expect(count("willRemove owned", in: transcript) == 1)
        #expect(count("willRemove borrowed", in: transcript) == 0)
        #expect(count("didAdd owned", in: transcript) + count("didAdd borrowed", in: transcript) == 0)
        // The dropped scope names the services whose hooks it owed: the owned seed's key, not the borrowed's.
        #expect(transcript.contains("event scope dropped CartKey, ConnKey"), "\(transcript)")
        #expect(transcript.contains("event scope dropped CartKey"), "\(transcript)")
    }

    // MARK: Shutdown racing opens

    @Test(arguments: OneSeedWay.allCases)
    func shutdownRacingManyOneSeedOpensClosesEachOpenedScopeOnceAndRefusesTheRest(
        _ opening: OneSeedWay
    ) async throws {
        try await withDeadline(.seconds(240)) {
            for round in 0..<5 {
                let log = EventLog()
                let registry = WeakRegistry()
                let opened = Locked<Set<Int>>([])
                let refused = Tally()
                let openedEvents = Tally()
                let endedEvents = Tally()
                let kept = Locked<[ServiceScope]>([])
                let shutdownOutcome = Locked<String?>(nil)
                var builder = ServiceGraph.Builder()
                builder.requiresShutdown = false
                builder.eventKinds = [.scopeOpened, .scopeClosed, .scopeDropped]
                builder.eventHandler = { event in
                    if event.kind == .scopeOpened { openedEvents.increment() } else { endedEvents.increment() }
                }
                addCartAndPlainKind(to: &builder, log: log)
                let graph = try await builder.build()
                let total = 300
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<total {
                        group.addTask {
                            do {
                                let scope: ServiceScope
                                if index.isMultiple(of: 2) {
                                    let connection = registry.track(HookedService("c\(index)", log: log))
                                    scope = try opening.open(
                                        graph,
                                        ScopeSeed(ConnKey.self, connection, ownedByScope: true)
                                    )
                                    opened.withLock { _ = $0.insert(index) }
                                    _ = try? await scope.resolve(CartKey.self)
                                } else {
                                    let tracked = registry.track(Tracked("t\(index)", log: log))
                                    scope = try opening.open(graph, .osPlain, ScopeSeed(TrackedKey.self, tracked))
                                    opened.withLock { _ = $0.insert(index) }
                                    _ = try? await scope.resolve(TrackedChildKey.self)
                                }
                                switch index % 3 {
                                case 0: _ = try? await scope.close()
                                case 1: break  // dropped
                                default: kept.withLock { $0.append(scope) }
                                }
                            } catch {
                                #expect(
                                    describe(error).hasPrefix("error [graph shut down]"),
                                    "round \(round), \(index)"
                                )
                                refused.increment()
                            }
                        }
                        if index == total / 3 {
                            group.addTask {
                                do {
                                    try await graph.shutdown()
                                    shutdownOutcome.withLock { $0 = "ok" }
                                } catch {
                                    shutdownOutcome.withLock { $0 = describe(error) }
                                }
                            }
                        }
                    }
                }
                #expect(shutdownOutcome.withLock { $0 } == "ok", "round \(round)")
                let openedSet = opened.withLock { $0 }
                #expect(openedSet.count + refused.count == total, "round \(round)")
                #expect(kept.withLock { $0.allSatisfy(\.isClosed) }, "round \(round)")
                kept.withLock { $0.removeAll() }
                #expect(openedEvents.count == openedSet.count, "round \(round)")
                #expect(endedEvents.count == openedSet.count, "round \(round): each scope ends once")
                let entries = log.all
                var counts: [String: Int] = [:]
                for entry in entries { counts[entry, default: 0] += 1 }
                for index in stride(from: 0, to: total, by: 2) {
                    let expected = openedSet.contains(index) ? 1 : 0
                    #expect(counts["willRemove c\(index)", default: 0] == expected, "round \(round), c\(index)")
                    #expect(counts["didAdd c\(index)", default: 0] == 0, "round \(round), c\(index)")
                }
                for index in stride(from: 1, to: total, by: 2) {
                    #expect(counts["deinit t\(index)", default: 0] == 1, "round \(round), t\(index)")
                }
                #expect(registry.alive == 0, "round \(round): \(registry.alive) seeds leaked")
            }
        }
    }

    // MARK: A live graph

    @Test func aLiveGraphsScopesOpenAlikeAcrossAnUpdate() async throws {
        let transcript = try await bothWays { opening, log in
            var builder = ServiceGraph.Builder()
            recordingEvents(&builder, into: log, also: [.updateCommitted, .generationRetired])
            builder.seed(ConnKey.self)
            builder.provide(ConfigKey.self) { 1 }
            builder.provide(CartKey.self, lifetime: .scoped, dependsOn: ConnKey.self, ConfigKey.self) {
                HookedService("cart \($1) of \($0.name)", log: log)
            }
            let live = try await LiveGraph(builder)
            let first = HookedService("c1", log: log)
            let old = try #require(
                attempt(log, "generation 1 owns c1") {
                    try opening.open(live.current, ScopeSeed(ConnKey.self, first, ownedByScope: true))
                }
            )
            log.record(try await old.resolve(CartKey.self).name)
            try await live.update { $0.override(ConfigKey.self) { 2 } }
            // c1 is owned by an open scope of the previous generation.
            if let stolen = attempt(
                log,
                "generation 2 owns c1",
                {
                    try opening.open(live.current, ScopeSeed(ConnKey.self, first, ownedByScope: true))
                }
            ) {
                await close(stolen, log, "stolen")
            }
            let second = HookedService("c2", log: log)
            let new = try #require(
                attempt(log, "generation 2 borrows c2") {
                    try opening.open(live.current, ScopeSeed(ConnKey.self, second))
                }
            )
            log.record(try await new.resolve(CartKey.self).name)
            log.record("old scope still: \(try await old.resolve(CartKey.self).name)")
            await close(old, log, "generation 1's scope")
            try await log.waitFor("event generation retired generation 1")
            await close(new, log, "generation 2's scope")
            do {
                try await live.shutdown()
                log.record("live shut down")
            } catch {
                log.record("live shutdown \(describe(error))")
            }
        }
        #expect(transcript.contains("cart 1 of c1"))
        #expect(transcript.contains("cart 2 of c2"))
        #expect(transcript.contains("old scope still: cart 1 of c1"))
        #expect(count("willRemove c2", in: transcript) == 0)
        #expect(transcript.contains("live shut down"))
        // One instance has one owner across a LiveGraph's generations, as within a graph: a scope of the
        // next generation may not own an instance that an open scope of the replaced one owns (both would
        // end it), on either path.
        #expect(
            transcript.contains { $0.hasPrefix("generation 2 owns c1: error [owned seed in use]") },
            "\(transcript)"
        )
        #expect(count("willRemove c1", in: transcript) == 1, "\(transcript)")
    }

    // MARK: Many scopes in sequence

    @Test(arguments: OneSeedWay.allCases)
    func aHundredThousandScopesOpenedAndClosedInSequenceLeaveNothingBehind(_ opening: OneSeedWay) async throws {
        let counter = LiveCounter()
        let made = Tally()
        let opened = Tally()
        let closed = Tally()
        var builder = ServiceGraph.Builder()
        builder.eventKinds = [.scopeOpened, .scopeClosed, .scopeDropped]
        builder.eventHandler = { event in
            if event.kind == .scopeOpened {
                opened.increment()
            } else if event.kind == .scopeClosed {
                closed.increment()
            }
        }
        builder.seed(InstanceKey.self)
        builder.provide(InstanceIDKey.self, lifetime: .scoped, dependsOn: InstanceKey.self) {
            made.increment()
            return $0.id
        }
        let graph = try await builder.build()
        let total = 100_000
        let (wrong, leaked) = try await withDeadline(.seconds(300)) {
            var wrong = 0
            var leaked = 0
            for index in 0..<total {
                let scope = try opening.open(graph, ScopeSeed(InstanceKey.self, LiveInstance(index, in: counter)))
                if try scope.resolveSynchronously(InstanceKey.self).id != index { wrong += 1 }
                if index.isMultiple(of: 100), try await scope.resolve(InstanceIDKey.self) != index { wrong += 1 }
                try await scope.close()
                // Closed: the seed is let go of, though the handle is still held.
                if counter.count != 0 { leaked += 1 }
            }
            return (wrong, leaked)
        }
        #expect(wrong == 0)
        #expect(leaked == 0)
        #expect(made.count == total / 100)
        #expect(opened.count == total)
        #expect(closed.count == total)
        #expect(counter.count == 0)
        try await graph.shutdown()
    }

    // MARK: Nested kinds

    @Test func nestedKindsOpenedByEitherPathAtEachLevelAgree() async throws {
        var transcripts: [String: [String]] = [:]
        for outer in OneSeedWay.allCases {
            for inner in OneSeedWay.allCases {
                let log = EventLog()
                try await withDeadline {
                    var builder = ServiceGraph.Builder()
                    recordingEvents(&builder, into: log)
                    builder.inScope(.osSession) { session in
                        session.seed(SessionUserKey.self)
                        session.provide(ProfileKey.self, lifetime: .scoped, dependsOn: SessionUserKey.self) {
                            "profile \($0.id)"
                        }
                    }
                    builder.inScope(.osRequest) { request in
                        request.seed(RequestConnKey.self)
                        request.provide(
                            CheckoutKey.self,
                            lifetime: .scoped,
                            dependsOn: RequestConnKey.self,
                            ProfileKey.self
                        ) {
                            HookedService("checkout on \($0.name) for \($1)", log: log)
                        }
                    }
                    builder.inScope(.osStep) { step in
                        step.provide(StepKey.self, lifetime: .scoped, dependsOn: CheckoutKey.self) {
                            "step of \($0.name)"
                        }
                    }
                    let graph = try await builder.build()
                    let session = try #require(
                        attempt(log, "session") {
                            try outer.open(graph, .osSession, ScopeSeed(SessionUserKey.self, User(id: 7)))
                        }
                    )
                    let connections = (0..<3).map { HookedService("r\($0)", log: log) }
                    var requests: [ServiceScope] = []
                    for (index, connection) in connections.enumerated() {
                        let owned = index != 1
                        guard
                            let request = attempt(
                                log,
                                "request \(index)",
                                {
                                    try inner.open(
                                        session,
                                        .osRequest,
                                        ScopeSeed(RequestConnKey.self, connection, ownedByScope: owned)
                                    )
                                }
                            )
                        else { continue }
                        log.record("request \(index): \(try await request.resolve(CheckoutKey.self).name)")
                        requests.append(request)
                    }
                    // The step kind has no seed: given one, refused as the reference refuses it.
                    _ = attempt(log, "step given a seed") {
                        try inner.open(requests[0], .osStep, ScopeSeed(SessionUserKey.self, User(id: 1)))
                    }
                    if let step = attempt(log, "step", { try requests[0].makeScope(.osStep) }) {
                        log.record("step: \(try await step.resolve(StepKey.self))")
                    }
                    // Wrong places: the request kind from the graph, the session's seed to a request, the
                    // request's seed to a session, a request's owned seed to a second request.
                    _ = attempt(log, "request from the graph") {
                        try outer.open(graph, .osRequest, ScopeSeed(RequestConnKey.self, connections[2]))
                    }
                    _ = attempt(log, "session seed to a request") {
                        try inner.open(session, .osRequest, ScopeSeed(SessionUserKey.self, User(id: 8)))
                    }
                    _ = attempt(log, "request seed to a session") {
                        try outer.open(graph, .osSession, ScopeSeed(RequestConnKey.self, connections[2]))
                    }
                    _ = attempt(log, "owned twice") {
                        try inner.open(
                            session,
                            .osRequest,
                            ScopeSeed(RequestConnKey.self, connections[0], ownedByScope: true)
                        )
                    }
                    // Closing the session closes its requests (and the step) first.
                    await close(requests[2], log, "request 2")
                    await close(session, log, "session")
                    log.record("requests closed: \(requests.map(\.isClosed))")
                    // OneSeedWay from a closed session: refused, the seed stays the caller's.
                    _ = attempt(log, "from the closed session") {
                        try inner.open(
                            session,
                            .osRequest,
                            ScopeSeed(RequestConnKey.self, connections[1], ownedByScope: true)
                        )
                    }
                    await shutDown(graph, log)
                }
                transcripts["\(outer)+\(inner)"] = log.all
            }
        }
        let reference = try agreeingReference(transcripts)
        #expect(reference.contains("request 0: checkout on r0 for profile 7"), "\(reference)")
        #expect(reference.contains("step: step of checkout on r0 for profile 7"))
        #expect(reference.contains { $0.hasPrefix("step given a seed: error [unexpected seed]") }, "\(reference)")
        #expect(reference.contains { $0.hasPrefix("request from the graph: error [wrong scope kind]") }, "\(reference)")
        #expect(reference.contains { $0.hasPrefix("owned twice: error [owned seed in use]") }, "\(reference)")
        #expect(reference.contains { $0.hasPrefix("from the closed session: error [scope closed]") }, "\(reference)")
        #expect(reference.contains("requests closed: [true, true, true]"))
        #expect(count("willRemove r0", in: reference) == 1)
        #expect(count("willRemove r1", in: reference) == 0)
        #expect(count("willRemove r2", in: reference) == 1)
        #expect(isBefore("willRemove r0", "session: closed", in: reference))
        #expect(isBefore("willRemove checkout on r0 for profile 7", "willRemove r0", in: reference))
    }

    // MARK: Re-entrant opening

    @Test func anEventHandlerThatOpensAOneSeedScopeWhileOneOpensIsTreatedAlike() async throws {
        let transcript = try await bothWays { opening, log in
            let graphs = Captured<ServiceGraph>()
            let opened = Locked<[ServiceScope]>([])
            var builder = ServiceGraph.Builder()
            builder.requiresShutdown = false
            builder.eventKinds = [.scopeOpened, .scopeClosed]
            builder.eventHandler = { event in
                log.record("event \(event.kind) \(event.key ?? "-")")
                guard event.kind == .scopeOpened, event.key == "ConnKey", let graph = try? graphs.value else { return }
                do {
                    let inner = try opening.open(
                        graph,
                        .osPlain,
                        ScopeSeed(TrackedKey.self, Tracked("inner", log: log))
                    )
                    opened.withLock { $0.append(inner) }
                    log.record("handler opened one")
                } catch {
                    log.record("handler: \(describe(error))")
                }
            }
            builder.seed(ConnKey.self)
            builder.inScope(.osPlain) { $0.seed(TrackedKey.self) }
            let graph = try await builder.build()
            graphs.fill(graph)
            let scope = try opening.open(graph, ScopeSeed(ConnKey.self, HookedService("c", log: log)))
            await close(scope, log, "outer")
            let inner = try #require(opened.withLock { $0.first })
            log.record("inner reads \(try inner.resolveSynchronously(TrackedKey.self).name)")
            opened.withLock { $0.removeAll() }
            await close(inner, log, "inner")
            graphs.fill(nil)
            await shutDown(graph, log)
        }
        #expect(transcript.contains("handler opened one"))
        #expect(transcript.contains("inner reads inner"))
        #expect(isBefore("deinit inner", "inner: closed", in: transcript), "\(transcript)")
        #expect(!transcript.contains("event scope opened TrackedKey"), "\(transcript)")
    }
}
