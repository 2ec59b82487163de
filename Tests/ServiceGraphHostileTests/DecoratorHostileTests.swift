import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Doubles

/// A value with an identity, that may wrap another: shows which instance a decorator received.
private final class DHBox: Sendable {
    let label: String
    let inner: DHBox?

    init(_ label: String, inner: DHBox? = nil) {
        self.label = label
        self.inner = inner
    }
}

/// A value that holds a lazy handle and a provider, as a decorator's wrapper.
private struct DHHandles: Sendable {
    let label: String
    let lazy: Lazy<DHExpensiveKey>?
    let tickets: Provider<DHTicketKey>?
}

private struct DHHolder: Sendable {
    let lazy: Lazy<DHBoxKey>
}

private enum DHBoxKey: ServiceKey { typealias Value = DHBox }
private enum DHExpensiveKey: ServiceKey { typealias Value = DHBox }
private enum DHTicketKey: ServiceKey { typealias Value = DHBox }
private enum DHHandlesKey: ServiceKey { typealias Value = DHHandles }
private enum DHHolderKey: ServiceKey { typealias Value = DHHolder }
private enum DHUserKey: ServiceKey { typealias Value = String }
private enum DHParentUserKey: ServiceKey { typealias Value = String }
private enum DHLabelKey: ServiceKey { typealias Value = String }
private enum DHOtherLabelKey: ServiceKey { typealias Value = String }
private enum DHThirdLabelKey: ServiceKey { typealias Value = String }
private enum DHAnalyticsKey: ServiceKey { typealias Value = String }
private enum DHMissingKey: ServiceKey { typealias Value = String }
private enum DHOtherMissingKey: ServiceKey { typealias Value = String }
private enum DHUnprovidedKey: ServiceKey { typealias Value = String }
private enum DHNeverProvidedKey: ServiceKey { typealias Value = String }
private enum DHTraceKey: ServiceKey { typealias Value = [Int] }
private enum DHProfileKey: ServiceKey { typealias Value = String }
private enum DHSessionKey: ServiceKey { typealias Value = DHBox }
private enum DHRequestKey: ServiceKey { typealias Value = DHBox }

extension ScopeKind {
    fileprivate static let dhSession = ScopeKind("dh-session")
    fileprivate static let dhRequest = ScopeKind("dh-request", inside: .dhSession)
}

// MARK: - Tests

@Suite("Decorators, hostile")
struct DecoratorHostileTests {
    // MARK: Failures during the build

