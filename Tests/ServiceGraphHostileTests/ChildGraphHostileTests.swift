import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// Hostile tests of child graphs (`ServiceGraph.makeChildBuilder()`), written from the documentation:
// the doc comment of `makeChildBuilder`, LifetimesAndScopes, RuntimeValues, ComposingAGraph,
// ResolverContainersPattern, ChangingARunningGraph and the README.

// MARK: - Doubles

/// An ordered log of what the services of one test did.
private final class CGLog: Sendable {
    private let entries = Locked<[String]>([])

    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
    func count(_ entry: String) -> Int { all.filter { $0 == entry }.count }
    func index(_ entry: String) -> Int? { all.firstIndex(of: entry) }
    /// The `willRemove` entries, in order, without their prefix.
    var removals: [String] { all.filter { $0.hasPrefix("willRemove ") }.map { String($0.dropFirst(11)) } }
    /// The removals without the parent's `Themed`, which depends on nothing of the others and is
    /// removed once, in no fixed order with `P` (the two are made concurrently once `P`'s `didAdd` runs).
    var removalsButThemed: [String] {
        precondition(count("willRemove Themed") <= 1)
        return removals.filter { $0 != "Themed" }
    }

    /// Polls until `entry` is recorded; false when `limit` passes first.
    func eventually(_ entry: String, within limit: Duration = .seconds(60)) async -> Bool {
        await cgEventually(within: limit) { self.index(entry) != nil }
    }
}

/// A service that logs its hooks under its name and can be told to misbehave in them.
private final class CGNode: LifecycleHooks, Sendable {
    enum Fault: Sendable, Equatable {
        case none
        case failDidAdd
        case failWillRemove
        /// `didAdd` sleeps 30 s (until cancelled).
        case hangDidAdd
        /// `willRemove` sleeps 30 s (until cancelled).
        case hangWillRemove
    }

    let name: String
    let log: CGLog
    let fault: Fault
    /// When set, `willRemove` waits for it (after logging).
    let removalGate: Gate?
    let theme: String

    init(_ name: String, _ log: CGLog, fault: Fault = .none, removalGate: Gate? = nil, theme: String = "") {
        self.name = name
        self.log = log
        self.fault = fault
        self.removalGate = removalGate
        self.theme = theme
        log.record("init \(name)")
    }

    func didAdd() async throws {
        log.record("didAdd \(name)")
        switch fault {
        case .failDidAdd: throw TestFailure("didAdd of \(name) failed on purpose")
        case .hangDidAdd: try await Task.sleep(for: .seconds(30))
        default: break
        }
    }

    func willRemove() async throws {
        log.record("willRemove \(name)")
        if let removalGate { await removalGate.wait() }
        switch fault {
        case .failWillRemove: throw TestFailure("willRemove of \(name) failed on purpose")
        case .hangWillRemove: try await Task.sleep(for: .seconds(30))
        default: break
        }
        log.record("removed \(name)")
    }
}

/// A service holding a lazy handle on a parent singleton created on first use.
private final class CGLazyHolder: Sendable {
    let lazy: Lazy<CGLazyKey>
    init(_ lazy: Lazy<CGLazyKey>) { self.lazy = lazy }
}

/// Records the events a handler received.
private final class CGEvents: Sendable {
    private let events = Locked<[ServiceGraphEvent]>([])
    func record(_ event: ServiceGraphEvent) { events.withLock { $0.append(event) } }
    var all: [ServiceGraphEvent] { events.withLock { $0 } }
    func keys(of kind: ServiceGraphEvent.Kind) -> [String] { all.filter { $0.kind == kind }.compactMap(\.key) }
    func count(of kind: ServiceGraphEvent.Kind) -> Int { all.filter { $0.kind == kind }.count }
    var lines: String { all.map { "\($0)" }.joined(separator: "\n") }
}

private enum CGParentKey: ServiceKey { typealias Value = CGNode }
private enum CGOtherParentKey: ServiceKey { typealias Value = CGNode }
private enum CGChildKey: ServiceKey { typealias Value = CGNode }
private enum CGSecondChildKey: ServiceKey { typealias Value = CGNode }
private enum CGGrandKey: ServiceKey { typealias Value = CGNode }
private enum CGScopedKey: ServiceKey { typealias Value = CGNode }
private enum CGGrandScopedKey: ServiceKey { typealias Value = CGNode }
private enum CGLazyKey: ServiceKey { typealias Value = CGNode }
private enum CGLazyHolderKey: ServiceKey { typealias Value = CGLazyHolder }
private enum CGThemeKey: ServiceKey { typealias Value = String }
private enum CGThemedKey: ServiceKey { typealias Value = CGNode }
private enum CGGreetingKey: ServiceKey { typealias Value = String }
private enum CGTransientKey: ServiceKey { typealias Value = String }
private enum CGSeedKey: ServiceKey { typealias Value = String }
private enum CGSeededKey: ServiceKey { typealias Value = String }
private enum CGUnprovidedKey: ServiceKey { typealias Value = String }
private enum CGPortKey: ServiceKey { typealias Value = Int }
private enum CGUnprovidedPortKey: ServiceKey { typealias Value = Int }
private enum CGUserKey: ServiceKey { typealias Value = String }
private enum CGUserTwoKey: ServiceKey { typealias Value = String }
private enum CGUserThreeKey: ServiceKey { typealias Value = String }
private enum CGUserFourKey: ServiceKey { typealias Value = String }
private enum CGUserFiveKey: ServiceKey { typealias Value = String }
private enum CGXKey: ServiceKey { typealias Value = String }
private enum CGYKey: ServiceKey { typealias Value = String }

// MARK: - Helpers

/// Polls `condition` until it holds or `limit` passes (four times as long under a sanitizer).
private func cgEventually(within limit: Duration = .seconds(60), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + (ProcessEnvironment.isSanitizerRun ? limit * 4 : limit)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// The codes of `error` when it is a ``ServiceGraphError``, by their case names (`graphShutDown`);
/// `["not a ServiceGraphError"]` otherwise.
private func cgCodes(_ error: any Error) -> [String] {
    guard let error = error as? ServiceGraphError else { return ["not a ServiceGraphError: \(error)"] }
    let names: [ServiceGraphError.Code: String] = [
        .graphShutDown: "graphShutDown", .buildCancelled: "buildCancelled", .willRemoveFailed: "willRemoveFailed",
        .hookTimedOut: "hookTimedOut", .factoryFailed: "factoryFailed", .didAddFailed: "didAddFailed",
    ]
    return error.codes.map { names[$0] ?? $0.description }
}

/// A parent with a hooked singleton `P`, a theme, a transient greeting that uses the theme, a hooked
/// singleton that records the theme it was made with, a hooked scoped service and a seed.
private func cgParentBuilder(_ log: CGLog) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(CGParentKey.self) { CGNode("P", log) }
    builder.provide(CGThemeKey.self) { "light" }
    builder.provide(CGThemedKey.self, dependsOn: CGThemeKey.self) { CGNode("Themed", log, theme: $0) }
    builder.provide(CGGreetingKey.self, lifetime: .transient, dependsOn: CGThemeKey.self) { "hello in \($0)" }
    builder.provide(CGScopedKey.self, lifetime: .scoped, dependsOn: CGParentKey.self) { _ in CGNode("Scoped", log) }
    return builder
}

