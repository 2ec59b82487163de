/// How a provider depends on a key it lists in `dependsOn`.
///
/// Not API: the kinds of edge a graph draws, validates and reads differently.
@_documentation(visibility: private)
public enum _DependencyKind: UInt8, Sendable {
    /// The key's value; a missing provider is an error.
    case direct = 0
    /// The key's value, or nil when the graph has no provider for it (`Optional<Key>`).
    case optional = 1
    /// A function that resolves the key on each call (``Provider``): nothing is made with the
    /// dependent, so the build does not wait for it.
    case provider = 2
    /// The key's value made on first use (``Lazy``): the build does not wait for it, and a singleton
    /// that only lazy edges reach is created on first use too.
    case lazy = 3

    /// The name dumps give the kind.
    var name: String {
        switch self {
        case .direct: "direct"
        case .optional: "optional"
        case .provider: "provider"
        case .lazy: "lazy"
        }
    }

    /// Whether the dependent receives a handle that resolves later, not a value: nothing is made, or
    /// awaited, with the dependent (``Provider``, ``Lazy``).
    var isHandle: Bool { self == .provider || self == .lazy }
}

/// Where a factory's thunk reads its dependencies from, in declaration order.
///
/// Not API: the graph's resolver adopts it, so that a wrapper key (`Optional<Key>`) can say how its
/// value is read without the resolver's type being public.
@_documentation(visibility: private)
public protocol _DependencyReading {
    /// The value of the next dependency, a direct one.
    mutating func _next<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value
    /// The value of the next dependency if the graph provides `key`, or nil, when it declared none.
    mutating func _nextIfProvided<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value?
    /// A handle on the next dependency, `key`, to resolve it later (``Provider``).
    mutating func _nextHandle<Key: ServiceKey>(_ key: Key.Type) -> _ServiceHandle
}

/// An optional dependency: `dependsOn: AnalyticsKey?.self` gives the factory the value of
/// `AnalyticsKey`, or nil when the graph has no provider for it, so that a module can use a service
/// only where the application provides it.
///
/// Where the key is provided, the edge is validated like any other (a cycle through it, or a singleton
/// holding a scoped service through it, is still reported); where it is not, it is no problem, and
/// ``ServiceGraph/Builder/lint()`` lists it. Only a plain key can be optional.
extension Optional: ServiceKey where Wrapped: ServiceKey {
    public typealias Value = Wrapped.Value?

    /// The wrapped key's name with a question mark: `AnalyticsKey?`.
    public static var serviceName: String { Wrapped.serviceName + "?" }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyKind: _DependencyKind { .optional }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyTarget: any ServiceKey.Type { Wrapped.self }

    @_documentation(visibility: private)
    @inlinable
    public static func _dependencyValue<Reader: _DependencyReading>(from reader: inout Reader) throws -> Value {
        try reader._nextIfProvided(Wrapped.self)
    }
}
