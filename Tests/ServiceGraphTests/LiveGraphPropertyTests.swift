import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// A random change set for a ``RandomGraph``: keys provided again (removed and provided in the same
/// change set, so their provider is new), keys removed with everything that depends on them, and new
/// keys that depend on kept ones.
private struct RandomChange: CustomStringConvertible {
    var replaced: Set<Int>
    var removed: Set<Int>
    /// New keys (indices from the graph's count on), with their dependencies.
    var added: [(index: Int, dependencies: [Int])]

    static func arbitrary(for graph: RandomGraph, _ random: inout SplitMix64) -> RandomChange {
        let provided = (0..<graph.count).filter { !graph.seeds.contains($0) }
        var replaced = Set<Int>()
        for _ in 0..<Int.random(in: 0...3, using: &random) {
            if let key = provided.randomElement(using: &random) { replaced.insert(key) }
        }
        var removed = Set<Int>()
        if Int.random(in: 0..<3, using: &random) == 0, let root = provided.randomElement(using: &random) {
            // The key and everything that depends on it, so nothing is left requiring it.
            removed = Set((0..<graph.count).filter { $0 == root || graph.dependsTransitively($0, on: root) })
        }
        replaced.subtract(removed)
        var added: [(Int, [Int])] = []
        // A new key may depend on a kept singleton that does not (optionally) depend on a new key: no cycle.
        let kept = (0..<graph.count).filter { index in
            !removed.contains(index) && graph.lifetimes[index] == .singleton
                && !(graph.count..<graph.count + 3).contains { graph.dependsTransitively(index, on: $0) }
        }
        for offset in 0..<Int.random(in: 0...2, using: &random) {
            var dependencies: [Int] = []
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                if let target = kept.randomElement(using: &random), !dependencies.contains(target) {
                    dependencies.append(target)
                }
            }
            added.append((graph.count + offset, dependencies))
        }
        return RandomChange(replaced: replaced, removed: removed, added: added)
    }

    func apply(to builder: inout ServiceGraph.Builder, graph: RandomGraph, recorder: GraphRecorder) {
        for index in replaced.sorted() {
            Self.remove(index, from: &builder)
            GeneratedKeys.provide(
                index,
                lifetime: graph.lifetimes[index],
                dependsOn: graph.dependencies[index],
                optional: graph.optional.isEmpty ? [] : graph.optional[index],
                providers: graph.providers.isEmpty ? [] : graph.providers[index],
                lazy: graph.lazy.isEmpty ? [] : graph.lazy[index],
                asynchronous: graph.asynchronous.contains(index),
                recorder: recorder,
                into: &builder
            )
        }
        for index in removed.sorted() { Self.remove(index, from: &builder) }
        for (index, dependencies) in added {
            GeneratedKeys.provide(index, dependsOn: dependencies, recorder: recorder, into: &builder)
        }
    }

    private static func remove(_ index: Int, from builder: inout ServiceGraph.Builder) {
        func open<K: GeneratedKey>(_ key: K.Type) { builder.remove(key) }
        open(GeneratedKeys.key(index))
    }

    /// The services the next generation makes again, the plain way: the replaced and added keys and
    /// everything that depends on them, directly or not (an optional dependency on a key nobody
    /// provided gets its value once the key is added).
    func referenceAffected(in graph: RandomGraph) -> Set<Int> {
        // A singleton holding a provider or lazy handle is always made again: the handle reads the graph.
        let holdsHandle = (0..<graph.count).filter { index in
            !removed.contains(index) && graph.lifetimes[index] == .singleton
                && graph.dependencies[index].indices.contains { graph.isProvider(index, $0) || graph.isLazy(index, $0) }
        }
        let changed = replaced.union(added.map(\.index)).union(holdsHandle)
        var affected = changed
        for index in 0..<graph.count where !removed.contains(index) {
            if changed.contains(where: { graph.dependsTransitively(index, on: $0) }) { affected.insert(index) }
        }
        return affected
    }

    /// The singletons of the next generation left to their first use, the plain way (as
    /// ``RandomGraph/referenceDeferred``, over the kept and added keys): the plan lists them neither as
    /// made again nor as shared until they are made.
    func referenceDeferred(in graph: RandomGraph) -> Set<Int> {
        let nodes = (0..<graph.count).filter { !removed.contains($0) } + added.map(\.index)
        func dependencies(_ index: Int) -> [Int] {
            index < graph.count ? graph.dependencies[index] : added.first { $0.index == index }!.dependencies
        }
        func isSingleton(_ index: Int) -> Bool { index >= graph.count || graph.lifetimes[index] == .singleton }
        var deferred = Set(
            nodes.filter { target in isSingleton(target) && nodes.contains { dependencies($0).contains(target) } }
        )
        var changed = true
        while changed {
            changed = false
            for holder in nodes where !deferred.contains(holder) {
                for (position, target) in dependencies(holder).enumerated()
                where !(holder < graph.count && graph.isLazy(holder, position)) && deferred.contains(target) {
                    deferred.remove(target)
                    changed = true
                }
            }
        }
        return deferred
    }

    var description: String { "replaced \(replaced.sorted()), removed \(removed.sorted()), added \(added)" }
}

