/// The instances whose lifecycle hooks a graph runs, so that each instance gets `didAdd` and
/// `willRemove` once, whichever keys expose it (an alias provided as `{ $0 }`, a test double behind
/// the key it replaces, a scoped service handing out a singleton).
///
/// An instance is identified by its object identity, so only class instances can be recognized; a
/// value adopting ``LifecycleHooks`` is a new instance each time it is made. A child graph also
/// consults its ancestors: it never runs the hooks of an instance its parent already runs. A claim is
/// given back after the instance's `willRemove`, before the graph lets go of it, so an address can
/// never be reused while it is claimed.
///
/// Each claim keeps the slot of the service that made it (the instance's holder), so that another
/// service of the same graph handing out the instance learns which one runs its hooks: its
/// dependents are then started after, and removed before, the instance (``HookAlias``).
final class HookClaims: Sendable {
    /// The claimed instances, each with the slot that claimed it.
    private let claimed = Locked<[ObjectIdentifier: Int]>([:])
    private let parent: HookClaims?

    init(parent: HookClaims?) {
        self.parent = parent
    }

    /// What ``claim(_:for:)`` found.
    enum Outcome {
        /// This graph runs the hooks, for the slot that claimed them.
        case claimed
        /// An ancestor already runs them.
        case heldByAncestor
        /// This graph already runs them, for the service at `holder`.
        case held(by: Int)
    }

    /// Claims `hooks` for this graph, for the service at `slot`; a value's hooks are always claimed.
    func claim(_ hooks: InstanceHooks, for slot: Int) -> Outcome {
        guard let identity = hooks.identity else { return .claimed }
        var ancestor = parent
        while let claims = ancestor {
            if claims.claimed.withLock({ $0[identity] != nil }) { return .heldByAncestor }
            ancestor = claims.parent
        }
        return claimed.withLock { claimed in
            if let holder = claimed[identity] { return .held(by: holder) }
            claimed[identity] = slot
            return .claimed
        }
    }

    /// Gives back the claim on `hooks` once its `willRemove` ran (or its `didAdd` failed).
    func giveBack(_ hooks: InstanceHooks) {
        guard let identity = hooks.identity else { return }
        _ = claimed.withLock { $0.removeValue(forKey: identity) }
    }
}

/// A singleton that hands out an instance whose hooks another singleton of the same graph runs (its
/// holder): the instance is started after, and removed before, what either depends on, and removed
/// after what depends on either (``Lifecycle/startOrder(of:and:aliases:in:)``).
struct HookAlias: Sendable {
    let slot: Int
    let holder: Int

    /// The singleton at `slot`, handing out the instance whose hooks the service at `holder` runs; nil
    /// where that adds nothing to the order: a holder that is not a singleton (a scope's), or an alias
    /// that depends on its holder and nothing else (`{ $0 }`, already after it).
    init?(_ slot: Int, heldBy holder: Int, in core: _GraphCore) {
        guard core.lifetime(of: holder) == .singleton else { return nil }
        let dependencies = core.dependencies(of: slot)
        if dependencies.count == 1 && dependencies.first == holder { return nil }
        self.slot = slot
        self.holder = holder
    }
}
