/// Per-service facts the resolve path needs, derived from lifetimes and factories in dependency order.
struct ResolutionTraits {
    /// Whether resolving needs no suspension: a singleton, or a transient whose factory and
    /// dependencies are all synchronous and need no scope.
    var resolvesSynchronously: [Bool]
    /// Whether resolving needs a ``ServiceScope``: scoped, or depending on a scoped service.
    var needsScope: [Bool]

    /// Computes the traits of a valid plan (no missing edges, no cycles).
    init(_ plan: GraphPlan) {
        resolvesSynchronously = Array(repeating: false, count: plan.count)
        needsScope = Array(repeating: false, count: plan.count)
        for slot in plan.order {
            let lifetime = plan.lifetimes[slot]
            let dependencies = plan.edges.dependencies(of: slot)
            needsScope[slot] = lifetime == .scoped || dependencies.contains { needsScope[$0] }
            switch lifetime {
            case .singleton: resolvesSynchronously[slot] = true
            case .scoped: resolvesSynchronously[slot] = false
            case .transient:
                resolvesSynchronously[slot] =
                    plan.providers[slot].factory.isSynchronous
                    && dependencies.allSatisfy { resolvesSynchronously[$0] }
            }
        }
    }
}
