import Foundation
import ServiceGraph
import ServiceGraphTestSupport

/// SplitMix64: a tiny, seedable generator, so a failing random graph can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// How many random cases a property test runs, and from which seed: `SERVICEGRAPH_SEED=N` replays one
/// case; `SERVICEGRAPH_RANDOM_CASES=N` runs more (the README's long variant).
enum RandomCases {
    static func seeds(default count: Int, salt: UInt64) -> [UInt64] {
        let environment = ProcessEnvironment.self
        if let seed = environment.value("SERVICEGRAPH_SEED").flatMap(UInt64.init) { return [seed] }
        let total = environment.value("SERVICEGRAPH_RANDOM_CASES").flatMap(Int.init) ?? count
        return (0..<UInt64(total)).map { salt &* 1_000_003 &+ $0 }
    }
}

extension Lifetime {
    /// Whether a service of this lifetime may depend on one of `dependency`'s, the reference's own
    /// way: a singleton outlives every scope and instance, so it may hold only singletons; a scoped
    /// service owns what it makes for its scope, and a transient is made anew each time, so both may
    /// hold anything.
    func referenceMayDepend(on dependency: Lifetime) -> Bool {
        self != .singleton || dependency == .singleton
    }
}

/// A random service graph over generated keys: keys `0..<count` are provided (in that order),
/// keys `count..<count + missingCount` are depended on but never provided.
struct RandomGraph: CustomStringConvertible {
    var count: Int
    var missingCount: Int
    var lifetimes: [Lifetime]
    var dependencies: [[Int]]
    /// Keys provided a second time (after all the others), with no dependencies.
    var duplicated: [Int]
    /// Keys whose factories are `async`.
    var asynchronous: Set<Int>
    /// Keys declared as seeds of the graph's scopes (scoped, no dependencies) instead of provided.
    var seeds: Set<Int> = []
    /// Per service, the positions in its dependencies that are optional (`Key?`): no problem, and no
    /// value, where the key is not provided.
    var optional: [Set<Int>] = []
    /// Per service, the positions in its dependencies that are providers (`Provider<Key>`): nothing is
    /// made with the dependent, and a singleton may hold a provider of a transient.
    var providers: [Set<Int>] = []
    /// Per service, the positions in its dependencies that are lazy (`Lazy<Key>`): validated as direct
    /// edges, made on first use; a singleton only lazy edges reach is created on first use.
    var lazy: [Set<Int>] = []

    func isOptional(_ index: Int, _ position: Int) -> Bool { !optional.isEmpty && optional[index].contains(position) }
    func isProvider(_ index: Int, _ position: Int) -> Bool {
        !providers.isEmpty && providers[index].contains(position)
    }
    func isLazy(_ index: Int, _ position: Int) -> Bool { !lazy.isEmpty && lazy[index].contains(position) }

    var description: String {
        "RandomGraph(count: \(count), missing: \(missingCount), duplicated: \(duplicated), seeds: \(seeds.sorted()))"
    }

