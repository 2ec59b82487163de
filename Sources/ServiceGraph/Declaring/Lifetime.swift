/// How long an instance made by a provider lives, and who owns it.
public enum Lifetime: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// One instance per graph, created eagerly by ``ServiceGraph/Builder/build()`` in dependency order
    /// and released by ``ServiceGraph/shutdown()``.
    case singleton
    /// One instance per ``ServiceScope``, created on first use and released when the scope closes.
    case scoped
    /// A new instance on every resolve. The graph does not own transient instances and runs no
    /// lifecycle hooks on them.
    case transient

    public var description: String {
        switch self {
        case .singleton: "singleton"
        case .scoped: "scoped"
        case .transient: "transient"
        }
    }

    /// Whether a service of this lifetime may depend on a service of `dependency`'s lifetime.
    ///
    /// A singleton lives as long as the graph, so it may hold only singletons: a scoped or transient
    /// service held by it would be captive. A scoped service owns what it makes in its scope, and a
    /// transient one is not shared, so either may hold any lifetime (a scoped service holding a
    /// transient gets its own instance, released with the scope).
    func mayDepend(on dependency: Lifetime) -> Bool {
        self != .singleton || dependency == .singleton
    }

    /// Whether a service of this lifetime may depend on one of `dependency`'s through an edge of
    /// `kind`: a provider holds no instance, so a singleton may hold one of a transient (it makes a new
    /// instance each call), though not of a scoped service, which belongs to one scope.
    func mayDepend(on dependency: Lifetime, through kind: _DependencyKind) -> Bool {
        kind == .provider ? self != .singleton || dependency != .scoped : mayDepend(on: dependency)
    }
}
