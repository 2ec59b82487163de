import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Random trees of kinds of scope, with scoped services in each kind depending on services of their
/// own kind, of outer kinds, of inner ones and of unrelated ones, checked against a plain reference:
/// validation names exactly the services with an edge that leaves their kind's ancestry; in a valid
/// graph, every scope of a random tree of scopes resolves exactly the services of its own kind and its
/// ancestors' (the others are wrongScopeKind), with the reference's values, and shares an outer kind's
/// instance with every scope inside it.
@Suite("Kinds of scope against a reference")
struct RandomScopeKindTests {
    /// Kind `k` (0 is the default) with `parents[k]` its parent (-1: opened from the graph).
    private struct KindTree {
        let parents: [Int]
        let kinds: [ScopeKind]

        init(_ random: inout SplitMix64) {
            var parents = [-1]
            var kinds = [ScopeKind.default]
            for index in 1...Int.random(in: 1...5, using: &random) {
                let parent = Int.random(in: -1..<index, using: &random)
                parents.append(parent)
                kinds.append(ScopeKind("k\(index)", inside: parent < 0 ? nil : kinds[parent]))
            }
            self.parents = parents
            self.kinds = kinds
        }

        /// Whether scopes of `inner` are `outer` or inside it.
        func isWithin(_ inner: Int, _ outer: Int) -> Bool {
            var kind = inner
            while kind >= 0 {
                if kind == outer { return true }
                kind = parents[kind]
            }
            return false
        }
    }

    @Test func validationAndResolutionFollowTheKindTree() async throws {
        var checkedScopes = 0
        var invalidGraphs = 0
        var refusedResolves = 0
        for seed in RandomCases.seeds(default: 200, salt: 5) {
            await Task.yield()
            var random = SplitMix64(seed: seed)
            let tree = KindTree(&random)
            let count = Int.random(in: 1...30, using: &random)
            let kindOf = (0..<count).map { _ in Int.random(in: 0..<tree.kinds.count, using: &random) }
            let allowInvalid = Bool.random(using: &random)
            var dependencies: [[Int]] = []
            for index in 0..<count {
                let candidates = (0..<index).filter { allowInvalid || tree.isWithin(kindOf[index], kindOf[$0]) }
                var targets: [Int] = []
                for _ in 0..<Int.random(in: 0...3, using: &random) where !candidates.isEmpty {
                    let target = candidates.randomElement(using: &random)!
                    if !targets.contains(target) { targets.append(target) }
                }
                dependencies.append(targets)
            }
            var builder = ServiceGraph.Builder()
            // Every kind is the graph's, even one with no service (a graph opens only kinds it knows).
            for kind in tree.kinds { builder.inScope(kind) { _ in } }
            for index in 0..<count {
                builder.inScope(tree.kinds[kindOf[index]]) { inKind in
                    GeneratedKeys.provide(index, lifetime: .scoped, dependsOn: dependencies[index], into: &inKind)
                }
            }
            // The reference: an edge is wrong when the dependent's kind is not within the dependency's.
            var expectedWrong: Set<String> = []
            for index in 0..<count
            where dependencies[index].contains(where: { !tree.isWithin(kindOf[index], kindOf[$0]) }) {
                expectedWrong.insert(GeneratedKeys.name(index))
            }
            guard expectedWrong.isEmpty else {
                invalidGraphs += 1
                let error = try #require(throws: ServiceGraphError.self, "seed \(seed)") { try builder.validate() }
                #expect(Set(error.problems.map(\.key)) == expectedWrong, "seed \(seed)")
                for problem in error.problems {
                    #expect([.captiveDependency, .wrongScopeKind].contains(problem.code), "seed \(seed)")
                }
                continue
            }
            let graph = try await builder.build()
            // A random tree of open scopes: each kind opened from the graph or from a scope of its parent.
            var scopes: [(kind: Int, scope: ServiceScope, ancestors: [Int])] = []
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let kind = Int.random(in: 0..<tree.kinds.count, using: &random)
                let parent = tree.parents[kind]
                if parent < 0 {
                    scopes.append((kind, try graph.makeScope(tree.kinds[kind]), []))
                } else if let opener = scopes.indices.filter({ scopes[$0].kind == parent }).randomElement(
                    using: &random
                ) {
                    let scope = try scopes[opener].scope.makeScope(tree.kinds[kind])
                    scopes.append((kind, scope, scopes[opener].ancestors + [opener]))
                }
            }
            for (position, entry) in scopes.enumerated() {
                checkedScopes += 1
                for index in (0..<count).shuffled(using: &random) {
                    let owner = ([position] + entry.ancestors).first { scopes[$0].kind == kindOf[index] }
                    if let owner {
                        let here = try await entry.scope.resolveGenerated(index)
                        let there = try await scopes[owner].scope.resolveGenerated(index)
                        #expect(here === there, "seed \(seed): service \(index) in scope \(position)")
                        let expected = 1 + dependencies[index].reduce(0) { $0 + (try! reference(dependencies, $1)) }
                        #expect(here.value == expected, "seed \(seed): value of \(index)")
                    } else {
                        let error = try await #require(throws: ServiceGraphError.self, "seed \(seed)") {
                            try await entry.scope.resolveGenerated(index)
                        }
                        #expect(error.codes == [.wrongScopeKind], "seed \(seed): service \(index) in scope \(position)")
                        refusedResolves += 1
                    }
                }
            }
            // Closing the outermost scopes closes everything inside them.
            for entry in scopes where entry.ancestors.isEmpty { try await entry.scope.close() }
            #expect(scopes.allSatisfy { $0.scope.isClosed }, "seed \(seed)")
            try await graph.shutdown()
        }
        #expect(checkedScopes > 0, "the generator makes valid graphs with scopes")
        #expect(invalidGraphs > 0, "and invalid ones")
        #expect(refusedResolves > 0, "and scopes that cannot have some services")
    }

    /// The value of generated service `index`: one plus its dependencies' values.
    private func reference(_ dependencies: [[Int]], _ index: Int) throws -> Int {
        1 + (try dependencies[index].reduce(0) { $0 + (try reference(dependencies, $1)) })
    }
}
