import Foundation
import ServiceGraph
import ServiceGraphTesting
import Testing
import ServiceGraphTestSupport

// Hostile tests of ServiceGraphTesting, written from its documentation alone: each test case gets a
// graph of its own, safe under parallel tests, no mocks leaking between tests, and hook failures at
// shutdown recorded as test issues.

// MARK: - Helpers

/// A thread-safe, ordered log of what happened.
private final class HostileLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []

    func add(_ entry: String) { lock.withLock { items.append(entry) } }

    var entries: [String] { lock.withLock { items } }

    func count(_ entry: String) -> Int { entries.filter { $0 == entry }.count }

    func index(of entry: String) -> Int? { entries.firstIndex(of: entry) }

    func contains(_ entry: String) -> Bool { entries.contains(entry) }
}

private struct HostileFailure: Error, Equatable {
    let label: String
}

/// What each probe of a graph does wrong.
private struct ProbeSpec: Sendable {
    var failOnAdd: Set<String> = []
    var failOnRemove: Set<String> = []
    var slowRemove: Set<String> = []
    var hangOnRemove: Set<String> = []
}

/// Waits without noticing cancellation.
private func uncancellableWait(milliseconds: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            continuation.resume()
        }
    }
}

private final class HostileProbe: LifecycleHooks, @unchecked Sendable {
    let name: String
    let log: HostileLog
    let spec: ProbeSpec

    init(_ name: String, log: HostileLog, spec: ProbeSpec) {
        self.name = name
        self.log = log
        self.spec = spec
    }

    func didAdd() async throws {
        log.add("didAdd \(name)")
        if spec.failOnAdd.contains(name) { throw HostileFailure(label: "didAdd \(name)") }
    }

    func willRemove() async throws {
        if spec.slowRemove.contains(name) { await uncancellableWait(milliseconds: 300) }
        if spec.hangOnRemove.contains(name) { try await Task.sleep(for: .seconds(30)) }
        log.add("willRemove \(name)")
        if spec.failOnRemove.contains(name) { throw HostileFailure(label: "willRemove \(name)") }
    }
}

private enum HRootKey: ServiceKey { typealias Value = HostileProbe }
private enum HMidKey: ServiceKey { typealias Value = HostileProbe }
private enum HLeafKey: ServiceKey { typealias Value = HostileProbe }
private enum HSideKey: ServiceKey { typealias Value = HostileProbe }
private enum HScopedKey: ServiceKey { typealias Value = HostileProbe }
private enum HChildKey: ServiceKey { typealias Value = HostileProbe }
private enum HTagKey: ServiceKey { typealias Value = String }
private enum HIndexKey: ServiceKey { typealias Value = Int }
private enum HostileMissingKey: ServiceKey { typealias Value = Int }
private enum HNeedsMissingKey: ServiceKey { typealias Value = Int }

private protocol HostileMailer: Sendable {
    func send(_ message: String)
}

private struct HostileProductionMailer: HostileMailer {
    func send(_ message: String) {}
}

private final class HostileRecordingMailer: HostileMailer, @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []

    func send(_ message: String) { lock.withLock { messages.append(message) } }

    var sent: [String] { lock.withLock { messages } }
}

private final class HostileStore: @unchecked Sendable {
    private let lock = NSLock()
    private var accounts: [String] = []

    func add(_ account: String) { lock.withLock { accounts.append(account) } }

    var all: [String] { lock.withLock { accounts } }
}

private struct HostileSignup: Sendable {
    let store: HostileStore
    let mailer: any HostileMailer

    func register(_ address: String) {
        store.add(address)
        mailer.send(address)
    }
}

private enum HMailerKey: ServiceKey { typealias Value = any HostileMailer }
private enum HStoreKey: ServiceKey { typealias Value = HostileStore }
private enum HSignupKey: ServiceKey { typealias Value = HostileSignup }

private enum HostileApp {
    /// A chain root ← mid ← leaf, an independent side service, and a tag.
    static func probes(log: HostileLog, spec: ProbeSpec = ProbeSpec(), tag: String = "") -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(HRootKey.self) { HostileProbe("root", log: log, spec: spec) }
        builder.provide(HMidKey.self, dependsOn: HRootKey.self) { _ in HostileProbe("mid", log: log, spec: spec) }
        builder.provide(HLeafKey.self, dependsOn: HMidKey.self) { _ in HostileProbe("leaf", log: log, spec: spec) }
        builder.provide(HSideKey.self) { HostileProbe("side", log: log, spec: spec) }
        builder.provide(HScopedKey.self, lifetime: .scoped, dependsOn: HLeafKey.self) { _ in
            HostileProbe("scoped", log: log, spec: spec)
        }
        builder.provide(HTagKey.self) { tag }
        return builder
    }

    /// The production signup wiring.
    static func signup() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(HMailerKey.self) { HostileProductionMailer() }
        builder.provide(HStoreKey.self) { HostileStore() }
        builder.provide(HIndexKey.self) { -1 }
        builder.provide(HSignupKey.self, lifetime: .transient, dependsOn: HStoreKey.self, HMailerKey.self) {
            HostileSignup(store: $0, mailer: $1)
        }
        return builder
    }

    /// The test wiring: a fresh recording mailer per build of this builder's copy.
    static func signupWithDouble() -> ServiceGraph.Builder {
        var builder = signup()
        builder.override(HMailerKey.self) { HostileRecordingMailer() }
        return builder
    }
}

