/// The instances whose lifecycle hooks a graph runs, so that each instance gets `didAdd` and
/// `willRemove` once, whichever keys expose it (an alias provided as `{ $0 }`, a test double behind
/// the key it replaces, a scoped service handing out a singleton).
///
/// An instance is identified by its object identity, so only class instances can be recognized; a
/// value adopting ``LifecycleHooks`` is a new instance each time it is made. A child graph also
/// consults its ancestors: it never runs the hooks of an instance its parent already runs. A claim is
/// given back after the instance's `willRemove`, before the graph lets go of it, so an address can
/// never be reused while it is claimed.
final class HookClaims: Sendable {
    private let claimed = Locked<Set<ObjectIdentifier>>([])
    private let parent: HookClaims?

    init(parent: HookClaims?) {
        self.parent = parent
    }

    /// Claims `hooks` for this graph; false when this graph or an ancestor already runs its hooks.
    func claim(_ hooks: InstanceHooks) -> Bool {
        guard let identity = hooks.identity else { return true }
        var ancestor = parent
        while let claims = ancestor {
            if claims.claimed.withLock({ $0.contains(identity) }) { return false }
            ancestor = claims.parent
        }
        return claimed.withLock { $0.insert(identity).inserted }
    }

    /// Gives back the claim on `hooks` once its `willRemove` ran (or its `didAdd` failed).
    func giveBack(_ hooks: InstanceHooks) {
        guard let identity = hooks.identity else { return }
        _ = claimed.withLock { $0.remove(identity) }
    }
}
