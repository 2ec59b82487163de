/// The services being made in the current task, innermost first: how the graph notices a factory that
/// asks a graph or scope it captured for a service that is being made, directly or through others.
///
/// Declared dependencies cannot form a cycle (validation refuses them), so a trail entry is needed only
/// where a chain of factories starts: ``_GraphCore/value(at:as:in:)``, the entry point of `resolve`, pushes
/// an asynchronous transient (owned by its graph's core), and a scope's creation task pushes the scoped
/// instance it makes (owned by the scope). Synchronous chains keep their entries on the cheaper
/// ``_ThreadTrail``.
/// Dependencies reached through declared edges push nothing, so a service that a factory re-enters below a
/// declared dependency is caught one resolve later. A singleton pushes nothing: a built graph already
/// holds every one.
///
/// The trail is a task-local: `Task {}` inherits it, so a scope's creation task sees the trail of the task
/// that asked for the instance.
@usableFromInline
struct _ResolutionTrail: Sendable {
    /// The trail of the current task; nil outside any factory chain.
    @usableFromInline
    static let current = TaskLocal<_ResolutionTrail?>(wrappedValue: nil)

    /// The graph core (for a transient) or scope (for a scoped instance) making the service.
    let owner: ObjectIdentifier
    let slot: Int
    /// For a transient resolved in a scope: that scope, which must not close while the task makes it.
    let scope: ObjectIdentifier?
    /// The rest of the trail, boxed: allocated only when a chain starts inside another.
    let outer: Outer?

    /// A boxed trail, so that a trail holds the one around it.
    final class Outer: Sendable {
        let trail: _ResolutionTrail

        init(_ trail: _ResolutionTrail) {
            self.trail = trail
        }
    }

    private init(owner: ObjectIdentifier, slot: Int, scope: ObjectIdentifier? = nil, outer: _ResolutionTrail?) {
        self.owner = owner
        self.slot = slot
        self.scope = scope
        self.outer = outer.map(Outer.init)
    }

    /// The trail of the current task with `slot` of `owner` pushed on it, for the task that makes it.
    init(making slot: Int, of owner: AnyObject) {
        self.init(owner: ObjectIdentifier(owner), slot: slot, outer: Self.current.get())
    }

    /// The trail of the current task with `slot` of `owner` pushed on it, or nil when the current task
    /// is already making `slot` of `owner`.
    ///
    /// - Complexity: O(1) outside any chain; O(*n*) in the number of chains the current task is inside
    ///   of (chains started by factories through captured graphs or scopes).
    static func entering(_ slot: Int, of owner: AnyObject, in scope: AnyObject? = nil) -> _ResolutionTrail? {
        let owner = ObjectIdentifier(owner)
        let current = current.get()
        if let current, current.contains(slot, of: owner) { return nil }
        return _ResolutionTrail(owner: owner, slot: slot, scope: scope.map(ObjectIdentifier.init), outer: current)
    }

    /// Whether the current task is making `slot` of `owner`.
    ///
    /// - Complexity: O(*n*) in the number of chains the current task is inside of.
    static func isMaking(_ slot: Int, of owner: AnyObject) -> Bool {
        current.get()?.contains(slot, of: ObjectIdentifier(owner)) ?? false
    }

    /// The slot of the innermost service the current task is making for `scope`: one of its instances,
    /// or a transient resolved in it; nil when it makes none.
    ///
    /// - Complexity: O(*n*) in the number of chains the current task is inside of.
    static func slotMaking(in scope: AnyObject) -> Int? {
        let scope = ObjectIdentifier(scope)
        var entry = current.get()
        while let found = entry {
            if found.owner == scope || found.scope == scope { return found.slot }
            entry = found.outer?.trail
        }
        return nil
    }

    private func contains(_ slot: Int, of owner: ObjectIdentifier) -> Bool {
        var entry = self
        while entry.slot != slot || entry.owner != owner {
            guard let outer = entry.outer else { return false }
            entry = outer.trail
        }
        return true
    }
}