/// Records which test case first saw each object, while it lives: a claim by another case of an object
/// still alive is sharing. (Weakly: an object kept here until the process exits would be reported by the
/// leak checker; an identifier reused after its object ended is a new object, and claimed anew.)
private final class IdentityRegistry: @unchecked Sendable {
    private struct Claim {
        weak var object: AnyObject?
        let owner: String
    }

    private let lock = NSLock()
    private var claims: [ObjectIdentifier: Claim] = [:]

    /// Returns the other owner that already claimed `object`, or nil.
    func claim(_ object: AnyObject, by owner: String) -> String? {
        lock.withLock {
            let id = ObjectIdentifier(object)
            if let previous = claims[id], previous.object === object, previous.owner != owner { return previous.owner }
            claims[id] = Claim(object: object, owner: owner)
            return nil
        }
    }
}

private let identities = IdentityRegistry()

private final class WeakBox: @unchecked Sendable {
    private let lock = NSLock()
    private var objects: [String: () -> AnyObject?] = [:]

    func hold(_ name: String, _ object: AnyObject) {
        lock.withLock {
            objects[name] = { [weak object] in object }
        }
    }

    var alive: [String] {
        lock.withLock { objects.filter { $0.value() != nil }.map(\.key).sorted() }
    }

    var count: Int { lock.withLock { objects.count } }
}

private final class IssueCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var texts: [String] = []

    func add(_ issue: Issue) {
        var text = String(describing: issue)
        if let error = issue.error { text += " | \(String(describing: error))" }
        lock.withLock { texts.append(text) }
    }

    var all: [String] { lock.withLock { texts } }
}

/// Whether an issue's error is (or wraps) the given failure, or mentions it.
private func issue(_ issue: Issue, mentions needle: String) -> Bool {
    if let failure = issue.error as? HostileFailure, failure.label.contains(needle) { return true }
    if let error = issue.error as? ServiceGraphError {
        if error.description.contains(needle) { return true }
        if error.problems.contains(where: { ($0.underlyingError as? HostileFailure)?.label.contains(needle) == true }) {
            return true
        }
    }
    if let error = issue.error, String(describing: error).contains(needle) { return true }
    return String(describing: issue).contains(needle)
}

/// Waits for `condition`, polling; fails the test if it does not hold within two minutes (eight under a
/// sanitizer). A hang guard, not a time limit: with the whole suite's tasks sharing two threads, a build
/// of four services has been seen to take over a minute under the thread sanitizer.
private func waitUntil(
    _ condition: @Sendable () -> Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let limit = Duration.seconds(ProcessEnvironment.isSanitizerRun ? 480 : 120)
    let deadline = ContinuousClock.now + limit
    while !condition() && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(5))
    }
    #expect(condition(), "the condition waited for did not hold within \(limit)", sourceLocation: sourceLocation)
}

private func isGraphShutDown(_ graph: ServiceGraph) async -> Bool {
    do {
        _ = try await graph.resolve(HTagKey.self)
        return false
    } catch let error as ServiceGraphError {
        return error.contains(.graphShutDown)
    } catch {
        return false
    }
}

// MARK: - Parallel isolation

@Suite("Hostile: parallel isolation")
struct IsolatedGraphParallelHostileTests {
    @Test(.isolatedGraph { HostileApp.signupWithDouble() }, arguments: 0..<200)
    func twoHundredTraitCasesSeeOnlyTheirOwnMockAndSingletons(_ index: Int) async throws {
        let owner = "trait-\(index)"
        let graph = TestGraph.required
        #expect(identities.claim(graph, by: owner) == nil, "another case's graph")
        let mailer = try #require(graph[HMailerKey.self] as? HostileRecordingMailer, "the override's double")
        let store = graph[HStoreKey.self]
        #expect(identities.claim(mailer, by: owner) == nil, "another case's mock")
        #expect(identities.claim(store, by: owner) == nil, "another case's singleton")
        for copy in 0..<3 {
            let signup = try await graph.resolve(HSignupKey.self)
            #expect(signup.store === store)
            #expect((signup.mailer as? HostileRecordingMailer) === mailer)
            signup.register("case\(index)-\(copy)")
            await Task.yield()
            #expect(TestGraph.current === graph, "the current graph changed under the case")
        }
        #expect(mailer.sent == (0..<3).map { "case\(index)-\($0)" }, "the mock saw other cases' mail")
        #expect(store.all == (0..<3).map { "case\(index)-\($0)" }, "the store saw other cases' state")
        #expect(graph[HStoreKey.self] === store)
    }

    @Test(arguments: 0..<200)
    func twoHundredCasesOverrideAKeyWithTheirOwnMock(_ index: Int) async throws {
        let owner = "closure-\(index)"
        var builder = HostileApp.signup()
        let mock = HostileRecordingMailer()
        builder.override(HMailerKey.self, with: mock)
        builder.override(HIndexKey.self) { index }
        let seen = try await withIsolatedGraph(builder) { graph in
            #expect(TestGraph.current === graph)
            #expect(identities.claim(graph, by: owner) == nil)
            #expect(identities.claim(graph[HStoreKey.self], by: owner) == nil)
            #expect((graph[HMailerKey.self] as? HostileRecordingMailer) === mock)
            for copy in 0..<3 {
                try await graph.resolve(HSignupKey.self).register("case\(index)-\(copy)")
                await Task.yield()
            }
            #expect(graph[HStoreKey.self].all == (0..<3).map { "case\(index)-\($0)" })
            return graph[HIndexKey.self]
        }
        #expect(seen == index)
        #expect(mock.sent == (0..<3).map { "case\(index)-\($0)" }, "mail from other cases reached this mock")
    }

