import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

// The asynchronous path awaits a factory's non-singleton dependencies into prepared values and then runs
// the synchronous thunk: values, order, error paths, cancellation and reentrancy through it.

private let preparedInstances = LiveCounter()

private final class RACounter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Resumes after `milliseconds`, whatever the waiting task's cancellation.
private func uncancellableWait(milliseconds: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Task.detached {
            try? await Task.sleep(for: .milliseconds(milliseconds))
            continuation.resume()
        }
    }
}

private enum RA {
    enum X: ServiceKey { typealias Value = LiveInstance }
    enum A: ServiceKey { typealias Value = LiveInstance }
    enum B: ServiceKey { typealias Value = SIMD4<Double> }
    enum S2: ServiceKey { typealias Value = String }
    enum F: ServiceKey { typealias Value = Int }
    enum G: ServiceKey { typealias Value = Int }
    enum Single: ServiceKey { typealias Value = LiveInstance }
    enum AsyncSingle: ServiceKey { typealias Value = LiveInstance }
    enum T: ServiceKey { typealias Value = Int }
    enum U: ServiceKey { typealias Value = LiveInstance }
    enum Pair: ServiceKey { typealias Value = [Int] }
    enum Fails: ServiceKey { typealias Value = LiveInstance }
    enum Slow: ServiceKey { typealias Value = LiveInstance }
    enum Scoped: ServiceKey { typealias Value = LiveInstance }
    enum Reader: ServiceKey { typealias Value = Int }
}

