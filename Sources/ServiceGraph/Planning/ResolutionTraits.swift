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
    /// A scoped service (not a seed) whose factory is synchronous and whose every dependency is read in
    /// place once its scope is open: a singleton the build creates, a seed of the service's own kind of
    /// scope, or a lazy or provider handle. Its first resolve in a scope makes it at once, with no check
    /// of its dependencies (a request scope's usual service); without the flag, the check is made then.
    static let makesInPlaceInScope: UInt8 = 16

    /// The flags of each service, by slot.
    let flags: [UInt8]

    /// Computes the traits of a valid plan (no missing edges, no cycles).
    init(_ plan: GraphPlan) {
        let lifetimes = plan.lifetimes
        let edges = plan.edges
        let edgeKinds = plan.edgeKinds
        let providers = plan.providers
        let deferred = plan.deferred
        let slotScopeKinds = plan.slotScopeKinds
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
                // Looked at for a scoped service only: the build of a large graph of singletons pays
                // nothing for it.
                let isScoped = lifetimes[slot] == .scoped
                var readsInPlace = isScoped
                let kind = isScoped ? slotScopeKinds?[slot] ?? 0 : 0
                var position = edges.firstEdge(of: slot)
                edges.forEachDependency(of: slot) { dependency in
                    defer { position &+= 1 }
                    needsScope |= flags[dependency] & Self.needsScope
                    // A provider or a lazy handle: taking it neither suspends nor makes anything.
                    if let edgeKinds, edgeKinds[position].isHandle { return }
                    fromDependencies &= flags[dependency]
                    guard readsInPlace else { return }
                    switch lifetimes[dependency] {
                    case .singleton: if deferred?[dependency] == true { readsInPlace = false }
                    case .scoped:
                        if !providers[dependency].isSeed || slotScopeKinds?[dependency] ?? 0 != kind {
                            readsInPlace = false
                        }
                    case .transient: readsInPlace = false
                    }
                }
                let own: UInt8
                switch lifetimes[slot] {
                case .singleton:
                    own =
                        deferred?[slot] == true
                        ? Self.isDeferred : Self.resolvesSynchronously | Self.resolvesSynchronouslyInScope
                case .scoped:
                    if providers[slot].isSeed {
                        own = Self.needsScope | Self.resolvesSynchronouslyInScope
                    } else {
                        let makesInPlace = readsInPlace && providers[slot].factory.isSynchronous
                        own = Self.needsScope | (makesInPlace ? Self.makesInPlaceInScope : 0)
                    }
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