    @Test(.isolatedGraph { HostileApp.signupWithDouble() }, arguments: 0..<50)
    func theCurrentGraphInChildTasks(_ index: Int) async throws {
        let graph = TestGraph.required
        async let fromAsyncLet = TestGraph.current
        let fromGroup = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await Task.yield()
                    return TestGraph.current === graph
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        let fromTask = await Task { TestGraph.current }.value
        let fromDetached = await Task.detached { TestGraph.current }.value
        #expect(await fromAsyncLet === graph)
        #expect(fromGroup == Array(repeating: true, count: 8))
        #expect(fromTask === graph, "Task {} inherits task locals")
        #expect(fromDetached == nil, "a detached task must not see the test's graph")
    }

    @Test func aSharedBuilderBuiltByManyTestsAtOnceGivesEachItsOwnSingletons() async throws {
        let shared = HostileApp.signupWithDouble()
        let seen = try await withThrowingTaskGroup(of: BuiltObjects.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try await withIsolatedGraph(shared) { graph in
                        try await graph.resolve(HSignupKey.self).register("\(index)")
                        let mailer = try #require(graph[HMailerKey.self] as? HostileRecordingMailer)
                        #expect(mailer.sent == ["\(index)"])
                        #expect(graph[HStoreKey.self].all == ["\(index)"])
                        // Kept alive (returned), so that no identity can be reused by a later graph.
                        return BuiltObjects(graph: graph, mailer: mailer, store: graph[HStoreKey.self])
                    }
                }
            }
            return try await group.reduce(into: [BuiltObjects]()) { $0.append($1) }
        }
        let identitiesSeen = seen.flatMap {
            [ObjectIdentifier($0.graph), ObjectIdentifier($0.mailer), ObjectIdentifier($0.store)]
        }
        #expect(identitiesSeen.count == 64 * 3)
        #expect(Set(identitiesSeen).count == 64 * 3, "two isolated graphs shared an object")
    }

    @Test func siblingIsolatedGraphsInOneTestEachSeeTheirOwnCurrent() async throws {
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for index in 0..<16 {
                group.addTask {
                    var builder = HostileApp.signup()
                    builder.override(HIndexKey.self) { index }
                    return try await withIsolatedGraph(builder) { graph in
                        for _ in 0..<5 { await Task.yield() }
                        return (index, TestGraph.current?[HIndexKey.self] ?? -100)
                    }
                }
            }
            return try await group.reduce(into: [(Int, Int)]()) { $0.append($1) }
        }
        #expect(results.count == 16)
        for (index, seen) in results {
            #expect(seen == index, "a sibling's graph was current")
        }
    }
}

// MARK: - The trait on a suite and on a test

@Suite(.isolatedGraph { HostileApp.probes(log: HostileLog(), tag: "suite") })
struct IsolatedGraphSuiteTraitHostileTests {
    @Test func aTestOfTheSuiteGetsAGraph() throws {
        let graph = try #require(TestGraph.current)
        #expect(graph[HTagKey.self] == "suite")
        #expect(identities.claim(graph, by: "suite-single") == nil)
    }

    @Test(arguments: 0..<32)
    func eachCaseOfAParameterizedTestInTheSuiteGetsItsOwnGraph(_ index: Int) throws {
        let graph = try #require(TestGraph.current)
        #expect(graph[HTagKey.self] == "suite")
        #expect(identities.claim(graph, by: "suite-case-\(index)") == nil, "two cases shared the suite's graph")
        #expect(identities.claim(graph[HRootKey.self], by: "suite-case-\(index)") == nil)
    }

    @Test(.isolatedGraph { HostileApp.probes(log: HostileLog(), tag: "test") })
    func theTestsOwnTraitIsTheGraphTheTestSees() throws {
        let graph = try #require(TestGraph.current)
        #expect(graph[HTagKey.self] == "test", "the test's own trait is the more specific one")
    }

    @Test func aNestedWithIsolatedGraphShadowsTheTraitsGraphThenRestoresIt() async throws {
        let outer = try #require(TestGraph.current)
        let log = HostileLog()
        let inner = try await withIsolatedGraph(HostileApp.probes(log: log, tag: "inner")) { graph in
            #expect(graph !== outer)
            #expect(TestGraph.current === graph)
            #expect(TestGraph.required[HTagKey.self] == "inner")
            return graph
        }
        #expect(TestGraph.current === outer, "the trait's graph is current again")
        #expect(await isGraphShutDown(inner), "the inner graph is shut down")
        #expect(!(await isGraphShutDown(outer)), "the outer graph is still running")
        #expect(log.count("willRemove root") == 1)
    }
}

// MARK: - The trait, driven directly

