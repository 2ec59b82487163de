import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

extension ScopeKind {
    fileprivate static let hostileSession = ScopeKind("hostileSession")
    fileprivate static let hostileRequest = ScopeKind("hostileRequest", inside: .hostileSession)
}

/// An element with an identity, to tell instances apart.
private final class Part: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

private enum HSteps: ContributionKey { typealias Element = String }
private enum HOtherSteps: ContributionKey { typealias Element = String }
private enum HNumbers: ContributionKey { typealias Element = Int }
private enum HHooked: ContributionKey { typealias Element = HookedService }
private enum HParts: ContributionKey { typealias Element = Part }
private enum HRequired: ContributionKey {
    typealias Element = String
    static var needsContribution: Bool { true }
}
private enum HPrefix: ServiceKey { typealias Value = String }
private enum HMissing: ServiceKey { typealias Value = String }
private enum HPipeline: ServiceKey { typealias Value = [String] }
private enum HPartsHolder: ServiceKey { typealias Value = [Part] }
private enum HUnrelated: ServiceKey { typealias Value = Int }

@Suite("Contributions, hostile")
struct ContributionHostileTests {
    // MARK: - Order with asynchronous factories

    @Test func asynchronousAndSynchronousElementsKeepTheStatedOrderNotTheCompletionOrder() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "slow") {
            try await Task.sleep(for: .milliseconds(40))
            return "slow"
        }
        builder.contribute(HSteps.self, id: "sync") { "sync" }
        builder.contribute(HSteps.self, id: "fast", before: ["slow"]) {
            try await Task.sleep(for: .milliseconds(1))
            return "fast"
        }
        builder.contribute(HSteps.self, id: "medium", after: ["sync"]) {
            try await Task.sleep(for: .milliseconds(15))
            return "medium"
        }
        builder.contribute(HSteps.self, position: -1) { "first" }
        builder.provide(HPipeline.self, dependsOn: HSteps.self) { $0 }
        let graph = try await builder.build()
        #expect(graph[HPipeline.self] == ["first", "sync", "fast", "slow", "medium"])
        #expect(try await graph.resolve(HSteps.self) == ["first", "sync", "fast", "slow", "medium"])
        try await graph.shutdown()

        // A transient list with an asynchronous element needs `await`.
        var transient = ServiceGraph.Builder()
        transient.contribute(HSteps.self, lifetime: .transient) { "sync" }
        transient.contribute(HSteps.self, lifetime: .transient) {
            try await Task.sleep(for: .milliseconds(1))
            return "async"
        }
        let transientGraph = try await transient.build()
        #expect(try await transientGraph.resolve(HSteps.self) == ["sync", "async"])
        let error = try #require(throws: ServiceGraphError.self) {
            try transientGraph.resolveSynchronously(HSteps.self)
        }
        #expect(error.codes == [.requiresAwait])
        try await transientGraph.shutdown()
    }

    // MARK: - Failures during the build

    @Test func aThrowingElementFactoryNamesTheElementAndRollsBackInReverseOrder() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { registry.track(HookedService("A", log: log)) }
        builder.contribute(HHooked.self, id: "e0", dependsOn: ServiceA.self) { _ in
            registry.track(HookedService("e0", log: log))
        }
        builder.contribute(HHooked.self, id: "e1") { registry.track(HookedService("e1", log: log)) }
        let failingLine = #line + 1
        builder.contribute(HHooked.self, id: "broken-one", after: ["e1"]) { () throws -> HookedService in
            throw TestFailure("on purpose")
        }
        builder.contribute(HHooked.self, id: "e3", after: ["broken-one"]) {
            registry.track(HookedService("e3", log: log))
        }
        builder.provide(ServiceB.self, dependsOn: HHooked.self) { _ in registry.track(HookedService("B", log: log)) }

        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let problem = try #require(error?.problems.first)
        #expect(error?.problems.count == 1)
        #expect(problem.code == .factoryFailed)
        #expect(problem.key == "HHooked[2: broken-one]")
        #expect(problem.path.last == "HHooked[2: broken-one]")
        #expect(problem.site?.line == failingLine)
        #expect(problem.site?.fileID.hasSuffix("ContributionHostileTests.swift") == true)
        #expect(problem.underlyingError as? TestFailure == TestFailure("on purpose"))
        #expect(problem.description.contains("broken-one"), "the error names the contribution's id: \(problem)")

        let started = log.all.filter { $0.hasPrefix("didAdd ") }.map { $0.dropFirst("didAdd ".count) }
        let removed = log.all.filter { $0.hasPrefix("willRemove ") }.map { $0.dropFirst("willRemove ".count) }
        // Once A's asynchronous didAdd runs, independent elements are made concurrently, so which of
        // them started before the failure is not fixed; each that did is released once, in reverse.
        #expect(Set(started).isSubset(of: ["A", "e0", "e1", "e3"]), "\(log.all)")
        #expect(removed == Array(started.reversed()), "released in reverse order: \(log.all)")
        #expect(log.count(of: "init B") == 0, "the list's dependent is never made")
        #expect(registry.alive == 0)
    }

    @Test func aThrowingAsynchronousElementFactoryReleasesEachStartedServiceOnce() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) {
            try await Task.sleep(for: .milliseconds(1))
            return registry.track(HookedService("A", log: log))
        }
        builder.contribute(HHooked.self, id: "e0", dependsOn: ServiceA.self) { _ in
            try await Task.sleep(for: .milliseconds(1))
            return registry.track(HookedService("e0", log: log))
        }
        builder.contribute(HHooked.self, id: "bad") { () async throws -> HookedService in
            // Fails once the others have started, however loaded the machine is: a full test run can
            // hold the cooperative pool's threads with other tests' synchronous work for seconds.
            let deadline = ContinuousClock.now + .seconds(120)
            while !(log.all.contains("didAdd e0") && log.all.contains("didAdd e2")) && .now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            throw TestFailure("async on purpose")
        }
        builder.contribute(HHooked.self, id: "e2") { registry.track(HookedService("e2", log: log)) }
        builder.provide(ServiceB.self, dependsOn: HHooked.self) { _ in registry.track(HookedService("B", log: log)) }

        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let problem = try #require(error?.problems.first)
        #expect(error?.codes == [.factoryFailed])
        #expect(problem.key == "HHooked[1: bad]")
        #expect(problem.underlyingError as? TestFailure == TestFailure("async on purpose"))
        let started = log.all.filter { $0.hasPrefix("didAdd ") }.map { String($0.dropFirst("didAdd ".count)) }
        #expect(started.contains("A") && started.contains("e0") && started.contains("e2"), "\(log.all)")
        for name in started {
            #expect(log.count(of: "willRemove \(name)") == 1, "\(name): \(log.all)")
        }
        let e0Removed = try #require(log.index(of: "willRemove e0"))
        let aRemoved = try #require(log.index(of: "willRemove A"))
        #expect(e0Removed < aRemoved, "an element is removed before what it depends on")
        #expect(log.count(of: "init B") == 0)
        #expect(registry.alive == 0)
    }

    // MARK: - Lifecycle hooks

    @Test func elementHooksRunBeforeTheListsDependentsAndAfterThemOnShutdown() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.contribute(HHooked.self, id: "e0") { HookedService("e0", log: log) }
        builder.contribute(HHooked.self, id: "e1", before: ["e0"]) {
            try await Task.sleep(for: .milliseconds(5))
            return HookedService("e1", log: log)
        }
        builder.contribute(HHooked.self, id: "e2", position: 1) { HookedService("e2", log: log) }
        builder.provide(ServiceB.self, dependsOn: HHooked.self) { elements in
            HookedService("P(" + elements.map(\.name).joined(separator: ",") + ")", log: log)
        }
        let graph = try await builder.build()
        let dependent = graph[ServiceB.self]
        #expect(dependent.name == "P(e1,e0,e2)")
        let made = try #require(log.index(of: "init \(dependent.name)"))
        for name in ["e0", "e1", "e2"] {
            let added = try #require(log.index(of: "didAdd \(name)"))
            #expect(added < made, "\(name)'s didAdd before its dependent is made: \(log.all)")
        }
        try await graph.shutdown()
        let dependentRemoved = try #require(log.index(of: "willRemove \(dependent.name)"))
        for name in ["e0", "e1", "e2"] {
            #expect(log.count(of: "didAdd \(name)") == 1)
            #expect(log.count(of: "willRemove \(name)") == 1)
            let removed = try #require(log.index(of: "willRemove \(name)"))
            #expect(removed > dependentRemoved, "\(name) removed after its dependent: \(log.all)")
        }
    }

    @Test func oneInstanceContributedTwiceGetsItsHooksOnce() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.contribute(HHooked.self, dependsOn: ServiceA.self) { $0 }
        builder.contribute(HHooked.self, dependsOn: ServiceA.self) { $0 }
        builder.provide(ServiceB.self, dependsOn: HHooked.self) { _ in HookedService("B", log: log) }
        let graph = try await builder.build()
        let list = graph[HHooked.self]
        #expect(list.count == 2)
        #expect(list.allSatisfy { $0 === graph[ServiceA.self] })
        #expect(log.count(of: "didAdd A") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func transientElementsGetNoHooksAndAreMadeAnewOnEachResolve() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.contribute(HHooked.self, lifetime: .transient) { HookedService("t#\(made.increment())", log: log) }
        builder.contribute(HHooked.self) { HookedService("s", log: log) }
        let graph = try await builder.build()
        let first = try await graph.resolve(HHooked.self)
        let second = try await graph.resolve(HHooked.self)
        #expect(first.map(\.name) == ["t#1", "s"])
        #expect(second.map(\.name) == ["t#2", "s"])
        #expect(first[1] === second[1], "the singleton element is shared")
        #expect(log.all.filter { $0.hasPrefix("didAdd t#") }.isEmpty)
        try await graph.shutdown()
        #expect(log.all.filter { $0.hasPrefix("willRemove t#") }.isEmpty)
        #expect(log.count(of: "willRemove s") == 1)
    }

    // MARK: - Scoped contributions

    @Test func aScopedListIsFreshPerScopeAndEachElementIsMadeOncePerScopeUnderConcurrency() async throws {
        let log = EventLog()
        let madeX = Tally()
        let madeY = Tally()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.contribute(HHooked.self, id: "x", lifetime: .scoped) {
            try await Task.sleep(for: .milliseconds(2))
            return HookedService("x#\(madeX.increment())", log: log)
        }
        builder.contribute(HHooked.self, id: "y", lifetime: .scoped, before: ["x"]) {
            HookedService("y#\(madeY.increment())", log: log)
        }
        builder.contribute(HHooked.self, id: "z") { HookedService("z", log: log) }
        let graph = try await builder.build()

        let outside = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(HHooked.self) }
        #expect(outside?.codes == [.wrongLifetime])

        let first = try graph.makeScope()
        let lists = try await withThrowingTaskGroup(of: [ObjectIdentifier].self) { group in
            for _ in 0..<100 {
                group.addTask { try await first.resolve(HHooked.self).map(ObjectIdentifier.init) }
            }
            return try await group.reduce(into: Set<[ObjectIdentifier]>()) { $0.insert($1) }
        }
        #expect(lists.count == 1, "every task sees the same instances")
        let inFirst = try await first.resolve(HHooked.self)
        #expect(inFirst.map(\.name) == ["y#1", "x#1", "z"])
        #expect(madeX.count == 1)
        #expect(madeY.count == 1)

        let second = try graph.makeScope()
        let inSecond = try await second.resolve(HHooked.self)
        #expect(inSecond.map(\.name) == ["y#2", "x#2", "z"])
        #expect(inSecond[2] === inFirst[2], "a singleton element is shared by every scope")
        #expect(inSecond[0] !== inFirst[0])

        try await first.close()
        #expect(log.count(of: "willRemove x#1") == 1)
        #expect(log.count(of: "willRemove y#1") == 1)
        #expect(log.count(of: "willRemove x#2") == 0)
        #expect(log.count(of: "willRemove z") == 0)
        try await second.close()
        try await graph.shutdown()
        #expect(log.count(of: "willRemove x#2") == 1)
        #expect(log.count(of: "willRemove z") == 1)
        #expect(log.count(of: "didAdd x#1") == 1)
    }

    @Test func aSingletonDependingOnAListWithAScopedElementIsCaptive() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self) { "singleton" }
        builder.contribute(HSteps.self, lifetime: .scoped) { "scoped" }
        var scopedDependent = builder
        scopedDependent.provide(HPipeline.self, lifetime: .scoped, dependsOn: HSteps.self) { $0 }
        try scopedDependent.validate()

        builder.provide(HPipeline.self, dependsOn: HSteps.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
    }

    @Test func elementsScopedInTwoKindsMakeATransientListThatSharesEachKindsInstances() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.hostileSession) { session in
            session.contribute(HParts.self, lifetime: .scoped) { Part("session") }
        }
        builder.inScope(.hostileRequest) { request in
            request.contribute(HParts.self, lifetime: .scoped) { Part("request") }
        }
        let graph = try await builder.build()
        let session = try graph.makeScope(.hostileSession)
        let firstRequest = try session.makeScope(.hostileRequest)
        let secondRequest = try session.makeScope(.hostileRequest)
        let one = try await firstRequest.resolve(HParts.self)
        let again = try await firstRequest.resolve(HParts.self)
        let two = try await secondRequest.resolve(HParts.self)
        #expect(one.map(\.name) == ["session", "request"])
        #expect(one[0] === two[0], "one session element for both requests")
        #expect(one[1] !== two[1], "a request element per request")
        #expect(one[1] === again[1])

        let fromSession = await #expect(throws: ServiceGraphError.self) { try await session.resolve(HParts.self) }
        #expect(fromSession?.codes == [.wrongScopeKind])

        try await firstRequest.close()
        try await secondRequest.close()
        try await session.close()
        try await graph.shutdown()

        // A list scoped in requests is captive in a session's service.
        var captive = ServiceGraph.Builder()
        captive.inScope(.hostileRequest) { request in
            request.contribute(HParts.self, lifetime: .scoped) { Part("request") }
        }
        captive.inScope(.hostileSession) { session in
            session.provide(HPartsHolder.self, lifetime: .scoped, dependsOn: HParts.self) { $0 }
        }
        let error = try #require(throws: ServiceGraphError.self) { try captive.validate() }
        #expect(error.codes == [.captiveDependency])
    }

    // MARK: - Overrides

    @Test func theLastOverrideOfAnIdWinsAndEarlierOnesNeverRun() async throws {
        let earlier = Tally()
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "a") { "a" }
        builder.contribute(HSteps.self, id: "b") { "b" }
        builder.overrideContribution(HSteps.self, id: "a") {
            earlier.increment()
            return "first override"
        }
        builder.overrideContribution(HSteps.self, id: "a") { "second override" }
        let graph = try await builder.build()
        #expect(graph[HSteps.self] == ["second override", "b"])
        #expect(earlier.count == 0)
        try await graph.shutdown()
    }

    @Test func anOverrideKeepsThePositionBeforeAndAfterOfTheOriginal() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(HPrefix.self) { ">" }
        builder.contribute(HSteps.self, id: "a", position: 5) { "a" }
        builder.contribute(HSteps.self, id: "b", after: ["a"]) { "b" }
        builder.contribute(HSteps.self, id: "c", before: ["a"]) { "c" }
        builder.contribute(HSteps.self, id: "d") { "d" }
        var original = builder
        original.provide(HUnrelated.self) { 0 }
        let graph = try await original.build()
        #expect(graph[HSteps.self] == ["c", "d", "a", "b"])
        try await graph.shutdown()

        builder.overrideContribution(HSteps.self, id: "a", dependsOn: HPrefix.self) { $0 + "A" }
        builder.overrideContribution(HSteps.self, id: "c") { "C" }
        let overridden = try await builder.build()
        #expect(overridden[HSteps.self] == ["C", "d", ">A", "b"])
        try await overridden.shutdown()
    }

    @Test func anOverrideWithItsOwnLifetimeChangesTheLists() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HParts.self, id: "a") { Part("a") }
        builder.contribute(HParts.self, id: "b") { Part("b") }

        var scoped = builder
        scoped.overrideContribution(HParts.self, id: "a", lifetime: .scoped) { Part("scoped a") }
        var captive = scoped
        captive.provide(HPartsHolder.self, dependsOn: HParts.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try captive.validate() }
        #expect(error.codes == [.captiveDependency])
        let scopedGraph = try await scoped.build()
        let first = try scopedGraph.makeScope()
        let second = try scopedGraph.makeScope()
        let one = try await first.resolve(HParts.self)
        let two = try await second.resolve(HParts.self)
        #expect(one.map(\.name) == ["scoped a", "b"])
        #expect(one[0] !== two[0])
        #expect(one[1] === two[1])
        try await first.close()
        try await second.close()
        try await scopedGraph.shutdown()

        let made = Tally()
        var transient = builder
        transient.overrideContribution(HParts.self, id: "b", lifetime: .transient) { Part("b#\(made.increment())") }
        let transientGraph = try await transient.build()
        #expect(try await transientGraph.resolve(HParts.self).map(\.name) == ["a", "b#1"])
        #expect(try await transientGraph.resolve(HParts.self).map(\.name) == ["a", "b#2"])
        try await transientGraph.shutdown()
    }

    @Test func anOverrideWithoutALifetimeKeepsTheReplacedOnes() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HParts.self, id: "a", lifetime: .scoped) { Part("a") }
        builder.overrideContribution(HParts.self, id: "a") { Part("fake a") }
        let graph = try await builder.build()
        let outside = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(HParts.self) }
        #expect(outside?.codes == [.wrongLifetime])
        let first = try graph.makeScope()
        let second = try graph.makeScope()
        let one = try await first.resolve(HParts.self)
        #expect(one.map(\.name) == ["fake a"])
        #expect(try await first.resolve(HParts.self)[0] === one[0])
        #expect(try await second.resolve(HParts.self)[0] !== one[0])
        try await first.close()
        try await second.close()
        try await graph.shutdown()

        builder.provide(HPartsHolder.self, dependsOn: HParts.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
    }

    @Test func anOverrideDropsTheReplacedContributionsDependencies() async throws {
        let ran = Tally()
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "needs-missing", dependsOn: HMissing.self) { value in
            ran.increment()
            return value
        }
        builder.contribute(HSteps.self, id: "other") { "other" }
        let broken = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(broken.codes == [.missingProvider])

        builder.overrideContribution(HSteps.self, id: "needs-missing") { "double" }
        try builder.validate()
        let graph = try await builder.build()
        #expect(graph[HSteps.self] == ["double", "other"])
        #expect(ran.count == 0)
        try await graph.shutdown()
    }

    // MARK: - Builders and keys

    @Test func copiesOfABuilderHaveIndependentLists() async throws {
        var original = ServiceGraph.Builder()
        original.contribute(HSteps.self, id: "a") { "a" }
        original.contribute(HSteps.self, id: "b") { "b" }
        var copy = original
        copy.contribute(HSteps.self, id: "c", before: ["a"]) { "c" }
        copy.overrideContribution(HSteps.self, id: "b") { "fake b" }
        original.contribute(HSteps.self, id: "d", position: -1) { "d" }

        let originalGraph = try await original.build()
        let copyGraph = try await copy.build()
        #expect(originalGraph[HSteps.self] == ["d", "a", "b"])
        // b is free from the start; c must precede a, so: b, c, a.
        #expect(copyGraph[HSteps.self] == ["fake b", "c", "a"])
        try await originalGraph.shutdown()
        try await copyGraph.shutdown()

        // A problem added to a copy stays in the copy.
        var broken = original
        broken.contribute(HSteps.self, id: "e", after: ["nobody"]) { "e" }
        #expect(throws: ServiceGraphError.self) { try broken.validate() }
        try original.validate()
    }

    @Test func contributionsToTwoKeysDoNotMixAndIdsBelongToOneList() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "shared") { "steps shared" }
        builder.contribute(HOtherSteps.self, id: "shared") { "other shared" }
        builder.contribute(HSteps.self, id: "only-in-steps", before: ["shared"]) { "steps only" }
        builder.contribute(HOtherSteps.self, position: -1) { "other first" }
        let graph = try await builder.build()
        #expect(graph[HSteps.self] == ["steps only", "steps shared"])
        #expect(graph[HOtherSteps.self] == ["other first", "other shared"])
        try await graph.shutdown()

        // An id of one list is unknown to another.
        var crossed = builder
        crossed.contribute(HOtherSteps.self, id: "late", after: ["only-in-steps"]) { "late" }
        crossed.overrideContribution(HOtherSteps.self, id: "only-in-steps") { "x" }
        let error = try #require(throws: ServiceGraphError.self) { try crossed.validate() }
        #expect(error.codes == [.unknownContribution, .unknownContribution])
    }

    // MARK: - Scale

    @Test func aThousandChainedBeforeConstraintsBuildInOrder() async throws {
        let count = 1_000
        var builder = ServiceGraph.Builder()
        for index in 0..<count {
            builder.contribute(HNumbers.self, id: "n\(index)", before: index == 0 ? [] : ["n\(index - 1)"]) { index }
        }
        builder.provide(HUnrelated.self, dependsOn: HNumbers.self) { $0.count }
        // Speed is the benchmarks' business (this machine is shared); the deadline only catches a hang.
        let frozen = builder
        let graph = try await withDeadline { try await frozen.build() }
        #expect(graph[HNumbers.self] == Array((0..<count).reversed()))
        #expect(graph[HUnrelated.self] == count)
        try await graph.shutdown()
    }

    @Test func tenThousandAnonymousContributionsKeepRegistrationOrder() async throws {
        let count = 10_000
        var builder = ServiceGraph.Builder()
        for index in 0..<count {
            builder.contribute(HNumbers.self) { index }
        }
        // Speed is the benchmarks' business (this machine is shared); the deadline only catches a hang.
        let frozen = builder
        let graph = try await withDeadline { try await frozen.build() }
        #expect(graph[HNumbers.self] == Array(0..<count))
        try await graph.shutdown()
    }

    @Test func extremePositionsOrderWithoutOverflow() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HNumbers.self, position: .max) { 4 }
        builder.contribute(HNumbers.self, position: 0) { 2 }
        builder.contribute(HNumbers.self, position: .min) { 0 }
        builder.contribute(HNumbers.self, position: .max - 1) { 3 }
        builder.contribute(HNumbers.self, position: .max) { 5 }
        builder.contribute(HNumbers.self, position: .min + 1) { 1 }
        let graph = try await builder.build()
        #expect(graph[HNumbers.self] == [0, 1, 2, 3, 4, 5])
        try await graph.shutdown()
    }

    // MARK: - Validation of ids and constraints

    @Test func aContributionBeforeItselfIsAContradiction() throws {
        var builder = ServiceGraph.Builder()
        let line = #line + 1
        builder.contribute(HSteps.self, id: "self", before: ["self"]) { "self" }
        builder.contribute(HSteps.self, id: "fine") { "fine" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.contradictoryOrder])
        #expect(error.problems.first?.path == ["'self'", "'self'"])
        #expect(error.problems.first?.site?.line == line)

        var after = ServiceGraph.Builder()
        after.contribute(HSteps.self, id: "self", after: ["self"]) { "self" }
        let afterError = try #require(throws: ServiceGraphError.self) { try after.validate() }
        #expect(afterError.codes == [.contradictoryOrder])
    }

    @Test func beforeAndAfterTheSameIdIsAContradiction() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "b") { "b" }
        builder.contribute(HSteps.self, id: "a", before: ["b"], after: ["b"]) { "a" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.contradictoryOrder])
        let path = try #require(error.problems.first?.path)
        #expect(path.count == 3)
        #expect(path.first == path.last)
        #expect(Set(path) == ["'a'", "'b'"])
    }

    @Test func aDuplicateIdNamedByAConstraintIsReportedOnceAsADuplicate() throws {
        var builder = ServiceGraph.Builder()
        let firstLine = #line + 1
        builder.contribute(HSteps.self, id: "dup") { "one" }
        let secondLine = #line + 1
        builder.contribute(HSteps.self, id: "dup", position: 3) { "two" }
        builder.contribute(HSteps.self, id: "x", before: ["dup"]) { "x" }
        builder.contribute(HSteps.self, id: "y", after: ["dup"]) { "y" }
        builder.overrideContribution(HSteps.self, id: "dup") { "override" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider], "\(error)")
        let message = error.problems.first?.description ?? ""
        #expect(message.contains("ContributionHostileTests.swift:\(firstLine)"), "\(message)")
        #expect(message.contains("ContributionHostileTests.swift:\(secondLine)"), "\(message)")
    }

    @Test func aKeyThatNeedsAContributionWorksWithContributions() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HRequired.self, id: "a") { "a" }
        builder.contribute(HRequired.self, id: "b", before: ["a"]) { "b" }
        builder.provide(HPipeline.self, dependsOn: HRequired.self) { $0 }
        var overridden = builder
        overridden.overrideContribution(HRequired.self, id: "a") { "fake a" }
        let graph = try await builder.build()
        #expect(graph[HPipeline.self] == ["b", "a"])
        try await graph.shutdown()
        let overriddenGraph = try await overridden.build()
        #expect(overriddenGraph[HPipeline.self] == ["b", "fake a"])
        try await overriddenGraph.shutdown()

        // An override of a contribution nobody made is not a contribution.
        var onlyOverride = ServiceGraph.Builder()
        onlyOverride.overrideContribution(HRequired.self, id: "a") { "fake a" }
        onlyOverride.provide(HPipeline.self, dependsOn: HRequired.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try onlyOverride.validate() }
        #expect(error.contains(.unknownContribution))
    }

    @Test func overridingTheWholeListIgnoresTheContributionsDependenciesAndFactories() async throws {
        let ran = Tally()
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "a", dependsOn: HMissing.self) { value in
            ran.increment()
            return value
        }
        builder.contribute(HSteps.self, id: "b") { () throws -> String in
            ran.increment()
            throw TestFailure("never called")
        }
        builder.provide(HPipeline.self, dependsOn: HSteps.self) { $0 }
        builder.override(HSteps.self) { ["whole"] }
        let graph = try await builder.build()
        #expect(graph[HPipeline.self] == ["whole"])
        #expect(ran.count == 0)
        try await graph.shutdown()
    }

    @Test func overridingTheWholeListReplacesContributionsWithBrokenOrder() async throws {
        // The docs do not say; a replaced list's contributions are not part of the graph.
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "a", before: ["b"]) { "a" }
        builder.contribute(HSteps.self, id: "b", before: ["a"]) { "b" }
        builder.contribute(HSteps.self, id: "c", after: ["nobody"]) { "c" }
        builder.override(HSteps.self) { ["whole"] }
        let graph = try await builder.build()
        #expect(graph[HSteps.self] == ["whole"])
        try await graph.shutdown()
    }

    @Test func validateReportsContributionProblemsTogetherWithOtherProblems() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "a", before: ["b"]) { "a" }
        builder.contribute(HSteps.self, id: "b", before: ["a"]) { "b" }
        builder.contribute(HOtherSteps.self, id: "x", after: ["ghost"]) { "x" }
        builder.contribute(HNumbers.self, id: "n") { 1 }
        builder.contribute(HNumbers.self, id: "n") { 2 }
        builder.contribute(HParts.self, dependsOn: HMissing.self) { Part($0) }
        builder.provide(HUnrelated.self, dependsOn: OtherIntKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(
            Set(error.codes) == [.contradictoryOrder, .unknownContribution, .duplicateProvider, .missingProvider],
            "\(error)"
        )
        #expect(error.codes.filter { $0 == .missingProvider }.count == 2, "\(error)")
        #expect(error.problems.allSatisfy { $0.site != nil }, "\(error)")
        let buildError = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        #expect(buildError.map { Set($0.codes) } == Set(error.codes))
    }

    // MARK: - Child graphs

    @Test func aChildReadsItsParentsListWithoutRemakingItsElements() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.contribute(HHooked.self, id: "p") { HookedService("p", log: log) }
        let parent = try await builder.build()
        var child = parent.makeChildBuilder()
        child.provide(ServiceB.self, dependsOn: HHooked.self) { list in
            HookedService("child of " + list.map(\.name).joined(), log: log)
        }
        let graph = try await child.build()
        #expect(graph[ServiceB.self].name == "child of p")
        #expect(graph[HHooked.self][0] === parent[HHooked.self][0])
        #expect(log.count(of: "init p") == 1)
        #expect(log.count(of: "didAdd p") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove p") == 0)
        try await parent.shutdown()
        #expect(log.count(of: "willRemove p") == 1)
    }

    @Test func aChildContributingToItsParentsListExtendsItThereOnly() async throws {
        // The docs do not say whether a child's contribution extends or replaces the parent's list.
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false  // a failing #require must not take the whole run down
        builder.contribute(HHooked.self, id: "p1") { HookedService("p1", log: log) }
        builder.contribute(HHooked.self, id: "p2") { HookedService("p2", log: log) }
        let parent = try await builder.build()
        var child = parent.makeChildBuilder()
        child.contribute(HHooked.self, id: "c", before: ["p2"]) { HookedService("c", log: log) }
        let graph: ServiceGraph
        do {
            graph = try await child.build()
        } catch {
            try await parent.shutdown()
            throw error
        }
        #expect(parent[HHooked.self].map(\.name) == ["p1", "p2"], "the parent is untouched")
        #expect(graph[HHooked.self].map(\.name) == ["p1", "c", "p2"])
        #expect(log.count(of: "init p1") == 1, "the parent's elements are shared, not remade")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove c") == 1)
        #expect(log.count(of: "willRemove p1") == 0)
        try await parent.shutdown()
    }

    // MARK: - Diagnostics

    @Test func lintReportsAnUnusedListOnceUnderItsOwnName() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(HSteps.self, id: "a") { "a" }
        builder.contribute(HSteps.self, id: "b") { "b" }
        let warnings = builder.lint()
        #expect(warnings.map(\.code) == [.unusedProvider], "\(warnings)")
        #expect(warnings.map(\.key) == ["HSteps"], "\(warnings)")

        var used = builder
        used.provide(HPipeline.self, dependsOn: HSteps.self) { $0 }
        used.declareEntryPoints(HPipeline.self)
        #expect(used.lint().isEmpty, "\(used.lint())")

        builder.declareEntryPoints(HSteps.self)
        #expect(builder.lint().isEmpty, "\(builder.lint())")
    }

    @Test func everyDumpFormatDescribesContributionsEvenWithHostileIdsAndBrokenOrder() async throws {
        var builder = ServiceGraph.Builder()
        let line = #line + 1
        builder.contribute(HSteps.self, id: "quote\"brace{}<tag>\nnewline") { "weird" }
        builder.contribute(HSteps.self, id: "plain", after: ["quote\"brace{}<tag>\nnewline"]) { "plain" }
        builder.provide(HPipeline.self, dependsOn: HSteps.self) { $0 }

        func check(_ dumps: [DumpFormat: String], _ label: String) throws {
            for (format, text) in dumps {
                // Named by position and id; the hostile id is escaped as each format needs.
                #expect(text.contains("HSteps[0: "), "\(label) \(format)")
                #expect(text.contains("HSteps[1: plain]"), "\(label) \(format)")
            }
            let json = try #require(dumps[.json]?.data(using: .utf8))
            #expect(throws: Never.self, "\(label) JSON is valid") { try JSONSerialization.jsonObject(with: json) }
            let dot = try #require(dumps[.dot])
            #expect(dot.contains("digraph"), "\(label)")
            #expect(!dot.contains("\"quote\"brace"), "\(label): DOT strings escape quotes")
        }
        let formats: [DumpFormat] = [.text, .dot, .mermaid, .json]
        try check(Dictionary(uniqueKeysWithValues: formats.map { ($0, builder.dump($0)) }), "builder")
        #expect(builder.dump(.text).contains("ContributionHostileTests.swift:\(line)"))

        let graph = try await builder.build()
        #expect(graph[HPipeline.self] == ["weird", "plain"])
        try check(Dictionary(uniqueKeysWithValues: formats.map { ($0, graph.dump($0)) }), "graph")
        try await graph.shutdown()

        var broken = builder
        broken.contribute(HSteps.self, id: "loop", before: ["plain"], after: ["plain"]) { "loop" }
        for format in formats {
            #expect(!broken.dump(format).isEmpty)
        }
        let brokenJSON = try #require(broken.dump(.json).data(using: .utf8))
        #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: brokenJSON) }
    }

    // MARK: - Dependency forms

    @Test func contributionsTakeOptionalProviderAndLazyDependencies() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(HPrefix.self, lifetime: .transient) { "p\(made.increment())" }
        builder.contribute(HSteps.self, dependsOn: HMissing?.self) { $0 ?? "absent" }
        builder.contribute(HSteps.self, dependsOn: Provider<HPrefix>.self) { provider in
            let first = try provider.resolveSynchronously()
            let second = try provider.resolveSynchronously()
            return first + second
        }
        builder.contribute(HSteps.self, dependsOn: Lazy<HUnrelatedString>.self) { lazy in
            lazy.isMade ? "eager" : "lazy"
        }
        builder.provide(HUnrelatedString.self) { "never asked" }
        let graph = try await builder.build()
        #expect(graph[HSteps.self] == ["absent", "p1p2", "lazy"])
        try await graph.shutdown()
    }
}

private enum HUnrelatedString: ServiceKey { typealias Value = String }
