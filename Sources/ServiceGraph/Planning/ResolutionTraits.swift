/// Per-service facts the resolve path needs, derived from lifetimes and factories in dependency order,
/// one byte of flags per service (what the core keeps: ``_GraphCore/_Buffers/resolutionFlags``).
struct ResolutionTraits {
    /// Resolving needs no suspension: a singleton, or a transient whose factory and dependencies are
    /// all synchronous and need no scope.
    static let resolvesSynchronously: UInt8 = 1
    /// Resolving from a scope needs no suspension: as ``resolvesSynchronously``, where a seed (always in
    /// place in a scope) counts as a singleton does.
    static let resolvesSynchronouslyInScope: UInt8 = 2
    /// Resolving needs a ``ServiceScope``: scoped, or depending on a scoped service.
    static let needsScope: UInt8 = 4
    /// A singleton the build leaves to its first use (``GraphPlan/deferred``): never resolved without
    /// suspending, as its creation may suspend.
    static let isDeferred: UInt8 = 8

    /// The flags of each service, by slot.
    let flags: [UInt8]

    /// Computes the traits of a valid plan (no missing edges, no cycles).
    init(_ plan: GraphPlan) {
        let lifetimes = plan.lifetimes
        let edges = plan.edges
        let edgeKinds = plan.edgeKinds
        let providers = plan.providers
        let deferred = plan.deferred
        // An empty graph has no flags: an array made with no capacity this way writes its count into
        // the shared empty-array storage, a data race with every reader of an empty array.
        guard plan.count > 0 else {
            flags = []
            return
        }
        // One pass in dependency order over a raw buffer: no uniqueness check per write.
        flags = [UInt8](unsafeUninitializedCapacity: plan.count) { flags, initialized in
            flags.initialize(repeating: 0)
            initialized = plan.count
            for slot in plan.order {
                // Start from "every dependency resolves synchronously, on both paths, and needs no scope".
                var fromDependencies = Self.resolvesSynchronously | Self.resolvesSynchronouslyInScope
                var needsScope: UInt8 = 0
                var position = edges.firstEdge(of: slot)
                edges.forEachDependency(of: slot) { dependency in
                    defer { position &+= 1 }
                    needsScope |= flags[dependency] & Self.needsScope
                    // A provider or a lazy handle: taking it neither suspends nor makes anything.
                    if let edgeKinds, edgeKinds[position].isHandle { return }
                    fromDependencies &= flags[dependency]
                }
                let own: UInt8
                switch lifetimes[slot] {
                case .singleton:
                    own =
                        deferred?[slot] == true
                        ? Self.isDeferred : Self.resolvesSynchronously | Self.resolvesSynchronouslyInScope
                case .scoped:
                    own = Self.needsScope | (providers[slot].isSeed ? Self.resolvesSynchronouslyInScope : 0)
                case .transient:
                    own =
                        providers[slot].factory.isSynchronous
                        ? fromDependencies & (Self.resolvesSynchronously | Self.resolvesSynchronouslyInScope) : 0
                }
                flags[slot] = own | needsScope
            }
        }
    }
}