    /// Any graph: cycles, self-dependencies, missing keys, duplicates and captive dependencies happen.
    static func arbitrary(_ random: inout SplitMix64) -> RandomGraph {
        let count =
            Int.random(in: 0..<100, using: &random) < 2
            ? Int.random(in: 200...1_500, using: &random) : Int.random(in: 1...40, using: &random)
        let missingCount = Int.random(in: 0..<10, using: &random) < 3 ? Int.random(in: 1...3, using: &random) : 0
        var lifetimes = (0..<count).map { _ in randomLifetime(&random) }
        // About one key in twelve is a seed: scoped, and depending on nothing.
        let seeds = Set((0..<count).filter { _ in Int.random(in: 0..<12, using: &random) == 0 })
        for seed in seeds { lifetimes[seed] = .scoped }
        var dependencies: [[Int]] = []
        for index in 0..<count {
            var targets: [Int] = []
            for _ in 0..<(seeds.contains(index) ? 0 : Int.random(in: 0...3, using: &random)) {
                let roll = Int.random(in: 0..<100, using: &random)
                let target: Int
                if roll < 6 || index == 0 {
                    target = Int.random(in: 0..<count, using: &random)  // may close a cycle
                } else if roll < 10 && missingCount > 0 {
                    target = count + Int.random(in: 0..<missingCount, using: &random)
                } else {
                    target = Int.random(in: 0..<index, using: &random)
                }
                if !targets.contains(target) { targets.append(target) }
            }
            dependencies.append(targets)
        }
        // About one dependency in seven is optional, and one in seven of the others a provider.
        let optional = dependencies.map { targets in
            Set(targets.indices.filter { _ in Int.random(in: 0..<7, using: &random) == 0 })
        }
        let providers = dependencies.indices.map { index in
            Set(
                dependencies[index].indices.filter {
                    !optional[index].contains($0) && Int.random(in: 0..<7, using: &random) == 0
                }
            )
        }
        // And one in seven of the rest lazy.
        let lazy = dependencies.indices.map { index in
            Set(
                dependencies[index].indices.filter {
                    !optional[index].contains($0) && !providers[index].contains($0)
                        && Int.random(in: 0..<7, using: &random) == 0
                }
            )
        }
        var duplicated: [Int] = []
        if Int.random(in: 0..<10, using: &random) == 0 {
            duplicated = [Int.random(in: 0..<count, using: &random)]
        }
        return RandomGraph(
            count: count,
            missingCount: missingCount,
            lifetimes: lifetimes,
            dependencies: dependencies,
            duplicated: duplicated,
            asynchronous: [],
            seeds: seeds,
            optional: optional,
            providers: providers,
            lazy: lazy
        )
    }

    /// A valid graph: acyclic, complete, no duplicates, every dependency lives at least as long as its
    /// dependent. Some factories are asynchronous; `withSeeds`, some scoped keys are seeds.
    static func valid(
        _ random: inout SplitMix64,
        count: ClosedRange<Int> = 1...60,
        withSeeds: Bool = false,
        withOptionals: Bool = false,
        withProviders: Bool = false,
        withLazy: Bool = false
    ) -> RandomGraph {
        let count = Int.random(in: count, using: &random)
        let lifetimes = (0..<count).map { _ in randomLifetime(&random) }
        let seeds =
            withSeeds ? Set((0..<count).filter { lifetimes[$0] == .scoped && Bool.random(using: &random) }) : []
        var dependencies: [[Int]] = []
        for index in 0..<count {
            let candidates = (0..<index).filter { lifetimes[index].referenceMayDepend(on: lifetimes[$0]) }
            var targets: [Int] = []
            for _ in 0..<(seeds.contains(index) ? 0 : Int.random(in: 0...3, using: &random)) where !candidates.isEmpty {
                let target = candidates.randomElement(using: &random)!
                if !targets.contains(target) { targets.append(target) }
            }
            dependencies.append(targets)
        }
        var optional = Array(repeating: Set<Int>(), count: count)
        if withOptionals {
            for index in 0..<count where !seeds.contains(index) {
                // Some edges become optional; some services also get an optional dependency on a key
                // nobody provides (keys past `count`).
                optional[index] = Set(
                    dependencies[index].indices.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
                )
                if dependencies[index].count < 3, Int.random(in: 0..<4, using: &random) == 0 {
                    optional[index].insert(dependencies[index].count)
                    dependencies[index].append(count + Int.random(in: 0..<3, using: &random))
                }
            }
        }
        var providers = Array(repeating: Set<Int>(), count: count)
        if withProviders {
            // Whether each service needs a scope (scoped, or depending on one), in index order: every
            // dependency, a provider's too, comes before its dependent.
            var needsScope = Array(repeating: false, count: count)
            for index in 0..<count {
                needsScope[index] =
                    lifetimes[index] == .scoped || dependencies[index].contains { $0 < count && needsScope[$0] }
                guard index > 0, !seeds.contains(index), dependencies[index].count < 3 else { continue }
                guard Int.random(in: 0..<3, using: &random) == 0 else { continue }
                // Any earlier key a provider may reach: a singleton's provider of a transient too, unless
                // it needs a scope.
                let target = Int.random(in: 0..<index, using: &random)
                guard lifetimes[index] != .singleton || !needsScope[target] else { continue }
                needsScope[index] = needsScope[index] || needsScope[target]
                providers[index].insert(dependencies[index].count)
                dependencies[index].append(target)
            }
        }
        var lazy = Array(repeating: Set<Int>(), count: count)
        if withLazy {
            // About one plain edge to a provided key in three becomes lazy.
            for index in 0..<count {
                lazy[index] = Set(
                    dependencies[index].indices.filter {
                        dependencies[index][$0] < count && !optional[index].contains($0)
                            && !providers[index].contains($0) && Int.random(in: 0..<3, using: &random) == 0
                    }
                )
            }
        }
        let asynchronous = Set((0..<count).filter { _ in Bool.random(using: &random) })
        return RandomGraph(
            count: count,
            missingCount: 0,
            lifetimes: lifetimes,
            dependencies: dependencies,
            duplicated: [],
            asynchronous: asynchronous,
            seeds: seeds,
            optional: optional,
            providers: providers,
            lazy: lazy
        )
    }

