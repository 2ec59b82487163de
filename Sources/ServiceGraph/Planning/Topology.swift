/// The graph algorithms over ``Edges``, each written once: topological order (whole, or step by step
/// with ``Countdown``), strongly connected components and the dependents of a set. Targets below zero
/// (missing keys) are not nodes and are skipped.
enum Topology {
    /// Dependencies before dependents: a depth-first walk from each node in node order, through
    /// dependencies in declaration order, that lists a node once its dependencies are listed. Nodes on
    /// a cycle, and those that depend on one, are left out.
    ///
    /// Depth-first rather than level by level (Kahn's algorithm): where nodes were declared after what
    /// they depend on, as they mostly are, the order is the nodes' own, so the build that follows it
    /// reads registrations, slots and edges in sequence instead of all over memory (validating and
    /// building a random DAG of a million services went from 0.95 to 0.49 seconds).
    ///
    /// - Complexity: O(nodes + edges).
    static func order(of edges: Edges) -> [Int] {
        let count = edges.count
        // Per node: not reached yet, on the path being walked, listed, or left out (on a cycle, or
        // depending on one).
        var state = [VisitState](repeating: .unreached, count: count)
        var order: [Int] = []
        order.reserveCapacity(count)
        // The path from the root being walked, each node with the position of the next edge to follow.
        var path: [(node: Int, edge: Int)] = []
        for root in 0..<count where state[root] == .unreached {
            // The common case first: every dependency listed already (declared before), no walk.
            var isReady = true
            for edge in edges.edgeRange(of: root) {
                let dependency = edges.target(ofEdge: edge)
                if dependency >= 0 && state[dependency] != .listed {
                    isReady = false
                    break
                }
            }
            if isReady {
                state[root] = .listed
                order.append(root)
                continue
            }
            state[root] = .onPath
            path.append((root, edges.edgeRange(of: root).lowerBound))
            while let (node, edge) = path.last {
                if edge < edges.edgeRange(of: node).upperBound {
                    path[path.count - 1].edge += 1
                    let dependency = edges.target(ofEdge: edge)
                    guard dependency >= 0 else { continue }
                    switch state[dependency] {
                    case .unreached:
                        state[dependency] = .onPath
                        path.append((dependency, edges.edgeRange(of: dependency).lowerBound))
                    case .onPath, .leftOut:
                        // Back on the path: a cycle. A node left out may still be on the path.
                        state[node] = .leftOut
                    case .listed:
                        break
                    }
                    continue
                }
                path.removeLast()
                if state[node] == .leftOut {
                    if let parent = path.last { state[parent.node] = .leftOut }
                } else {
                    state[node] = .listed
                    order.append(node)
                }
            }
        }
        return order
    }

    private enum VisitState: UInt8 {
        case unreached, onPath, listed, leftOut
    }

    /// Kahn's algorithm one step at a time, for a caller that finishes nodes in an order of its own
    /// (the build finishes a service when its factory returns, concurrently with others): each node
    /// counts its dependencies still unfinished, and becomes ready when the count reaches zero.
    struct Countdown {
        private let dependents: Edges.Dependents
        private var waiting: [Int32]

        /// A countdown where the nodes `isFinished` accepts are finished already: the others wait for
        /// those of their dependencies it does not accept (a missing key, below zero, is not a node
        /// and is not waited for).
        init(_ edges: Edges, finished isFinished: (Int) -> Bool) {
            dependents = edges.dependents
            passThrough = nil
            waiting = (0..<edges.count).map { node in
                var count: Int32 = 0
                edges.forEachDependency(of: node) { dependency in
                    if dependency >= 0 && !isFinished(dependency) { count += 1 }
                }
                return count
            }
        }

        /// A countdown where the nodes `passThrough` marks are never finished by the caller: each
        /// finishes by itself once its own dependencies have (a transient between a singleton's provider
        /// and the singletons it needs, so that the singleton starts after them). `order` is a
        /// topological order of the nodes.
        init(_ edges: Edges, order: [Int], finished isFinished: (Int) -> Bool, passThrough: [Bool]) {
            dependents = edges.dependents
            self.passThrough = passThrough
            var waiting = [Int32](repeating: 0, count: edges.count)
            var done = [Bool](repeating: false, count: edges.count)
            for node in order {
                var count: Int32 = 0
                edges.forEachDependency(of: node) { dependency in
                    if dependency >= 0 && !done[dependency] { count += 1 }
                }
                waiting[node] = count
                done[node] = passThrough[node] ? count == 0 : isFinished(node)
            }
            self.waiting = waiting
        }

        /// Per node, whether it finishes by itself (see ``init(_:order:finished:passThrough:)``); nil
        /// when every node is finished by the caller.
        private let passThrough: [Bool]?

        /// Whether `node` has no unfinished dependency.
        func isReady(_ node: Int) -> Bool { waiting[node] == 0 }

        /// Marks `node` finished and appends to `ready` each dependent it was the last unfinished
        /// dependency of (in ascending order) that `isWanted` accepts.
        mutating func finish(
            _ node: Int,
            appendingReadyTo ready: inout [Int],
            where isWanted: (Int) -> Bool = { _ in true }
        ) {
            let dependents = self.dependents
            guard let passThrough else {
                // One uniqueness check per node, not one per edge.
                waiting.withUnsafeMutableBufferPointer { waiting in
                    dependents.forEach(of: node) { dependent in
                        waiting[dependent] -= 1
                        if waiting[dependent] == 0 && isWanted(dependent) { ready.append(dependent) }
                    }
                }
                return
            }
            // A node that finishes by itself passes its finish on to its own dependents.
            var finished = [node]
            waiting.withUnsafeMutableBufferPointer { waiting in
                while let next = finished.popLast() {
                    dependents.forEach(of: next) { dependent in
                        waiting[dependent] -= 1
                        guard waiting[dependent] == 0 else { return }
                        if passThrough[dependent] {
                            finished.append(dependent)
                        } else if isWanted(dependent) {
                            ready.append(dependent)
                        }
                    }
                }
            }
        }
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

        /// Numbers `node`, and puts it on the stack and the work list.
        func visit(_ node: Int) {
            index[node] = counter
            lowLink[node] = counter
            counter += 1
            stack.append(node)
            onStack[node] = true
            work.append((node, 0))
        }

        for root in 0..<count where index[root] == -1 {
            visit(root)
            while let (node, edge) = work.last {
                let targets = edges.dependencies(of: node)
                if edge < targets.count {
                    work[work.count - 1].edge += 1
                    let next = targets[targets.startIndex + edge]
                    if next < 0 { continue }
                    if index[next] == -1 {
                        visit(next)
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
        let dependents = edges.dependents
        while let node = stack.popLast() {
            dependents.forEach(of: node) { dependent in
                guard !seen[dependent] else { return }
                seen[dependent] = true
                reached.append(dependent)
                stack.append(dependent)
            }
        }
        return reached
    }
}
