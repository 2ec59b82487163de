import ServiceGraph

enum LoggerKey: ServiceKey { typealias Value = any Logging }
enum ClockKey: ServiceKey { typealias Value = Clock }
enum StoreKey: ServiceKey { typealias Value = Store }
enum HandlerKey: ServiceKey { typealias Value = Handler }
enum SessionKey: ServiceKey { typealias Value = Session }
enum Link0: ServiceKey { typealias Value = Link }
enum Link1: ServiceKey { typealias Value = Link }
enum Link2: ServiceKey { typealias Value = Link }
enum Link3: ServiceKey { typealias Value = Link }
enum Link4: ServiceKey { typealias Value = Link }
enum Link5: ServiceKey { typealias Value = Link }
enum Link6: ServiceKey { typealias Value = Link }
enum Link7: ServiceKey { typealias Value = Link }
enum Link8: ServiceKey { typealias Value = Link }
enum Link9: ServiceKey { typealias Value = Link }

/// ServiceGraph wiring the same shapes.
enum ServiceGraphContender {
    static func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(LoggerKey.self) { Logger() }
        builder.provide(ClockKey.self) { Clock() }
        builder.provide(StoreKey.self) { Store() }
        builder.provide(HandlerKey.self, lifetime: .transient, dependsOn: LoggerKey.self, ClockKey.self, StoreKey.self)
        {
            Handler(logger: $0, clock: $1, store: $2)
        }
        builder.provide(SessionKey.self, lifetime: .scoped, dependsOn: LoggerKey.self) { Session(logger: $0) }
        builder.provide(Link0.self, lifetime: .transient, dependsOn: StoreKey.self) { Link(store: $0) }
        builder.provide(Link1.self, lifetime: .transient, dependsOn: Link0.self) { Link(previous: $0) }
        builder.provide(Link2.self, lifetime: .transient, dependsOn: Link1.self) { Link(previous: $0) }
        builder.provide(Link3.self, lifetime: .transient, dependsOn: Link2.self) { Link(previous: $0) }
        builder.provide(Link4.self, lifetime: .transient, dependsOn: Link3.self) { Link(previous: $0) }
        builder.provide(Link5.self, lifetime: .transient, dependsOn: Link4.self) { Link(previous: $0) }
        builder.provide(Link6.self, lifetime: .transient, dependsOn: Link5.self) { Link(previous: $0) }
        builder.provide(Link7.self, lifetime: .transient, dependsOn: Link6.self) { Link(previous: $0) }
        builder.provide(Link8.self, lifetime: .transient, dependsOn: Link7.self) { Link(previous: $0) }
        builder.provide(Link9.self, lifetime: .transient, dependsOn: Link8.self) { Link(previous: $0) }
        return builder
    }
}

// Generated graphs need one key type per service: key `n` spells `n` in binary as nested generic
// types (`Bit1<Bit0<Bit1<Root>>>` is 5), so 2^20 distinct keys need nesting only 20 deep.

protocol NodeKey: ServiceKey where Value == GraphNode {}
enum NodeRoot: NodeKey { typealias Value = GraphNode }
enum Bit0<Inner: NodeKey>: NodeKey { typealias Value = GraphNode }
enum Bit1<Inner: NodeKey>: NodeKey { typealias Value = GraphNode }

extension NodeKey {
    static var appendingZero: any NodeKey.Type { Bit0<Self>.self }
    static var appendingOne: any NodeKey.Type { Bit1<Self>.self }
}

enum GeneratedGraph {
    /// The key types of a graph of `count` services (made once, outside the timing: in an
    /// application the keys are static types).
    static func keys(count: Int) -> [any NodeKey.Type] {
        (0..<count).map { index in
            var key: any NodeKey.Type = NodeRoot.self
            for bit in 0..<20 {
                key = (index >> bit) & 1 == 0 ? key.appendingZero : key.appendingOne
            }
            return key
        }
    }

    /// A builder providing every generated service as a singleton.
    static func builder(keys: [any NodeKey.Type]) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in keys.indices {
            let dependencies = generatedDependencies(of: index).map { keys[$0] }
            provide(keys[index], dependencies, into: &builder)
        }
        return builder
    }

    private static func provide(
        _ key: any NodeKey.Type,
        _ dependencies: [any NodeKey.Type],
        into builder: inout ServiceGraph.Builder
    ) {
        func open<K: NodeKey>(_ key: K.Type) {
            switch dependencies.count {
            case 0: builder.provide(key) { GraphNode([]) }
            case 1: one(key, dependencies[0])
            case 2: two(key, dependencies[0], dependencies[1])
            default: three(key, dependencies[0], dependencies[1], dependencies[2])
            }
        }
        func one<K: NodeKey, A: NodeKey>(_ key: K.Type, _ a: A.Type) {
            builder.provide(key, dependsOn: a) { GraphNode([$0]) }
        }
        func two<K: NodeKey, A: NodeKey, B: NodeKey>(_ key: K.Type, _ a: A.Type, _ b: B.Type) {
            builder.provide(key, dependsOn: a, b) { GraphNode([$0, $1]) }
        }
        func three<K: NodeKey, A: NodeKey, B: NodeKey, C: NodeKey>(_ key: K.Type, _ a: A.Type, _ b: B.Type, _ c: C.Type)
        {
            builder.provide(key, dependsOn: a, b, c) { GraphNode([$0, $1, $2]) }
        }
        open(key)
    }
}

extension GeneratedGraph {
    /// `layers` layers of `width` services; each waits `delay` in its factory and depends on two
    /// services of the layer below. The critical path is `layers * delay`.
    static func startupBuilder(
        keys: [any NodeKey.Type],
        layers: Int,
        width: Int,
        delay: Duration
    )
        -> ServiceGraph.Builder
    {
        var builder = ServiceGraph.Builder()
        func open<K: NodeKey>(_ key: K.Type, _ below: [any NodeKey.Type]) {
            if below.isEmpty {
                builder.provide(key) {
                    try await Task.sleep(for: delay)
                    return GraphNode([])
                }
            } else {
                pair(key, below[0], below[1])
            }
        }
        func pair<K: NodeKey, A: NodeKey, B: NodeKey>(_ key: K.Type, _ a: A.Type, _ b: B.Type) {
            builder.provide(key, dependsOn: a, b) {
                try await Task.sleep(for: delay)
                return GraphNode([$0, $1])
            }
        }
        for layer in 0..<layers {
            for index in 0..<width {
                let below =
                    layer == 0
                    ? [] : [keys[(layer - 1) * width + index], keys[(layer - 1) * width + (index + 1) % width]]
                let key = keys[layer * width + index]
                open(key, below)
            }
        }
        return builder
    }
}
