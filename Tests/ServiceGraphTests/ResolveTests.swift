import ServiceGraph
import Testing
import ServiceGraphTestSupport

private protocol Database: Sendable {}
private struct Memory: Database {}
private enum DatabaseKey: ServiceKey { typealias Value = any Database }
private enum DatabaseKeyz: ServiceKey { typealias Value = Int }
private enum Unregistered: ServiceKey { typealias Value = any Database }
private enum Counter: ServiceKey { typealias Value = Int }
private enum Doubled: ServiceKey { typealias Value = Int }
private enum Slow: ServiceKey { typealias Value = Int }
private enum NeedsSlow: ServiceKey { typealias Value = Int }
private enum Broken: ServiceKey { typealias Value = Int }
private enum Top: ServiceKey { typealias Value = Int }
private enum Middle: ServiceKey { typealias Value = Int }

@Suite("Resolving")
struct ResolveTests {
    private func builder(_ calls: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(DatabaseKey.self) { Memory() }
        builder.provide(IntKey.self) { 10 }
        builder.provide(Counter.self, lifetime: .transient) { calls.increment() }
        builder.provide(Doubled.self, lifetime: .transient, dependsOn: Counter.self, IntKey.self) { $0 * $1 }
        builder.provide(Slow.self, lifetime: .transient) {
            await Task.yield()
            return 5
        }
        builder.provide(NeedsSlow.self, lifetime: .transient, dependsOn: Slow.self) { $0 + 1 }
        return builder
    }

    @Test func subscriptReadsSingletons() async throws {
        let graph = try await builder(Tally()).build()
        #expect(graph[IntKey.self] == 10)
        #expect(graph[DatabaseKey.self] is Memory)
    }

    @Test func resolveWorksForSingletonsAndTransients() async throws {
        let calls = Tally()
        let graph = try await builder(calls).build()
        #expect(try await graph.resolve(IntKey.self) == 10)
        #expect(try await graph.resolve(Counter.self) == 1)
        #expect(try await graph.resolve(Counter.self) == 2)
        #expect(try await graph.resolve(Doubled.self) == 30)
        #expect(try await graph.resolve(NeedsSlow.self) == 6)
        #expect(calls.count == 3, "a transient is made anew on every resolve")
    }

    @Test func synchronousChainsResolveWithoutAwait() async throws {
        let calls = Tally()
        let graph = try await builder(calls).build()
        #expect(try graph.resolveSynchronously(IntKey.self) == 10)
        #expect(try graph.resolveSynchronously(Counter.self) == 1)
        #expect(try graph.resolveSynchronously(Doubled.self) == 20)
    }

    @Test func asyncChainsRefuseSynchronousResolutionWithAClearError() async throws {
        let graph = try await builder(Tally()).build()
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(NeedsSlow.self) }
        #expect(error.codes == [.requiresAwait])
        #expect(error.description.contains("NeedsSlow cannot be resolved synchronously"))
        #expect(error.description.contains("async"))
    }

    @Test func aMissingKeyThrowsNamingItAndTheClosestKeys() async throws {
        let graph = try await builder(Tally()).build()
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(Unregistered.self) }
        #expect(error?.codes == [.keyNotFound])
        #expect(error?.problems.first?.key == "Unregistered")
        let message = error?.description ?? ""
        #expect(message.contains("Unregistered is not in this graph"))
        #expect(message.contains("closest keys: DatabaseKey"), "same value type comes first: \(message)")
    }

    @Test func suggestionsIncludeSimilarNames() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DatabaseKey.self) { Memory() }
        let graph = try await builder.build()
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(DatabaseKeyz.self) }
        #expect(error.description.contains("closest keys: DatabaseKey"))
    }

    @Test func aFactoryErrorDuringResolveNamesTheServiceAndThePath() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Broken.self, lifetime: .transient) { throw TestFailure("no luck") }
        builder.provide(Middle.self, lifetime: .transient, dependsOn: Broken.self) { $0 }
        builder.provide(Top.self, lifetime: .transient, dependsOn: Middle.self) { $0 }
        let graph = try await builder.build()
        for error in [
            try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(Top.self) },
            try #require(await #expect(throws: ServiceGraphError.self) { try await graph.resolve(Top.self) }),
        ] {
            #expect(error.codes == [.factoryFailed])
            #expect(error.problems[0].key == "Broken")
            #expect(error.problems[0].path == ["Top", "Middle", "Broken"])
            #expect(error.problems[0].underlyingError as? TestFailure == TestFailure("no luck"))
            #expect(error.description.contains("Top → Middle → Broken"))
        }
    }

    @Test func scopedServicesAreNotResolvedFromTheRootGraph() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self, lifetime: .scoped) { 1 }
        builder.provide(OtherIntKey.self, lifetime: .transient, dependsOn: IntKey.self) { $0 }
        let graph = try await builder.build()
        let scoped = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(IntKey.self) }
        #expect(scoped?.codes == [.wrongLifetime])
        #expect(scoped?.description.contains("IntKey is scoped; resolve it from a ServiceScope") == true)
        let dependent = try #require(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(OtherIntKey.self)
        }
        #expect(dependent.codes == [.wrongLifetime])
    }

    @Test func concurrentResolvesFromManyTasks() async throws {
        let calls = Tally()
        let graph = try await builder(calls).build()
        let total = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { (try? await graph.resolve(Doubled.self)).map { _ in 1 } ?? 0 }
                group.addTask { graph[IntKey.self] == 10 ? 1 : 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(total == 400)
        #expect(calls.count == 200)
    }
}
