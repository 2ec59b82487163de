/// The graph algorithms over ``Edges``, each written once: topological order and strongly connected
/// components. Targets below zero (missing keys) are not nodes and are skipped.
enum Topology {
    /// Dependencies before dependents (Kahn's algorithm), ties in node order. Nodes on a cycle, and
    /// those that depend on one, are left out.
    ///
    /// - Complexity: O(nodes + edges).
    static func order(of edges: Edges) -> [Int] {
        var waiting = (0..<edges.count).map { node in edges.dependencies(of: node).count { $0 >= 0 } }
        var order = (0..<edges.count).filter { waiting[$0] == 0 }
        order.reserveCapacity(edges.count)
        var head = 0
        while head < order.count {
            for dependent in edges.dependents(of: order[head]) {
                waiting[dependent] -= 1
                if waiting[dependent] == 0 { order.append(dependent) }
            }
            head += 1
        }
        return order
    }

    /// The strongly connected components (Tarjan's algorithm, iterative so deep graphs cannot overflow
    /// the stack), each a list of nodes, in the order Tarjan's algorithm closes them.
    ///
    /// - Complexity: O(nodes + edges).
    static func stronglyConnectedComponents(of edges: Edges) -> [[Int]] {
        let count = edges.count
        var index = Array(repeating: -1, count: count)
        var lowLink = Array(repeating: 0, count: count)
        var onStack = Array(repeating: false, count: count)
        var stack: [Int] = []
        var components: [[Int]] = []
        var counter = 0
        var work: [(node: Int, edge: Int)] = []

        for root in 0..<count where index[root] == -1 {
            index[root] = counter
            lowLink[root] = counter
            counter += 1
            stack.append(root)
            onStack[root] = true
            work.append((root, 0))
            while let (node, edge) = work.last {
                let targets = edges.dependencies(of: node)
                if edge < targets.count {
                    work[work.count - 1].edge += 1
                    let next = targets[targets.startIndex + edge]
                    if next < 0 { continue }
                    if index[next] == -1 {
                        index[next] = counter
                        lowLink[next] = counter
                        counter += 1
                        stack.append(next)
                        onStack[next] = true
                        work.append((next, 0))
                    } else if onStack[next] {
                        lowLink[node] = min(lowLink[node], index[next])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node {
                    lowLink[parent] = min(lowLink[parent], lowLink[node])
                }
                if lowLink[node] == index[node] {
                    var component: [Int] = []
                    while true {
                        let member = stack.removeLast()
                        onStack[member] = false
                        component.append(member)
                        if member == node { break }
                    }
                    components.append(component)
                }
            }
        }
        return components
    }

    /// Every node that depends, directly or not, on one of `sources` (the sources left out), in the
    /// order they are reached.
    ///
    /// - Complexity: O(nodes + edges).
    static func dependents(of sources: [Int], in edges: Edges) -> [Int] {
        var seen = Array(repeating: false, count: edges.count)
        for source in sources { seen[source] = true }
        var stack = sources
        var reached: [Int] = []
        while let node = stack.popLast() {
            for dependent in edges.dependents(of: node) where !seen[dependent] {
                seen[dependent] = true
                reached.append(dependent)
                stack.append(dependent)
            }
        }
        return reached
    }
}
