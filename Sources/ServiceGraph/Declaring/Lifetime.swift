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

    /// Longer-lived lifetimes rank higher; a service may only depend on services of equal or higher rank.
    var rank: Int {
        switch self {
        case .singleton: 2
        case .scoped: 1
        case .transient: 0
        }
    }
}
