/// A typed name for one service in a ``ServiceGraph``.
///
/// A key fixes the type of the value it names. Different keys may share a `Value` type: this is how
/// two databases, or two loggers, are told apart. Keys are usually case-less enums:
///
/// ```swift
/// enum PrimaryDatabaseKey: ServiceKey { typealias Value = any Database }
/// enum ReplicaDatabaseKey: ServiceKey { typealias Value = any Database }
/// ```
public protocol ServiceKey: Sendable {
    /// The type of the service this key names.
    associatedtype Value: Sendable

    /// The name used for this key in errors and dumps.
    ///
    /// The default is the key's type name without its module, for example `Outer.DatabaseKey`, and
    /// without the standard library's (`_Box<Int>`, not `_Box<Swift.Int>`). Where two keys of one graph
    /// would read alike (`ConfigKey` from two modules), errors and dumps qualify the default name with
    /// its module (`FeatureModule.ConfigKey`); a name a key gives itself is used as given.
    static var serviceName: String { get }

    /// How a provider that lists this type in `dependsOn` depends on the key it names: directly, or
    /// through a wrapper such as `Optional<Key>`. Not API: every key keeps the default.
    @_documentation(visibility: private)
    static var _dependencyKind: _DependencyKind { get }

    /// The key whose provider a dependency on this type needs: the type itself, or the key a wrapper
    /// wraps. Not API: every key keeps the default.
    @_documentation(visibility: private)
    static var _dependencyTarget: any ServiceKey.Type { get }

    /// The value a factory receives for a dependency on this type. Not API: every key keeps the
    /// default, the value of its provider.
    @_documentation(visibility: private)
    static func _dependencyValue<Reader: _DependencyReading>(from reader: inout Reader) throws -> Value
}

extension ServiceKey {
    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyKind: _DependencyKind { .direct }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyTarget: any ServiceKey.Type { Self.self }

    @_documentation(visibility: private)
    @inlinable
    public static func _dependencyValue<Reader: _DependencyReading>(from reader: inout Reader) throws -> Value {
        try reader._next(Self.self)
    }
}

extension ServiceKey {
    public static var serviceName: String { TypeName.display(Self.self) }
}

extension ServiceKey {
    /// A stable identity for the key type, used to index the graph.
    @inlinable
    static var _keyID: ObjectIdentifier { ObjectIdentifier(Self.self) }

    /// A stable identity for the key's value type, used for "did you mean" suggestions.
    static var valueTypeID: ObjectIdentifier { ObjectIdentifier(Value.self) }

    /// The value type's name, for errors and dumps.
    static var valueTypeName: String { TypeName.display(Value.self, moduleOf: Self.self) }

    /// The value type.
    static var valueType: Any.Type { Value.self }
}