@Suite("The asynchronous path with prepared dependencies", .serialized)
struct PreparedDependencyTests {
    /// A failure deep in a chain that mixes scoped services, asynchronous and synchronous transients
    /// names every service on the way, whichever path made each.
    @Test func theErrorPathNamesEveryServiceThroughScopedAndTransientLinks() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(RA.X.self, lifetime: .scoped, dependsOn: RA.A.self) { _ in
            LiveInstance(0, in: preparedInstances)
        }
        builder.provide(RA.A.self, lifetime: .transient, dependsOn: RA.B.self) { _ async in
            LiveInstance(1, in: preparedInstances)
        }
        builder.provide(RA.B.self, lifetime: .transient, dependsOn: RA.S2.self) { _ in .zero }
        builder.provide(RA.S2.self, lifetime: .scoped, dependsOn: RA.F.self) { f async in "\(f)" }
        builder.provide(RA.F.self, lifetime: .transient, dependsOn: RA.G.self) { $0 }
        builder.provide(RA.G.self, lifetime: .transient) { () throws -> Int in throw TestFailure("G failed") }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        for _ in 0..<2 {
            do {
                _ = try await scope.resolve(RA.X.self)
                Issue.record("expected a failure")
            } catch let error as ServiceGraphError {
                #expect(error.problems.count == 1)
                let path = error.problems.first?.path ?? []
                #expect(
                    path == [
                        RA.X.serviceName, RA.A.serviceName, RA.B.serviceName, RA.S2.serviceName, RA.F.serviceName,
                        RA.G.serviceName,
                    ],
                    "\(path)"
                )
                #expect(error.problems.first?.underlyingError is TestFailure)
            }
            // The same from a transient starting the chain.
            do {
                _ = try await scope.resolve(RA.A.self)
                Issue.record("expected a failure")
            } catch let error as ServiceGraphError {
                let path = error.problems.first?.path ?? []
                #expect(
                    path == [
                        RA.A.serviceName, RA.B.serviceName, RA.S2.serviceName, RA.F.serviceName, RA.G.serviceName,
                    ],
                    "\(path)"
                )
            }
        }
        try await scope.close()
        try await graph.shutdown()
    }

    /// Asynchronous factories depending on transients that depend on asynchronous factories.
    @Test func asyncFactoriesThroughTransientsThroughAsyncFactories() async throws {
        let before = preparedInstances.count
        let madeU = RACounter()
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RA.AsyncSingle.self) { () async in
                await Task.yield()
                return LiveInstance(100, in: preparedInstances)
            }
            builder.provide(RA.U.self, lifetime: .transient, dependsOn: RA.AsyncSingle.self) { s async in
                await Task.yield()
                return LiveInstance(s.id + madeU.next(), in: preparedInstances)
            }
            builder.provide(RA.T.self, lifetime: .transient, dependsOn: RA.U.self, RA.AsyncSingle.self) { u, s in
                u.id * 1000 + s.id
            }
            builder.provide(RA.X.self, lifetime: .scoped, dependsOn: RA.T.self, RA.U.self, RA.AsyncSingle.self) {
                t,
                u,
                s async in
                await Task.yield()
                return LiveInstance(t + u.id + s.id, in: preparedInstances)
            }
            builder.provide(RA.Scoped.self, lifetime: .scoped, dependsOn: RA.T.self, RA.X.self, RA.U.self) { t, x, u in
                LiveInstance(t * 7 + x.id + u.id, in: preparedInstances)
            }
            let graph = try await builder.build()
            let scope = try graph.makeScope()
            // Scoped's T: U #1 = 101, T = 101100. X: T with U #2 = 102100, U #3 = 103, S = 100.
            // Scoped's U: #4 = 104.
            let scoped = try await scope.resolve(RA.Scoped.self)
            #expect(try await scope.resolve(RA.X.self).id == 102_100 + 103 + 100)
            #expect(scoped.id == 101_100 * 7 + 102_303 + 104)
            #expect(madeU.count == 4)
            try await scope.close()
            try await graph.shutdown()
        }
        #expect(preparedInstances.count == before)
    }

    /// The same transient declared twice gets two instances, in declaration order.
    @Test func aTransientDeclaredTwiceIsMadeTwiceInOrder() async throws {
        let counter = RACounter()
        var builder = ServiceGraph.Builder()
        builder.provide(RA.T.self, lifetime: .transient) { () async in counter.next() }
        builder.provide(RA.F.self, lifetime: .transient) { counter.next() * 10 }
        builder.provide(RA.Pair.self, lifetime: .transient, dependsOn: RA.T.self, RA.F.self, RA.T.self, RA.F.self) {
            a,
            b,
            c,
            d in [a, b, c, d]
        }
        let graph = try await builder.build()
        #expect(try await graph.resolve(RA.Pair.self) == [1, 20, 3, 40])
        try await graph.shutdown()
    }

    /// A dependency that throws after others were prepared releases what was prepared, once.
    @Test func aFailureAfterPreparedDependenciesReleasesThem() async throws {
        let before = preparedInstances.count
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RA.U.self, lifetime: .transient) { () async in LiveInstance(1, in: preparedInstances) }
            builder.provide(RA.Scoped.self, lifetime: .scoped) { LiveInstance(2, in: preparedInstances) }
            builder.provide(RA.Fails.self, lifetime: .transient) { () async throws -> LiveInstance in
                throw TestFailure("refused")
            }
            builder.provide(RA.X.self, lifetime: .scoped, dependsOn: RA.U.self, RA.Scoped.self, RA.Fails.self) {
                _,
                _,
                _ in LiveInstance(3, in: preparedInstances)
            }
            builder.provide(RA.A.self, lifetime: .transient, dependsOn: RA.U.self, RA.Scoped.self, RA.Fails.self) {
                _,
                _,
                _ async in LiveInstance(4, in: preparedInstances)
            }
            let graph = try await builder.build()
            for _ in 0..<50 {
                let scope = try graph.makeScope()
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(RA.X.self) }
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(RA.A.self) }
                try await scope.close()
            }
            try await graph.shutdown()
        }
        #expect(preparedInstances.count == before)
    }

    /// Cancelling the resolving task while a later dependency is awaited releases the earlier ones.
    @Test func cancellationWhilePreparingReleasesWhatWasPrepared() async throws {
        let before = preparedInstances.count
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RA.U.self, lifetime: .transient) { () async in LiveInstance(1, in: preparedInstances) }
            builder.provide(RA.Slow.self, lifetime: .transient) { () async throws -> LiveInstance in
                try await Task.sleep(for: .seconds(30))
                return LiveInstance(2, in: preparedInstances)
            }
            builder.provide(RA.A.self, lifetime: .transient, dependsOn: RA.U.self, RA.Slow.self) { _, _ in
                LiveInstance(3, in: preparedInstances)
            }
            let graph = try await builder.build()
            for _ in 0..<20 {
                let task = Task { try await graph.resolve(RA.A.self) }
                try await Task.sleep(for: .milliseconds(5))
                task.cancel()
                let result = await task.result
                #expect(throws: (any Error).self) { try result.get() }
                if case .failure(let error as ServiceGraphError) = result {
                    #expect(error.problems.first?.path == [RA.A.serviceName, RA.Slow.serviceName])
                }
            }
            try await graph.shutdown()
        }
        #expect(preparedInstances.count == before)
    }

    /// A factory whose dependency's factory asks the scope for the instance being made is refused, and
    /// the error names the chain.
    @Test func reentryThroughAPreparedTransientIsRefused() async throws {
        let captured = Captured<ServiceScope>()
        var builder = ServiceGraph.Builder()
        builder.provide(RA.U.self, lifetime: .transient) { () async throws -> LiveInstance in
            _ = try await captured.value.resolve(RA.Scoped.self)
            return LiveInstance(1, in: preparedInstances)
        }
        builder.provide(RA.Scoped.self, lifetime: .scoped, dependsOn: RA.U.self) { _ in
            LiveInstance(2, in: preparedInstances)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        captured.fill(scope)
        do {
            _ = try await scope.resolve(RA.Scoped.self)
            Issue.record("expected reentrantResolution")
        } catch let error as ServiceGraphError {
            #expect(error.contains(.reentrantResolution), "\(error)")
            let path = error.problems.first?.path ?? []
            #expect(path.first == RA.Scoped.serviceName && path.contains(RA.U.serviceName), "\(path)")
        }
        captured.fill(nil)
        try await scope.close()
        try await graph.shutdown()
    }

    /// Many tasks read a scoped service through asynchronous transients, while others make the scope's
    /// instances: one instance, every reader sees it.
    @Test func concurrentReadersOfAScopedDependencyThroughPreparedValues() async throws {
        let before = preparedInstances.count
        let made = RACounter()
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RA.Scoped.self, lifetime: .scoped) { () async in
                await Task.yield()
                return LiveInstance(made.next(), in: preparedInstances)
            }
            builder.provide(RA.U.self, lifetime: .transient, dependsOn: RA.Scoped.self) { s async in
                LiveInstance(s.id, in: preparedInstances)
            }
            builder.provide(RA.Reader.self, lifetime: .transient, dependsOn: RA.U.self, RA.Scoped.self) { u, s in
                u.id == s.id ? s.id : -1
            }
            let graph = try await builder.build()
            for _ in 0..<20 {
                let scope = try graph.makeScope()
                let ids = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<16 { group.addTask { try await scope.resolve(RA.Reader.self) } }
                    return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
                }
                #expect(ids.count == 1 && !ids.contains(-1), "\(ids)")
                try await scope.close()
            }
            try await graph.shutdown()
        }
        #expect(preparedInstances.count == before)
    }

    /// A scoped factory that times out keeps running; the scope closes and releases its instances while
    /// the abandoned factory still holds one of them as a prepared value.
    @Test func anAbandonedScopedFactoryKeepsItsPreparedScopedDependency() async throws {
        let before = preparedInstances.count
        let seen = Locked<Int?>(nil)
        do {
            var builder = ServiceGraph.Builder()
            builder.factoryTimeout = .milliseconds(50)
            builder.provide(RA.Scoped.self, lifetime: .scoped) { LiveInstance(7, in: preparedInstances) }
            builder.provide(RA.Slow.self, lifetime: .transient) { () async -> LiveInstance in
                await uncancellableWait(milliseconds: 300)
                return LiveInstance(8, in: preparedInstances)
            }
            builder.provide(RA.X.self, lifetime: .scoped, dependsOn: RA.Scoped.self, RA.Slow.self) { s, slow async in
                seen.withLock { $0 = s.id }
                return LiveInstance(s.id + slow.id, in: preparedInstances)
            }
            let graph = try await builder.build()
            do {
                let scope = try graph.makeScope()
                _ = try await scope.resolve(RA.Scoped.self)
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(RA.X.self) }
                try await scope.close()
            }
            try await Task.sleep(for: .milliseconds(600))
            try await graph.shutdown()
        }
        #expect(seen.withLock { $0 } == 7)
        #expect(preparedInstances.count == before)
    }

    /// A child graph runs the parent's transient factories with its own dependencies, on the
    /// asynchronous path too.
    @Test func childGraphRunsInheritedFactoriesOnThePreparedPath() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(RA.Single.self) { LiveInstance(1, in: preparedInstances) }
        builder.provide(RA.G.self, lifetime: .transient) { 10 }
        builder.provide(RA.U.self, lifetime: .transient, dependsOn: RA.Single.self, RA.G.self) { s, g async in
            LiveInstance(s.id + g, in: preparedInstances)
        }
        let parent = try await builder.build()
        var child = parent.makeChildBuilder()
        // The child makes G a scoped, asynchronous service: the inherited factory of U now awaits it.
        child.override(RA.G.self, lifetime: .scoped) { () async in 20 }
        let childGraph = try await child.build()
        let scope = try childGraph.makeScope()
        #expect(try await scope.resolve(RA.U.self).id == 21)
        #expect(try await parent.resolve(RA.U.self).id == 11)
        try await scope.close()
        try await childGraph.shutdown()
        try await parent.shutdown()
    }
}

