/// A created instance's lifecycle hooks, found when the instance is made, with the
/// identity the graph's ``HookClaims`` know it by, worked out once rather than at each claim and
/// give-back.
///
/// A class, so that the records that carry one (a scope's created instances and seeds, the build's
/// started services) copy a reference, not an existential through its witnesses: only the few
/// instances with hooks pay for its allocation.
final class InstanceHooks: Sendable {
    let hooks: any LifecycleHooks
    /// The object identity of a class instance; nil for a value, which is a new instance each time it
    /// is made and so is never claimed.
    let identity: ObjectIdentifier?

    init(_ hooks: any LifecycleHooks) {
        self.hooks = hooks
        identity = type(of: hooks as Any) is AnyObject.Type ? ObjectIdentifier(hooks as AnyObject) : nil
    }
}

extension _AnyFactory {
    /// The hooks of the freshly made instance in `box`, if its type adopts ``LifecycleHooks``: a plain
    /// test every instance gets (``_AnyFactory/hasHooks(_:)``), then the cast for those that pass it.
    func instanceHooks(of box: _AnyBox, rememberedIn answer: _HookAnswer? = nil) -> InstanceHooks? {
        hooks(of: box, rememberedIn: answer).map(InstanceHooks.init)
    }

    /// Claims the hooks of the freshly made instance in `box`, made for the service at `slot`, in
    /// `claims`' graph; a singleton (`takingOver`) may take them over from the previous generation.
    func claimHooks(
        of box: _AnyBox,
        for slot: Int,
        in claims: HookClaims,
        takingOver: Bool = false,
        rememberedIn answer: _HookAnswer? = nil
    ) -> ClaimedHooks {
        // Tested before the hooks are found, which makes an optional existential: most instances have none.
        guard hasHooks(box, rememberedIn: answer), let hooks = instanceHooks(of: box, rememberedIn: answer) else {
            return .none
        }
        switch claims.claim(hooks, for: slot, takingOver: takingOver) {
        case .claimed: return .claimed(hooks)
        case .takenOver: return .takenOver(hooks)
        case .heldByAncestor: return .none
        case .held(let holder): return .held(by: holder)
        }
    }
}

/// The hooks of a freshly made instance, as its graph's ``HookClaims`` took them.
enum ClaimedHooks {
    /// It has none, or an ancestor graph runs them.
    case none
    /// This graph runs them, for this service.
    case claimed(InstanceHooks)
    /// This graph runs them from now on, for this service: the previous generation of a ``LiveGraph``
    /// started the instance, so its `didAdd` does not run again.
    case takenOver(InstanceHooks)
    /// This graph runs them for the service at `holder`.
    case held(by: Int)

    /// The hooks this service runs.
    var hooks: InstanceHooks? {
        switch self {
        case .claimed(let hooks), .takenOver(let hooks): hooks
        case .none, .held: nil
        }
    }

    /// The hooks whose `didAdd` this service runs.
    var hooksToStart: InstanceHooks? {
        guard case .claimed(let hooks) = self else { return nil }
        return hooks
    }
}
