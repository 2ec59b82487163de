/// Per-service facts the resolve path needs, derived from lifetimes and factories in dependency order.
struct ResolutionTraits {
    /// Whether resolving needs no suspension: a singleton, or a transient whose factory and
    /// dependencies are all synchronous and need no scope.
    var resolvesSynchronously: [Bool]
    /// Whether resolving needs a ``ServiceScope``: scoped, or depending on a scoped service.
    var needsScope: [Bool]
    /// Whether resolving from a scope needs no suspension: as ``resolvesSynchronously``, where a seed
    /// (always in place in a scope) counts as a singleton does.
    var resolvesSynchronouslyInScope: [Bool]

    /// Computes the traits of a valid plan (no missing edges, no cycles).
    init(_ plan: GraphPlan) {
        resolvesSynchronously = Array(repeating: false, count: plan.count)
        needsScope = Array(repeating: false, count: plan.count)
        resolvesSynchronouslyInScope = Array(repeating: false, count: plan.count)
        let lifetimes = plan.lifetimes
        let edges = plan.edges
        let edgeKinds = plan.edgeKinds
        // Index loops over the flat edges: one pass per service, no slice or closure per service.
        for slot in plan.order {
            let lifetime = lifetimes[slot]
            var dependsOnScope = false
            var dependenciesResolveSynchronously = true
            var dependenciesResolveSynchronouslyInScope = true
            var position = edges.firstEdge(of: slot)
            edges.forEachDependency(of: slot) { dependency in
                defer { position += 1 }
                dependsOnScope = dependsOnScope || needsScope[dependency]
                // A provider is a handle: taking it neither suspends nor makes anything.
                if edgeKinds?[position] == .provider { return }
                dependenciesResolveSynchronously = dependenciesResolveSynchronously && resolvesSynchronously[dependency]
                dependenciesResolveSynchronouslyInScope =
                    dependenciesResolveSynchronouslyInScope && resolvesSynchronouslyInScope[dependency]
            }
            needsScope[slot] = lifetime == .scoped || dependsOnScope
            switch lifetime {
            case .singleton:
                resolvesSynchronously[slot] = true
                resolvesSynchronouslyInScope[slot] = true
            case .scoped:
                resolvesSynchronously[slot] = false
                resolvesSynchronouslyInScope[slot] = plan.providers[slot].isSeed
            case .transient:
                let isSynchronous = plan.providers[slot].factory.isSynchronous
                resolvesSynchronously[slot] = dependenciesResolveSynchronously && isSynchronous
                resolvesSynchronouslyInScope[slot] = dependenciesResolveSynchronouslyInScope && isSynchronous
            }
        }
    }
}
