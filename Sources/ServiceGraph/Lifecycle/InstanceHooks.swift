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
    func instanceHooks(of box: _AnyBox) -> InstanceHooks? {
        hooks(of: box).map(InstanceHooks.init)
    }

    /// The hooks of the freshly made instance in `box` that `claims`' graph must run: nil when it has
    /// none, or when that graph or an ancestor already runs them.
    func claimedHooks(of box: _AnyBox, in claims: HookClaims) -> InstanceHooks? {
        guard let hooks = instanceHooks(of: box), claims.claim(hooks) else { return nil }
        return hooks
    }
}