@Suite("Hostile: the isolated graph trait")
struct IsolatedGraphTraitHostileTests {
    @Test func hooksRunOnceInReverseDependencyOrderAfterTheBodyAndBeforeTheScopeReturns() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log) }
        let test = try #require(Test.current)
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            let graph = TestGraph.required
            _ = graph[HLeafKey.self]
            #expect(log.entries.allSatisfy { $0.hasPrefix("didAdd") })
            log.add("body end")
        }
        let entries = log.entries
        for name in ["root", "mid", "leaf", "side"] {
            #expect(log.count("didAdd \(name)") == 1, "\(entries)")
            #expect(log.count("willRemove \(name)") == 1, "\(entries)")
        }
        let bodyEnd = try #require(log.index(of: "body end"))
        let leaf = try #require(log.index(of: "willRemove leaf"))
        let mid = try #require(log.index(of: "willRemove mid"))
        let root = try #require(log.index(of: "willRemove root"))
        let side = try #require(log.index(of: "willRemove side"))
        #expect(bodyEnd < leaf && leaf < mid && mid < root, "\(entries)")
        #expect(bodyEnd < side, "\(entries)")
        #expect(TestGraph.current == nil, "the graph is current only inside the scope")
    }

    @Test func theNextUseGetsAFreshGraphAfterThePreviousOneIsFullyReleased() async throws {
        let log = HostileLog()
        let generation = Counter()
        let trait: IsolatedGraphTrait = .isolatedGraph {
            HostileApp.probes(log: log, tag: "g\(generation.next())")
        }
        let test = try #require(Test.current)
        let graphs = GraphBox()
        for _ in 0..<3 {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                graphs.add(TestGraph.required)
                log.add("body \(TestGraph.required[HTagKey.self])")
            }
        }
        let all = graphs.all
        #expect(all.count == 3)
        #expect(Set(all.map(ObjectIdentifier.init)).count == 3)
        #expect(all.map { $0[HTagKey.self] } == ["g1", "g2", "g3"])
        let entries = log.entries
        #expect(entries.filter { $0 == "willRemove root" }.count == 3)
        // Each body is preceded by exactly the didAdds of its graph and followed by its willRemoves.
        let bodies = entries.indices.filter { entries[$0].hasPrefix("body") }
        #expect(bodies.count == 3)
        for (first, second) in zip(bodies, bodies.dropFirst()) {
            let between = entries[(first + 1)..<second]
            #expect(between.filter { $0.hasPrefix("willRemove") }.count == 4, "\(entries)")
            #expect(between.filter { $0.hasPrefix("didAdd") }.count == 4, "\(entries)")
            let lastRemove = try #require(between.lastIndex { $0.hasPrefix("willRemove") })
            let firstAdd = try #require(between.firstIndex { $0.hasPrefix("didAdd") })
            #expect(lastRemove < firstAdd, "the next graph started before the previous one was released")
        }
        for graph in all { #expect(await isGraphShutDown(graph)) }
    }

    @Test func aWillRemoveThatThrowsIsRecordedAsAnIssueAndTheOthersStillRun() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["mid"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let collector = IssueCollector()
        try await withKnownIssue("mid's willRemove throws at shutdown") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                log.add("body")
            }
        } matching: { recorded in
            collector.add(recorded)
            return issue(recorded, mentions: "willRemove mid") || issue(recorded, mentions: "willRemoveFailed")
        }
        #expect(collector.all.count == 1, "recorded once: \(collector.all)")
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
    }

    @Test func twoThrowingWillRemovesAreBothRecorded() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["leaf", "root"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let collector = IssueCollector()
        try await withKnownIssue("two willRemove hooks throw") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {}
        } matching: { recorded in
            collector.add(recorded)
            return issue(recorded, mentions: "willRemove") || issue(recorded, mentions: "willRemoveFailed")
        }
        let text = collector.all.joined(separator: "\n")
        #expect(text.contains("leaf") || text.contains("HLeaf"), "leaf's failure reported: \(text)")
        #expect(text.contains("root") || text.contains("HRoot"), "root's failure reported: \(text)")
        #expect(log.count("willRemove mid") == 1)
    }

    @Test func aDidAddThatThrowsFailsTheCaseSkipsTheBodyAndReleasesWhatStarted() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnAdd: ["mid"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        try await withKnownIssue("mid's didAdd throws during the build") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                log.add("body")
            }
        } matching: { recorded in
            issue(recorded, mentions: "didAdd mid") || issue(recorded, mentions: "didAddFailed")
        }
        let entries = log.entries
        #expect(!entries.contains("body"), "the body ran on a graph that failed to build")
        #expect(log.count("willRemove root") == 1, "\(entries)")
        #expect(log.count("willRemove mid") == 0, "the failing one never started: \(entries)")
        #expect(log.count("didAdd leaf") == 0, "\(entries)")
        #expect(log.count("willRemove side") == log.count("didAdd side"), "\(entries)")
    }

    @Test func aBuilderClosureThatThrowsFailsTheCaseWithItsError() async throws {
        let ran = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { throw HostileFailure(label: "builder closure") }
        let test = try #require(Test.current)
        try await withKnownIssue("the builder closure throws") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                ran.add("body")
            }
        } matching: { recorded in
            (recorded.error as? HostileFailure) == HostileFailure(label: "builder closure")
        }
        #expect(ran.entries.isEmpty)
    }

    @Test func aGraphThatFailsValidationFailsTheCaseNamingTheMissingKey() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph {
            var builder = HostileApp.probes(log: log)
            builder.provide(HNeedsMissingKey.self, dependsOn: HostileMissingKey.self) { $0 }
            return builder
        }
        let test = try #require(Test.current)
        let collector = IssueCollector()
        try await withKnownIssue("a key has no provider") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                log.add("body")
            }
        } matching: { recorded in
            collector.add(recorded)
            guard let error = recorded.error as? ServiceGraphError else { return false }
            return error.contains(.missingProvider)
                && error.problems.contains { $0.key.contains("HostileMissing") }
        }
        #expect(collector.all.count == 1, "\(collector.all)")
        #expect(log.entries.isEmpty, "nothing ran: \(log.entries)")
    }

    @Test func aSlowWillRemoveIsAwaitedBeforeTheScopeReturns() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(slowRemove: ["root", "leaf"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let clock = ContinuousClock()
        let elapsed = try await clock.measure {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {}
        }
        #expect(log.count("willRemove root") == 1)
        #expect(log.count("willRemove leaf") == 1)
        #expect(elapsed >= .milliseconds(600), "leaf then root, 300 ms each, in order: \(elapsed)")
    }

    @Test func aHangingWillRemoveWithAHookTimeoutIsRecordedAndDoesNotHangTheTest() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(hangOnRemove: ["mid"])
        let trait: IsolatedGraphTrait = .isolatedGraph {
            var builder = HostileApp.probes(log: log, spec: spec)
            builder.hookTimeout = .milliseconds(200)
            return builder
        }
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        // The hook hangs for 30 s; its 200 ms timeout ends the shutdown long before, which the issue
        // recorded shows (without the timeout, none would be). The deadline is only a hang guard.
        try await withDeadline(.seconds(120)) {
            try await withKnownIssue("mid's willRemove times out") {
                try await trait.provideScope(for: test, testCase: testCase) {}
            } matching: { recorded in
                guard let error = recorded.error as? ServiceGraphError else {
                    return String(describing: recorded).contains("hookTimedOut")
                }
                return error.contains(.hookTimedOut)
            }
        }
        #expect(log.count("willRemove root") == 1, "released after the stuck hook: \(log.entries)")
        #expect(log.count("willRemove leaf") == 1)
    }

    @Test func aThrowingBodyPropagatesItsErrorAndTheGraphIsStillShutDownOnce() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log) }
        let test = try #require(Test.current)
        let graphs = GraphBox()
        await #expect(throws: HostileFailure(label: "body")) {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                graphs.add(TestGraph.required)
                throw HostileFailure(label: "body")
            }
        }
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
        let graph = try #require(graphs.all.first)
        #expect(await isGraphShutDown(graph))
    }

    @Test func aThrowingBodyAndAThrowingWillRemoveAreBothReported() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["root"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let collector = IssueCollector()
        let sawBody = Flag()
        let sawHook = Flag()
        try await withKnownIssue("the body throws, then root's willRemove throws") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                throw HostileFailure(label: "body")
            }
        } matching: { recorded in
            collector.add(recorded)
            if (recorded.error as? HostileFailure) == HostileFailure(label: "body") {
                sawBody.set()
                return true
            }
            if issue(recorded, mentions: "willRemove root") || issue(recorded, mentions: "willRemoveFailed") {
                sawHook.set()
                return true
            }
            return false
        }
        #expect(sawBody.isSet, "the body's error was lost: \(collector.all)")
        #expect(sawHook.isSet, "the hook failure was lost: \(collector.all)")
        #expect(log.count("willRemove root") == 1)
    }

    @Test func aCancelledBodyStillShutsTheGraphDownOnce() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(slowRemove: ["root"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        let running = Task {
            try await trait.provideScope(for: test, testCase: testCase) {
                log.add("body start")
                try await Task.sleep(for: .seconds(30))
                log.add("body end")
            }
        }
        await waitUntil { log.contains("body start") }
        running.cancel()
        // The body sleeps 30 s unless cancelled: "body end" in the log would say it was not. The deadline
        // is only a hang guard.
        let result = try await withDeadline(.seconds(120)) { await running.result }
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(!log.contains("body end"))
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "cancellation must not skip cleanup: \(log.entries)")
        }
    }

    @Test func aScopeLeftOpenByTheBodyIsClosedBeforeTheSingletonsItUses() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log) }
        let test = try #require(Test.current)
        let scopes = ScopeBox()
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            let scope = try TestGraph.required.makeScope()
            _ = try await scope.resolve(HScopedKey.self)
            scopes.keep(scope)  // left open, and alive
        }
        let scoped = try #require(log.index(of: "willRemove scoped"), "\(log.entries)")
        let leaf = try #require(log.index(of: "willRemove leaf"))
        #expect(scoped < leaf, "\(log.entries)")
        #expect(log.count("willRemove scoped") == 1)
    }

    @Test func nothingOfTheCaseOutlivesItsScope() async throws {
        let log = HostileLog()
        let weak = WeakBox()
        let trait: IsolatedGraphTrait = .isolatedGraph {
            var builder = HostileApp.probes(log: log)
            builder.override(HSideKey.self, with: HostileProbe("side", log: log, spec: ProbeSpec()))
            return builder
        }
        let test = try #require(Test.current)
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            let graph = TestGraph.required
            weak.hold("graph", graph)
            weak.hold("root", graph[HRootKey.self])
            weak.hold("mid", graph[HMidKey.self])
            weak.hold("leaf", graph[HLeafKey.self])
            weak.hold("side (a value override)", graph[HSideKey.self])
            let scope = try graph.makeScope()
            weak.hold("scoped", try await scope.resolve(HScopedKey.self))
            try await scope.close()
        }
        #expect(weak.count == 6)
        #expect(weak.alive.isEmpty, "still alive after the case: \(weak.alive)")
        #expect(TestGraph.current == nil)
    }

    @Test func anUnstructuredTaskThatOutlivesTheCaseSeesAShutDownGraphNotAnotherCasesGraph() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, tag: "escaped") }
        let test = try #require(Test.current)
        let gate = Flag()
        let escaped = TaskBox()
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            escaped.task = Task {
                await waitUntil { gate.isSet }
                guard let graph = TestGraph.current else { return "nil" }
                return await isGraphShutDown(graph) ? "shut down" : "running"
            }
        }
        gate.set()
        let seen = await escaped.task?.value
        #expect(seen == "shut down", "an escaped task may keep the case's graph, but it must be shut down")
    }

    @Test func theTraitsGraphIsNotVisibleToADetachedTaskOrAfterTheScope() async throws {
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: HostileLog()) }
        let test = try #require(Test.current)
        let seen = HostileLog()
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            seen.add(TestGraph.current == nil ? "nil" : "graph")
            let detached = await Task.detached { TestGraph.current == nil ? "nil" : "graph" }.value
            seen.add(detached)
        }
        seen.add(TestGraph.current == nil ? "nil" : "graph")
        #expect(seen.entries == ["graph", "nil", "nil"])
    }

    @Test func concurrentScopesOfTheSameTraitEachBindTheirOwnGraph() async throws {
        let generation = Counter()
        let trait: IsolatedGraphTrait = .isolatedGraph {
            HostileApp.probes(log: HostileLog(), tag: "c\(generation.next())")
        }
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        let tags = HostileLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await trait.provideScope(for: test, testCase: testCase) {
                        let graph = TestGraph.required
                        let tag = graph[HTagKey.self]
                        for _ in 0..<5 {
                            await Task.yield()
                            #expect(TestGraph.current === graph)
                        }
                        tags.add(tag)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(Set(tags.entries).count == 12, "\(tags.entries)")
    }
}