    private static func randomLifetime(_ random: inout SplitMix64) -> Lifetime {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<6: .singleton
        case 6..<8: .scoped
        default: .transient
        }
    }

    func builder(recorder: GraphRecorder? = nil) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in 0..<count {
            if seeds.contains(index) {
                GeneratedKeys.seed(index, into: &builder)
                continue
            }
            GeneratedKeys.provide(
                index,
                lifetime: lifetimes[index],
                dependsOn: dependencies[index],
                optional: optional.isEmpty ? [] : optional[index],
                providers: providers.isEmpty ? [] : providers[index],
                lazy: lazy.isEmpty ? [] : lazy[index],
                asynchronous: asynchronous.contains(index),
                recorder: recorder,
                into: &builder
            )
        }
        for index in duplicated {
            GeneratedKeys.provide(index, lifetime: lifetimes[index], dependsOn: [], into: &builder)
        }
        return builder
    }

    var singletons: [Int] { (0..<count).filter { lifetimes[$0] == .singleton } }

    /// The value of each service in a scope whose seed `index` has the value `seedValue(index)`,
    /// computed the plain way: one plus the sum of the dependencies' values.
    func referenceValues(seedValue: (Int) -> Int) -> [Int] {
        var values = Array(repeating: 0, count: count)
        // Dependencies come before their dependents in a valid graph.
        for index in 0..<count {
            // An optional dependency on a key nobody provides (past `count`) adds nothing.
            values[index] =
                seeds.contains(index)
                ? seedValue(index)
                : dependencies[index].enumerated().reduce(1) { sum, edge in
                    // A provider or lazy handle adds nothing; nor does an optional key nobody provides
                    // (past `count`).
                    let isHandle = isProvider(index, edge.offset) || isLazy(index, edge.offset)
                    return sum + (edge.element < count && !isHandle ? values[edge.element] : 0)
                }
        }
        return values
    }

    /// The singletons the build leaves to their first use, computed the plain way: repeat until nothing
    /// changes, starting from "every singleton something depends on is deferred" and taking back each
    /// one that a service not deferred needs through an edge that is not lazy.
    var referenceDeferred: Set<Int> {
        var deferred = Set(
            (0..<count).filter { target in
                lifetimes[target] == .singleton && (0..<count).contains { dependencies[$0].contains(target) }
            }
        )
        var changed = true
        while changed {
            changed = false
            for holder in 0..<count where !deferred.contains(holder) {
                for (position, target) in dependencies[holder].enumerated()
                where !isLazy(holder, position) && deferred.contains(target) {
                    deferred.remove(target)
                    changed = true
                }
            }
        }
        return deferred
    }

    /// Whether `dependent` depends on `dependency`, directly or not.
    func dependsTransitively(_ dependent: Int, on dependency: Int) -> Bool {
        var seen = Set<Int>()
        var stack = dependencies[dependent]
        while let next = stack.popLast() {
            if next == dependency { return true }
            if next < count, seen.insert(next).inserted { stack.append(contentsOf: dependencies[next]) }
        }
        return false
    }
}