/// Problems of a text that should be a well-formed DOT or Mermaid document: every node an edge names
/// is declared.
private func cgUndeclaredNodes(in dump: String, edge: String) -> [String] {
    var declared: Set<String> = []
    var used: [String] = []
    for rawLine in dump.split(separator: "\n") {
        let line = rawLine.trimmingCharacters(in: .whitespaces)
        if line.contains(edge) {
            let parts = line.components(separatedBy: edge)
            for part in parts {
                let token = part.trimmingCharacters(in: .whitespaces).prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                if !token.isEmpty { used.append(String(token)) }
            }
        } else {
            let token = line.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            let rest = line.dropFirst(token.count).first
            if !token.isEmpty, rest == "[" || rest == "(" || rest == "{" || rest == " " || rest == ">" {
                declared.insert(String(token))
            }
        }
    }
    return used.filter { !declared.contains($0) }
}

// MARK: - Shutdown races

@Suite("Child graphs, hostile")
struct ChildGraphHostileTests {
    // MARK: Building children while the parent shuts down

    /// Many children are built (some of their builds cancelled part-way) while the parent shuts down.
    /// Documented: a child builder of a graph that is shutting down fails with `graphShutDown`; the
    /// parent's shutdown shuts its live children down first. So every build either fails with
    /// `graphShutDown` (or `buildCancelled`, when its task was cancelled), or returns a child that the
    /// shutdown then shuts down; every child instance that started is removed exactly once, before the
    /// parent singleton it depends on.
    @Test func manyChildBuildsRacingTheParentsShutdownEndCleanly() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        let built = Locked<[ServiceGraph]>([])
        let unexpected = Locked<[String]>([])
        let parentErrors = Locked<[String]>([])
        try await withDeadline(.seconds(120)) {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        var child = parent.makeChildBuilder()
                        child.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in
                            await Task.yield()
                            return CGNode("C\(index)", log)
                        }
                        child.provide(CGSecondChildKey.self, dependsOn: CGChildKey.self) { _ in
                            CGNode("D\(index)", log)
                        }
                        let ready = child
                        let cancels = index % 3 == 0
                        let task = Task { try await ready.build() }
                        if cancels {
                            await Task.yield()
                            task.cancel()
                        }
                        switch await task.result {
                        case .success(let graph): built.withLock { $0.append(graph) }
                        case .failure(let error):
                            let codes = cgCodes(error)
                            let allowed = cancels ? [["graphShutDown"], ["buildCancelled"]] : [["graphShutDown"]]
                            if !allowed.contains(codes) {
                                unexpected.withLock { $0.append("child \(index): \(codes) \(error)") }
                            }
                        }
                    }
                    if index == 60 {
                        group.addTask {
                            // Part-way: once some children are built and others are still building.
                            _ = await cgEventually(within: .seconds(30)) { built.withLock { $0.count } >= 40 }
                            do { try await parent.shutdown() } catch {
                                parentErrors.withLock { $0.append("\(error)") }
                            }
                        }
                    }
                }
            }
        }
        print("CG observation: \(built.withLock { $0.count }) of 200 children built while the parent shut down")
        #expect(unexpected.withLock { $0 }.isEmpty, "\(unexpected.withLock { $0 })")
        #expect(parentErrors.withLock { $0 }.isEmpty, "\(parentErrors.withLock { $0 })")
        // Builds abandoned by cancellation may release what they started in the background: wait
        // for every started child service to be removed.
        let startedNames = { @Sendable in
            log.all.filter { $0.hasPrefix("didAdd C") || $0.hasPrefix("didAdd D") }.map { String($0.dropFirst(7)) }
        }
        let allRemoved = await cgEventually {
            startedNames().allSatisfy { log.count("willRemove \($0)") >= 1 }
        }
        #expect(
            allRemoved,
            "started child services never removed: \(startedNames().filter { log.count("willRemove \($0)") == 0 })"
        )
        let parentRemoval = try #require(log.index("willRemove P"), "the parent's singleton was never removed")
        #expect(log.count("willRemove P") == 1)
        for name in startedNames() {
            #expect(log.count("didAdd \(name)") == 1, "\(name) started more than once")
            #expect(log.count("willRemove \(name)") == 1, "\(name) removed \(log.count("willRemove \(name)")) times")
            if let removal = log.index("willRemove \(name)") {
                #expect(removal < parentRemoval, "\(name), which uses P, was removed after P")
            }
        }
        for name in log.all.filter({ $0.hasPrefix("willRemove ") }).map({ String($0.dropFirst(11)) }) {
            #expect(log.count("didAdd \(name)") == 1, "\(name) removed though never started")
        }
        for graph in built.withLock({ $0 }) {
            let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(CGChildKey.self) }
            #expect(error?.codes == [.graphShutDown], "a child the parent's shutdown left running")
        }
    }

    /// Once the parent's shutdown has begun (its own singleton's `willRemove` is held open), a child
    /// builder made before and one made now both fail with `graphShutDown`, and run no factory.
    @Test func aChildBuilderMadeBeforeOrDuringTheParentsShutdownFailsWithGraphShutDown() async throws {
        let log = CGLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(CGParentKey.self) { CGNode("P", log, removalGate: gate) }
        let parent = try await builder.build()
        var early = parent.makeChildBuilder()
        early.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("early", log) }
        let readyEarly = early
        try await withDeadline(.seconds(60)) {
            let shutting = Task { try await parent.shutdown() }
            #expect(await log.eventually("willRemove P"))
            var late = parent.makeChildBuilder()
            late.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("late", log) }
            for candidate in [readyEarly, late] {
                let error = await #expect(throws: ServiceGraphError.self) { _ = try await candidate.build() }
                #expect(error?.codes == [.graphShutDown])
                #expect(error?.problems.first?.message.isEmpty == false)
            }
            await gate.open()
            try await shutting.value
        }
        #expect(log.count("init early") == 0 && log.count("init late") == 0, "\(log.all)")
    }

    /// A grandchild builder of a child that was shut down fails with `graphShutDown`, though the root
    /// still runs; a new child of the root still builds and shares its singletons.
    @Test func aGrandchildOfAShutDownChildDoesNotBuildButTheRootStillMakesChildren() async throws {
        let log = CGLog()
        let root = try await cgParentBuilder(log).build()
        let child = try await root.makeChildBuilder().build()
        var grand = child.makeChildBuilder()
        try await child.shutdown()
        grand.provide(CGGrandKey.self, dependsOn: CGParentKey.self) { _ in CGNode("G", log) }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await grand.build() }
        #expect(error?.codes == [.graphShutDown])
        #expect(log.count("init G") == 0)
        var again = root.makeChildBuilder()
        again.provide(CGGrandKey.self, dependsOn: CGParentKey.self) { _ in CGNode("G2", log) }
        let second = try await again.build()
        #expect(second[CGParentKey.self] === root[CGParentKey.self])
        #expect(try await root.resolve(CGParentKey.self).name == "P")
        try await root.shutdown()
        #expect(log.count("willRemove G2") == 1)
        #expect(try #require(log.index("willRemove G2")) < (try #require(log.index("willRemove P"))))
    }

    // MARK: Shutting children down, once

    /// A child's `shutdown()` called many times at once, together with its parent's: each hook runs
    /// once, the child's before the parent's, and every call of the child's reports the child's hook
    /// failure ("later and concurrent calls wait for the first and report the same result").
    @Test func aChildShutDownManyTimesConcurrentlyWithItsParentRunsEachHookOnce() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var children: [ServiceGraph] = []
        for index in 0..<20 {
            var child = parent.makeChildBuilder()
            let fault: CGNode.Fault = index % 4 == 0 ? .failWillRemove : .none
            child.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C\(index)", log, fault: fault) }
            children.append(try await child.build())
        }
        let readyChildren = children
        let outcomes = Locked<[Int: [String]]>([:])
        try await withDeadline(.seconds(60)) {
            await withTaskGroup(of: Void.self) { group in
                for (index, child) in readyChildren.enumerated() {
                    for _ in 0..<3 {
                        group.addTask {
                            let outcome: String
                            do {
                                try await child.shutdown()
                                outcome = "ok"
                            } catch {
                                let key =
                                    (error as? ServiceGraphError)?.problems.map(\.key).joined(separator: ",") ?? "-"
                                outcome = "\(cgCodes(error)) \(key)"
                            }
                            outcomes.withLock { $0[index, default: []].append(outcome) }
                        }
                    }
                }
                group.addTask { _ = try? await parent.shutdown() }
                group.addTask { _ = try? await parent.shutdown() }
            }
        }
        let parentRemoval = try #require(log.index("willRemove P"))
        #expect(log.count("willRemove P") == 1)
        for index in 0..<20 {
            #expect(log.count("willRemove C\(index)") == 1, "C\(index)")
            #expect(try #require(log.index("willRemove C\(index)")) < parentRemoval)
            let expected = index % 4 == 0 ? "[\"willRemoveFailed\"] CGChildKey" : "ok"
            #expect(outcomes.withLock { $0[index] } == [expected, expected, expected], "child \(index)")
        }
    }

    /// The parent's shutdown reports the hook failures of the live children it shuts down ("every
    /// hook failure, the children's and scopes' included"), and the child's own later shutdown
    /// reports the same result.
    @Test func theParentsShutdownReportsAChildsHookFailureAndTheChildRepeatsIt() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in
            CGNode("C", log, fault: .failWillRemove)
        }
        let child = try await childBuilder.build()
        let error = await #expect(throws: ServiceGraphError.self) { try await parent.shutdown() }
        #expect(error?.codes == [.willRemoveFailed])
        #expect(error?.problems.first?.key == "CGChildKey")
        #expect(
            error?.problems.first?.underlyingError as? TestFailure == TestFailure("willRemove of C failed on purpose")
        )
        #expect(
            log.removalsButThemed == ["C", "P"] && log.count("willRemove Themed") == 1,
            "the failure does not stop the parent's own removals"
        )
        let again = await #expect(throws: ServiceGraphError.self) { try await child.shutdown() }
        #expect(again?.codes == [.willRemoveFailed])
        #expect(log.count("willRemove C") == 1)
    }

    /// Cancelling the task that runs the parent's shutdown while a child's `willRemove` is still
    /// running cuts nothing short: the child's hooks finish, then the parent's run.
    @Test func cancellingTheParentsShutdownWhileAChildIsReleasingStillRunsEveryHook() async throws {
        let log = CGLog()
        let gate = Gate()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log, removalGate: gate) }
        childBuilder.provide(CGSecondChildKey.self) { CGNode("C-independent", log) }
        let child = try await childBuilder.build()
        try await withDeadline(.seconds(60)) {
            let shutting = Task { try await parent.shutdown() }
            #expect(await log.eventually("willRemove C"))
            shutting.cancel()
            await gate.open()
            try await shutting.value
        }
        #expect(Set(log.removals) == ["C", "C-independent", "Themed", "P"], "\(log.all)")
        #expect(try #require(log.index("willRemove C")) < (try #require(log.index("willRemove P"))))
        let error = await #expect(throws: ServiceGraphError.self) { try await child.resolve(CGChildKey.self) }
        #expect(error?.codes == [.graphShutDown])
    }

    /// The documented order of a root's shutdown with children, a grandchild and open scopes in each:
    /// live children newest first (each shutting its own children, then its scopes), then the root's
    /// scopes, then its singletons.
    @Test func aRootsShutdownReleasesGrandchildrenAndEveryScopeBeforeWhatTheyUse() async throws {
        let log = CGLog()
        let root = try await cgParentBuilder(log).build()
        let rootScope = try root.makeScope()
        _ = try await rootScope.resolve(CGScopedKey.self)  // "Scoped" in the root

        var first = root.makeChildBuilder()
        first.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C1", log) }
        first.override(CGScopedKey.self, dependsOn: CGChildKey.self) { _ in CGNode("S1", log) }
        let older = try await first.build()
        let olderScope = try older.makeScope()
        _ = try await olderScope.resolve(CGScopedKey.self)

        var grand = older.makeChildBuilder()
        grand.provide(CGGrandKey.self, dependsOn: CGChildKey.self) { _ in CGNode("G", log) }
        grand.provide(CGGrandScopedKey.self, lifetime: .scoped, dependsOn: CGGrandKey.self) { _ in CGNode("GS", log) }
        let grandchild = try await grand.build()
        let grandScope = try grandchild.makeScope()
        _ = try await grandScope.resolve(CGGrandScopedKey.self)

        var second = root.makeChildBuilder()
        second.provide(CGSecondChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C2", log) }
        let newer = try await second.build()

        try await withDeadline(.seconds(60)) { try await root.shutdown() }
        #expect(log.removalsButThemed == ["C2", "GS", "G", "S1", "C1", "Scoped", "P"], "\(log.all)")
        #expect(log.count("willRemove Themed") == 1)
        #expect(rootScope.isClosed && olderScope.isClosed && grandScope.isClosed)
        for graph in [older, grandchild, newer] {
            let error = #expect(throws: ServiceGraphError.self) { _ = try graph.makeScope() }
            #expect(error?.codes == [.graphShutDown])
        }
    }

    /// A thousand children built, used and shut down at once, then the parent: every child hook once,
    /// the parent's last, and no child kept alive afterwards (the parent holds them weakly).
    @Test func aThousandChildrenBuiltAndShutDownConcurrently() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        let weakChildren = WeakRegistry()
        let failures = Locked<[String]>([])
        try await withDeadline(.seconds(240)) {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        do {
                            var builder = parent.makeChildBuilder()
                            builder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in
                                CGNode("C\(index)", log)
                            }
                            builder.provide(CGThemeKey.self) { "theme \(index)" }
                            let child = weakChildren.track(try await builder.build())
                            let greeting = try await child.resolve(CGGreetingKey.self)
                            if greeting != "hello in theme \(index)" { failures.withLock { $0.append(greeting) } }
                            if child[CGParentKey.self] !== parent[CGParentKey.self] {
                                failures.withLock { $0.append("child \(index) has its own P") }
                            }
                            let scope = try child.makeScope()
                            _ = try await scope.resolve(CGScopedKey.self)
                            if index % 2 == 0 { try await scope.close() }  // the others: closed by shutdown
                            try await child.shutdown()
                        } catch {
                            failures.withLock { $0.append("child \(index): \(error)") }
                        }
                    }
                }
            }
            try await parent.shutdown()
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(5))")
        #expect(log.count("didAdd P") == 1 && log.count("willRemove P") == 1)
        #expect(log.removalsButThemed.last == "P")
        for index in stride(from: 0, to: 1000, by: 37) {
            #expect(log.count("willRemove C\(index)") == 1)
        }
        #expect(log.removals.filter { $0.hasPrefix("C") }.count == 1000)
        #expect(log.count("willRemove Scoped") == 1000, "each child's scope made and released its own instance")
        #expect(await cgEventually { weakChildren.alive == 0 }, "\(weakChildren.alive) children still alive")
    }

    // MARK: Children that are dropped, and what keeps what alive

    /// A child dropped without `shutdown()` (with `requiresShutdown` off) does not hold up its parent's
    /// shutdown, names only its own services in its `droppedWithoutShutdown` event, and its parent's
    /// singleton is still removed exactly once.
    @Test func aChildDroppedWithoutShutdownNamesOnlyItsOwnServicesAndDoesNotHoldUpTheParent() async throws {
        let log = CGLog()
        let events = CGEvents()
        let parent = try await cgParentBuilder(log).build()
        let weakChild = WeakRegistry()
        do {
            var childBuilder = parent.makeChildBuilder()
            childBuilder.requiresShutdown = false
            childBuilder.eventHandler = { events.record($0) }
            childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log) }
            let child = weakChild.track(try await childBuilder.build())
            _ = try await child.resolve(CGChildKey.self)
        }
        #expect(await cgEventually { weakChild.alive == 0 }, "the parent keeps its dropped child alive")
        #expect(await cgEventually { events.count(of: .droppedWithoutShutdown) == 1 }, "\(events.lines)")
        let named = events.keys(of: .droppedWithoutShutdown).joined()
        #expect(named.contains("CGChildKey"), "\(named)")
        #expect(
            !named.contains("CGParentKey") && !named.contains("CGThemedKey"),
            "a child names its parent's hooks: \(named)"
        )
        try await withDeadline(.seconds(60)) { try await parent.shutdown() }
        #expect(log.count("willRemove C") == 0, "nobody may run the dropped child's hooks")
        #expect(log.count("willRemove P") == 1)
    }

    /// A child whose only hooked instances are its parent's (borrowed singletons, and a parent
    /// singleton created on first use through the child) owes no hooks: dropping it reports nothing.
    @Test func aChildThatOnlyBorrowsHookedServicesCanBeDroppedFreely() async throws {
        let log = CGLog()
        let events = CGEvents()
        var builder = cgParentBuilder(log)
        builder.provide(CGLazyKey.self) { CGNode("L", log) }
        builder.provide(CGLazyHolderKey.self, dependsOn: Lazy<CGLazyKey>.self) { CGLazyHolder($0) }
        let parent = try await builder.build()
        #expect(log.count("init L") == 0, "only a lazy edge reaches L: the build leaves it to its first use")
        let weakChild = WeakRegistry()
        do {
            var childBuilder = parent.makeChildBuilder()
            childBuilder.requiresShutdown = false
            childBuilder.eventHandler = { events.record($0) }
            childBuilder.provide(CGUserKey.self, dependsOn: CGParentKey.self, CGThemedKey.self) {
                "\($0.name)+\($1.name)"
            }
            let child = weakChild.track(try await childBuilder.build())
            #expect(child[CGUserKey.self] == "P+Themed")
            #expect(try await child.resolve(CGLazyKey.self).name == "L")
            #expect(
                try await child.resolve(CGLazyHolderKey.self).lazy.value === (try await parent.resolve(CGLazyKey.self))
            )
        }
        #expect(await cgEventually { weakChild.alive == 0 })
        try await Task.sleep(for: .milliseconds(20))
        #expect(events.count(of: .droppedWithoutShutdown) == 0, "\(events.lines)")
        #expect(log.count("didAdd L") == 1)
        try await parent.shutdown()
        #expect(log.count("willRemove L") == 1, "the parent owns what its child created on first use")
        #expect(log.count("willRemove P") == 1)
    }

    /// A child keeps its parent alive; the parent does not keep its child alive.
    @Test func aChildKeepsItsParentAliveButNotTheReverse() async throws {
        let registry = WeakRegistry()
        let parentRegistry = WeakRegistry()
        var child: ServiceGraph? = try await {
            var builder = ServiceGraph.Builder()
            builder.provide(CGThemeKey.self) { "light" }
            builder.provide(CGGreetingKey.self, lifetime: .transient, dependsOn: CGThemeKey.self) { "hello in \($0)" }
            let parent = parentRegistry.track(try await builder.build())
            var childBuilder = parent.makeChildBuilder()
            childBuilder.provide(CGThemeKey.self) { "dark" }
            return registry.track(try await childBuilder.build())
        }()
        try await Task.sleep(for: .milliseconds(10))
        #expect(parentRegistry.alive == 1, "the child let its parent go")
        #expect(try await child?.resolve(CGGreetingKey.self) == "hello in dark")
        child = nil
        #expect(
            await cgEventually { registry.alive == 0 && parentRegistry.alive == 0 },
            "a graph outlived its last user"
        )
    }

    // MARK: Searched first: what a child's own provider replaces

    /// A parent singleton that depends on a key the child replaces is shared, made with the parent's
    /// value; only what is built in the child (transients, scoped services, its own) gets the child's.
    @Test func aSharedSingletonKeepsTheParentsDependencyWhileTheChildsTransientsGetTheChilds() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGThemeKey.self) { "dark" }
        childBuilder.provide(CGChildKey.self, dependsOn: CGThemedKey.self, CGThemeKey.self) { themed, theme in
            CGNode("C(\(themed.theme),\(theme))", log)
        }
        let child = try await childBuilder.build()
        #expect(child[CGThemedKey.self] === parent[CGThemedKey.self])
        #expect(child[CGThemedKey.self].theme == "light")
        #expect(child[CGChildKey.self].name == "C(light,dark)")
        #expect(try await child.resolve(CGGreetingKey.self) == "hello in dark")
        #expect(try await parent.resolve(CGGreetingKey.self) == "hello in light")
        #expect(log.count("init Themed") == 1, "the child made a second Themed")
        try await parent.shutdown()
        #expect(log.count("willRemove Themed") == 1)
    }

    /// The child replaces a key that a parent singleton depends on with a provider that depends on
    /// that very singleton. The singleton is the parent's instance (it is not built in the child), so
    /// there is no cycle: the child's provider gets the parent's singleton.
    @Test func aChildsProviderMayDependOnAParentSingletonThatDependsOnTheKeyItReplaces() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGThemeKey.self, dependsOn: CGThemedKey.self) { "dark after \($0.theme)" }
        do {
            try childBuilder.validate()
            let child = try await childBuilder.build()
            #expect(child[CGThemeKey.self] == "dark after light")
            #expect(try await child.resolve(CGGreetingKey.self) == "hello in dark after light")
            try await child.shutdown()
        } catch {
            Issue.record("the child was refused: \(error)")
        }
        try await parent.shutdown()
    }

    /// `override` of a parent's key is allowed in the child (no overrideOfUnknownKey); `provide` of it
    /// once replaces it, twice in the child is a duplicate; an override of a key neither graph has is
    /// reported. The parent is untouched.
    @Test func provideAndOverrideOfParentKeysInAChild() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()

        var overriding = parent.makeChildBuilder()
        overriding.override(CGThemeKey.self) { "overridden" }
        let overridden = try await overriding.build()
        #expect(try await overridden.resolve(CGGreetingKey.self) == "hello in overridden")

        var twice = parent.makeChildBuilder()
        twice.provide(CGThemeKey.self) { "one" }
        twice.provide(CGThemeKey.self) { "two" }
        let duplicate = try #require(throws: ServiceGraphError.self) { try twice.validate() }
        #expect(duplicate.codes == [.duplicateProvider])
        #expect(duplicate.problems.first?.key == "CGThemeKey")

        var unknown = parent.makeChildBuilder()
        unknown.override(CGUnprovidedKey.self) { "nobody provides me" }
        let unknownError = try #require(throws: ServiceGraphError.self) { try unknown.validate() }
        #expect(unknownError.codes == [.overrideOfUnknownKey])

        #expect(parent[CGThemeKey.self] == "light")
        try await parent.shutdown()
    }

    /// A child's own singleton of a parent key that the parent made as a hooked singleton: the child's
    /// instance gets its own hooks from the child, the parent's keeps its own.
    @Test func aChildReplacingAHookedParentSingletonOwnsOnlyItsOwnInstance() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGParentKey.self) { CGNode("P-child", log) }
        let child = try await childBuilder.build()
        let scope = try child.makeScope()
        _ = try await scope.resolve(CGScopedKey.self)  // the parent's scoped provider, built in the child
        try await scope.close()
        #expect(child[CGParentKey.self].name == "P-child")
        #expect(parent[CGParentKey.self].name == "P")
        #expect(log.count("didAdd P-child") == 1)
        try await child.shutdown()
        #expect(log.removals == ["Scoped", "P-child"])
        try await parent.shutdown()
        #expect(log.count("willRemove P") == 1 && log.count("willRemove P-child") == 1)
    }

    /// A child's `remove` of a parent key takes it out of the child only: the child's inherited
    /// transient that needs it is a missing provider (naming it), the parent still has it.
    @Test func aChildRemovingAParentKeyAffectsOnlyTheChild() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.remove(CGGreetingKey.self)
        let child = try await childBuilder.build()
        let error = await #expect(throws: ServiceGraphError.self) { try await child.resolve(CGGreetingKey.self) }
        #expect(error?.codes == [.keyNotFound])
        #expect(try await parent.resolve(CGGreetingKey.self) == "hello in light")

        var removing = parent.makeChildBuilder()
        removing.remove(CGThemeKey.self)
        let missing = try #require(throws: ServiceGraphError.self) { try removing.validate() }
        #expect(missing.contains(.missingProvider), "\(missing)")
        #expect(missing.problems.contains { $0.path.contains("CGGreetingKey") }, "\(missing)")
        try await parent.shutdown()
    }

    // MARK: Validation across the boundary

    /// Every problem of a child at once, across the boundary: a key neither graph provides (with a
    /// "did you mean" naming a parent key of the same type), a cycle through an inherited transient,
    /// and captive dependencies of the child's singletons on the parent's scoped service, transient
    /// and seed. No factory runs, the parent's included.
    @Test func aChildsValidationReportsEveryProblemAcrossTheBoundaryAtOnce() async throws {
        let log = CGLog()
        let factoryRuns = Tally()
        var builder = cgParentBuilder(log)
        builder.seed(CGSeedKey.self)
        builder.provide(CGTransientKey.self, lifetime: .transient, dependsOn: CGXKey.self) { x in
            factoryRuns.increment()
            return "t(\(x))"
        }
        builder.provide(CGXKey.self) { "x" }
        builder.provide(CGPortKey.self) { 8080 }
        let parent = try await builder.build()

        var child = parent.makeChildBuilder()
        child.provide(CGUserKey.self, dependsOn: CGUnprovidedPortKey.self) { "\($0)" }
        child.provide(CGXKey.self, lifetime: .transient, dependsOn: CGTransientKey.self) { t in
            factoryRuns.increment()
            return "x(\(t))"
        }
        child.provide(CGUserTwoKey.self, dependsOn: CGScopedKey.self) { $0.name }
        child.provide(CGUserThreeKey.self, dependsOn: CGGreetingKey.self) { $0 }
        child.provide(CGUserFourKey.self, dependsOn: CGSeedKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try child.validate() }
        let codes = Set(error.codes)
        #expect(codes == [.missingProvider, .cycle, .captiveDependency], "\(error)")
        #expect(error.codes.filter { $0 == .captiveDependency }.count == 3, "\(error)")
        let missing = try #require(error.problems.first { $0.code == .missingProvider })
        #expect(missing.key == "CGUnprovidedPortKey")
        #expect(missing.path.contains("CGUserKey"))
        #expect(missing.message.contains("CGPortKey"), "the parent's key of the same type is not suggested: \(missing)")
        let cycle = try #require(error.problems.first { $0.code == .cycle })
        #expect(Set(cycle.path) == ["CGXKey", "CGTransientKey"], "\(cycle.path)")
        #expect(cycle.path.first == cycle.path.last)
        let captives = error.problems.filter { $0.code == .captiveDependency }.map(\.pathDescription).joined(
            separator: " | "
        )
        for name in ["CGScopedKey", "CGGreetingKey", "CGSeedKey"] {
            #expect(captives.contains(name), "\(name) missing from \(captives)")
        }
        let buildError = await #expect(throws: ServiceGraphError.self) { _ = try await child.build() }
        #expect(Set(buildError?.codes ?? []) == codes)
        #expect(factoryRuns.count == 0, "validation ran a factory")
        #expect(log.count("init P") == 1)
        try await parent.shutdown()
    }

    /// A scoped service of the child depends on the parent's seed; the child's scopes need it, and a
    /// child that provides the seed's key needs none and ignores a value given for it; a grandchild of
    /// that child keeps the provider.
    @Test func aChildsScopesUseTheParentsSeedsUnlessTheChildProvidesTheKey() async throws {
        let log = CGLog()
        var builder = cgParentBuilder(log)
        builder.seed(CGSeedKey.self)
        builder.provide(CGSeededKey.self, lifetime: .scoped, dependsOn: CGSeedKey.self, CGThemeKey.self) {
            "\($0) in \($1)"
        }
        let parent = try await builder.build()

        var plain = parent.makeChildBuilder()
        plain.provide(CGThemeKey.self) { "dark" }
        plain.provide(CGUserKey.self, lifetime: .scoped, dependsOn: CGSeededKey.self) { "user of \($0)" }
        let child = try await plain.build()
        let refused = #expect(throws: ServiceGraphError.self) { _ = try child.makeScope() }
        #expect(refused?.codes == [.missingSeed])
        let scope = try child.makeScope(seeding: ScopeSeed(CGSeedKey.self, "ada"))
        #expect(try await scope.resolve(CGUserKey.self) == "user of ada in dark")
        try await scope.close()

        var providing = parent.makeChildBuilder()
        providing.provide(CGSeedKey.self) { "fixed" }
        let provided = try await providing.build()
        let unseeded = try provided.makeScope()
        #expect(try await unseeded.resolve(CGSeededKey.self) == "fixed in light")
        try await unseeded.close()
        let ignoring = try provided.makeScope(seeding: ScopeSeed(CGSeedKey.self, "ignored"))
        #expect(try await ignoring.resolve(CGSeededKey.self) == "fixed in light")
        try await ignoring.close()

        let grandchild = try await provided.makeChildBuilder().build()
        let grandScope = try grandchild.makeScope()
        #expect(try await grandScope.resolve(CGSeededKey.self) == "fixed in light")
        try await grandScope.close()

        try await parent.shutdown()
    }

    // MARK: Hooks in children

    /// A child whose own singleton's `didAdd` fails: the build fails naming it, the child's services
    /// already started are removed once, the parent's are left running and its shutdown is not held
    /// up by the failed child.
    @Test func aChildsFailingDidAddReleasesOnlyTheChildsOwnServices() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log) }
        childBuilder.provide(CGGrandKey.self, dependsOn: CGChildKey.self) { _ in CGNode("G", log, fault: .failDidAdd) }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await childBuilder.build() }
        #expect(error?.codes == [.didAddFailed])
        #expect(error?.problems.first?.key == "CGGrandKey")
        #expect(log.removals == ["C"], "\(log.all)")
        #expect(try await parent.resolve(CGParentKey.self).name == "P")

        var throwing = parent.makeChildBuilder()
        throwing.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C2", log) }
        throwing.provide(CGGrandKey.self, dependsOn: CGChildKey.self) { _ -> CGNode in
            throw TestFailure("factory of G2 failed on purpose")
        }
        let factoryError = await #expect(throws: ServiceGraphError.self) { _ = try await throwing.build() }
        #expect(factoryError?.codes == [.factoryFailed])
        #expect(factoryError?.problems.first?.key == "CGGrandKey")
        #expect(factoryError?.problems.first?.path.contains("CGGrandKey") == true)
        #expect(log.count("willRemove C2") == 1)

        try await withDeadline(.seconds(60)) { try await parent.shutdown() }
        #expect(log.removalsButThemed == ["C", "C2", "P"] && log.count("willRemove Themed") == 1)
    }

    /// A child's `hookTimeout` bounds its own hooks: a hanging `willRemove` in the child is abandoned
    /// with `hookTimedOut` naming the child's key, and the parent is unaffected; a hanging `didAdd`
    /// fails the child's build.
    @Test func aChildsHangingHooksAreBoundedByItsHookTimeout() async throws {
        let log = CGLog()
        let parent = try await cgParentBuilder(log).build()
        var hanging = parent.makeChildBuilder()
        hanging.hookTimeout = .milliseconds(100)
        hanging.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log, fault: .hangWillRemove) }
        let child = try await hanging.build()

        var stuck = parent.makeChildBuilder()
        stuck.hookTimeout = .milliseconds(100)
        stuck.provide(CGGrandKey.self, dependsOn: CGParentKey.self) { _ in CGNode("G", log, fault: .hangDidAdd) }
        let readyStuck = stuck

        try await withDeadline(.seconds(60)) {
            let error = await #expect(throws: ServiceGraphError.self) { try await child.shutdown() }
            #expect(error?.codes == [.hookTimedOut])
            #expect(error?.problems.first?.key == "CGChildKey")
            let buildError = await #expect(throws: ServiceGraphError.self) { _ = try await readyStuck.build() }
            #expect(buildError?.contains(.hookTimedOut) == true, "\(String(describing: buildError))")
            #expect(buildError?.problems.first?.key == "CGGrandKey")
            #expect(try await parent.resolve(CGParentKey.self).name == "P")
            try await parent.shutdown()
        }
        #expect(log.count("willRemove G") == 0, "a service whose didAdd never ended is never stopped")
        #expect(log.count("willRemove P") == 1)
    }

    /// A parent singleton created on first use, first asked for through several children at once:
    /// made once, its `didAdd` once (run by the parent), never removed by the children's shutdowns,
    /// removed once by the parent's.
    @Test func aParentsLazySingletonFirstUsedThroughManyChildrenAtOnceIsTheParents() async throws {
        let log = CGLog()
        var builder = cgParentBuilder(log)
        builder.provide(CGLazyKey.self, dependsOn: CGParentKey.self) { _ in
            try await Task.sleep(for: .milliseconds(5))
            return CGNode("L", log)
        }
        builder.provide(CGLazyHolderKey.self, dependsOn: Lazy<CGLazyKey>.self) { CGLazyHolder($0) }
        let parent = try await builder.build()
        var children: [ServiceGraph] = []
        for _ in 0..<8 { children.append(try await parent.makeChildBuilder().build()) }
        let readyChildren = children
        let seen = Locked<[ObjectIdentifier]>([])
        try await withDeadline(.seconds(60)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for child in readyChildren {
                    for form in 0..<4 {
                        group.addTask {
                            let value =
                                form % 2 == 0
                                ? try await child.resolve(CGLazyKey.self)
                                : try await child[CGLazyHolderKey.self].lazy.value
                            seen.withLock { $0.append(ObjectIdentifier(value)) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for child in readyChildren { try await child.shutdown() }
        }
        #expect(Set(seen.withLock { $0 }).count == 1)
        #expect(log.count("init L") == 1 && log.count("didAdd L") == 1)
        #expect(log.count("willRemove L") == 0, "a child removed its parent's instance")
        #expect(parent[CGLazyKey.self].name == "L")
        try await parent.shutdown()
        #expect(log.count("willRemove L") == 1)
        #expect(try #require(log.index("willRemove L")) < (try #require(log.index("willRemove P"))))
    }

    // MARK: Reading through a child while the parent shuts down

    /// Many tasks read the parent's singletons and a lazily created one through a child while the
    /// parent shuts down: no crash, the subscript keeps returning the (released) singletons, and
    /// `resolve` either returns or throws `graphShutDown` naming the key asked for. The lazy
    /// singleton, if made, is removed once; if refused, never made after the shutdown began.
    @Test func readingThroughAChildWhileTheParentShutsDown() async throws {
        let log = CGLog()
        var builder = cgParentBuilder(log)
        builder.provide(CGLazyKey.self) { CGNode("L", log) }
        builder.provide(CGLazyHolderKey.self, dependsOn: Lazy<CGLazyKey>.self) { CGLazyHolder($0) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGThemeKey.self) { "dark" }
        let child = try await childBuilder.build()
        let wrong = Locked<[String]>([])
        let refusals = Tally()
        let reads = Tally()
        try await withDeadline(.seconds(120)) {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for round in 0..<400 {
                            reads.increment()
                            if child[CGParentKey.self].name != "P" { wrong.withLock { $0.append("subscript") } }
                            do {
                                switch (worker + round) % 3 {
                                case 0: _ = try await child.resolve(CGParentKey.self)
                                case 1:
                                    if try await child.resolve(CGGreetingKey.self) != "hello in dark" {
                                        wrong.withLock { $0.append("greeting") }
                                    }
                                default: _ = try await child.resolve(CGLazyKey.self)
                                }
                            } catch {
                                refusals.increment()
                                let expected = ["CGParentKey", "CGGreetingKey", "CGLazyKey"][(worker + round) % 3]
                                let problem = (error as? ServiceGraphError)?.problems.first
                                if cgCodes(error) != ["graphShutDown"] || problem?.key != expected {
                                    wrong.withLock {
                                        $0.append("\(expected): \(cgCodes(error)) key \(problem?.key ?? "-")")
                                    }
                                }
                            }
                            if round % 10 == 0 { await Task.yield() }
                        }
                    }
                }
                group.addTask {
                    // Part-way: once the readers are well under way.
                    _ = await cgEventually(within: .seconds(30)) { reads.count >= 600 }
                    do { try await parent.shutdown() } catch { wrong.withLock { $0.append("shutdown: \(error)") } }
                }
            }
        }
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { Array($0.prefix(5)) })")
        #expect(child[CGParentKey.self] === parent[CGParentKey.self], "the subscript works after shutdown")
        let error = await #expect(throws: ServiceGraphError.self) { try await child.resolve(CGGreetingKey.self) }
        #expect(error?.codes == [.graphShutDown])
        #expect(log.count("willRemove P") == 1)
        #expect(log.count("init L") <= 1)
        #expect(log.count("willRemove L") == log.count("didAdd L"), "L made but never removed, or removed twice")
        print("CG observation: \(refusals.count) resolves refused during the parent's shutdown")
    }

    // MARK: Events and dumps

    /// The child's handler hears the child's build, its own services and its shutdown, never a hook of
    /// the parent's instances; the parent's handler hears the parent's lazy singleton created through
    /// the child (the parent "owns it and runs its hooks"), and none of the child's services.
    @Test func eventsOfAChildAndItsParentStayApart() async throws {
        let log = CGLog()
        let parentEvents = CGEvents()
        var builder = cgParentBuilder(log)
        builder.eventHandler = { parentEvents.record($0) }
        builder.provide(CGLazyKey.self) { CGNode("L", log) }
        builder.provide(CGLazyHolderKey.self, dependsOn: Lazy<CGLazyKey>.self) { CGLazyHolder($0) }
        let parent = try await builder.build()
        let childEvents = CGEvents()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.eventHandler = { childEvents.record($0) }
        childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log) }
        let child = try await childBuilder.build()
        // The parent's singleton created on first use, first used through the child: the parent makes it.
        _ = try await child.resolve(CGLazyKey.self)
        _ = try await child[CGLazyHolderKey.self].lazy.value
        try await child.shutdown()
        try await parent.shutdown()

        #expect(
            childEvents.count(of: .buildStarted) == 1 && childEvents.count(of: .buildFinished) == 1,
            "\(childEvents.lines)"
        )
        #expect(childEvents.keys(of: .didAdd) == ["CGChildKey"], "\(childEvents.lines)")
        #expect(childEvents.keys(of: .willRemove) == ["CGChildKey"], "\(childEvents.lines)")
        #expect(childEvents.count(of: .shutdownFinished) == 1)
        #expect(childEvents.keys(of: .serviceCreated) == ["CGChildKey"], "\(childEvents.lines)")

        #expect(parentEvents.keys(of: .didAdd).contains("CGLazyKey"), "\(parentEvents.lines)")
        #expect(parentEvents.keys(of: .serviceCreated).contains("CGLazyKey"), "\(parentEvents.lines)")
        #expect(parentEvents.keys(of: .willRemove).contains("CGLazyKey"), "\(parentEvents.lines)")
        #expect(!parentEvents.all.contains { $0.key == "CGChildKey" }, "\(parentEvents.lines)")
        #expect(parentEvents.count(of: .buildStarted) == 1, "the child's build was reported to the parent")
        #expect(parentEvents.count(of: .shutdownFinished) == 1)
    }

    /// Every dump format of a child is well formed and names the services it inherits along with its
    /// own; JSON's ids join up and its initialization order is the child's; two children built alike
    /// dump alike without timings (stable, for snapshots), and building children leaves the parent's
    /// dump unchanged.
    @Test func aChildsDumpsAreWellFormedStableAndLeaveTheParentsAlone() async throws {
        let log = CGLog()
        var builder = cgParentBuilder(log)
        builder.provide(CGLazyKey.self) { CGNode("L", log) }
        builder.provide(CGLazyHolderKey.self, dependsOn: Lazy<CGLazyKey>.self) { CGLazyHolder($0) }
        let parent = try await builder.build()
        let parentBefore = DumpFormat.allFormats.map { parent.dump($0, includingTimings: false) }

        func makeChild() async throws -> ServiceGraph {
            var childBuilder = parent.makeChildBuilder()
            childBuilder.provide(CGThemeKey.self) { "dark" }
            childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self, CGThemeKey.self) { _, _ in
                CGNode("C", log)
            }
            return try await childBuilder.build()
        }
        let child = try await makeChild()
        let twin = try await makeChild()

        for format in DumpFormat.allFormats {
            let dump = child.dump(format, includingTimings: false)
            for key in ["CGParentKey", "CGThemeKey", "CGGreetingKey", "CGScopedKey", "CGChildKey", "CGLazyKey"] {
                #expect(dump.contains(key), "\(format) dump of the child lacks \(key)")
            }
            #expect(dump == twin.dump(format, includingTimings: false), "\(format) dumps of twin children differ")
            _ = child.dump(format)  // with timings: must not trap
        }
        let dot = child.dump(.dot)
        #expect(dot.filter { $0 == "{" }.count == dot.filter { $0 == "}" }.count)
        #expect(cgUndeclaredNodes(in: dot, edge: "->").isEmpty, "\(cgUndeclaredNodes(in: dot, edge: "->"))")
        let mermaid = child.dump(.mermaid)
        #expect(cgUndeclaredNodes(in: mermaid, edge: "-->").isEmpty || mermaid.contains("-.->"), "\(mermaid)")

        let data = try #require(child.dump(.json).data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["built"] as? Bool == true)
        let services = try #require(object["services"] as? [[String: Any]])
        let keys = services.compactMap { $0["key"] as? String }
        #expect(Set(keys).count == keys.count, "a key listed twice: \(keys)")
        #expect(keys.filter { $0 == "CGThemeKey" }.count == 1, "the replaced theme and the child's both listed")
        for service in services {
            let ids = service["dependencyIds"] as? [Int] ?? []
            let names = service["dependencies"] as? [String] ?? []
            #expect(ids.count == names.count)
            for (id, name) in zip(ids, names) {
                #expect(
                    id >= 0 && id < services.count && keys[id] == name,
                    "dependency id \(id) of \(service["key"] ?? "?")"
                )
            }
        }
        let order = try #require(object["initializationOrder"] as? [String])
        #expect(order == child.initializationOrder)
        #expect(order.contains("CGChildKey"))
        for (key, _) in child.singletons(as: CGNode.self) {
            #expect(order.contains(key), "the child's own singleton \(key) is not in its initialization order")
        }
        let lazyService = try #require(services.first { $0["key"] as? String == "CGLazyKey" })
        #expect(lazyService["createdOnFirstUse"] as? Bool == true, "\(lazyService)")

        let report = child.startupReport()
        for entry in report.slowest + report.criticalPath {
            #expect(keys.contains(entry.key), "the startup report names \(entry.key), not in the child")
        }
        _ = report.description

        #expect(DumpFormat.allFormats.map { parent.dump($0, includingTimings: false) } == parentBefore)
        try await parent.shutdown()
    }

    /// A child's scope dropped without `close()` (and, in the second case, the child itself dropped
    /// too): the scope's hooks run in the background, and the parent's shutdown still waits for them
    /// before removing the singleton the scoped instance uses ("the graph's shutdown waits for them
    /// before it releases the singletons they depend on"; "willRemove ... after everything that
    /// depends on it is gone").
    @Test(arguments: [false, true])
    func aDroppedScopeOfAChildIsWaitedForByTheParentsShutdown(dropsTheChild: Bool) async throws {
        let log = CGLog()
        let gate = Gate()
        let parent = try await cgParentBuilder(log).build()
        var kept: ServiceGraph?
        do {
            var childBuilder = parent.makeChildBuilder()
            childBuilder.override(CGScopedKey.self, dependsOn: CGParentKey.self) { _ in
                CGNode("child-scoped", log, removalGate: gate)
            }
            let child = try await childBuilder.build()
            if !dropsTheChild { kept = child }
            let scope = try child.makeScope()
            _ = try await scope.resolve(CGScopedKey.self)
        }
        try await withDeadline(.seconds(60)) {
            #expect(await log.eventually("willRemove child-scoped"), "the dropped scope's hook never ran")
            let shutting = Task { try await parent.shutdown() }
            try await Task.sleep(for: .milliseconds(50))
            await gate.open()
            try await shutting.value
        }
        let finished = try #require(log.index("removed child-scoped"))
        let parentRemoval = try #require(log.index("willRemove P"))
        #expect(
            finished < parentRemoval,
            "P removed while a scope of its \(dropsTheChild ? "dropped " : "")child still releases"
        )
        #expect(log.count("willRemove child-scoped") == 1 && log.count("willRemove P") == 1)
        _ = kept
    }

    /// A child's startup report and initialization order: whether the parent's shared singletons are
    /// listed is not documented (they are, with the time the child took to take them over); what is
    /// checked is that the child's own singleton comes after what it depends on, ends the critical
    /// path, and that `singletons(as:)` lists only the child's own.
    @Test func aChildsStartupReportAndOrderPlaceItsOwnSingletonsAfterTheirDependencies() async throws {
        let log = CGLog()
        var builder = cgParentBuilder(log)
        builder.provide(CGOtherParentKey.self) {
            try await Task.sleep(for: .milliseconds(30))
            return CGNode("slow parent", log)
        }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log) }
        childBuilder.provide(CGGrandKey.self, dependsOn: CGChildKey.self, CGOtherParentKey.self) { _, _ in
            CGNode("G", log)
        }
        let child = try await childBuilder.build()
        #expect(child.singletons(as: CGNode.self).map(\.key) == ["CGChildKey", "CGGrandKey"])
        let order = child.initializationOrder
        let childIndex = try #require(order.firstIndex(of: "CGChildKey"))
        let grandIndex = try #require(order.firstIndex(of: "CGGrandKey"))
        #expect(childIndex < grandIndex)
        if let parentIndex = order.firstIndex(of: "CGParentKey") { #expect(parentIndex < childIndex) }
        let report = child.startupReport(slowest: 10)
        #expect(report.criticalPath.last?.key == "CGGrandKey", "\(report)")
        #expect(
            report.slowest.contains { $0.key == "CGGrandKey" } && report.slowest.contains { $0.key == "CGChildKey" }
        )
        print("CG observation: child initializationOrder \(order); report:\n\(report)")
        try await parent.shutdown()
    }

    // MARK: Children of a live graph

    /// A child of a `LiveGraph`'s current generation keeps that generation: an update that replaces a
    /// singleton the child uses never removes it while the child is still running.
    @Test func aChildOfALiveGenerationNeverSeesItsSingletonRemovedWhileRunning() async throws {
        let log = CGLog()
        var builder = ServiceGraph.Builder()
        builder.provide(CGParentKey.self) { CGNode("P1", log) }
        let live = try await LiveGraph(builder)
        // Only the child holds generation 1 (a reader holding it would keep it from retiring).
        var child: ServiceGraph? = try await {
            var childBuilder = live.current.makeChildBuilder()
            childBuilder.provide(CGChildKey.self, dependsOn: CGParentKey.self) { _ in CGNode("C", log) }
            return try await childBuilder.build()
        }()
        try await withDeadline(.seconds(60)) {
            _ = try await live.update { $0.override(CGParentKey.self) { CGNode("P2", log) } }
        }
        #expect(live.current[CGParentKey.self].name == "P2")
        #expect(child?[CGParentKey.self].name == "P1", "the child keeps the generation it was made from")
        try await Task.sleep(for: .milliseconds(20))
        if log.count("willRemove P1") > 0 {
            // The old generation retired: it must have shut the child down first.
            #expect(try #require(log.index("willRemove C")) < (try #require(log.index("willRemove P1"))))
            let error = await #expect(throws: ServiceGraphError.self) { try await child?.resolve(CGChildKey.self) }
            #expect(error?.codes == [.graphShutDown])
        } else {
            #expect(try await child?.resolve(CGChildKey.self).name == "C")
            try await child?.shutdown()
            child = nil
            #expect(await log.eventually("willRemove P1"), "the old generation never retired after its child was gone")
        }
        try await withDeadline(.seconds(60)) { try await live.shutdown() }
        #expect(log.count("willRemove P1") == 1 && log.count("willRemove P2") == 1 && log.count("willRemove C") == 1)
        print("CG observation: removals across a live update with a child: \(log.removals)")
    }

    /// A child builder starts with its parent's settings (`makeChildBuilder`'s doc): the event handler,
    /// the kinds of events, resolve events, the hook and factory timeouts and `requiresShutdown`; with
    /// the handler, a parent's choice to report resolves comes too, or a child's resolves would go
    /// unreported to the very handler that asked for them.
    /// The setting as the parent's builder had it, not as it took effect: a parent that reports resolves
    /// but wants no `.resolved` events gives its child builder `reportsResolveEvents` all the same, so a
    /// child that adds the kind gets them.
    @Test func aChildBuilderTakesReportsResolveEventsAsItWasSet() async throws {
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.reportsResolveEvents = true
        builder.eventKinds = [.didAdd]
        builder.eventHandler = { _ in }
        builder.provide(CGGreetingKey.self, lifetime: .transient) { "hello" }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        #expect(childBuilder.reportsResolveEvents)
        let events = CGEvents()
        childBuilder.eventKinds = [.resolved]
        childBuilder.eventHandler = { events.record($0) }
        let child = try await childBuilder.build()
        _ = try await child.resolve(CGGreetingKey.self)
        #expect(events.count(of: .resolved) == 1, "\(events.lines)")
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func aChildBuilderTakesOverItsParentsEventSettingsConsistently() async throws {
        var builder = ServiceGraph.Builder()
        builder.hookTimeout = .milliseconds(123)
        builder.factoryTimeout = .milliseconds(456)
        builder.requiresShutdown = false
        builder.reportsResolveEvents = true
        let events = CGEvents()
        builder.eventHandler = { events.record($0) }
        builder.provide(CGThemeKey.self) { "light" }
        builder.provide(CGGreetingKey.self, lifetime: .transient, dependsOn: CGThemeKey.self) { "hello in \($0)" }
        let parent = try await builder.build()
        _ = try await parent.resolve(CGGreetingKey.self)
        #expect(events.count(of: .resolved) == 1, "\(events.lines)")
        let childBuilder = parent.makeChildBuilder()
        #expect(childBuilder.eventHandler != nil && childBuilder.hookTimeout == .milliseconds(123))
        #expect(childBuilder.reportsResolveEvents)
        let child = try await childBuilder.build()
        _ = try await child.resolve(CGGreetingKey.self)
        #expect(events.count(of: .resolved) == 2, "the child's resolve was not reported: \(events.lines)")
        try await child.shutdown()
        try await parent.shutdown()
    }
}

extension DumpFormat {
    fileprivate static let allFormats: [DumpFormat] = [.text, .dot, .mermaid, .json]
}