// MARK: - One graph per case, no more

private let serialCaseBuilds = Counter()
private let serialCaseStarts = Counter()
private let serialSuiteBuilds = Counter()
private let serialSuiteStarts = Counter()

@Suite("Hostile: one build per test case")
struct OneBuildPerCaseHostileTests {
    @Test(
        .serialized,
        .isolatedGraph {
            _ = serialCaseBuilds.next()
            return HostileApp.probes(log: HostileLog())
        },
        arguments: 0..<8
    )
    func eachCaseBuildsExactlyOneGraph(_ index: Int) throws {
        let started = serialCaseStarts.next()
        #expect(serialCaseBuilds.value == started, "graphs built beyond one per case")
        #expect(TestGraph.current != nil)
    }
}

@Suite(
    .serialized,
    .isolatedGraph {
        _ = serialSuiteBuilds.next()
        return HostileApp.probes(log: HostileLog(), tag: "serial suite")
    }
)
struct OneBuildPerCaseOfASuiteHostileTests {
    @Test func first() throws {
        let started = serialSuiteStarts.next()
        #expect(serialSuiteBuilds.value == started, "the suite itself built a graph of its own, or a test two")
        #expect(TestGraph.current?[HTagKey.self] == "serial suite")
    }

    @Test func second() throws {
        let started = serialSuiteStarts.next()
        #expect(serialSuiteBuilds.value == started, "the suite itself built a graph of its own, or a test two")
    }

