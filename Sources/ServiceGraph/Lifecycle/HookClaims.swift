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
///
/// A ``LiveGraph``'s next generation follows the current one's claims (``follow(_:)``): a singleton it
/// makes again that returns an instance the current generation started takes that instance's hooks
/// over, without running `didAdd` again, and the current generation then skips its `willRemove` when it
/// retires. Each instance gets each hook once, whichever generation runs it.
final class HookClaims: Sendable {
    private struct State {
        /// The claimed instances, each with the slot that claimed it: the slot itself, or its bitwise
        /// complement (negative) once the instance's `willRemove` has begun and it is no longer handed
        /// on. Marking the entry in place costs one lookup per release, where a set of releasing
        /// instances cost an insert and a remove for every hooked instance any scope released.
        var claimed: [ObjectIdentifier: Int] = [:]
        /// Instances the next generation took over, with the slot that claimed them here: their hooks
        /// are the next generation's to run.
        var handedOn: [ObjectIdentifier: Int] = [:]
        /// The previous generation's claims, until it has retired (its own previous ones, until they
        /// have retired, are reached through it).
        var previous: HookClaims?
        /// What this generation took over before it was committed, each from the generation that had
        /// it: handed back, not removed, if this generation is abandoned.
        var uncommitted: [ObjectIdentifier: HookClaims] = [:]
        /// Whether this generation was committed: what it takes over from then on is its own at once.
        var isCommitted = false
        /// Claimed instances that scopes hold as a caller's seed besides the claimer (``claimOrShare(_:for:)``),
        /// by how many: each give-back takes one share before the claim itself goes, so that the
        /// instance stays claimed while any of them is open.
        var shares: [ObjectIdentifier: Int] = [:]
    }

    private let state = Locked(State())
    private let parent: HookClaims?

    init(parent: HookClaims?) {
        self.parent = parent
    }

    /// What ``claim(_:for:takingOver:)`` found.
    enum Outcome {
        /// This graph runs the hooks, for the slot that claimed them.
        case claimed
        /// This graph runs the hooks from now on, for the slot that claimed them; the previous
        /// generation started the instance (its `didAdd` ran there).
        case takenOver
        /// An ancestor already runs them, or a generation of a ``LiveGraph`` before this one that has
        /// not retired (its own services or scopes).
        case heldByAncestor
        /// This graph already runs them, for the service at `holder`.
        case held(by: Int)
    }

    /// Claims `hooks` for this graph, for the service at `slot`; a value's hooks are always claimed.
    /// A singleton (`takingOver`) takes over the hooks of an instance the previous generation started;
    /// anything else (a scoped service, a seed a scope owns) finds such an instance held: a scope of the
    /// previous generation may still run its hooks, and one instance has one owner across generations.
    func claim(_ hooks: InstanceHooks, for slot: Int, takingOver: Bool = false) -> Outcome {
        guard let identity = hooks.identity else { return .claimed }
        if isHeldByAncestor(identity) { return .heldByAncestor }
        // Locks are taken newer generation first, the previous one's inside: never the other way.
        return state.withLock { state in
            if let holder = state.claimed[identity] { return .held(by: holder < 0 ? ~holder : holder) }
            guard takingOver else {
                if Self.olderGeneration(from: state.previous, where: { $0.holds(identity) }) != nil {
                    return .heldByAncestor
                }
                state.claimed[identity] = slot
                return .claimed
            }
            state.claimed[identity] = slot
            // Any generation not yet retired may have started it, not only the one just before.
            guard let owner = Self.olderGeneration(from: state.previous, where: { $0.handOn(identity) }) else {
                return .claimed
            }
            if !state.isCommitted { state.uncommitted[identity] = owner }
            return .takenOver
        }
    }

    /// What ``claimOrShare(_:for:)`` did.
    enum Share {
        /// Claimed for the service at the slot.
        case claimed
        /// Claimed already (by another scope's seed or a service): shared until given back.
        case shared
        /// An ancestor runs the hooks: nothing to hold.
        case heldByAncestor
    }

