import ServiceGraph
import Testing

private enum ItemsKey: ContributionKey { typealias Element = Int }

/// Random contributions with random positions and random `before`/`after` constraints, some of them
/// contradictory, against a reference that places one contribution at a time.
@Suite("Contribution order, against a reference")
struct ContributionOrderPropertyTests {
    private struct Case: CustomStringConvertible {
        var positions: [Int]
        /// (first, second): contribution `first` must come before `second`.
        var constraints: [(Int, Int)]
        /// Whether each constraint is stated by its first contribution (`before`) or its second (`after`).
        var statedBefore: [Bool]

        var description: String { "positions \(positions), constraints \(constraints)" }

        init(random: inout SplitMix64) {
            let count = Int.random(in: 1...12, using: &random)
            positions = (0..<count).map { _ in Int.random(in: -2...2, using: &random) }
            constraints = []
            statedBefore = []
            let wantsCycle = Int.random(in: 0..<4, using: &random) == 0
            for _ in 0..<Int.random(in: 0...(count * 2), using: &random) {
                var first = Int.random(in: 0..<count, using: &random)
                var second = Int.random(in: 0..<count, using: &random)
                if first == second { continue }
                // Mostly forward edges (acyclic); a quarter of the cases may have backward ones too.
                if !wantsCycle && first > second { swap(&first, &second) }
                constraints.append((first, second))
                statedBefore.append(Bool.random(using: &random))
            }
        }

        /// The reference: repeatedly the unplaced contribution whose predecessors are all placed with the
        /// lowest (position, registration index); nil when none can be placed (a contradiction).
        var referenceOrder: [Int]? {
            var placed: [Int] = []
            var isPlaced = Array(repeating: false, count: positions.count)
            while placed.count < positions.count {
                let candidates = positions.indices.filter { index in
                    !isPlaced[index] && !constraints.contains { $0.1 == index && !isPlaced[$0.0] }
                }
                guard let next = candidates.min(by: { (positions[$0], $0) < (positions[$1], $1) }) else { return nil }
                placed.append(next)
                isPlaced[next] = true
            }
            return placed
        }

        var builder: ServiceGraph.Builder {
            var builder = ServiceGraph.Builder()
            for index in positions.indices {
                let before = constraints.indices.filter { constraints[$0].0 == index && statedBefore[$0] }
                let after = constraints.indices.filter { constraints[$0].1 == index && !statedBefore[$0] }
                builder.contribute(
                    ItemsKey.self,
                    id: "c\(index)",
                    position: positions[index],
                    before: before.map { "c\(constraints[$0].1)" },
                    after: after.map { "c\(constraints[$0].0)" }
                ) { index }
            }
            return builder
        }
    }

    @Test func ordersAsTheReferenceOrReportsTheSameContradiction() async throws {
        var contradictions = 0
        for seed in RandomCases.seeds(default: 300, salt: 41) {
            var random = SplitMix64(seed: seed)
            let example = Case(random: &random)
            let builder = example.builder
            guard let expected = example.referenceOrder else {
                contradictions += 1
                let error = try #require(throws: ServiceGraphError.self, "seed \(seed): \(example)") {
                    try builder.validate()
                }
                #expect(error.codes == [.contradictoryOrder], "seed \(seed): \(example)")
                // The path is a cycle of stated constraints: each step is one, and it ends where it began.
                let path = error.problems[0].path.map { Int($0.dropFirst(2).dropLast())! }
                #expect(path.first == path.last, "seed \(seed)")
                for (first, second) in zip(path, path.dropFirst()) {
                    #expect(example.constraints.contains { $0 == (first, second) }, "seed \(seed): \(path)")
                }
                continue
            }
            let graph = try await builder.build()
            #expect(graph[ItemsKey.self] == expected, "seed \(seed): \(example)")
            try await graph.shutdown()
        }
        // The generator makes both kinds of case.
        #expect(contradictions > 10)
    }
}