    @Test(arguments: 0..<4)
    func cases(_ index: Int) throws {
        let started = serialSuiteStarts.next()
        #expect(serialSuiteBuilds.value == started, "the suite itself built a graph of its own, or a case two")
    }
}

@Suite("Hostile: more shutdown failures")
struct MoreShutdownFailureHostileTests {
    @Test func aThrowingWillRemoveInAScopeLeftOpenIsRecorded() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["scoped"])
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log, spec: spec) }
        let test = try #require(Test.current)
        let scopes = ScopeBox()
        try await withKnownIssue("the open scope's willRemove throws at shutdown") {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                let scope = try TestGraph.required.makeScope()
                _ = try await scope.resolve(HScopedKey.self)
                scopes.keep(scope)
            }
        } matching: { recorded in
            issue(recorded, mentions: "willRemove scoped") || issue(recorded, mentions: "HScopedKey")
        }
        #expect(log.count("willRemove scoped") == 1)
        #expect(log.count("willRemove root") == 1)
    }

    @Test func aDidAddThatThrowsInWithIsolatedGraphThrowsDidAddFailedAndReleasesWhatStarted() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnAdd: ["leaf"])
        let bodyRan = Flag()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await withIsolatedGraph(HostileApp.probes(log: log, spec: spec)) { _ in bodyRan.set() }
        }
        #expect(!bodyRan.isSet)
        #expect(error?.codes == [.didAddFailed])
        #expect(error?.problems.first?.key.contains("HLeaf") == true)
        #expect(log.count("willRemove leaf") == 0)
        #expect(log.count("willRemove mid") == 1)
        #expect(log.count("willRemove root") == 1)
        let mid = try #require(log.index(of: "willRemove mid"))
        let root = try #require(log.index(of: "willRemove root"))
        #expect(mid < root, "\(log.entries)")
    }

    @Test func anAlreadyCancelledTaskRunsNoBodyAndLeavesNothingRunning() async throws {
        let log = HostileLog()
        let bodyRan = Flag()
        let running = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await withIsolatedGraph(HostileApp.probes(log: log)) { _ in bodyRan.set() }
        }
        let result = await running.result
        #expect(throws: (any Error).self) { try result.get() }
        #expect(!bodyRan.isSet)
        try await Task.sleep(for: .milliseconds(200))  // abandoned work, if any, finishes
        for name in ["root", "mid", "leaf", "side"] {
            #expect(log.count("didAdd \(name)") == log.count("willRemove \(name)"), "\(log.entries)")
        }
    }
}

