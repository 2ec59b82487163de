/// What a built graph remembers about one service for errors and dumps, kept small: a graph of
/// 100,000 services holds 100,000 of these.
struct ServiceRecord: Sendable {
    let key: any ServiceKey.Type
    let line: UInt32
    /// Index into the graph's table of distinct file names.
    let fileIndex: UInt32
    let lifetime: Lifetime
    let isOverride: Bool

    var name: String { key.serviceName }
}

/// Per-service facts the resolve path needs, derived from lifetimes and factories in dependency order.
struct ResolutionTraits {
    /// Whether resolving needs no suspension: a singleton, or a transient whose factory and
    /// dependencies are all synchronous and need no scope.
    var resolvesNow: [Bool]
    /// Whether resolving needs a ``ServiceScope``: scoped, or depending on a scoped service.
    var needsScope: [Bool]

    /// Computes the traits of a valid plan (no missing edges, no cycles).
    init(_ plan: GraphPlan) {
        resolvesNow = Array(repeating: false, count: plan.count)
        needsScope = Array(repeating: false, count: plan.count)
        for slot in Self.topologicalOrder(of: plan) {
            let provider = plan.providers[slot]
            let dependencies = plan.dependencies[slot]
            needsScope[slot] = provider.lifetime == .scoped || dependencies.contains { needsScope[$0] }
            switch provider.lifetime {
            case .singleton: resolvesNow[slot] = true
            case .scoped: resolvesNow[slot] = false
            case .transient:
                resolvesNow[slot] = provider.factory.isSynchronous && dependencies.allSatisfy { resolvesNow[$0] }
            }
        }
    }

    /// Dependencies before dependents (Kahn's algorithm), ties in slot order.
    static func topologicalOrder(of plan: GraphPlan) -> [Int] {
        var waiting = (0..<plan.count).map { plan.dependencies.degree(of: $0) }
        var order = (0..<plan.count).filter { waiting[$0] == 0 }
        order.reserveCapacity(plan.count)
        var head = 0
        while head < order.count {
            for dependent in plan.dependents[order[head]] {
                waiting[dependent] -= 1
                if waiting[dependent] == 0 { order.append(dependent) }
            }
            head += 1
        }
        return order
    }
}
