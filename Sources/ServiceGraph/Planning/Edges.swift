/// The dependency edges of a graph in compressed sparse rows, both ways: the dependencies of node `n`
/// in declaration order, and the nodes that depend on `n` in ascending order.
///
/// Four flat arrays instead of two arrays per node, so planning a graph of 100,000 services allocates
/// a handful of buffers, not 400,000. A target below zero names something outside the graph (a
/// missing key): it is kept among the dependencies and has no row of dependents.
struct Edges: Sendable {
    private var dependencyStart: [Int]
    private var dependencyTargets: [Int]
    private var dependentStart: [Int]
    private var dependentSources: [Int]

    /// The dependencies of each node, in order.
    init(_ rows: some Sequence<some Collection<Int>>, count: Int, edgeCount: Int) {
        var dependencyStart: [Int] = []
        dependencyStart.reserveCapacity(count + 1)
        var dependencyTargets: [Int] = []
        dependencyTargets.reserveCapacity(edgeCount)
        for row in rows {
            dependencyStart.append(dependencyTargets.count)
            dependencyTargets.append(contentsOf: row)
        }
        dependencyStart.append(dependencyTargets.count)
        self.init(dependencyStart: dependencyStart, dependencyTargets: dependencyTargets)
    }

    /// The dependencies of node `n` are `dependencyTargets[dependencyStart[n]..<dependencyStart[n + 1]]`.
    init(dependencyStart: [Int], dependencyTargets: [Int]) {
        self.dependencyStart = dependencyStart
        self.dependencyTargets = dependencyTargets
        (dependentStart, dependentSources) = Self.reversed(dependencyStart, dependencyTargets)
    }

    /// The rows of the reverse edges (a counting sort by target), each in ascending order.
    private static func reversed(_ start: [Int], _ targets: [Int]) -> (start: [Int], sources: [Int]) {
        let count = start.count - 1
        var counts = Array(repeating: 0, count: count + 1)
        for target in targets where target >= 0 {
            counts[target + 1] += 1
        }
        for index in 0..<count {
            counts[index + 1] += counts[index]
        }
        var fill = counts
        var sources = Array(repeating: 0, count: counts[count])
        // In place: one uniqueness check per array, not one per edge.
        sources.withUnsafeMutableBufferPointer { sources in
            fill.withUnsafeMutableBufferPointer { fill in
                for node in 0..<count {
                    for edge in start[node]..<start[node + 1] {
                        let target = targets[edge]
                        guard target >= 0 else { continue }
                        sources[fill[target]] = node
                        fill[target] += 1
                    }
                }
            }
        }
        return (counts, sources)
    }

    /// The number of nodes.
    var count: Int { dependencyStart.count - 1 }

    /// The number of edges, missing targets included.
    var edgeCount: Int { dependencyTargets.count }

    /// What `node` depends on, in declaration order.
    func dependencies(of node: Int) -> ArraySlice<Int> {
        dependencyTargets[dependencyStart[node]..<dependencyStart[node + 1]]
    }

    /// Whether some edge names something outside the graph (a missing key).
    var hasMissingTargets: Bool { dependentSources.count != dependencyTargets.count }

    /// How many dependencies `node` declares, missing ones included.
    func dependencyCount(of node: Int) -> Int {
        dependencyStart[node + 1] - dependencyStart[node]
    }

    /// Calls `body` with each dependency of `node`, in declaration order, without making a slice.
    func forEachDependency(of node: Int, _ body: (Int) -> Void) {
        for index in dependencyStart[node]..<dependencyStart[node + 1] {
            body(dependencyTargets[index])
        }
    }

    /// How many nodes depend on `node`.
    func dependentCount(of node: Int) -> Int {
        dependentStart[node + 1] - dependentStart[node]
    }

    /// Calls `body` with each node that depends on `node`, in ascending order, without making a slice
    /// (the build's scheduler calls this once per service).
    func forEachDependent(of node: Int, _ body: (Int) -> Void) {
        for index in dependentStart[node]..<dependentStart[node + 1] {
            body(dependentSources[index])
        }
    }

    /// What depends on `node`, in ascending order.
    func dependents(of node: Int) -> ArraySlice<Int> {
        dependentSources[dependentStart[node]..<dependentStart[node + 1]]
    }
}
