extension GraphPlan {
    /// The singletons the build leaves to their first use (see ``deferred``): those that something depends on, but only
    /// through lazy edges (``Lazy``) or through direct edges from other such singletons. A singleton
    /// nothing depends on is a root the application asks for, and is built; so is one a transient or
    /// scoped service, a provider, or a built singleton needs directly. A child graph's view of a
    /// parent's singleton the parent creates on first use is created on first use unless needed.
    ///
    /// One pass over `order` reversed (dependents before their dependencies), so each dependent's own
    /// status is known when its edges are looked at.
    static func deferredSingletons(
        of providers: RegistrationList,
        lifetimes: [Lifetime],
        edges: Edges,
        edgeKinds: [_DependencyKind]?,
        order: [Int]
    ) -> [Bool] {
        var deferred = [Bool](repeating: false, count: lifetimes.count)
        var isReached = [Bool](repeating: false, count: lifetimes.count)
        var isNeeded = [Bool](repeating: false, count: lifetimes.count)
        for slot in order.reversed() {
            deferred[slot] =
                lifetimes[slot] == .singleton && !isNeeded[slot]
                && (isReached[slot] || providers[slot].isCreatedOnFirstUse)
            var position = edges.firstEdge(of: slot)
            edges.forEachDependency(of: slot) { dependency in
                defer { position &+= 1 }
                guard dependency >= 0 else { return }
                isReached[dependency] = true
                if edgeKinds?[position] != .lazy && !deferred[slot] { isNeeded[dependency] = true }
            }
        }
        return deferred
    }
}