/// The expected problems of a ``RandomGraph``, computed the plain way: no cleverness, so it can be
/// trusted to check the real validator.
struct ReferenceValidation {
    var duplicates: [String] = []
    /// (who requires it, the missing key)
    var missing: [Pair] = []
    /// Strongly connected groups that contain a cycle (more than one member, or a self-dependency).
    var cycleGroups: [Set<Int>] = []
    /// (the longer-lived service, the shorter-lived dependency)
    var captive: [Pair] = []
    /// The services with an optional dependency on a key nobody provides, once per such dependency.
    var absentOptionals: [String] = []

    struct Pair: Hashable, Comparable {
        let first: String
        let second: String

        static func < (lhs: Pair, rhs: Pair) -> Bool { (lhs.first, lhs.second) < (rhs.first, rhs.second) }
    }

    var isValid: Bool { duplicates.isEmpty && missing.isEmpty && cycleGroups.isEmpty && captive.isEmpty }

    init(_ graph: RandomGraph) {
        let name = GeneratedKeys.name
        duplicates = graph.duplicated.map(name)
        var singletonProviders: [(holder: Int, target: Int)] = []
        for index in 0..<graph.count {
            for (position, target) in graph.dependencies[index].enumerated() {
                if target >= graph.count && graph.isOptional(index, position) {
                    absentOptionals.append(name(index))
                } else if target >= graph.count {
                    missing.append(Pair(first: name(index), second: name(target)))
                } else if graph.isProvider(index, position) {
                    // A provider holds no instance: only a singleton's provider of a service that needs a
                    // scope is captive (decided below, once reachability is known).
                    if graph.lifetimes[index] == .singleton { singletonProviders.append((index, target)) }
                } else if !graph.lifetimes[index].referenceMayDepend(on: graph.lifetimes[target]) {
                    captive.append(Pair(first: name(index), second: name(target)))
                }
            }
        }
        // Reachability from every node; two nodes share a group when each reaches the other.
        let reach = (0..<graph.count).map { start -> [Bool] in
            var seen = Array(repeating: false, count: graph.count)
            var stack = graph.dependencies[start].filter { $0 < graph.count }
            while let next = stack.popLast() {
                if seen[next] { continue }
                seen[next] = true
                stack.append(contentsOf: graph.dependencies[next].filter { $0 < graph.count })
            }
            return seen
        }
        var grouped = Array(repeating: false, count: graph.count)
        for start in 0..<graph.count where !grouped[start] && reach[start][start] {
            let group = Set((0..<graph.count).filter { reach[start][$0] && reach[$0][start] })
            for member in group { grouped[member] = true }
            cycleGroups.append(group)
        }
        // A service needs a scope when it, or anything it reaches, is scoped; one on a cycle, or reaching
        // one, is left to the cycle's report and counts as not needing one.
        func needsScope(_ service: Int) -> Bool {
            let reached = (0..<graph.count).filter { reach[service][$0] }
            if grouped[service] || reached.contains(where: { grouped[$0] }) { return false }
            return graph.lifetimes[service] == .scoped || reached.contains { graph.lifetimes[$0] == .scoped }
        }
        for (holder, target) in singletonProviders where graph.lifetimes[target] == .scoped || needsScope(target) {
            captive.append(Pair(first: name(holder), second: name(target)))
        }
    }
}
