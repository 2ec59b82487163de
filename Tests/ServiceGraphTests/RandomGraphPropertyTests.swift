import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Validation and build checked against a plain reference on many random graphs. Every expectation
/// names its seed; `SERVICEGRAPH_SEED=<seed> swift test --filter RandomGraph` replays one.
@Suite("Random graphs against a reference")
struct RandomGraphPropertyTests {
    @Test func validationFindsExactlyTheProblemsTheReferenceFinds() async throws {
        var invalidGraphs = 0
        for seed in RandomCases.seeds(default: 1_000, salt: 1) {
            await Task.yield()  // a long loop: let the suite's other tests have the threads too
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.arbitrary(&random)
            let expected = ReferenceValidation(graph)
            let builder = graph.builder()
            let absent = builder.lint().filter { $0.code == .absentOptionalDependency }.map(\.key)
            #expect(absent.sorted() == expected.absentOptionals.sorted(), "seed \(seed): \(graph)")
            guard !expected.isValid else {
                #expect(throws: Never.self, "seed \(seed): \(graph)") { try builder.validate() }
                continue
            }
            invalidGraphs += 1
            let error = try #require(throws: ServiceGraphError.self, "seed \(seed): \(graph)") {
                try builder.validate()
            }
            check(error, against: expected, graph: graph, seed: seed)
        }
        #expect(invalidGraphs > 0, "the generator makes broken graphs too")
    }

    private func check(
        _ error: ServiceGraphError,
        against expected: ReferenceValidation,
        graph: RandomGraph,
        seed: UInt64
    ) {
        let problems = error.problems
        let known: [ServiceGraphError.Code] = [.duplicateProvider, .missingProvider, .cycle, .captiveDependency]
        #expect(problems.allSatisfy { known.contains($0.code) }, "seed \(seed): unexpected \(error)")

        let duplicates = problems.filter { $0.code == .duplicateProvider }.map(\.key)
        #expect(duplicates.sorted() == expected.duplicates.sorted(), "seed \(seed)")

        let missing = problems.filter { $0.code == .missingProvider }.map { problem in
            ReferenceValidation.Pair(first: problem.path.dropLast().last ?? "", second: problem.key)
        }
        #expect(missing.sorted() == expected.missing.sorted(), "seed \(seed)")

        let captive = problems.filter { $0.code == .captiveDependency }.map { problem in
            ReferenceValidation.Pair(first: problem.key, second: problem.path.last ?? "")
        }
        #expect(captive.sorted() == expected.captive.sorted(), "seed \(seed)")

        // Each cycle: a real cycle (first = last, every step an edge), inside one reference group,
        // and each group reported exactly once.
        let index = Dictionary(uniqueKeysWithValues: (0..<graph.count).map { (GeneratedKeys.name($0), $0) })
        let cycles = problems.filter { $0.code == .cycle }
        #expect(cycles.count == expected.cycleGroups.count, "seed \(seed)")
        var reportedGroups = Set<Int>()
        for cycle in cycles {
            let members = cycle.path.compactMap { index[$0] }
            #expect(members.count == cycle.path.count && members.count >= 2, "seed \(seed)")
            #expect(members.first == members.last, "seed \(seed)")
            for (from, to) in zip(members, members.dropFirst()) {
                #expect(graph.dependencies[from].contains(to), "seed \(seed): \(from) → \(to) is not an edge")
            }
            let group = expected.cycleGroups.firstIndex { $0.contains(members[0]) }
            #expect(group != nil, "seed \(seed)")
            if let group {
                #expect(members.allSatisfy { expected.cycleGroups[group].contains($0) }, "seed \(seed)")
                #expect(reportedGroups.insert(group).inserted, "seed \(seed): a group reported twice")
            }
        }
    }

    @Test func validGraphsBuildEachSingletonOnceAfterItsDependenciesAndReleaseInReverse() async throws {
        for seed in RandomCases.seeds(default: 300, salt: 2) {
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(&random)
            let recorder = GraphRecorder()
            var built: ServiceGraph? = try await graph.builder(recorder: recorder).build()
            let singletons = graph.singletons
            for service in 0..<graph.count {
                let expected = graph.lifetimes[service] == .singleton ? 1 : 0
                #expect(recorder.count(of: .created(service)) == expected, "seed \(seed): service \(service)")
            }
            for service in singletons {
                let created = try #require(recorder.position(of: .created(service)), "seed \(seed)")
                for dependency in graph.dependencies[service] {
                    let ready = try #require(recorder.position(of: .didAdd(dependency)), "seed \(seed)")
                    #expect(ready < created, "seed \(seed): \(service) created before \(dependency) was ready")
                }
            }
            try await built?.shutdown()
            for service in singletons {
                #expect(recorder.count(of: .willRemove(service)) == 1, "seed \(seed): service \(service)")
                let removed = try #require(recorder.position(of: .willRemove(service)), "seed \(seed)")
                for dependency in graph.dependencies[service] {
                    let dependencyRemoved = try #require(recorder.position(of: .willRemove(dependency)), "seed \(seed)")
                    #expect(removed < dependencyRemoved, "seed \(seed): \(dependency) removed before \(service)")
                }
            }
            built = nil
            #expect(recorder.alive == 0, "seed \(seed): instances outlived their graph")
        }
    }

    /// Valid graphs with seeds, optional dependencies (some on keys nobody provides) and providers (a
    /// singleton's of a transient too).
    @Test func seededScopesOfValidGraphsResolveEveryServiceAsTheReferenceComputes() async throws {
        var seededGraphs = 0
        for seed in RandomCases.seeds(default: 300, salt: 3) {
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(
                &random,
                withSeeds: true,
                withOptionals: true,
                withProviders: true,
                withLazy: true
            )
            let built = try await graph.builder().build()
            let seeds = graph.seeds.sorted()
            if !seeds.isEmpty { seededGraphs += 1 }
            // A scope missing one seed is refused, naming exactly that seed.
            if let left = seeds.randomElement(using: &random) {
                let given = seeds.filter { $0 != left }.map { GeneratedKeys.scopeSeed($0, value: 1_000 + $0) }
                let error = try #require(throws: ServiceGraphError.self, "seed \(seed)") {
                    try built.makeScope(seeding: given)
                }
                #expect(error.codes == [.missingSeed], "seed \(seed)")
                #expect(error.problems.map(\.key) == [GeneratedKeys.name(left)], "seed \(seed)")
            }
            // Two scopes with different seed values: each service has the reference's value in each.
            for offset in [1_000, 5_000] {
                let scope = try built.makeScope(
                    seeding: seeds.shuffled(using: &random).map { GeneratedKeys.scopeSeed($0, value: offset + $0) }
                )
                let expected = graph.referenceValues { offset + $0 }
                for index in (0..<graph.count).shuffled(using: &random) {
                    let value = try await scope.resolveGenerated(index).value
                    #expect(value == expected[index], "seed \(seed): service \(index) in a scope seeded from \(offset)")
                }
                try await scope.close()
            }
            try await built.shutdown()
        }
        #expect(seededGraphs > 0, "the generator makes graphs with seeds")
    }

    /// Valid graphs with lazy edges: the build creates exactly the singletons the reference does not
    /// defer; a deferred one is created once, on first use, after its dependencies are ready; shutdown
    /// removes every created service once, each before everything it depends on through any edge.
    @Test func lazySingletonsAreCreatedOnFirstUseAndReleasedInDependencyOrder() async throws {
        var deferredSeen = 0
        for seed in RandomCases.seeds(default: 300, salt: 4) {
            await Task.yield()
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(&random, withProviders: true, withLazy: true)
            let deferred = graph.referenceDeferred
            deferredSeen += deferred.count
            let recorder = GraphRecorder()
            let built = try await graph.builder(recorder: recorder).build()
            for service in graph.singletons {
                let expected = deferred.contains(service) ? 0 : 1
                #expect(recorder.count(of: .created(service)) == expected, "seed \(seed): service \(service)")
            }
            // Some deferred singletons are asked for, several times at once.
            let asked = deferred.filter { _ in Bool.random(using: &random) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for service in asked {
                    for _ in 0..<3 { group.addTask { _ = try await built.resolveGenerated(service) } }
                }
                try await group.waitForAll()
            }
            // What they need directly, deferred too, is created with them; nothing else.
            var created = Set(graph.singletons.filter { !deferred.contains($0) })
            var stack = Array(asked)
            while let next = stack.popLast() {
                guard created.insert(next).inserted else { continue }
                for (position, dependency) in graph.dependencies[next].enumerated()
                where !graph.isLazy(next, position) && !graph.isProvider(next, position)
                    && deferred.contains(dependency)
                {
                    stack.append(dependency)
                }
            }
            for service in graph.singletons {
                #expect(
                    recorder.count(of: .created(service)) == (created.contains(service) ? 1 : 0),
                    "seed \(seed): service \(service)"
                )
            }
            for service in created where deferred.contains(service) {
                let made = try #require(recorder.position(of: .created(service)), "seed \(seed)")
                for (position, dependency) in graph.dependencies[service].enumerated()
                where !graph.isLazy(service, position) && !graph.isProvider(service, position)
                    && graph.lifetimes[dependency] == .singleton
                {
                    let ready = try #require(recorder.position(of: .didAdd(dependency)), "seed \(seed)")
                    #expect(ready < made, "seed \(seed): \(service) created before \(dependency) was ready")
                }
            }
            try await built.shutdown()
            for service in graph.singletons {
                #expect(
                    recorder.count(of: .willRemove(service)) == (created.contains(service) ? 1 : 0),
                    "seed \(seed): service \(service)"
                )
            }
            for service in created {
                let removed = try #require(recorder.position(of: .willRemove(service)), "seed \(seed)")
                for dependency in graph.dependencies[service] where created.contains(dependency) {
                    let dependencyRemoved = try #require(recorder.position(of: .willRemove(dependency)), "seed \(seed)")
                    #expect(removed < dependencyRemoved, "seed \(seed): \(dependency) removed before \(service)")
                }
            }
        }
        #expect(deferredSeen > 0, "the generator makes graphs with singletons created on first use")
    }
}
