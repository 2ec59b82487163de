import ServiceGraph

// Graphs of 1,000 to 1,000,000 services with one key type each, made at run time the way the
// generated graphs make theirs (key `n` spells `n` in binary as nested generic types), wired as a
// random DAG or a chain, against a hand-wired build of the same graph.

protocol ScaleKey: ServiceKey where Value == ScaleNode {}
enum ScaleRoot: ScaleKey { typealias Value = ScaleNode }
enum ScaleBit0<Inner: ScaleKey>: ScaleKey { typealias Value = ScaleNode }
enum ScaleBit1<Inner: ScaleKey>: ScaleKey { typealias Value = ScaleNode }

extension ScaleKey {
    static var appendingZero: any ScaleKey.Type { ScaleBit0<Self>.self }
    static var appendingOne: any ScaleKey.Type { ScaleBit1<Self>.self }
}

/// A service of a scale graph: holds its (up to four) dependencies directly, so making one is one
/// allocation, for the graph's factories and the hand-wired build alike.
final class ScaleNode: Sendable {
    let first: ScaleNode?
    let second: ScaleNode?
    let third: ScaleNode?
    let fourth: ScaleNode?

    init(_ first: ScaleNode? = nil, _ second: ScaleNode? = nil, _ third: ScaleNode? = nil, _ fourth: ScaleNode? = nil) {
        self.first = first
        self.second = second
        self.third = third
        self.fourth = fourth
    }
}

/// The edges of a scale graph, in compressed rows: service `i` depends on
/// `targets[offsets[i]..<offsets[i + 1]]`, all earlier than `i`.
struct ScaleShape: Sendable {
    let name: String
    let offsets: [Int]
    let targets: [Int]

    var count: Int { offsets.count - 1 }

    func dependencies(of index: Int) -> ArraySlice<Int> {
        targets[offsets[index]..<offsets[index + 1]]
    }

    /// Service `i` depends on `k` distinct earlier services, `k` uniform in 0...4 (2 on average), each
    /// uniform among the earlier ones; SplitMix64 seeded with 42. The first 1,000 services are the
    /// graph `Scripts/generate_distinct_graph.py` writes.
    static func randomDAG(count: Int) -> ScaleShape {
        var generator = SplitMix64(state: 42)
        var offsets = [0]
        var targets: [Int] = []
        offsets.reserveCapacity(count + 1)
        targets.reserveCapacity(count * 2)
        for index in 0..<count {
            let wanted = min(Int(generator.next() % 5), index)
            let start = targets.count
            while targets.count - start < wanted {
                let candidate = Int(generator.next() % UInt64(index))
                if !targets[start...].contains(candidate) { targets.append(candidate) }
            }
            offsets.append(targets.count)
        }
        return ScaleShape(name: "random DAG", offsets: offsets, targets: targets)
    }

    /// Service `i` depends on service `i - 1`.
    static func chain(count: Int) -> ScaleShape {
        ScaleShape(name: "chain", offsets: [0] + Array(0..<count), targets: Array(0..<max(count - 1, 0)))
    }
}

struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum ScaleGraph {
    /// The key types of `count` services (made once, outside the timing: in an application the keys
    /// are static types).
    static func keys(count: Int) -> [any ScaleKey.Type] {
        (0..<count).map { index in
            var key: any ScaleKey.Type = ScaleRoot.self
            for bit in 0..<20 {
                key = (index >> bit) & 1 == 0 ? key.appendingZero : key.appendingOne
            }
            return key
        }
    }

    /// Declares every service of `shape` as a singleton.
    static func builder(_ shape: ScaleShape, keys: [any ScaleKey.Type]) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in 0..<shape.count {
            provide(keys[index], shape.dependencies(of: index), keys: keys, into: &builder)
        }
        return builder
    }

    static func provide(
        _ key: any ScaleKey.Type,
        _ dependencies: ArraySlice<Int>,
        keys: [any ScaleKey.Type],
        into builder: inout ServiceGraph.Builder
    ) {
        let start = dependencies.startIndex
        func dependency(_ offset: Int) -> any ScaleKey.Type { keys[dependencies[start + offset]] }
        func open<K: ScaleKey>(_ key: K.Type) {
            switch dependencies.count {
            case 0: builder.provide(key) { ScaleNode() }
            case 1:
                let a = dependency(0)
                one(key, a)
            case 2:
                let a = dependency(0)
                let b = dependency(1)
                two(key, a, b)
            case 3:
                let a = dependency(0)
                let b = dependency(1)
                let c = dependency(2)
                three(key, a, b, c)
            default:
                let a = dependency(0)
                let b = dependency(1)
                let c = dependency(2)
                let d = dependency(3)
                four(key, a, b, c, d)
            }
        }
        func one<K: ScaleKey, A: ScaleKey>(_ key: K.Type, _ a: A.Type) {
            builder.provide(key, dependsOn: a) { ScaleNode($0) }
        }
        func two<K: ScaleKey, A: ScaleKey, B: ScaleKey>(_ key: K.Type, _ a: A.Type, _ b: B.Type) {
            builder.provide(key, dependsOn: a, b) { ScaleNode($0, $1) }
        }
        func three<K: ScaleKey, A: ScaleKey, B: ScaleKey, C: ScaleKey>(
            _ key: K.Type,
            _ a: A.Type,
            _ b: B.Type,
            _ c: C.Type
        ) {
            builder.provide(key, dependsOn: a, b, c) { ScaleNode($0, $1, $2) }
        }
        func four<K: ScaleKey, A: ScaleKey, B: ScaleKey, C: ScaleKey, D: ScaleKey>(
            _ key: K.Type,
            _ a: A.Type,
            _ b: B.Type,
            _ c: C.Type,
            _ d: D.Type
        ) {
            builder.provide(key, dependsOn: a, b, c, d) { ScaleNode($0, $1, $2, $3) }
        }
        open(key)
    }

    /// The hand-wired build of `shape`: each service made from its dependencies, every instance kept.
    static func handWired(_ shape: ScaleShape) -> HandWiredNodes {
        var nodes: [ScaleNode] = []
        nodes.reserveCapacity(shape.count)
        shape.offsets.withUnsafeBufferPointer { offsets in
            shape.targets.withUnsafeBufferPointer { targets in
                for index in 0..<shape.count {
                    let start = offsets[index]
                    switch offsets[index + 1] - start {
                    case 0: nodes.append(ScaleNode())
                    case 1: nodes.append(ScaleNode(nodes[targets[start]]))
                    case 2: nodes.append(ScaleNode(nodes[targets[start]], nodes[targets[start + 1]]))
                    case 3:
                        nodes.append(
                            ScaleNode(nodes[targets[start]], nodes[targets[start + 1]], nodes[targets[start + 2]])
                        )
                    default:
                        nodes.append(
                            ScaleNode(
                                nodes[targets[start]],
                                nodes[targets[start + 1]],
                                nodes[targets[start + 2]],
                                nodes[targets[start + 3]]
                            )
                        )
                    }
                }
            }
        }
        return HandWiredNodes(nodes)
    }

    /// A hand-wired scale graph's services. Releases them newest first: dropping the array front to
    /// back would free a million-deep chain recursively and overflow the stack.
    final class HandWiredNodes {
        var nodes: [ScaleNode]

        init(_ nodes: [ScaleNode]) {
            self.nodes = nodes
        }

        deinit {
            while nodes.popLast() != nil {}
        }
    }
}
