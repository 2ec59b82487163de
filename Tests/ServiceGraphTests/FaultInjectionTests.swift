import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Failures injected into random valid graphs, for many seeds.
@Suite("Fault injection")
struct FaultInjectionTests {
    /// A valid random graph with at least one singleton, and a singleton chosen to fail.
    private func graphWithVictim(_ seed: UInt64) -> (RandomGraph, victim: Int, inDidAdd: Bool) {
        var random = SplitMix64(seed: seed)
        var graph = RandomGraph.valid(&random, count: 2...40)
        if graph.singletons.isEmpty { graph.lifetimes[0] = .singleton }
        let victim = graph.singletons.randomElement(using: &random)!
        return (graph, victim, Bool.random(using: &random))
    }

    @Test func aFailingFactoryOrDidAddReleasesWhatStartedOnceInReverseAndLeaksNothing() async throws {
        for seed in RandomCases.seeds(default: 300, salt: 3) {
            let (graph, victim, inDidAdd) = graphWithVictim(seed)
            let plan = inDidAdd ? FailurePlan(failingDidAdd: victim) : FailurePlan(failingFactory: victim)
            let recorder = GraphRecorder(plan: plan)
            let builder = graph.builder(recorder: recorder)
            let error = await #expect(throws: ServiceGraphError.self, "seed \(seed)") { try await builder.build() }
            let problem = try #require(error?.problems.first, "seed \(seed)")
            #expect(error?.problems.count == 1, "seed \(seed): \(String(describing: error))")
            #expect(problem.code == (inDidAdd ? .didAddFailed : .factoryFailed), "seed \(seed)")
            #expect(problem.key == GeneratedKeys.name(victim), "seed \(seed)")
            #expect(problem.path.last == GeneratedKeys.name(victim), "seed \(seed)")

            // Started: created and past a successful didAdd. Each is removed once, the victim never.
            let started = graph.singletons.filter { $0 != victim && recorder.count(of: .didAdd($0)) == 1 }
            for service in graph.singletons {
                let removals = recorder.count(of: .willRemove(service))
                #expect(removals == (started.contains(service) ? 1 : 0), "seed \(seed): service \(service)")
            }
            // In reverse: a service is removed before everything it depends on.
            for service in started {
                let removed = try #require(recorder.position(of: .willRemove(service)), "seed \(seed)")
                for dependency in graph.dependencies[service] where started.contains(dependency) {
                    let after = try #require(recorder.position(of: .willRemove(dependency)), "seed \(seed)")
                    #expect(removed < after, "seed \(seed)")
                }
            }
            // Nothing that depends on the victim was created.
            for service in graph.singletons where graph.dependsTransitively(service, on: victim) {
                #expect(recorder.count(of: .created(service)) == 0, "seed \(seed): \(service) needs the victim")
            }
            #expect(recorder.alive == 0, "seed \(seed): \(recorder.alive) instances outlived the failed build")
        }
    }

    @Test func failingWillRemovesDuringShutdownDoNotStopTheOthersAndAreAllReported() async throws {
        for seed in RandomCases.seeds(default: 200, salt: 4) {
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(&random, count: 1...40)
            let failing = Set(graph.singletons.filter { _ in Int.random(in: 0..<4, using: &random) == 0 })
            let recorder = GraphRecorder(plan: FailurePlan(failingWillRemove: failing))
            let built = try await graph.builder(recorder: recorder).build()
            if failing.isEmpty {
                try await built.shutdown()
            } else {
                let error = await #expect(throws: ServiceGraphError.self, "seed \(seed)") { try await built.shutdown() }
                let reported = Set(error?.problems.map(\.key) ?? [])
                #expect(reported == Set(failing.map(GeneratedKeys.name)), "seed \(seed)")
                #expect(error?.problems.allSatisfy { $0.code == .willRemoveFailed } == true, "seed \(seed)")
            }
            for service in graph.singletons {
                #expect(recorder.count(of: .willRemove(service)) == 1, "seed \(seed): service \(service)")
            }
        }
    }
}
