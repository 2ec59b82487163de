/// A validated service: its provider, its dependencies as slots, and what its lifetime chain allows.
struct Node: Sendable {
    let provider: Registration
    let lifetime: Lifetime
    let dependencies: [Int]
    let factory: AnyFactory
    /// Whether resolving it never needs to suspend: a singleton, or a transient whose factory and
    /// dependencies are all synchronous and need no scope.
    let resolvesNow: Bool
    /// Whether resolving it needs a ``ServiceScope``: it is scoped, or depends on a scoped service.
    let needsScope: Bool

    var name: String { provider.name }

    /// Makes the nodes of a valid plan (no missing edges, no cycles).
    static func nodes(of plan: GraphPlan) -> [Node] {
        let order = topologicalOrder(of: plan)
        var resolvesNow = Array(repeating: false, count: plan.count)
        var needsScope = Array(repeating: false, count: plan.count)
        for slot in order {
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
        return plan.providers.indices.map { slot in
            let provider = plan.providers[slot]
            return Node(
                provider: provider,
                lifetime: provider.lifetime,
                dependencies: plan.dependencies[slot],
                factory: provider.factory,
                resolvesNow: resolvesNow[slot],
                needsScope: needsScope[slot]
            )
        }
    }

    /// Dependencies before dependents (Kahn's algorithm), ties in slot order.
    static func topologicalOrder(of plan: GraphPlan) -> [Int] {
        let dependents = plan.dependents()
        var waiting = plan.dependencies.map(\.count)
        var order = plan.providers.indices.filter { waiting[$0] == 0 }
        order.reserveCapacity(plan.count)
        var head = 0
        while head < order.count {
            for dependent in dependents[order[head]] {
                waiting[dependent] -= 1
                if waiting[dependent] == 0 { order.append(dependent) }
            }
            head += 1
        }
        return order
    }
}