@Suite("Hostile: what the body does to its own graph")
struct BodyOwnedShutdownHostileTests {
    @Test func aBodyThatShutsTheGraphDownItselfGetsNoSecondShutdownNorASpuriousIssue() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log) }
        let test = try #require(Test.current)
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            try await TestGraph.required.shutdown()
            log.add("body shut down")
        }
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
    }

    @Test func withIsolatedGraphAroundABodyThatShutsDownItselfReturnsNormally() async throws {
        let log = HostileLog()
        let value = try await withIsolatedGraph(HostileApp.probes(log: log)) { graph in
            try await graph.shutdown()
            return 7
        }
        #expect(value == 7)
        #expect(log.count("willRemove root") == 1)
    }

    @Test func aChildGraphLeftRunningByTheBodyIsShutDownBeforeTheParentsSingletons() async throws {
        let log = HostileLog()
        let trait: IsolatedGraphTrait = .isolatedGraph { HostileApp.probes(log: log) }
        let test = try #require(Test.current)
        let children = GraphBox()
        try await trait.provideScope(for: test, testCase: Test.Case.current) {
            var child = TestGraph.required.makeChildBuilder()
            child.provide(HChildKey.self, dependsOn: HLeafKey.self) { _ in
                HostileProbe("child", log: log, spec: ProbeSpec())
            }
            let childGraph = try await child.build()
            _ = childGraph[HChildKey.self]
            children.add(childGraph)  // left running
        }
        #expect(log.count("willRemove child") == 1, "\(log.entries)")
        let child = try #require(log.index(of: "willRemove child"))
        let leaf = try #require(log.index(of: "willRemove leaf"))
        #expect(child < leaf, "\(log.entries)")
    }
}

// MARK: - withIsolatedGraph

@Suite("Hostile: withIsolatedGraph")
struct WithIsolatedGraphHostileTests {
    @Test func worksOutsideSwiftTestingAndReturnsTheBodysValue() async throws {
        let log = HostileLog()
        let builder = HostileApp.probes(log: log, tag: "plain")
        let (value, hadTest) = try await Task.detached {
            let hadTest = Test.current != nil
            let value = try await withIsolatedGraph(builder) { graph in
                [graph[HTagKey.self], TestGraph.current?[HTagKey.self] ?? "nil"]
            }
            return (value, hadTest)
        }.value
        #expect(!hadTest)
        #expect(value == ["plain", "plain"])
        #expect(log.count("willRemove root") == 1)
        #expect(TestGraph.current == nil)
    }