    /// Claims `hooks` for a caller's seed of a scope, a seed the scope does not own: its claim only keeps
    /// the scope's services from running the instance's hooks. When the instance is claimed already,
    /// the scope shares that claim, which then stays until every sharer has given it back: a caller's
    /// instance seeded into two open scopes gets no hook when one of them closes.
    func claimOrShare(_ hooks: InstanceHooks, for slot: Int) -> Share {
        guard let identity = hooks.identity else { return .claimed }
        if isHeldByAncestor(identity) { return .heldByAncestor }
        return state.withLock { state in
            guard state.claimed[identity] != nil else {
                // A previous generation's scope or service runs its hooks: nothing to hold here.
                if Self.olderGeneration(from: state.previous, where: { $0.holds(identity) }) != nil {
                    return .heldByAncestor
                }
                state.claimed[identity] = slot
                return .claimed
            }
            state.shares[identity, default: 0] += 1
            return .shared
        }
    }

    /// The first of `previous` (a generation before this one that has not retired) and the generations
    /// before it, newest first, that `matches` accepts. Under the newer generation's lock: the older
    /// ones' locks are taken inside it, never the other way.
    private static func olderGeneration(
        from previous: HookClaims?,
        where matches: (HookClaims) -> Bool
    ) -> HookClaims? {
        var older = previous
        while let claims = older {
            if matches(claims) { return claims }
            older = claims.state.withLock { $0.previous }
        }
        return nil
    }

    /// Whether this generation runs the hooks of the instance `identity` (or has begun its `willRemove`).
    private func holds(_ identity: ObjectIdentifier) -> Bool {
        state.withLock { $0.claimed[identity] != nil }
    }

    /// Whether an ancestor graph runs the hooks of the instance `identity`.
    private func isHeldByAncestor(_ identity: ObjectIdentifier) -> Bool {
        var ancestor = parent
        while let claims = ancestor {
            if claims.state.withLock({ $0.claimed[identity] != nil }) { return true }
            ancestor = claims.parent
        }
        return false
    }

    /// Begins the release of `hooks`: false when `willRemove` is not this graph's to run, because the
    /// next generation took the instance over, or because this generation is abandoned and hands it
    /// back to the previous one, which keeps it.
    func beginRelease(_ hooks: InstanceHooks) -> Bool {
        guard let identity = hooks.identity else { return true }
        return state.withLock { state in
            if state.handedOn.removeValue(forKey: identity) != nil { return false }
            if let owner = state.uncommitted.removeValue(forKey: identity) {
                state.claimed[identity] = nil
                owner.handBack(identity)
                return false
            }
            if let index = state.claimed.index(forKey: identity), state.claimed.values[index] >= 0 {
                state.claimed.values[index] = ~state.claimed.values[index]
            }
            return true
        }
    }

    /// Gives back the claim on `hooks` once its `willRemove` ran (or its `didAdd` failed), or a share of
    /// it: the claim goes with the last.
    func giveBack(_ hooks: InstanceHooks) {
        guard let identity = hooks.identity else { return }
        state.withLock { state in
            if let shares = state.shares[identity] {
                state.shares[identity] = shares > 1 ? shares - 1 : nil
            } else {
                state.claimed[identity] = nil
            }
        }
    }

    /// Makes this graph, a ``LiveGraph``'s next generation, the heir of `previous`' claims, and of the
    /// claims of the generations before it that have not retired.
    func follow(_ previous: HookClaims) {
        state.withLock { $0.previous = previous }
    }

    /// The generation is committed: what it took over is its own for good.
    func commitTakeOvers() {
        state.withLock { state in
            state.uncommitted = [:]
            state.isCommitted = true
        }
    }

    /// The previous generation has retired: nothing more to take over from it. (The generations
    /// before it retired first.)
    func forgetPrevious() {
        state.withLock { $0.previous = nil }
    }

    /// Hands the instance `identity` on to the next generation, if this one still runs its hooks and
    /// its `willRemove` has not begun.
    private func handOn(_ identity: ObjectIdentifier) -> Bool {
        state.withLock { state in
            guard let slot = state.claimed[identity], slot >= 0 else { return false }
            state.claimed[identity] = nil
            state.handedOn[identity] = slot
            return true
        }
    }

    /// Takes back an instance the next generation took over and then abandoned.
    private func handBack(_ identity: ObjectIdentifier) {
        state.withLock { state in
            guard let slot = state.handedOn.removeValue(forKey: identity) else { return }
            state.claimed[identity] = slot
        }
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
