/// A kind of ``ServiceScope``: one level of nested scopes, such as a user's session and the requests
/// served inside it.
///
/// Kinds are names with a place in a tree: a kind declared `inside` another is opened from a scope of
/// that kind (``ServiceScope/makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``), and its scopes read the outer
/// scope's services and seeds; a kind with no parent is opened from the graph. Scoped services and
/// seeds registered in ``ServiceGraph/Builder/inScope(_:_:)`` belong to that kind, the others to
/// ``default``.
///
/// ```swift
/// extension ScopeKind {
///     static let session = ScopeKind("session")
///     static let request = ScopeKind("request", inside: .session)
/// }
/// ```
public struct ScopeKind: Hashable, Sendable, CustomStringConvertible {
    /// The hash of ``names``, first so that the synthesized `==` compares it first: opening a scope
    /// finds its kind among the graph's by `==`, and kinds with different names then differ by one
    /// integer comparison, not by comparing their strings.
    private let fingerprint: Int
    /// The kind's name, then its parents' names, innermost first.
    let names: [String]

    /// A kind named `name`, opened from scopes of `parent`, or from the graph when `parent` is nil.
    public init(_ name: String, inside parent: ScopeKind? = nil) {
        self.init(names: [name] + (parent?.names ?? []))
    }

    /// The kind of the scoped services and seeds registered outside ``ServiceGraph/Builder/inScope(_:_:)``,
    /// and of ``ServiceGraph/makeScope()``'s scopes.
    public static let `default` = ScopeKind(names: [defaultToken])

    /// The default kind's stored name: one no `ScopeKind("...")` written in code spells by accident, so
    /// that a kind an application names "scope" is not the default.
    private static let defaultToken = "\u{0}scope"

    /// The kind's name ("scope" for the default).
    public var name: String { Self.display(names[0]) }

    /// The kind whose scopes open scopes of this one; nil for a kind the graph opens.
    public var parent: ScopeKind? {
        names.count > 1 ? ScopeKind(names: Array(names.dropFirst())) : nil
    }

    /// The name, with its parents' before it for a nested kind: `session/request`.
    public var description: String { names.reversed().map(Self.display).joined(separator: "/") }

    private static func display(_ name: String) -> String {
        name == defaultToken ? "scope" : name
    }

    private init(names: [String]) {
        self.fingerprint = names.hashValue
        self.names = names
    }

    /// Whether this is the very value `other` is, or a copy of it: its names in the same storage (a
    /// `static let` the builder was given too). No names compared: false says nothing.
    @inline(__always)
    func isCopy(of other: ScopeKind) -> Bool {
        fingerprint == other.fingerprint
            && names.withUnsafeBufferPointer { own in
                other.names.withUnsafeBufferPointer { $0.baseAddress == own.baseAddress }
            }
    }

    /// Whether scopes of this kind are opened from the graph: it is declared without a parent.
    var isOpenedFromGraph: Bool { names.count == 1 }

    /// Whether this is `other`, as `==` says: when both are the same declaration's value (the usual
    /// case, a `static let` the builder was given too), without comparing the names' strings.
    func isSame(as other: ScopeKind) -> Bool {
        isCopy(of: other) || (fingerprint == other.fingerprint && names == other.names)
    }

    /// Whether scopes of this kind are opened from scopes of `outer`, or from the graph when `outer` is
    /// nil: ``parent`` `== outer`, without making the parent (checked on every scope opened).
    func isOpened(from outer: ScopeKind?) -> Bool {
        guard let outer else { return isOpenedFromGraph }
        return names.count == outer.names.count + 1 && names.dropFirst().elementsEqual(outer.names)
    }

    /// Whether scopes of this kind are this kind or inside scopes of `outer` (at any depth).
    func isWithin(_ outer: ScopeKind) -> Bool {
        names.count >= outer.names.count && names.suffix(outer.names.count).elementsEqual(outer.names)
    }
}