    @Test func rethrowsTheBodysOwnErrorAndShutsDown() async throws {
        let log = HostileLog()
        let escaped = GraphBox()
        await #expect(throws: HostileFailure(label: "body")) {
            try await withIsolatedGraph(HostileApp.probes(log: log)) { graph in
                escaped.add(graph)
                throw HostileFailure(label: "body")
            }
        }
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1)
        }
        let graph = try #require(escaped.all.first)
        #expect(await isGraphShutDown(graph))
    }

    @Test func aBodyErrorWinsOverAShutdownErrorAndTheHookFailureIsStillReported() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["root"])
        let thrown = ErrorBox()
        let collector = IssueCollector()
        let sawHook = Flag()
        // The docs: "Throws ... body's error, or the shutdown's ServiceGraphError (after body
        // succeeded)", and withIsolatedGraph "reports hook failures".
        await withKnownIssue("the body throws, then root's willRemove throws") {
            do {
                try await withIsolatedGraph(HostileApp.probes(log: log, spec: spec)) { _ in
                    throw HostileFailure(label: "body")
                }
            } catch {
                thrown.error = error
            }
        } matching: { recorded in
            collector.add(recorded)
            let matches = issue(recorded, mentions: "willRemove root") || issue(recorded, mentions: "willRemoveFailed")
            if matches { sawHook.set() }
            return matches
        }
        #expect(
            (thrown.error as? HostileFailure) == HostileFailure(label: "body"),
            "\(String(describing: thrown.error))"
        )
        #expect(log.count("willRemove root") == 1)
        #expect(sawHook.isSet, "the shutdown failure vanished: \(collector.all)")
    }

    @Test func aShutdownFailureAfterASuccessfulBodyIsThrownWithTheHooksError() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(failOnRemove: ["mid"])
        let bodyRan = Flag()
        let error = await #expect(throws: ServiceGraphError.self) {
            _ = try await withIsolatedGraph(HostileApp.probes(log: log, spec: spec)) { _ in
                bodyRan.set()
                return 42
            }
        }
        #expect(bodyRan.isSet)
        #expect(error?.codes == [.willRemoveFailed])
        let underlying = error?.problems.first?.underlyingError as? HostileFailure
        #expect(underlying == HostileFailure(label: "willRemove mid"))
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
    }

    @Test func aGraphThatFailsValidationThrowsNamingTheKeyAndRunsNothing() async throws {
        let log = HostileLog()
        var builder = HostileApp.probes(log: log)
        builder.provide(HNeedsMissingKey.self, dependsOn: HostileMissingKey.self) { $0 }
        let bodyRan = Flag()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await withIsolatedGraph(builder) { _ in bodyRan.set() }
        }
        #expect(!bodyRan.isSet)
        #expect(error?.codes == [.missingProvider])
        #expect(error?.problems.first?.key.contains("HostileMissing") == true, "\(String(describing: error))")
        #expect(error?.description.contains("HostileMissing") == true, "\(String(describing: error))")
        #expect(log.entries.isEmpty, "\(log.entries)")
    }

    @Test func aFactoryFailingMidBuildReleasesWhatStartedAndSkipsTheBody() async throws {
        let log = HostileLog()
        var builder = HostileApp.probes(log: log)
        builder.override(HLeafKey.self, dependsOn: HMidKey.self) { _ in
            throw HostileFailure(label: "leaf factory")
        }
        let bodyRan = Flag()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await withIsolatedGraph(builder) { _ in bodyRan.set() }
        }
        #expect(!bodyRan.isSet)
        #expect(error?.contains(.factoryFailed) == true)
        #expect(log.count("willRemove mid") == 1, "\(log.entries)")
        #expect(log.count("willRemove root") == 1, "\(log.entries)")
        #expect(log.count("willRemove side") == log.count("didAdd side"))
        #expect(TestGraph.current == nil)
    }

    @Test func aCancelledBodyPropagatesCancellationAndCleanupStillRuns() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(slowRemove: ["mid"])
        let running = Task {
            try await withIsolatedGraph(HostileApp.probes(log: log, spec: spec)) { _ in
                log.add("body start")
                try await Task.sleep(for: .seconds(30))
                log.add("body end")
            }
        }
        await waitUntil { log.contains("body start") }
        running.cancel()
        let result = await running.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(!log.contains("body end"))
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
    }

    @Test func aBodyThatIgnoresCancellationStillGetsAFullShutdown() async throws {
        let log = HostileLog()
        let spec = ProbeSpec(slowRemove: ["leaf"])
        let running = Task {
            try await withIsolatedGraph(HostileApp.probes(log: log, spec: spec)) { graph in
                log.add("body start")
                await uncancellableWait(milliseconds: 200)
                return graph[HTagKey.self] + "done"
            }
        }
        await waitUntil { log.contains("body start") }
        running.cancel()
        let value = try await running.value
        #expect(value == "done")
        for name in ["leaf", "mid", "root", "side"] {
            #expect(log.count("willRemove \(name)") == 1, "\(log.entries)")
        }
    }

    @Test func theGraphAndItsSingletonsAreReleasedAfterwards() async throws {
        let weak = WeakBox()
        let mock = HostileRecordingMailer()
        do {
            var builder = HostileApp.signup()
            builder.override(HMailerKey.self, with: mock)
            try await withIsolatedGraph(builder) { graph in
                weak.hold("graph", graph)
                weak.hold("store", graph[HStoreKey.self])
                try await graph.resolve(HSignupKey.self).register("x")
            }
            try await withIsolatedGraph(HostileApp.probes(log: HostileLog())) { graph in
                weak.hold("probes graph", graph)
                weak.hold("root", graph[HRootKey.self])
                weak.hold("leaf", graph[HLeafKey.self])
            }
        }
        #expect(weak.count == 5)
        #expect(weak.alive.isEmpty, "still alive: \(weak.alive)")
        #expect(mock.sent == ["x"])
    }

    @Test func anEscapedGraphRefusesWorkAfterwards() async throws {
        let graph = try await withIsolatedGraph(HostileApp.probes(log: HostileLog())) { $0 }
        #expect(await isGraphShutDown(graph))
        #expect(throws: ServiceGraphError.self) { _ = try graph.makeScope() }
    }

    @Test func nestedWithIsolatedGraphsRestoreTheOuterCurrent() async throws {
        let outerLog = HostileLog()
        let innerLog = HostileLog()
        try await withIsolatedGraph(HostileApp.probes(log: outerLog, tag: "outer")) { outer in
            let inner = try await withIsolatedGraph(HostileApp.probes(log: innerLog, tag: "inner")) { inner in
                #expect(TestGraph.required === inner)
                #expect(inner[HTagKey.self] == "inner")
                return inner
            }
            #expect(TestGraph.current === outer)
            #expect(innerLog.count("willRemove root") == 1)
            #expect(outerLog.count("willRemove root") == 0, "the outer graph is still running")
            #expect(await isGraphShutDown(inner))
        }
        #expect(outerLog.count("willRemove root") == 1)
        #expect(TestGraph.current == nil)
    }

    @Test func requiredOutsideAnIsolatedGraphStopsAndNamesTheFix() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = TestGraph.required
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("isolatedGraph"), "the trap names the fix: \(stderr)")
    }
}

// MARK: - Small shared boxes

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0

    func next() -> Int {
        lock.withLock {
            total += 1
            return total
        }
    }

    var value: Int { lock.withLock { total } }
}

private struct BuiltObjects: Sendable {
    let graph: ServiceGraph
    let mailer: HostileRecordingMailer
    let store: HostileStore
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }

    var isSet: Bool { lock.withLock { value } }
}

private final class GraphBox: @unchecked Sendable {
    private let lock = NSLock()
    private var graphs: [ServiceGraph] = []

    func add(_ graph: ServiceGraph) { lock.withLock { graphs.append(graph) } }

    var all: [ServiceGraph] { lock.withLock { graphs } }
}

private final class ScopeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var scopes: [ServiceScope] = []

    func keep(_ scope: ServiceScope) { lock.withLock { scopes.append(scope) } }
}

private final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (any Error)?

    var error: (any Error)? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

private final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Task<String, Never>?

    var task: Task<String, Never>? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
