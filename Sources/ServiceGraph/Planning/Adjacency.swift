/// Edges of a graph in compressed sparse rows: the targets of node `n` are
/// `targets[start[n]..<start[n + 1]]`. Two flat arrays instead of one array per node, so planning a
/// graph of 100,000 services allocates a handful of buffers, not 200,000.
struct Adjacency: Sendable {
    private(set) var start: [Int]
    private(set) var targets: [Int]

    /// The edges of each node, in order.
    init(_ rows: some Sequence<some Collection<Int>>, count: Int, edgeCount: Int) {
        start = []
        start.reserveCapacity(count + 1)
        targets = []
        targets.reserveCapacity(edgeCount)
        for row in rows {
            start.append(targets.count)
            targets.append(contentsOf: row)
        }
        start.append(targets.count)
    }

    /// The reverse of `edges` (edges to `GraphPlan.missing` are dropped); each row in ascending order.
    init(reversing edges: Adjacency) {
        let count = edges.count
        var counts = Array(repeating: 0, count: count + 1)
        for target in edges.targets where target >= 0 {
            counts[target + 1] += 1
        }
        for index in 0..<count {
            counts[index + 1] += counts[index]
        }
        var fill = counts
        var targets = Array(repeating: 0, count: counts[count])
        for node in 0..<count {
            for target in edges[node] where target >= 0 {
                targets[fill[target]] = node
                fill[target] += 1
            }
        }
        self.start = counts
        self.targets = targets
    }

    var count: Int { start.count - 1 }

    subscript(node: Int) -> ArraySlice<Int> {
        targets[start[node]..<start[node + 1]]
    }

    func degree(of node: Int) -> Int { start[node + 1] - start[node] }
}
