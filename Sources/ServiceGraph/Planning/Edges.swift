/// The dependency edges of a graph in compressed sparse rows, both ways: the dependencies of node `n`
/// in declaration order, and the nodes that depend on `n` in ascending order.
///
/// Flat arrays instead of two arrays per node, so planning a graph of 100,000 services allocates a
/// handful of buffers, not 400,000; of 32-bit integers, which halves what a plan of 1,000,000
/// services holds for its edges while it is built. A target below zero names something outside the
/// graph (a missing key): it is kept among the dependencies and has no row of dependents.
///
/// The rows of dependents are made on first use (``ReverseRows``): validating and building a valid
/// graph whose factories are all synchronous never walks them.
struct Edges: Sendable {
    /// A node's dependencies, or its dependents, as `Int`s.
    typealias Row = LazyMapCollection<ArraySlice<Int32>, Int>

    private let dependencyStart: [Int32]
    private let dependencyTargets: [Int32]
    private let reverse = ReverseRows()

    /// The dependencies of each node, in order.
    init(_ rows: some Sequence<some Collection<Int>>, count: Int, edgeCount: Int) {
        var dependencyStart: [Int32] = []
        dependencyStart.reserveCapacity(count + 1)
        var dependencyTargets: [Int32] = []
        dependencyTargets.reserveCapacity(edgeCount)
        for row in rows {
            dependencyStart.append(Int32(dependencyTargets.count))
            dependencyTargets.append(contentsOf: row.lazy.map { Int32($0) })
        }
        dependencyStart.append(Int32(dependencyTargets.count))
        self.init(dependencyStart: dependencyStart, dependencyTargets: dependencyTargets)
    }

    /// The dependencies of node `n` are `dependencyTargets[dependencyStart[n]..<dependencyStart[n + 1]]`.
    init(dependencyStart: [Int32], dependencyTargets: [Int32]) {
        self.dependencyStart = dependencyStart
        self.dependencyTargets = dependencyTargets
    }

    /// The rows of dependents: `sources[start[n]..<start[n + 1]]` depend on `n`, in ascending order.
    struct Dependents: Sendable {
        let start: [Int32]
        let sources: [Int32]

        /// The positions in `sources` of what depends on `node`.
        func range(of node: Int) -> Range<Int> { Int(start[node])..<Int(start[node + 1]) }

        /// Calls `body` with each node that depends on `node`, in ascending order, without making a
        /// slice (the build's countdown calls this once per service).
        func forEach(of node: Int, _ body: (Int) -> Void) {
            for index in range(of: node) { body(Int(sources[index])) }
        }
    }

    /// The rows of dependents, made once for all copies of these edges (thread-safe).
    final class ReverseRows: Sendable {
        private let rows = Locked<Dependents?>(nil)

        func rows(of edges: Edges) -> Dependents {
            rows.withLock { rows in
                if let rows { return rows }
                let (start, sources) = Edges.reversed(edges.dependencyStart, edges.dependencyTargets)
                let made = Dependents(start: start, sources: sources)
                rows = made
                return made
            }
        }
    }

    /// The rows of dependents (made on first use).
    var dependents: Dependents { reverse.rows(of: self) }

    /// Whether anything depends on each node: one pass over the edges, without the rows of dependents.
    func nodesDependedOn() -> [Bool] {
        var dependedOn = Array(repeating: false, count: count)
        for target in dependencyTargets where target >= 0 {
            dependedOn[Int(target)] = true
        }
        return dependedOn
    }

    /// The rows of the reverse edges (a counting sort by target), each in ascending order.
    private static func reversed(_ start: [Int32], _ targets: [Int32]) -> (start: [Int32], sources: [Int32]) {
        let count = start.count - 1
        var counts = Array(repeating: Int32(0), count: count + 1)
        for target in targets where target >= 0 {
            counts[Int(target) + 1] += 1
        }
        for index in 0..<count {
            counts[index + 1] += counts[index]
        }
        var fill = counts
        var sources = Array(repeating: Int32(0), count: Int(counts[count]))
        // In place: one uniqueness check per array, not one per edge.
        sources.withUnsafeMutableBufferPointer { sources in
            fill.withUnsafeMutableBufferPointer { fill in
                for node in 0..<count {
                    for edge in Int(start[node])..<Int(start[node + 1]) {
                        let target = Int(targets[edge])
                        guard target >= 0 else { continue }
                        sources[Int(fill[target])] = Int32(truncatingIfNeeded: node)
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
    func dependencies(of node: Int) -> Row {
        dependencyTargets[Int(dependencyStart[node])..<Int(dependencyStart[node + 1])].lazy.map(Int.init)
    }

    /// The positions of `node`'s dependencies among all edges (see ``target(ofEdge:)``).
    func edgeRange(of node: Int) -> Range<Int> {
        Int(dependencyStart[node])..<Int(dependencyStart[node + 1])
    }

    /// The target of the edge at `position` (a position in some node's ``edgeRange(of:)``).
    func target(ofEdge position: Int) -> Int {
        Int(dependencyTargets[position])
    }

    /// The position of `node`'s first edge among all edges (edges are numbered node by node, in
    /// declaration order: the index of per-edge data such as ``GraphPlan/edgeKinds``).
    func firstEdge(of node: Int) -> Int { Int(dependencyStart[node]) }

    /// Calls `body` with each dependency of `node`, in declaration order, without making a slice.
    func forEachDependency(of node: Int, _ body: (Int) -> Void) {
        for index in Int(dependencyStart[node])..<Int(dependencyStart[node + 1]) {
            body(Int(dependencyTargets[index]))
        }
    }

    /// What depends on `node`, in ascending order (the rows are made on first use; a loop over many
    /// nodes reads ``dependents`` once instead).
    func dependents(of node: Int) -> Row {
        let rows = dependents
        return rows.sources[rows.range(of: node)].lazy.map(Int.init)
    }
}