    @Test("a throwing decorator fails the build naming its stage, site and path, and releases what started in reverse")
    func throwingDecoratorDuringBuild() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(ServiceD.self) { registry.track(HookedService("D", log: log)) }
        builder.provide(ServiceA.self, dependsOn: ServiceD.self) { _ in registry.track(HookedService("A", log: log)) }
        builder.decorate(ServiceA.self) { _ in registry.track(HookedService("A1", log: log)) }
        let failingLine = #line + 1
        builder.decorate(ServiceA.self) { _ -> HookedService in throw TestFailure("decorator 2 failed") }
        builder.decorate(ServiceA.self) { _ in registry.track(HookedService("A3", log: log)) }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in registry.track(HookedService("B", log: log)) }

        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let problem = try #require(error?.problems.first)
        #expect(error?.codes == [.factoryFailed])
        #expect(problem.key == "ServiceA (decorator 2)")
        #expect(problem.path == ["ServiceB", "ServiceA", "ServiceA (decorator 2)"])
        #expect(problem.underlyingError as? TestFailure == TestFailure("decorator 2 failed"))
        #expect(problem.site?.fileID.hasSuffix("DecoratorHostileTests.swift") == true)
        #expect(problem.site?.line == failingLine)
        #expect(
            log.all == [
                "init D", "didAdd D", "init A", "didAdd A", "init A1", "didAdd A1",
                "willRemove A1", "willRemove A", "willRemove D",
            ]
        )
        #expect(registry.alive == 0, "nothing the failed build made is left alive")
    }

    @Test("an async decorator that throws while a sibling builds concurrently releases everything once")
    func throwingAsyncDecoratorDuringBuild() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(ServiceD.self) { registry.track(HookedService("D", log: log)) }
        builder.provide(ServiceC.self) {
            try await Task.sleep(for: .milliseconds(5))
            return registry.track(HookedService("C", log: log))
        }
        builder.provide(ServiceA.self, dependsOn: ServiceD.self) { _ in registry.track(HookedService("A", log: log)) }
        let failingLine = #line + 1
        builder.decorate(ServiceA.self) { _ async throws -> HookedService in
            try await Task.sleep(for: .milliseconds(2))
            throw TestFailure("async decorator failed")
        }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self, ServiceC.self) { _, _ in
            registry.track(HookedService("B", log: log))
        }

        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let problem = try #require(error?.problems.first)
        #expect(error?.codes == [.factoryFailed])
        #expect(problem.key == "ServiceA", "with one decorator, the decorator's stage is the key itself")
        #expect(problem.site?.line == failingLine)
        #expect(problem.underlyingError as? TestFailure == TestFailure("async decorator failed"))
        #expect(log.count(of: "init B") == 0)
        for name in ["A", "D"] {
            #expect(log.count(of: "didAdd \(name)") == 1)
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
        #expect(log.count(of: "willRemove C") == log.count(of: "didAdd C"))
        #expect(try #require(log.index(of: "willRemove A")) < #require(log.index(of: "willRemove D")))
        #expect(registry.alive == 0)
    }

    // MARK: Lifetimes

    @Test("a decorated scoped key: one wrapper and one inner value per scope, under many concurrent resolves")
    func scopedKeyOncePerScopeUnderConcurrency() async throws {
        let made = Tally()
        let decorated = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self, lifetime: .scoped) {
            made.increment()
            return DHBox("inner")
        }
        builder.decorate(DHBoxKey.self) { inner async throws -> DHBox in
            decorated.increment()
            await Task.yield()
            return DHBox("wrapper", inner: inner)
        }
        let graph = try await builder.build()
        let first = try graph.makeScope()
        let second = try graph.makeScope()
        let resolved = try await withThrowingTaskGroup(of: (Int, DHBox).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let scope = index.isMultiple(of: 2) ? first : second
                    return (index % 2, try await scope.resolve(DHBoxKey.self))
                }
            }
            var all: [(Int, DHBox)] = []
            for try await pair in group { all.append(pair) }
            return all
        }
        let inFirst = Set(resolved.filter { $0.0 == 0 }.map { ObjectIdentifier($0.1) })
        let inSecond = Set(resolved.filter { $0.0 == 1 }.map { ObjectIdentifier($0.1) })
        #expect(inFirst.count == 1)
        #expect(inSecond.count == 1)
        #expect(inFirst != inSecond, "each scope has its own wrapper")
        #expect(made.count == 2)
        #expect(decorated.count == 2)
        let value = try await first.resolve(DHBoxKey.self)
        #expect(value.label == "wrapper")
        #expect(value.inner?.label == "inner")
        try await first.close()
        try await second.close()
        try await graph.shutdown()
    }

    @Test("a scoped decorator that throws once: the inner instance is kept, retried, and every hook is balanced")
    func scopedDecoratorFailureThenRetry() async throws {
        let log = EventLog()
        let made = Tally()
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(ServiceA.self, lifetime: .scoped) {
            made.increment()
            return HookedService("inner", log: log)
        }
        builder.decorate(ServiceA.self) { inner in
            if attempts.increment() == 1 { throw TestFailure("first attempt fails") }
            return HookedService("wrapper", log: log)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let error = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(ServiceA.self) }
        #expect(error?.codes == [.factoryFailed])
        #expect(error?.problems.first?.underlyingError as? TestFailure == TestFailure("first attempt fails"))
        let value = try await scope.resolve(ServiceA.self)
        #expect(value.name == "wrapper")
        #expect(try await scope.resolve(ServiceA.self) === value)
        #expect(made.count == 1, "the undecorated stage is a scoped service of its own, made once per scope")
        #expect(attempts.count == 2)
        try await scope.close()
        for name in ["inner", "wrapper"] {
            #expect(log.count(of: "didAdd \(name)") == 1)
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
        #expect(try #require(log.index(of: "willRemove wrapper")) < #require(log.index(of: "willRemove inner")))
        try await graph.shutdown()
    }

    @Test("a decorated transient: a new wrapper around a new inner value on every resolve, sync or async, concurrent")
    func transientKeyNewWrapperEachResolve() async throws {
        let made = Tally()
        let decorated = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self, lifetime: .transient) {
            made.increment()
            return DHBox("inner")
        }
        builder.decorate(DHBoxKey.self) {
            decorated.increment()
            return DHBox("wrapper", inner: $0)
        }
        let graph = try await builder.build()
        #expect(made.count == 0)
        let boxes = try await withThrowingTaskGroup(of: DHBox.self) { group in
            for _ in 0..<100 { group.addTask { try await graph.resolve(DHBoxKey.self) } }
            var all: [DHBox] = []
            for try await box in group { all.append(box) }
            return all
        }
        let synchronous = try graph.resolveSynchronously(DHBoxKey.self)
        let all = boxes + [synchronous]
        #expect(Set(all.map { ObjectIdentifier($0) }).count == 101)
        #expect(Set(all.compactMap { $0.inner.map { ObjectIdentifier($0) } }).count == 101)
        #expect(all.allSatisfy { $0.label == "wrapper" && $0.inner?.label == "inner" })
        #expect(made.count == 101)
        #expect(decorated.count == 101)
        try await graph.shutdown()
    }

    // MARK: Wrapper dependencies

    @Test(
        "a decorator with Lazy and Provider dependencies: the lazy one stays off startup, the provider makes new ones"
    )
    func lazyAndProviderDependencies() async throws {
        let expensive = Tally()
        let tickets = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHExpensiveKey.self) {
            expensive.increment()
            return DHBox("expensive")
        }
        builder.provide(DHTicketKey.self, lifetime: .transient) { DHBox("ticket \(tickets.increment())") }
        builder.provide(DHHandlesKey.self) { DHHandles(label: "inner", lazy: nil, tickets: nil) }
        builder.decorate(DHHandlesKey.self, dependsOn: Lazy<DHExpensiveKey>.self, Provider<DHTicketKey>.self) {
            DHHandles(label: "wrapped \($0.label)", lazy: $1, tickets: $2)
        }
        try builder.validate()
        let graph = try await builder.build()
        #expect(expensive.count == 0, "a singleton only a decorator's lazy handle reaches is not made at build")
        #expect(graph.startupReport().createdOnFirstUse == ["DHExpensiveKey"])
        let handles = graph[DHHandlesKey.self]
        #expect(handles.label == "wrapped inner")
        let lazy = try #require(handles.lazy)
        let provider = try #require(handles.tickets)
        #expect(!lazy.isMade)
        #expect(try await lazy.value.label == "expensive")
        #expect(try await lazy.value === graph.resolve(DHExpensiveKey.self))
        #expect(expensive.count == 1)
        let first = try await provider()
        let second = try provider.resolveSynchronously()
        #expect(first !== second)
        #expect(tickets.count == 2)
        try await graph.shutdown()
    }

    @Test(
        "a decorator with an optional dependency gets nil when it is absent (linted at the decorator) and the value when not"
    )
    func optionalDependency() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DHLabelKey.self) { "plain" }
        let decoratorLine = #line + 1
        builder.decorate(DHLabelKey.self, dependsOn: DHAnalyticsKey?.self) { "\($0)+\($1 ?? "none")" }
        let graph = try await builder.build()
        #expect(graph[DHLabelKey.self] == "plain+none")
        try await graph.shutdown()

        let absent = builder.lint().filter { $0.code == .absentOptionalDependency }
        #expect(absent.count == 1)
        #expect(absent.first?.site.line == decoratorLine)
        #expect(absent.first?.message.contains("DHAnalyticsKey") == true)

        var withAnalytics = builder
        withAnalytics.provide(DHAnalyticsKey.self) { "tracked" }
        let tracked = try await withAnalytics.build()
        #expect(tracked[DHLabelKey.self] == "plain+tracked")
        #expect(withAnalytics.lint().filter { $0.code == .absentOptionalDependency }.isEmpty)
        try await tracked.shutdown()
    }

    @Test("a decorated singleton that only a Lazy handle reaches: every stage waits for first use, which is decorated")
    func lazyHandleOnDecoratedSingleton() async throws {
        let made = Tally()
        let decorated = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self) {
            made.increment()
            return DHBox("inner")
        }
        builder.decorate(DHBoxKey.self) {
            decorated.increment()
            return DHBox("wrapper", inner: $0)
        }
        builder.provide(DHHolderKey.self, dependsOn: Lazy<DHBoxKey>.self) { DHHolder(lazy: $0) }
        let graph = try await builder.build()
        #expect(made.count == 0)
        #expect(decorated.count == 0)
        #expect(graph.startupReport().createdOnFirstUse.contains("DHBoxKey"))
        let value = try await graph[DHHolderKey.self].lazy.value
        #expect(value.label == "wrapper")
        #expect(value.inner?.label == "inner")
        #expect(try await graph.resolve(DHBoxKey.self) === value)
        #expect(made.count == 1)
        #expect(decorated.count == 1)
        try await graph.shutdown()
    }

    // MARK: Validation

    @Test("a singleton's decorator that holds a transient or a scoped service is a captive dependency, at its site")
    func captiveDecoratorDependency() throws {
        for lifetime in [Lifetime.transient, .scoped] {
            var builder = ServiceGraph.Builder()
            builder.provide(DHBoxKey.self) { DHBox("inner") }
            builder.provide(DHTicketKey.self, lifetime: lifetime) { DHBox("ticket") }
            let decoratorLine = #line + 1
            builder.decorate(DHBoxKey.self, dependsOn: DHTicketKey.self) { inner, _ in inner }
            let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
            #expect(error.codes == [.captiveDependency], "\(lifetime)")
            #expect(error.problems.first?.site?.line == decoratorLine, "\(lifetime)")
            #expect(error.problems.first?.message.contains("DHTicketKey") == true, "\(lifetime)")
        }
    }

    @Test(
        "decorators of a scoped key follow its kind of scope: a request's decorator reads its session; the reverse is refused"
    )
    func scopeKinds() async throws {
        var builder = ServiceGraph.Builder()
        builder.inScope(.dhSession) { session in
            session.provide(DHSessionKey.self, lifetime: .scoped) { DHBox("session") }
        }
        builder.inScope(.dhRequest) { request in
            request.provide(DHRequestKey.self, lifetime: .scoped) { DHBox("request") }
        }
        var broken = builder
        builder.decorate(DHRequestKey.self, dependsOn: DHSessionKey.self) { DHBox("request+\($1.label)", inner: $0) }
        let graph = try await builder.build()
        let session = try graph.makeScope(.dhSession)
        let first = try session.makeScope(.dhRequest)
        let second = try session.makeScope(.dhRequest)
        let value = try await first.resolve(DHRequestKey.self)
        #expect(value.label == "request+session")
        #expect(try await first.resolve(DHRequestKey.self) === value)
        #expect(try await second.resolve(DHRequestKey.self) !== value)
        let wrongKind = await #expect(throws: ServiceGraphError.self) { try await session.resolve(DHRequestKey.self) }
        #expect(wrongKind?.codes == [.wrongScopeKind])
        try await first.close()
        try await second.close()
        try await session.close()
        try await graph.shutdown()

        let decoratorLine = #line + 1
        broken.decorate(DHSessionKey.self, dependsOn: DHRequestKey.self) { inner, _ in inner }
        let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
        #expect(error.codes == [.captiveDependency])
        #expect(error.problems.first?.site?.line == decoratorLine)
    }

    @Test(
        "decorators of two keys that need each other, and a second decorator that reaches its key through others, are cycles"
    )
    func cyclesThroughDecorators() throws {
        var crossed = ServiceGraph.Builder()
        crossed.provide(DHLabelKey.self) { "a" }
        crossed.provide(DHOtherLabelKey.self) { "b" }
        crossed.decorate(DHLabelKey.self, dependsOn: DHOtherLabelKey.self) { $0 + $1 }
        crossed.decorate(DHOtherLabelKey.self, dependsOn: DHLabelKey.self) { $0 + $1 }
        let error = try #require(throws: ServiceGraphError.self) { try crossed.validate() }
        #expect(error.codes == [.cycle])
        let path = error.problems[0].path
        #expect(path.first == path.last)
        #expect(path.contains("DHLabelKey"))
        #expect(path.contains("DHOtherLabelKey"))

        var indirect = ServiceGraph.Builder()
        indirect.provide(DHLabelKey.self) { "a" }
        indirect.decorate(DHLabelKey.self) { $0 + "1" }
        indirect.decorate(DHLabelKey.self, dependsOn: DHOtherLabelKey.self) { $0 + $1 }
        indirect.provide(DHOtherLabelKey.self, dependsOn: DHThirdLabelKey.self) { $0 }
        indirect.provide(DHThirdLabelKey.self, dependsOn: DHLabelKey.self) { $0 }
        let indirectError = try #require(throws: ServiceGraphError.self) { try indirect.validate() }
        #expect(indirectError.codes == [.cycle])
        let indirectPath = indirectError.problems[0].path
        for key in ["DHLabelKey", "DHOtherLabelKey", "DHThirdLabelKey"] {
            #expect(indirectPath.contains(key), "\(indirectPath)")
        }
        #expect(!indirectPath.contains("DHLabelKey (undecorated)"), "the undecorated value is not part of the cycle")

        var throughLazy = ServiceGraph.Builder()
        throughLazy.provide(DHBoxKey.self) { DHBox("inner") }
        throughLazy.decorate(DHBoxKey.self, dependsOn: Lazy<DHBoxKey>.self) { inner, _ in inner }
        let lazyError = try #require(throws: ServiceGraphError.self) { try throughLazy.validate() }
        #expect(lazyError.codes == [.cycle], "a cycle through a lazy edge is still reported")

        var throughProvider = ServiceGraph.Builder()
        throughProvider.provide(DHBoxKey.self, lifetime: .transient) { DHBox("inner") }
        throughProvider.decorate(DHBoxKey.self, dependsOn: Provider<DHBoxKey>.self) { inner, _ in inner }
        let providerError = try #require(throws: ServiceGraphError.self) { try throughProvider.validate() }
        #expect(providerError.codes == [.cycle], "a cycle through a provider is still reported")
    }

    @Test(
        "a decorator that resolves its own key through a captured graph or scope is refused as re-entrant, not a hang"
    )
    func reentrantDecorator() async throws {
        let captured = Captured<ServiceGraph>()
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self, lifetime: .transient) { DHBox("inner") }
        builder.decorate(DHBoxKey.self) { inner in
            if calls.increment() > 50 { throw TestFailure("runaway recursion") }
            return DHBox("wrapper", inner: try captured.value.resolveSynchronously(DHBoxKey.self))
        }
        let graph = try await builder.build()
        captured.fill(graph)
        defer { captured.fill(nil) }
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(DHBoxKey.self) }
        #expect(error.codes == [.reentrantResolution], "\(error)")
        #expect(error.problems.first?.key == "DHBoxKey")
        #expect(calls.count == 1)

        let scopeHolder = Captured<ServiceScope>()
        let scopedCalls = Tally()
        var scoped = ServiceGraph.Builder()
        scoped.provide(DHSessionKey.self, lifetime: .scoped) { DHBox("inner") }
        scoped.decorate(DHSessionKey.self) { inner async throws -> DHBox in
            if scopedCalls.increment() > 50 { throw TestFailure("runaway recursion") }
            return DHBox("wrapper", inner: try await scopeHolder.value.resolve(DHSessionKey.self))
        }
        let scopedGraph = try await scoped.build()
        let scope = try scopedGraph.makeScope()
        scopeHolder.fill(scope)
        defer { scopeHolder.fill(nil) }
        let scopedError = await #expect(throws: ServiceGraphError.self) {
            try await withDeadline { try await scope.resolve(DHSessionKey.self) }
        }
        #expect(scopedError?.codes == [.reentrantResolution], "\(String(describing: scopedError))")
        #expect(scopedCalls.count == 1)
        try await scope.close()
        try await scopedGraph.shutdown()
        try await graph.shutdown()
    }

    @Test("a hanging async decorator is abandoned by factoryTimeout, naming its stage, and the error's dump marks it")
    func hangingDecoratorTimesOut() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.decorate(ServiceA.self) { _ async throws -> HookedService in
            try await Task.sleep(for: .seconds(60))
            return HookedService("late", log: log)
        }
        builder.decorate(ServiceA.self) { $0 }
        let frozen = builder
        let error = await #expect(throws: ServiceGraphError.self) {
            try await withDeadline(.seconds(30)) { try await frozen.build() }
        }
        #expect(error?.codes == [.factoryTimedOut])
        #expect(error?.problems.first?.key == "ServiceA (decorator 1)")
        #expect(log.count(of: "didAdd A") == 1)
        // The abandoned decorator still holds A, so A is released in the background once that work
        // ends (at its cancellation), not before the build returns: waited for, up to a minute.
        let deadline = ContinuousClock.now + .seconds(60)
        while log.count(of: "willRemove A") == 0 && .now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(log.count(of: "willRemove A") == 1)
        #expect(log.count(of: "init late") == 0)
        let dump = try #require(error?.dump(.text))
        #expect(dump.contains("ServiceA (decorator 1)"))
    }

    @Test("decorating a seed: either refused by validation, or each scope's given value is wrapped")
    func decoratedSeed() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(DHLabelKey.self)
        builder.provide(DHUserKey.self, lifetime: .scoped, dependsOn: DHLabelKey.self) { $0 }
        builder.decorate(DHLabelKey.self) { "wrapped " + $0 }
        do {
            try builder.validate()
        } catch {
            // Refusing it up front is fine too, as long as the problem is about the decorated seed.
            #expect(error.problems.contains { $0.key.hasPrefix("DHLabelKey") }, "\(error)")
            #expect(error.codes == [.invalidKey], "\(error)")
            #expect(error.problems.first?.message.contains("seed") == true, "\(error)")
            return
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(DHLabelKey.self, "alice"))
        #expect(try await scope.resolve(DHUserKey.self) == "wrapped alice")
        #expect(try await scope.resolve(DHLabelKey.self) == "wrapped alice")
        try await scope.close()
        try await graph.shutdown()
    }

    @Test("validation reports a decorator's missing dependency with every other problem at once, each at its site")
    func allProblemsAtOnce() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self) { DHBox("inner") }
        let decoratorLine = #line + 1
        builder.decorate(DHBoxKey.self, dependsOn: DHMissingKey.self) { inner, _ in inner }
        let orphanLine = #line + 1
        builder.decorate(DHUnprovidedKey.self) { $0 }
        builder.provide(DHLabelKey.self, dependsOn: DHOtherMissingKey.self) { $0 }
        builder.provide(DHOtherLabelKey.self) { "1" }
        builder.provide(DHOtherLabelKey.self) { "2" }
        builder.override(DHNeverProvidedKey.self) { "typo" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 5, "\(error)")
        #expect(error.codes.filter { $0 == .missingProvider }.count == 3)
        #expect(error.contains(.duplicateProvider))
        #expect(error.contains(.overrideOfUnknownKey))
        let decoratorProblem = try #require(error.problems.first { $0.key == "DHMissingKey" })
        #expect(decoratorProblem.code == .missingProvider)
        #expect(decoratorProblem.site?.line == decoratorLine)
        #expect(decoratorProblem.site?.fileID.hasSuffix("DecoratorHostileTests.swift") == true)
        #expect(decoratorProblem.path.contains("DHBoxKey"))
        let orphan = try #require(error.problems.first { $0.key == "DHUnprovidedKey" })
        #expect(orphan.message.contains("DHUnprovidedKey is decorated, but nothing provides it"))
        #expect(orphan.site?.line == orphanLine)
        #expect(error.problems.contains { $0.key == "DHOtherMissingKey" })
    }

    @Test(
        "decorating the product of a factory with arguments is refused and names the function; decorating the function works"
    )
    func argumentFactories() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DHProfileKey.self, arguments: Int.self) { id in "profile \(id)" }
        var wrong = builder
        wrong.decorate(DHProfileKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try wrong.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems.first?.message.contains("ArgumentFactory<DHProfileKey, Int>") == true, "\(error)")

        builder.decorate(ArgumentFactory<DHProfileKey, Int>.self) { inner in
            { (id: Int) async throws -> String in try await "[" + inner(id * 10) + "]" }
        }
        let graph = try await builder.build()
        let makeProfile = try await graph.resolve(ArgumentFactory<DHProfileKey, Int>.self)
        #expect(try await makeProfile(4) == "[profile 40]")
        try await graph.shutdown()
    }

    // MARK: Overrides and removal

    @Test("an override with an explicit lifetime gives every stage that lifetime, both ways")
    func overrideWithDifferentLifetime() async throws {
        let decorated = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self) { DHBox("real") }
        builder.decorate(DHBoxKey.self) {
            decorated.increment()
            return DHBox("wrapper", inner: $0)
        }
        var transient = builder
        transient.override(DHBoxKey.self, lifetime: .transient) { DHBox("double") }
        let graph = try await transient.build()
        #expect(decorated.count == 0, "transient stages are not made at build")
        let first = try await graph.resolve(DHBoxKey.self)
        let second = try await graph.resolve(DHBoxKey.self)
        #expect(first !== second)
        #expect(first.inner !== second.inner)
        #expect(first.inner?.label == "double")
        #expect(decorated.count == 2)
        try await graph.shutdown()

        let singletonDecorated = Tally()
        var reverse = ServiceGraph.Builder()
        reverse.provide(DHBoxKey.self, lifetime: .transient) { DHBox("real") }
        reverse.decorate(DHBoxKey.self) {
            singletonDecorated.increment()
            return DHBox("wrapper", inner: $0)
        }
        reverse.override(DHBoxKey.self, lifetime: .singleton) { DHBox("double") }
        let singletons = try await reverse.build()
        #expect(singletonDecorated.count == 1)
        #expect(singletons[DHBoxKey.self].inner?.label == "double")
        #expect(try await singletons.resolve(DHBoxKey.self) === singletons[DHBoxKey.self])
        #expect(singletonDecorated.count == 1)
        try await singletons.shutdown()
    }

    @Test("override(_:with:) and override(_:withDouble:as:) keep the decorators around the very instance given")
    func overrideWithInstance() async throws {
        let decorated = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self, lifetime: .transient) { DHBox("real") }
        builder.decorate(DHBoxKey.self) {
            decorated.increment()
            return DHBox("wrapper", inner: $0)
        }

        let instance = DHBox("instance")
        var withInstance = builder
        withInstance.override(DHBoxKey.self, with: instance)
        let graph = try await withInstance.build()
        #expect(graph[DHBoxKey.self].label == "wrapper")
        #expect(graph[DHBoxKey.self].inner === instance)
        #expect(try await graph.resolve(DHBoxKey.self) === graph[DHBoxKey.self])
        #expect(decorated.count == 1, "an instance override is a singleton: its stages too")
        try await graph.shutdown()

        var withDouble = builder
        let doubleKey = withDouble.override(DHBoxKey.self, withDouble: { DHBox("double") }, as: { $0 })
        let doubled = try await withDouble.build()
        let first = try await doubled.resolve(DHBoxKey.self)
        let second = try await doubled.resolve(DHBoxKey.self)
        #expect(first !== second, "the key keeps the transient lifetime of the provider it replaces")
        #expect(first.inner === doubled[doubleKey])
        #expect(second.inner === doubled[doubleKey])
        try await doubled.shutdown()
    }

    @Test("removeDecorators then decorate again applies only the new decorators, and touches no other key")
    func removeThenDecorateAgain() async throws {
        var builder = ServiceGraph.Builder()
        builder.removeDecorators(of: DHLabelKey.self)
        builder.provide(DHLabelKey.self) { "x" }
        builder.provide(DHOtherLabelKey.self) { "y" }
        builder.decorate(DHLabelKey.self) { $0 + "1" }
        builder.decorate(DHOtherLabelKey.self) { $0 + "!" }
        builder.decorate(DHLabelKey.self) { $0 + "2" }
        builder.removeDecorators(of: DHLabelKey.self)
        builder.removeDecorators(of: DHNeverProvidedKey.self)
        builder.decorate(DHLabelKey.self) { $0 + "3" }
        let text = builder.dump(.text)
        #expect(text.contains("DHLabelKey (undecorated)"))
        #expect(!text.contains("DHLabelKey (decorator 1)"))
        let graph = try await builder.build()
        #expect(graph[DHLabelKey.self] == "x3")
        #expect(graph[DHOtherLabelKey.self] == "y!")
        try await graph.shutdown()

        builder.removeDecorators(of: DHLabelKey.self)
        builder.removeDecorators(of: DHOtherLabelKey.self)
        #expect(!builder.dump(.text).contains("(undecorated)"))
        let plain = try await builder.build()
        #expect(plain[DHLabelKey.self] == "x")
        #expect(plain[DHOtherLabelKey.self] == "y")
        try await plain.shutdown()
    }

    @Test("copies of a builder have their own decorators, even after one of them was validated")
    func copiesAreIndependent() async throws {
        var base = ServiceGraph.Builder()
        base.provide(DHLabelKey.self) { "x" }
        base.decorate(DHLabelKey.self) { $0 + "1" }
        try base.validate()
        var extended = base
        extended.decorate(DHLabelKey.self) { $0 + "2" }
        var stripped = base
        stripped.removeDecorators(of: DHLabelKey.self)
        try base.validate()
        try extended.validate()
        try stripped.validate()
        base.decorate(DHLabelKey.self) { $0 + "B" }

        for (builder, expected) in [(base, "x1B"), (extended, "x12"), (stripped, "x")] {
            let graph = try await builder.build()
            #expect(graph[DHLabelKey.self] == expected)
            try await graph.shutdown()
        }
    }

    // MARK: Child graphs

    @Test("a child that decorates its parent's key wraps the parent's very instance; the parent's value is untouched")
    func childDecoratesParentsKey() async throws {
        let made = Tally()
        var parent = ServiceGraph.Builder()
        parent.provide(DHBoxKey.self) {
            made.increment()
            return DHBox("parent")
        }
        parent.provide(DHParentUserKey.self, dependsOn: DHBoxKey.self) { $0.label }
        let graph = try await parent.build()

        var child = graph.makeChildBuilder()
        child.decorate(DHBoxKey.self) { DHBox("child-wrapper", inner: $0) }
        child.provide(DHUserKey.self, dependsOn: DHBoxKey.self) { $0.label }
        let childGraph = try await child.build()
        #expect(childGraph[DHBoxKey.self].label == "child-wrapper")
        #expect(childGraph[DHBoxKey.self].inner === graph[DHBoxKey.self])
        #expect(childGraph[DHUserKey.self] == "child-wrapper")
        #expect(childGraph[DHParentUserKey.self] == "parent", "the parent's singletons are shared, not rebuilt")
        #expect(graph[DHBoxKey.self].label == "parent")
        #expect(made.count == 1)
        try await childGraph.shutdown()
        try await graph.shutdown()
    }

    @Test("a child inherits its parent's decorated value without decorating again; its own decorator wraps that value")
    func childInheritsDecoratedValue() async throws {
        let decorated = Tally()
        var parent = ServiceGraph.Builder()
        parent.provide(DHBoxKey.self) { DHBox("parent") }
        parent.decorate(DHBoxKey.self) {
            decorated.increment()
            return DHBox("parent-wrapper", inner: $0)
        }
        let graph = try await parent.build()

        var plain = graph.makeChildBuilder()
        plain.provide(DHUserKey.self, dependsOn: DHBoxKey.self) { $0.label }
        let plainChild = try await plain.build()
        #expect(plainChild[DHBoxKey.self] === graph[DHBoxKey.self])
        #expect(plainChild[DHUserKey.self] == "parent-wrapper")

        var wrapping = graph.makeChildBuilder()
        wrapping.decorate(DHBoxKey.self) { DHBox("child-wrapper", inner: $0) }
        let wrappingChild = try await wrapping.build()
        #expect(wrappingChild[DHBoxKey.self].label == "child-wrapper")
        #expect(wrappingChild[DHBoxKey.self].inner === graph[DHBoxKey.self])
        #expect(decorated.count == 1, "the parent's decorator ran once, for the parent")
        try await wrappingChild.shutdown()
        try await plainChild.shutdown()
        try await graph.shutdown()
    }

    @Test("a child that overrides and decorates a parent's key wraps its own override; the parent is untouched")
    func childOverridesAndDecorates() async throws {
        var parent = ServiceGraph.Builder()
        parent.provide(DHBoxKey.self) { DHBox("parent") }
        let graph = try await parent.build()

        var child = graph.makeChildBuilder()
        child.override(DHBoxKey.self) { DHBox("child-double") }
        child.decorate(DHBoxKey.self) { DHBox("child-wrapper", inner: $0) }
        let childGraph = try await child.build()
        #expect(childGraph[DHBoxKey.self].label == "child-wrapper")
        #expect(childGraph[DHBoxKey.self].inner?.label == "child-double")
        #expect(graph[DHBoxKey.self].label == "parent")
        #expect(graph[DHBoxKey.self].inner == nil)
        try await childGraph.shutdown()
        try await graph.shutdown()
    }

    // The decorator's docs (added after this test was first written) say decorators belong to their
    // builder: a child's override replaces the decorated value it inherited, and the child decorates
    // its own value with decorators of its own.
    @Test("a child's override of a key its parent decorates replaces the decorated value; the child decorates its own")
    func childOverrideOfParentDecoratedKey() async throws {
        var parent = ServiceGraph.Builder()
        parent.provide(DHBoxKey.self) { DHBox("parent") }
        parent.decorate(DHBoxKey.self) { DHBox("parent-wrapper", inner: $0) }
        let graph = try await parent.build()

        var child = graph.makeChildBuilder()
        child.override(DHBoxKey.self) { DHBox("child-double") }
        let childGraph = try await child.build()
        #expect(childGraph[DHBoxKey.self].label == "child-double")
        #expect(childGraph[DHBoxKey.self].inner == nil)
        #expect(graph[DHBoxKey.self].inner?.label == "parent")

        var decorating = graph.makeChildBuilder()
        decorating.override(DHBoxKey.self) { DHBox("child-double") }
        decorating.decorate(DHBoxKey.self) { DHBox("child-wrapper", inner: $0) }
        let decoratingGraph = try await decorating.build()
        #expect(decoratingGraph[DHBoxKey.self].label == "child-wrapper")
        #expect(decoratingGraph[DHBoxKey.self].inner?.label == "child-double")
        try await decoratingGraph.shutdown()
        try await childGraph.shutdown()
        try await graph.shutdown()
    }

    // MARK: Hooks

    @Test(
        "hooks: a wrapper starts after its inner value and before dependents, and stops in reverse; an identity decorator runs them once"
    )
    func hooksOrderAroundDependents() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.decorate(ServiceA.self) { _ in HookedService("A-wrapper", log: log) }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in HookedService("B", log: log) }
        builder.provide(ServiceC.self) { HookedService("C", log: log) }
        builder.decorate(ServiceC.self) { $0 }
        builder.provide(ServiceD.self, dependsOn: ServiceC.self) { _ in HookedService("D", log: log) }
        builder.provide(ServiceE.self, lifetime: .transient) { HookedService("E", log: log) }
        builder.decorate(ServiceE.self) { _ in HookedService("E-wrapper", log: log) }
        let graph = try await builder.build()
        #expect(try await graph.resolve(ServiceE.self).name == "E-wrapper")
        try await graph.shutdown()

        func index(_ entry: String) throws -> Int { try #require(log.index(of: entry), "\(entry) in \(log.all)") }
        #expect(try index("didAdd A") < index("didAdd A-wrapper"))
        #expect(try index("didAdd A-wrapper") < index("init B"))
        #expect(try index("willRemove B") < index("willRemove A-wrapper"))
        #expect(try index("willRemove A-wrapper") < index("willRemove A"))
        #expect(try index("willRemove D") < index("willRemove C"))
        for name in ["A", "A-wrapper", "B", "C", "D"] {
            #expect(log.count(of: "didAdd \(name)") == 1, "\(name)")
            #expect(log.count(of: "willRemove \(name)") == 1, "\(name)")
        }
        #expect(
            !log.all.contains { $0.hasPrefix("didAdd E") || $0.hasPrefix("willRemove E") },
            "transients get no hooks"
        )
    }

    @Test(
        "a decorator that returns another singleton's instance: its hooks run once, after the decorated key's dependents"
    )
    func decoratorReturningAnotherSingleton() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(ServiceC.self) { HookedService("C", log: log) }
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.decorate(ServiceA.self, dependsOn: ServiceC.self) { _, replacement in replacement }
        builder.provide(ServiceB.self, dependsOn: ServiceA.self) { _ in HookedService("B", log: log) }
        let graph = try await builder.build()
        #expect(graph[ServiceA.self] === graph[ServiceC.self])
        try await graph.shutdown()
        for name in ["A", "B", "C"] {
            #expect(log.count(of: "didAdd \(name)") == 1, "\(name)")
            #expect(log.count(of: "willRemove \(name)") == 1, "\(name)")
        }
        #expect(try #require(log.index(of: "willRemove B")) < #require(log.index(of: "willRemove C")))
    }

    // MARK: Scale

    @Test("1,000 decorators on one key, synchronous and asynchronous, singleton and transient: in order, no overflow")
    func thousandDecorators() async throws {
        let expected = Array(0..<1_000)

        var singleton = ServiceGraph.Builder()
        singleton.provide(DHTraceKey.self) { [] }
        for index in 0..<1_000 { singleton.decorate(DHTraceKey.self) { $0 + [index] } }
        singleton.provide(DHUserKey.self, dependsOn: DHTraceKey.self) { "\($0.count)" }
        let graph = try await singleton.build()
        #expect(graph[DHTraceKey.self] == expected)
        #expect(graph[DHUserKey.self] == "1000")
        try await graph.shutdown()

        var transient = ServiceGraph.Builder()
        transient.provide(DHTraceKey.self, lifetime: .transient) { [] }
        for index in 0..<1_000 { transient.decorate(DHTraceKey.self) { $0 + [index] } }
        let transients = try await transient.build()
        #expect(try transients.resolveSynchronously(DHTraceKey.self) == expected)
        #expect(try await transients.resolve(DHTraceKey.self) == expected)
        try await transients.shutdown()

        var asynchronous = ServiceGraph.Builder()
        asynchronous.provide(DHTraceKey.self) { [] }
        for index in 0..<1_000 {
            asynchronous.decorate(DHTraceKey.self) { trace async throws -> [Int] in
                await Task.yield()
                return trace + [index]
            }
        }
        let asynchronousGraph = try await asynchronous.build()
        #expect(asynchronousGraph[DHTraceKey.self] == expected)
        try await asynchronousGraph.shutdown()
    }

    // MARK: Diagnostics

    @Test("each stage is created with an event, in order, and the startup report names a slow decorator's stage")
    func eventsAndStartupReport() async throws {
        let created = EventLog()
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in
            if event.kind == .serviceCreated { created.record(event.key ?? "?") }
        }
        builder.provide(DHLabelKey.self) { "x" }
        builder.decorate(DHLabelKey.self) { label async throws -> String in
            try await Task.sleep(for: .milliseconds(40))
            return label + "1"
        }
        builder.decorate(DHLabelKey.self) { $0 + "2" }
        builder.provide(DHOtherLabelKey.self, dependsOn: DHLabelKey.self) { $0 }
        let graph = try await builder.build()
        let stages = ["DHLabelKey (undecorated)", "DHLabelKey (decorator 1)", "DHLabelKey", "DHOtherLabelKey"]
        #expect(created.all == stages)
        #expect(graph.initializationOrder == stages)
        #expect(graph[DHOtherLabelKey.self] == "x12")
        let report = graph.startupReport()
        // Among the slowest with its 40 ms (a loaded machine can make a trivial factory look slow too).
        #expect(report.slowest.contains { $0.key == "DHLabelKey (decorator 1)" && $0.factory >= .milliseconds(40) })
        #expect(report.criticalPath.map(\.key) == stages)
        try await graph.shutdown()
    }

    @Test(
        "dumps in all four formats show every stage with its site; JSON parses, for a builder, a graph and a broken graph"
    )
    func dumpsInAllFormats() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DHLabelKey.self) { "x" }
        let firstLine = #line + 1
        builder.decorate(DHLabelKey.self) { $0 + "1" }
        let secondLine = #line + 1
        builder.decorate(DHLabelKey.self, dependsOn: DHThirdLabelKey.self) { $0 + $1 }
        builder.provide(DHThirdLabelKey.self) { "3" }
        builder.provide(DHOtherLabelKey.self, dependsOn: DHLabelKey.self) { $0 }
        let stages: Set = ["DHLabelKey (undecorated)", "DHLabelKey (decorator 1)", "DHLabelKey"]
        let all = stages.union(["DHThirdLabelKey", "DHOtherLabelKey"])
        let graph = try await builder.build()

        for (name, dump) in [("builder", builder.dump(.text)), ("graph", graph.dump(.text))] {
            for stage in stages { #expect(dump.contains(stage), "\(name): \(stage)") }
            #expect(dump.contains("DecoratorHostileTests.swift:\(firstLine)"), "\(name)")
            #expect(dump.contains("DecoratorHostileTests.swift:\(secondLine)"), "\(name)")
        }
        for dot in [builder.dump(.dot), graph.dump(.dot)] {
            #expect(dot.hasPrefix("digraph ServiceGraph {"))
            #expect(dot.matches(of: /\bs\d+ \[label=/).count == all.count, "one node per stage: \(dot)")
            for stage in stages { #expect(dot.contains("label=\"\(stage)\\n"), "\(stage)") }
        }
        for mermaid in [builder.dump(.mermaid), graph.dump(.mermaid)] {
            #expect(mermaid.hasPrefix("flowchart TD\n"))
            #expect(mermaid.matches(of: /\bs\d+\["/).count == all.count, "one node per stage: \(mermaid)")
        }
        for json in [builder.dump(.json), graph.dump(.json)] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let services = try #require(object["services"] as? [[String: Any]])
            #expect(Set(services.compactMap { $0["key"] as? String }) == all)
            #expect(services.count == all.count)
        }
        try await graph.shutdown()

        var broken = builder
        broken.removeDecorators(of: DHLabelKey.self)
        broken.decorate(DHLabelKey.self, dependsOn: DHMissingKey.self) { $0 + $1 }
        let brokenJSON = broken.dump(.json)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(brokenJSON.utf8)) as? [String: Any])
        let problems = try #require(object["problems"] as? [Any])
        #expect(!problems.isEmpty)
        #expect(broken.dump(.text).contains("DHMissingKey"))
    }

    // MARK: Reading

    @Test(
        "a sync provider with an async decorator needs await (a clear requiresAwait); a decorated singleton reads the same everywhere"
    )
    func synchronousReads() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DHBoxKey.self, lifetime: .transient) { DHBox("inner") }
        builder.decorate(DHBoxKey.self) { inner async throws -> DHBox in DHBox("wrapper", inner: inner) }
        builder.provide(DHUserKey.self, lifetime: .transient, dependsOn: DHBoxKey.self) { $0.label }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(DHBoxKey.self) }
        #expect(error.codes == [.requiresAwait])
        #expect(error.problems[0].message.contains("DHBoxKey"), "\(error)")
        #expect(error.problems[0].message.contains("await"), "\(error)")
        let dependent = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(DHUserKey.self) }
        #expect(dependent.codes == [.requiresAwait])
        #expect(try await graph.resolve(DHUserKey.self) == "wrapper")
        try await graph.shutdown()

        var singleton = ServiceGraph.Builder()
        singleton.provide(DHBoxKey.self) { DHBox("inner") }
        singleton.decorate(DHBoxKey.self) { inner async throws -> DHBox in DHBox("wrapper", inner: inner) }
        singleton.provide(DHHolderKey.self, dependsOn: Lazy<DHBoxKey>.self) { DHHolder(lazy: $0) }
        singleton.provide(DHUserKey.self, dependsOn: DHBoxKey.self) { $0.label }
        let singletons = try await singleton.build()
        let read = singletons[DHBoxKey.self]
        #expect(read.label == "wrapper")
        #expect(read.inner?.label == "inner")
        #expect(try singletons.resolveSynchronously(DHBoxKey.self) === read)
        #expect(try await singletons.resolve(DHBoxKey.self) === read)
        #expect(try await singletons[DHHolderKey.self].lazy.value === read)
        #expect(singletons[DHUserKey.self] == "wrapper")
        let scope = try singletons.makeScope()
        #expect(scope[DHBoxKey.self] === read)
        try await scope.close()
        try await singletons.shutdown()
    }
}
