import ServiceGraph
import ServiceGraphTestSupport
import Testing

/// A random DAG past the size from which validation and the build read the next services' keys and
/// dependencies ahead (16,384 services): every service is made from the right dependencies, whatever
/// the declaration order and the mix of singletons and transients.
@Suite("Large random graphs")
struct LargeRandomGraphTests {
    /// 20,000 services, each depending on up to three earlier ones (by index), declared in a shuffled
    /// order; one in eight a transient, which singletons do not depend on. Each value is one plus the sum of its dependencies' values: the
    /// graph's values against the same sums computed here.
    @Test func everyServiceIsMadeFromItsOwnDependencies() async throws {
        let count = 20_000
        var generator = SplitMix64(seed: 2_026)
        func isTransient(_ index: Int) -> Bool { index % 8 == 7 }
        var dependencies: [[Int]] = []
        var expected: [Int] = []
        for index in 0..<count {
            var picked: [Int] = []
            // A transient depends on any earlier service, a singleton on earlier singletons only (one that
            // kept a transient would be a captive dependency).
            let candidates = isTransient(index) ? index : index - index / 8
            let wanted = min(Int(generator.next() % 4), candidates)
            while picked.count < wanted {
                let candidate = Int(generator.next() % UInt64(index))
                if !picked.contains(candidate) && (isTransient(index) || !isTransient(candidate)) {
                    picked.append(candidate)
                }
            }
            dependencies.append(picked)
            expected.append(picked.reduce(1) { $0 + expected[$1] })
        }
        var declarationOrder = Array(0..<count)
        declarationOrder.shuffle(using: &generator)
        var builder = ServiceGraph.Builder()
        for index in declarationOrder {
            GeneratedKeys.provide(
                index,
                lifetime: isTransient(index) ? .transient : .singleton,
                dependsOn: dependencies[index],
                into: &builder
            )
        }
        let graph = try await builder.build()
        func value<K: GeneratedKey>(_ key: K.Type) throws -> Int { try graph.resolveSynchronously(key).value }
        var wrong: [Int] = []
        for index in 0..<count where try value(GeneratedKeys.key(index)) != expected[index] {
            wrong.append(index)
        }
        #expect(wrong.isEmpty, "services made from the wrong dependencies: \(wrong.prefix(10))")
        #expect(graph.initializationOrder.count == count - count / 8)
        try await graph.shutdown()
    }
}