private func singleton(_ index: Int, in graph: ServiceGraph) async throws -> GeneratedService {
    func open<K: GeneratedKey>(_ key: K.Type) async throws -> GeneratedService { try await graph.resolve(key) }
    return try await open(GeneratedKeys.key(index))
}

/// Each singleton of `graph` (created on first use too), in `indices`' order.
private func singletons(_ indices: [Int], in graph: ServiceGraph) async throws -> [GeneratedService] {
    var found: [GeneratedService] = []
    for index in indices { found.append(try await singleton(index, in: graph)) }
    return found
}

@Suite("A live graph against a reference, over random graphs and change sets")
struct LiveGraphPropertyTests {
    @Test(
        "an update makes again exactly the reference's affected set and shares every other singleton",
        arguments: [false, true]
    )
    func rebuiltSetMatchesTheReference(withHandles: Bool) async throws {
        for seed in RandomCases.seeds(default: 60, salt: withHandles ? 47 : 41) {
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(
                &random,
                count: 1...30,
                withOptionals: true,
                withProviders: withHandles,
                withLazy: withHandles
            )
            let change = RandomChange.arbitrary(for: graph, &random)
            let context = "seed \(seed): \(graph) — \(change)"
            let recorder = GraphRecorder()
            let live = try await LiveGraph(graph.builder(recorder: recorder))
            let first = live.current
            let before = try await singletons(graph.singletons, in: first)
            let dryRun = try live.plan { change.apply(to: &$0, graph: graph, recorder: recorder) }
            let plan = try await live.update { change.apply(to: &$0, graph: graph, recorder: recorder) }
            #expect(plan.rebuilt == dryRun.rebuilt && plan.shared == dryRun.shared, "\(context)")
            let affected = change.referenceAffected(in: graph)
            let next = live.current
            var shared = 0
            for (position, index) in graph.singletons.enumerated() where !change.removed.contains(index) {
                let now = try await singleton(index, in: next)
                if affected.contains(index) {
                    #expect(now !== before[position], "singleton \(index) was not made again; \(context)")
                } else {
                    #expect(now === before[position], "singleton \(index) was made again; \(context)")
                    shared += 1
                }
            }
            let deferred = change.referenceDeferred(in: graph)
            let rebuiltSingletons = affected.filter { index in
                (index >= graph.count || graph.lifetimes[index] == .singleton) && !deferred.contains(index)
            }.count
            #expect(plan.rebuilt.count == rebuiltSingletons, "\(plan)\n\(context)")
            #expect(plan.shared.count == shared, "\(plan)\n\(context)")
            #expect(plan.removed.count == change.removed.count, "\(context)")
            #expect(plan.added.count == change.added.count, "\(context)")
            try await live.shutdown()
            // Every singleton instance made, in either generation, started once and was removed once.
            for index in 0..<(graph.count + change.added.count)
            where index >= graph.count || graph.lifetimes[index] == .singleton {
                let created = recorder.count(of: .created(index))
                #expect(recorder.count(of: .didAdd(index)) == created, "\(index): \(context)")
                #expect(recorder.count(of: .willRemove(index)) == created, "\(index): \(context)")
            }
            // Hook order: an instance goes after those that depend on it. For each plain edge between two
            // kept singletons, the dependency's first and last willRemove come after the dependent's
            // (a replaced pair goes with the old generation, dependent first; a shared dependency goes at
            // the end, after the dependent's instances of both generations).
            let events = recorder.events
            func removals(_ index: Int) -> [Int] { events.indices.filter { events[$0] == .willRemove(index) } }
            for dependent in graph.singletons where !change.removed.contains(dependent) {
                for (position, dependency) in graph.dependencies[dependent].enumerated()
                where dependency < graph.count && graph.lifetimes[dependency] == .singleton
                    && !change.removed.contains(dependency) && !graph.isLazy(dependent, position)
                    && !graph.isProvider(dependent, position)
                {
                    let (mine, theirs) = (removals(dependent), removals(dependency))
                    guard let myFirst = mine.first, let myLast = mine.last, let theirFirst = theirs.first,
                        let theirLast = theirs.last
                    else { continue }
                    #expect(
                        theirFirst > myFirst && theirLast > myLast,
                        "\(dependency) removed before its dependent \(dependent): \(context)"
                    )
                }
            }
        }
    }

    @Test("a fault while making the next generation leaves the current one identical")
    func faultLeavesTheCurrentGenerationIdentical() async throws {
        for seed in RandomCases.seeds(default: 40, salt: 43) {
            var random = SplitMix64(seed: seed)
            let graph = RandomGraph.valid(&random, count: 1...30, withOptionals: true)
            var change = RandomChange.arbitrary(for: graph, &random)
            let replaceable = graph.singletons.filter { !change.removed.contains($0) }
            guard let failing = replaceable.randomElement(using: &random) else { continue }
            change.replaced.insert(failing)
            let failsInDidAdd = Bool.random(using: &random)
            let context =
                "seed \(seed): \(graph) — \(change), failing \(failing) in \(failsInDidAdd ? "didAdd" : "factory")"
            let recorder = GraphRecorder()
            let live = try await LiveGraph(graph.builder(recorder: recorder))
            let first = live.current
            let before = try await singletons(graph.singletons, in: first)
            let faulty = GraphRecorder(
                plan: failsInDidAdd ? FailurePlan(failingDidAdd: failing) : FailurePlan(failingFactory: failing)
            )
            await #expect(throws: ServiceGraphError.self, "\(context)") {
                try await live.update { change.apply(to: &$0, graph: graph, recorder: faulty) }
            }
            #expect(live.current === first, "\(context)")
            #expect(live.generation == 1, "\(context)")
            for (position, index) in graph.singletons.enumerated() {
                #expect(try await singleton(index, in: first) === before[position], "\(index): \(context)")
            }
            // What the failed update started was stopped (the replaced keys' instances report to `faulty`,
            // the others made again to `recorder`); the current generation's instances, each started once
            // already, were not.
            for index in 0..<(graph.count + change.added.count) {
                // The failing `didAdd` counts as begun, not started (if the update got that far).
                let begun = faulty.count(of: .didAdd(index))
                let started = begun - (failsInDidAdd && index == failing && begun > 0 ? 1 : 0)
                #expect(faulty.count(of: .willRemove(index)) == started, "\(index): \(context)")
                let current = index < graph.count && graph.lifetimes[index] == .singleton ? 1 : 0
                let startedAgain = recorder.count(of: .didAdd(index)) - current
                #expect(recorder.count(of: .willRemove(index)) == startedAgain, "\(index): \(context)")
            }
            try await live.shutdown()
        }
    }
}