private enum RADeepRoot: ServiceKey { typealias Value = Int }
private enum RADeepLink<Inner: ServiceKey>: ServiceKey { typealias Value = Int }
private enum RADeepTop: ServiceKey { typealias Value = Int }
private enum RADeepScopedTop: ServiceKey { typealias Value = Int }

extension PreparedDependencyTests {
    /// A synchronous chain past the recursion limit, failing at its root, read by an asynchronous
    /// transient and by a scoped service: the error's path names every link, in order.
    @Test func aDeepFailingChainOnTheAsynchronousPathNamesEveryLink() async throws {
        var names: [String] = []
        var builder = ServiceGraph.Builder()
        builder.provide(RADeepRoot.self, lifetime: .transient) { () throws -> Int in throw TestFailure("root") }
        names.append(RADeepRoot.serviceName)
        func addLinks<K: ServiceKey>(after key: K.Type, remaining: Int) where K.Value == Int {
            guard remaining > 0 else {
                builder.provide(RADeepTop.self, lifetime: .transient, dependsOn: K.self) { v async in v }
                builder.provide(RADeepScopedTop.self, lifetime: .scoped, dependsOn: K.self) { v in v }
                return
            }
            builder.provide(RADeepLink<K>.self, lifetime: .transient, dependsOn: K.self) { $0 + 1 }
            names.append(RADeepLink<K>.serviceName)
            addLinks(after: RADeepLink<K>.self, remaining: remaining - 1)
        }
        addLinks(after: RADeepRoot.self, remaining: 100)
        let graph = try await builder.build()
        do {
            _ = try await graph.resolve(RADeepTop.self)
            Issue.record("expected a failure")
        } catch let error as ServiceGraphError {
            #expect(error.problems.first?.path == [RADeepTop.serviceName] + names.reversed())
        }
        let scope = try graph.makeScope()
        do {
            _ = try await scope.resolve(RADeepScopedTop.self)
            Issue.record("expected a failure")
        } catch let error as ServiceGraphError {
            #expect(error.problems.first?.path == [RADeepScopedTop.serviceName] + names.reversed())
        }
        try await scope.close()
        try await graph.shutdown()
    }
}
